//! What hk-top did to a cluster, on disk: the moves begun and not finished,
//! and the moves made lately.
//!
//! A slot found half-migrated (`MIGRATING`/`IMPORTING`) that the journal
//! lists as begun was left by an interrupted run and is hk-top's to finish
//! or roll back; one it does not list belongs to someone else (an
//! operator's `redis-cli --cluster reshard`, another tool), and hk-top
//! refuses to start. The moves made, with their time, are what the
//! cooldown reads: a slot moved is not moved again within it, run after
//! run (moves older than [`KEPT_MS`] are forgotten).

use super::health::Open;
use heavykeeper_rebalance::Moved;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A move made: the slot, from and to (addresses), when (unix ms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done {
    pub slot: u16,
    pub from: String,
    pub to: String,
    pub at_ms: i64,
}

/// How long a move made is remembered: longer than any sensible cooldown.
pub const KEPT_MS: i64 = 7 * 24 * 3600 * 1000;
/// And at most this many (one per slot is all a cooldown needs).
const KEPT_MOVES: usize = 16384;

pub struct Journal {
    path: PathBuf,
    open: Vec<Open>,
    done: Vec<Done>,
}

impl Journal {
    /// The default place for a cluster's journal: the temporary directory,
    /// named by one of its node ids (which moving slots does not change).
    pub fn default_path(cluster_id: &str) -> PathBuf {
        let short: String = cluster_id.chars().take(12).collect();
        std::env::temp_dir().join(format!("hk-top-rebalance-{short}.json"))
    }

    /// The journal at `path`; none there is an empty one. A file that is
    /// not a journal is an error, not something to overwrite.
    pub fn open(path: &Path) -> Result<Journal, String> {
        let (open, done) = match std::fs::read(path) {
            Ok(bytes) => parse(&bytes)
                .ok_or_else(|| format!("{} is not a rebalance journal", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), Vec::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Journal {
            path: path.to_path_buf(),
            open,
            done,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves begun and not finished.
    pub fn open_moves(&self) -> &[Open] {
        &self.open
    }

    /// The moves made lately, as the cooldown reads them.
    pub fn moved(&self) -> impl Iterator<Item = Moved> + '_ {
        (self.done.iter()).map(|d| Moved {
            slot: d.slot,
            at_ms: d.at_ms,
        })
    }

    /// Written before the first command of a slot's move.
    pub fn begin(&mut self, entry: Open) -> Result<(), String> {
        self.open.retain(|e| e.slot != entry.slot);
        self.open.push(entry);
        self.save()
    }

    /// Written once the slot is the target's, or back with its source, or
    /// was never touched.
    pub fn end(&mut self, slot: u16) -> Result<(), String> {
        self.open.retain(|e| e.slot != slot);
        self.save()
    }

    /// Written once a move is made: it ends the slot's entry too.
    pub fn moved_now(&mut self, done: Done) -> Result<(), String> {
        self.open.retain(|e| e.slot != done.slot);
        let oldest = done.at_ms - KEPT_MS;
        self.done.retain(|d| d.at_ms >= oldest);
        self.done.push(done);
        if self.done.len() > KEPT_MOVES {
            let extra = self.done.len() - KEPT_MOVES;
            self.done.drain(..extra);
        }
        self.save()
    }

    fn save(&self) -> Result<(), String> {
        if self.open.is_empty() && self.done.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("{}: {e}", self.path.display()))
                }
                _ => Ok(()),
            };
        }
        let open: Vec<Value> = (self.open.iter())
            .map(|e| json!({"slot": e.slot, "source": e.source, "target": e.target}))
            .collect();
        let done: Vec<Value> = (self.done.iter())
            .map(|d| json!({"slot": d.slot, "from": d.from, "to": d.to, "at_ms": d.at_ms}))
            .collect();
        // Written aside and renamed: a run stopped mid-write leaves the old
        // journal, never half of one.
        let aside = self.path.with_extension("json.new");
        std::fs::write(&aside, json!({ "open": open, "moved": done }).to_string())
            .and_then(|()| std::fs::rename(&aside, &self.path))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

fn parse(bytes: &[u8]) -> Option<(Vec<Open>, Vec<Done>)> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let slot = |e: &Value| u16::try_from(e.get("slot")?.as_u64()?).ok();
    let text = |e: &Value, name: &str| Some(e.get(name)?.as_str()?.to_string());
    let open = (value.get("open")?.as_array()?.iter())
        .map(|e| {
            Some(Open {
                slot: slot(e)?,
                source: text(e, "source")?,
                target: text(e, "target")?,
            })
        })
        .collect::<Option<Vec<Open>>>()?;
    // A journal from before the cooldown has no moves made.
    let done = match value.get("moved") {
        None => Vec::new(),
        Some(moved) => (moved.as_array()?.iter())
            .map(|d| {
                Some(Done {
                    slot: slot(d)?,
                    from: text(d, "from")?,
                    to: text(d, "to")?,
                    at_ms: d.get("at_ms")?.as_i64()?,
                })
            })
            .collect::<Option<Vec<Done>>>()?,
    };
    Some((open, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begun_moves_survive_a_restart_and_made_ones_are_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.json");
        let mut journal = Journal::open(&path).unwrap();
        let entry = |slot| Open {
            slot,
            source: "S".into(),
            target: "T".into(),
        };
        journal.begin(entry(7)).unwrap();
        journal.begin(entry(8)).unwrap();
        journal.end(8).unwrap();
        let mut again = Journal::open(&path).unwrap();
        assert_eq!(again.open_moves(), [entry(7)]);
        again.end(7).unwrap();
        assert!(!path.exists(), "nothing begun, nothing made: no file");
        again.begin(entry(9)).unwrap();
        let done = |slot, at_ms| Done {
            slot,
            from: "a:1".into(),
            to: "a:2".into(),
            at_ms,
        };
        again.moved_now(done(9, 1_000)).unwrap();
        again.moved_now(done(10, KEPT_MS + 2_000)).unwrap();
        let read = Journal::open(&path).unwrap();
        assert!(read.open_moves().is_empty());
        let moved: Vec<(u16, i64)> = read.moved().map(|m| (m.slot, m.at_ms)).collect();
        let kept = [(10, KEPT_MS + 2_000)];
        assert_eq!(moved, kept, "a move older than a week is forgotten");
        std::fs::write(&path, "not json").unwrap();
        assert!(Journal::open(&path).is_err());
        std::fs::write(&path, r#"{"open": []}"#).unwrap();
        assert!(Journal::open(&path).is_ok(), "an older journal still reads");
    }
}
