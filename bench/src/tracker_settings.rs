//! The tracker's settings as the bench sets them on a running server.

/// The module's default `track-sample` (what `track yes` alone counts).
pub const DEFAULT_SAMPLE: u64 = 16;

/// `CONFIG SET heavykeeper.<name> <value>`.
pub fn config(con: &mut redis::Connection, name: &str, value: &str) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(format!("heavykeeper.{name}"))
        .arg(value)
        .query::<()>(con)
        .map_err(|e| e.to_string())
}
