//! The tracker's settings as the bench sets them on a running server.

/// The module's default `track-sample` (what `track yes` alone counts): 0,
/// the share of time counted chosen within `track-cpu-millicores`.
pub const DEFAULT_SAMPLE: u64 = 0;

/// How a `track-sample` value reads in the report.
pub fn sample_label(sample: u64) -> String {
    match sample {
        0 => "default (budgeted)".into(),
        1 => "every command".into(),
        n => format!("1 in {n}"),
    }
}

/// `CONFIG SET heavykeeper.<name> <value>`.
pub fn config(con: &mut redis::Connection, name: &str, value: &str) -> Result<(), String> {
    crate::redis_phase::query(
        con,
        &["CONFIG", "SET", &format!("heavykeeper.{name}"), value],
    )
}

/// A numeric field of `INFO heavykeeper` (`heavykeeper_<field>`).
pub fn info_f64(con: &mut redis::Connection, field: &str) -> Option<f64> {
    let info: String = redis::cmd("INFO").arg("heavykeeper").query(con).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("heavykeeper_{field}:")))
        .and_then(|v| v.trim().parse().ok())
}
