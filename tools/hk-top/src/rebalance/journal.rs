//! The moves hk-top has begun and not finished, on disk: a slot found
//! half-migrated (`MIGRATING`/`IMPORTING`) that the journal lists was left
//! by an interrupted run and is hk-top's to finish or roll back; one it
//! does not list belongs to someone else (an operator's `redis-cli
//! --cluster reshard`, another tool), and hk-top refuses to start.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub slot: u16,
    pub source: String,
    pub target: String,
}

pub struct Journal {
    path: PathBuf,
    open: Vec<Entry>,
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
        let open = match std::fs::read(path) {
            Ok(bytes) => parse(&bytes)
                .ok_or_else(|| format!("{} is not a rebalance journal", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Journal {
            path: path.to_path_buf(),
            open,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn owns(&self, slot: u16, source: &str, target: &str) -> bool {
        (self.open.iter()).any(|e| e.slot == slot && e.source == source && e.target == target)
    }

    /// Written before the first command of a slot's move.
    pub fn begin(&mut self, entry: Entry) -> Result<(), String> {
        self.open.retain(|e| e.slot != entry.slot);
        self.open.push(entry);
        self.save()
    }

    /// Written once the slot is the target's.
    pub fn end(&mut self, slot: u16) -> Result<(), String> {
        self.open.retain(|e| e.slot != slot);
        self.save()
    }

    fn save(&self) -> Result<(), String> {
        if self.open.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("{}: {e}", self.path.display()))
                }
                _ => Ok(()),
            };
        }
        let entries: Vec<Value> = (self.open.iter())
            .map(|e| json!({"slot": e.slot, "source": e.source, "target": e.target}))
            .collect();
        // Written aside and renamed: a run stopped mid-write leaves the old
        // journal, never half of one.
        let aside = self.path.with_extension("json.new");
        std::fs::write(&aside, json!({ "open": entries }).to_string())
            .and_then(|()| std::fs::rename(&aside, &self.path))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    (value.get("open")?.as_array()?.iter())
        .map(|e| {
            Some(Entry {
                slot: u16::try_from(e.get("slot")?.as_u64()?).ok()?,
                source: e.get("source")?.as_str()?.to_string(),
                target: e.get("target")?.as_str()?.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begun_moves_survive_a_restart_and_ended_ones_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.json");
        let mut journal = Journal::open(&path).unwrap();
        let entry = |slot| Entry {
            slot,
            source: "S".into(),
            target: "T".into(),
        };
        journal.begin(entry(7)).unwrap();
        journal.begin(entry(8)).unwrap();
        journal.end(8).unwrap();
        let again = Journal::open(&path).unwrap();
        assert!(again.owns(7, "S", "T"));
        assert!(!again.owns(8, "S", "T") && !again.owns(7, "S", "X"));
        let mut again = again;
        again.end(7).unwrap();
        assert!(!path.exists());
        std::fs::write(&path, "not json").unwrap();
        assert!(Journal::open(&path).is_err());
    }
}
