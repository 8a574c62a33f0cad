//! The tracker's settings as the bench sets them on a running server, and
//! what it lists: what every tracking stage reads and writes, apart from
//! the stages (which [`crate::tracking`] runs).

use crate::redis_phase::query;
use test_harness::CountBounds;

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
    query(
        con,
        &["CONFIG", "SET", &format!("heavykeeper.{name}"), value],
    )
}

/// A numeric field of `INFO heavykeeper` (`heavykeeper_<field>`).
pub fn info_f64(con: &mut redis::Connection, field: &str) -> Option<f64> {
    info_number(con, "heavykeeper", &format!("heavykeeper_{field}"))
}

/// A numeric field of `INFO section`.
pub fn info_number(con: &mut redis::Connection, section: &str, field: &str) -> Option<f64> {
    test_harness::info_field(con, section, field)?.parse().ok()
}

/// The rows `HK.HOTKEYS` lists with `args`, in order: each key's rate and
/// count, and with `WITHBOUNDS` its count's 95% bounds (else 0).
pub fn hotkeys(
    con: &mut redis::Connection,
    args: &[&str],
) -> Result<Vec<(String, CountBounds)>, String> {
    let bounds = args.contains(&"WITHBOUNDS");
    let flat: Vec<redis::Value> = query(con, &[&["HK.HOTKEYS"], args].concat())?;
    (flat.chunks(if bounds { 6 } else { 4 }))
        .map(|row| {
            let value = |i: usize| {
                row.get(i)
                    .ok_or(format!("HK.HOTKEYS: a row of {}", row.len()))
            };
            let number = |i| redis::from_redis_value::<f64>(value(i)?).map_err(|e| e.to_string());
            let key: String = redis::from_redis_value(value(0)?).map_err(|e| e.to_string())?;
            let (low, high) = if bounds {
                (number(4)?, number(5)?)
            } else {
                (0.0, 0.0)
            };
            let b = CountBounds::from_rates(number(2)?, number(3)?, low, high);
            Ok((key, b))
        })
        .collect()
}
