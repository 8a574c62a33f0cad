//! The config registry: settings declared by every layer, registered with
//! the server in one pass, settable at load time (`loadmodule ...
//! max-sketch-bytes 64mb`), in redis.conf (`heavykeeper.max-sketch-bytes
//! 64mb`) and with `CONFIG SET`, with the same names, ranges and units
//! everywhere.

pub mod callbacks;
pub mod load_args;
pub mod setting;

pub use load_args::LoadArgs;
pub use setting::{any_bytes, OnChange, Setting};

use redis_module::Context;

/// Checks the `loadmodule` arguments against `settings`.
pub fn parse_load_args(args: &[&[u8]], settings: &[&'static Setting]) -> Result<LoadArgs, String> {
    let kinds: Vec<_> = settings.iter().map(|s| (s.name(), s.kind())).collect();
    load_args::parse(args, &kinds)
}

/// Registers every setting with the server, the load arguments standing in
/// for the defaults (redis.conf's `heavykeeper.*` lines, applied by
/// `RM_LoadConfigs` afterwards, win over both).
pub fn register(
    ctx: &Context,
    settings: &[&'static Setting],
    given: &LoadArgs,
) -> Result<(), String> {
    settings
        .iter()
        .try_for_each(|setting| callbacks::register(ctx, setting, given))
}
