//! Fault injection for the integration tests, in debug builds only: the one
//! way to prove that a panic inside a command or a callback is contained.
//! Each hook panics when it meets a name a client would never choose.
//! Release builds compile every hook to nothing.

/// An item whose arrival panics in the middle of `HK.ADD`/`HK.INCRBY`.
pub const PANIC_ON_ADD: &[u8] = b"heavykeeper:fault:panic-on-add";
/// A member that makes encoding a sketch panic (RDB save, AOF rewrite, digest).
pub const PANIC_ON_ENCODE: &[u8] = b"heavykeeper:fault:panic-on-encode";
/// A member that makes the other data-type callbacks panic: memory usage,
/// free effort, copy, unlink, and loading the sketch back.
pub const PANIC_IN_CALLBACKS: &[u8] = b"heavykeeper:fault:panic-in-callbacks";
/// A watch channel that makes the watch timer panic on the sketch.
pub const PANIC_ON_TICK: &[u8] = b"heavykeeper:fault:panic-on-tick";
/// A key name whose command makes the command filter's hook panic.
pub const PANIC_ON_FILTER: &[u8] = b"heavykeeper:fault:panic-on-filter";
/// A key name that makes the keyspace and server event handlers panic.
pub const PANIC_ON_EVENT: &[u8] = b"heavykeeper:fault:panic-on-event";
/// A config value whose setting panics in the config callback; as the
/// tracker's channel, it makes `INFO heavykeeper` panic.
pub const PANIC_ON_CONFIG: &[u8] = b"heavykeeper:fault:panic-on-config";
pub const PANIC_ON_INFO: &[u8] = b"heavykeeper:fault:panic-on-info";

#[expect(
    clippy::panic,
    reason = "the fault the tests inject: debug builds only, under the panic guard"
)]
fn trip(armed: impl FnOnce() -> bool, site: &str) {
    if cfg!(debug_assertions) && armed() {
        panic!("fault injected by a test: {site}");
    }
}

#[inline]
pub fn on_add(item: &[u8]) {
    trip(|| item == PANIC_ON_ADD, "panic on add");
}

/// `holds` says whether the value being encoded holds a member.
#[inline]
pub fn on_encode(holds: impl FnOnce(&[u8]) -> bool) {
    trip(|| holds(PANIC_ON_ENCODE), "panic on encode");
}

/// A member whose sketch cannot be copied, as if memory ran out.
pub const COPY_OUT_OF_MEMORY: &[u8] = b"heavykeeper:fault:copy-out-of-memory";

/// Debug builds: is this copy to fail as if out of memory? (`holds` says
/// whether the sketch holds a member.)
#[inline]
pub fn copy_fails(holds: impl FnOnce(&[u8]) -> bool) -> bool {
    cfg!(debug_assertions) && holds(COPY_OUT_OF_MEMORY)
}

/// `holds` says whether the value a callback is given holds a member.
#[inline]
pub fn in_callback(holds: impl FnOnce(&[u8]) -> bool) {
    trip(
        || holds(PANIC_IN_CALLBACKS),
        "panic in a data-type callback",
    );
}

#[inline]
pub fn on_tick(channel: &[u8]) {
    trip(|| channel == PANIC_ON_TICK, "panic in the watch timer");
}

#[inline]
pub fn on_event(key: &[u8]) {
    trip(|| key == PANIC_ON_EVENT, "panic in an event handler");
}

#[inline]
pub fn on_config(value: &[u8]) {
    trip(|| value == PANIC_ON_CONFIG, "panic in a config callback");
}

#[inline]
pub fn on_info(track_channel: &[u8]) {
    trip(|| track_channel == PANIC_ON_INFO, "panic in INFO");
}

/// The command filter's hook met `key`.
#[inline]
pub fn on_filter(key: &[u8]) {
    trip(|| key == PANIC_ON_FILTER, "panic in the command filter");
}
