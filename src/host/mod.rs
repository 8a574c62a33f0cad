//! The host: what the module needs of the server, with nothing about
//! sketches or features. The data type and the features (tracking,
//! watching) stand on it; it imports none of them.

pub mod module_context;
pub mod publish;
pub mod server_info;
