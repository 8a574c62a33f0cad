//! What the server says, as plain Rust: its command table (which keys a
//! command reads and writes, what its name changes), its clients and
//! scripts, its cluster hash slots, and the name a key is tracked under.

pub mod client_table;
pub mod command_name;
pub mod command_reply;
pub mod command_table;
pub mod hash_slot;
pub mod hash_slot_map;
pub mod key_spec;
pub mod name_effect;
pub mod script_watch;
pub mod tracked_name;
