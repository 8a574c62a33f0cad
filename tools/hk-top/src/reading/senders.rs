//! Who drives a key, and who sends a node the most, as the nodes' trackers
//! say (`HK.HOTKEYS CLIENTS`, `HK.HOTCLIENTS`; Redis 7.2+ and Valkey): by
//! host. Asked for the hottest few keys of each node only, so that a
//! refresh costs a node a handful of commands more and the exporter's
//! series stay bounded ([`KEYS_WITH_SENDERS`] × [`SENDERS_PER_KEY`]).

use redis::Value;

/// Keys of each node whose senders are read, hottest first.
pub const KEYS_WITH_SENDERS: usize = 5;
/// Senders read per key.
pub const SENDERS_PER_KEY: usize = 3;
/// A node's hottest clients read.
pub const HOT_CLIENTS: usize = 10;

/// A host and what it sends, with the rate's 95% bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Sender {
    pub who: Vec<u8>,
    pub rate: f64,
    pub low: f64,
    pub high: f64,
}

/// `who, rate, count, low, high` rows.
pub fn parse(flat: &[Value]) -> Option<Vec<Sender>> {
    let number = |v: &Value| -> Option<f64> { redis::from_redis_value(v).ok() };
    (flat.chunks(5))
        .map(|row| match row {
            [Value::BulkString(who), rate, _, low, high] => Some(Sender {
                who: who.clone(),
                rate: number(rate)?,
                low: number(low)?,
                high: number(high)?,
            }),
            _ => None,
        })
        .collect()
}

/// Who drives `key` of database `db` on the node (`None`: the node
/// cannot say).
pub fn of_key(con: &mut dyn redis::ConnectionLike, db: i64, key: &[u8]) -> Option<Vec<Sender>> {
    let flat: Vec<Value> = redis::cmd("HK.HOTKEYS")
        .arg("CLIENTS")
        .arg(key)
        .arg("DB")
        .arg(db)
        .arg(&["COUNT", &SENDERS_PER_KEY.to_string(), "WITHBOUNDS"])
        .query(con)
        .ok()?;
    parse(&flat)
}

/// The node's hottest clients (`None`: the node cannot say).
pub fn of_node(con: &mut dyn redis::ConnectionLike) -> Option<Vec<Sender>> {
    let flat: Vec<Value> = redis::cmd("HK.HOTCLIENTS")
        .arg(&["COUNT", &HOT_CLIENTS.to_string(), "WITHBOUNDS"])
        .query(con)
        .ok()?;
    parse(&flat)
}

/// Senders as text: `10.0.0.5 1,876/s (60%)`, shares of their sum.
pub fn summary(senders: &[Sender], of: f64) -> String {
    let parts: Vec<String> = (senders.iter())
        .map(|s| {
            let share = if of > 0.0 { 100.0 * s.rate / of } else { 0.0 };
            let who = String::from_utf8_lossy(&s.who);
            format!("{who} {:.0}/s ({share:.0}%)", s.rate)
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_and_summed_up() {
        let b = crate::fixtures::bulk;
        let flat = [b("10.0.0.5"), b("60"), Value::Int(600), b("50"), b("70")];
        let senders = parse(&flat).unwrap();
        assert_eq!(senders[0].who, b"10.0.0.5");
        let first = &senders[0];
        assert_eq!((first.rate, first.low, first.high), (60.0, 50.0, 70.0));
        assert_eq!(summary(&senders, 100.0), "10.0.0.5 60/s (60%)");
        assert_eq!(parse(&flat[..3]), None);
    }
}
