//! One run at a time per cluster. A run that moves slots first takes the
//! cluster's lease: a key in the cluster itself ([`LEASE_KEY`]), set only
//! if absent, naming its holder (host, process, since when), with a time
//! to live that the holder renews while it runs. A second run, from any
//! host and with any journal, finds the key and is refused before any
//! move, told who holds the cluster. A holder that died stops renewing and
//! its lease lapses within [`TTL`]; one that died on this very host is
//! seen dead at once (its process is gone) and its lease taken over.
//!
//! The key lives in the cluster, so it moves with its slot when a plan
//! moves that slot (`MIGRATE` carries its time to live): every command to
//! it follows `MOVED` and `ASK`. Renewal and release compare the holder's
//! token first (a script), so a run never renews or deletes a lease that
//! is no longer its own. It talks through a [`Link`] of its own: the
//! renewal runs on a thread of its own.

use super::error::Error;
use super::link::Link;
use redis::{ErrorKind, RedisResult, Value};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const LEASE_KEY: &str = "hk-top:rebalance:lease";
/// How long a lease lasts unless renewed.
pub const TTL: Duration = Duration::from_secs(60);
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// A lease this close to lapsing counts as lost: no slot is begun on it.
const MARGIN: Duration = Duration::from_secs(15);

/// Who holds a lease, as its key says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    pub since_ms: u64,
    pub token: String,
}

impl Holder {
    fn me() -> Holder {
        let now = (SystemTime::now().duration_since(UNIX_EPOCH)).unwrap_or_default();
        let since_ms = now.as_millis() as u64;
        let pid = std::process::id();
        Holder {
            host: host_name(),
            pid,
            since_ms,
            token: format!("{pid:x}-{:x}", u64::from(now.subsec_nanos()) ^ since_ms),
        }
    }

    fn to_value(&self) -> String {
        json!({
            "tool": "hk-top rebalance",
            "host": self.host,
            "pid": self.pid,
            "since_ms": self.since_ms,
            "token": self.token,
        })
        .to_string()
    }

    fn parse(text: &str) -> Option<Holder> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        Some(Holder {
            host: v.get("host")?.as_str()?.to_string(),
            pid: u32::try_from(v.get("pid")?.as_u64()?).ok()?,
            since_ms: v.get("since_ms")?.as_u64()?,
            token: v.get("token")?.as_str()?.to_string(),
        })
    }

    /// A holder on this host whose process is gone.
    fn died_here(&self) -> bool {
        self.host == host_name() && !process_alive(self.pid)
    }

    /// "hk-top on host H, pid P, since <time> (N s ago)".
    pub fn describe(&self) -> String {
        let since = UNIX_EPOCH + Duration::from_millis(self.since_ms);
        let ago = SystemTime::now()
            .duration_since(since)
            .map_or(0, |d| d.as_secs());
        format!(
            "hk-top on host {}, pid {}, since {} ({ago} s ago)",
            self.host,
            self.pid,
            humantime::format_rfc3339_seconds(since)
        )
    }
}

/// The lease held: renewed by a thread of its own until dropped, then
/// released.
pub struct Lease {
    shared: Arc<Shared>,
    renewer: Option<JoinHandle<()>>,
}

struct Shared {
    keeper: Mutex<KeyLink>,
    holder: Holder,
    stop: AtomicBool,
    /// Until when the lease is surely ours (its last renewal plus the TTL).
    valid_until: Mutex<Instant>,
    lost: AtomicBool,
}

impl Lease {
    /// Takes the cluster's lease through `link`, asking `first` (a node of
    /// the cluster) where its key is, or says who holds it.
    pub fn take(link: Box<dyn Link + Send>, first: &str) -> Result<Lease, Error> {
        let mut link = KeyLink {
            link,
            owner: first.to_string(),
        };
        let me = Holder::me();
        let taken_at = loop {
            if let Some(at) = try_take(&mut link, &me)? {
                break at;
            }
        };
        let shared = Arc::new(Shared {
            keeper: Mutex::new(link),
            holder: me,
            stop: AtomicBool::new(false),
            valid_until: Mutex::new(taken_at + TTL),
            lost: AtomicBool::new(false),
        });
        let renewing = Arc::clone(&shared);
        let renewer = std::thread::Builder::new()
            .name("hk-top-lease".into())
            .spawn(move || renew_until_stopped(&renewing))
            .map_err(|e| Error::Local(format!("cannot start the lease's thread: {e}")))?;
        Ok(Lease {
            shared,
            renewer: Some(renewer),
        })
    }

    /// Renews the lease now (the renewer's every [`RENEW_EVERY`]).
    #[cfg(test)]
    pub fn renew(&self) {
        self.shared.renew();
    }
    /// Is the lease still surely ours, for long enough to begin a slot?
    pub fn check(&self) -> Result<(), Error> {
        let valid_until = *lock(&self.shared.valid_until);
        if self.shared.lost.load(Ordering::Relaxed) {
            return Err(Error::LeaseLost(
                "another run holds the cluster's lease now".into(),
            ));
        }
        if Instant::now() + MARGIN > valid_until {
            return Err(Error::LeaseLost(format!(
                "it could not be renewed for {} s",
                (TTL - MARGIN).as_secs()
            )));
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(renewer) = self.renewer.take() {
            renewer.thread().unpark();
            let _ = renewer.join();
        }
        let release = eval(RELEASE_SCRIPT, &[&self.shared.holder.to_value()]);
        let _ = lock(&self.shared.keeper).run(&release);
    }
}

fn renew_until_stopped(shared: &Shared) {
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(RENEW_EVERY);
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        shared.renew();
    }
}

impl Shared {
    fn renew(&self) {
        let asked = Instant::now();
        let ttl_ms = TTL.as_millis().to_string();
        let renew = eval(RENEW_SCRIPT, &[&self.holder.to_value(), &ttl_ms]);
        match lock(&self.keeper).run(&renew) {
            Ok(Value::Int(1)) => *lock(&self.valid_until) = asked + TTL,
            Ok(_) => self.lost.store(true, Ordering::Relaxed),
            // Unreachable for now: the lease holds until it lapses, and
            // `check` stops the run well before that.
            Err(_) => {}
        }
    }
}

/// Sets the lease to `ARGV[2]` only if it still holds `ARGV[1]`.
const SWAP_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end return false";
const RENEW_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
const RELEASE_SCRIPT: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// `EVAL script 1 <the lease's key> args...`.
fn eval(script: &str, args: &[&str]) -> redis::Cmd {
    let mut eval = redis::cmd("EVAL");
    eval.arg(script).arg(1).arg(LEASE_KEY).arg(args);
    eval
}

/// When the lease was taken (`SET NX`, or a dead holder's swapped), or
/// `None` where it changed hands under the try (lapsed between two
/// commands): try again.
fn try_take(link: &mut KeyLink, me: &Holder) -> Result<Option<Instant>, Error> {
    let taken_at = Instant::now();
    let (me_value, ttl_ms) = (me.to_value(), TTL.as_millis().to_string());
    let set = redis::cmd("SET")
        .arg(&[LEASE_KEY, &me_value, "NX", "PX", &ttl_ms])
        .clone();
    let mut taken = matches!(link.run(&set)?, Value::Okay | Value::SimpleString(_));
    if !taken {
        let held = match link.run(redis::cmd("GET").arg(LEASE_KEY))? {
            Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => return Ok(None),
        };
        let holder = Holder::parse(&held);
        match holder {
            Some(h) if h.died_here() => {
                let swap = eval(SWAP_SCRIPT, &[&held, &me_value, &ttl_ms]);
                taken = matches!(link.run(&swap)?, Value::Okay | Value::SimpleString(_));
                if !taken {
                    return Ok(None);
                }
            }
            Some(h) => return Err(held_by(h.describe())),
            None => return Err(held_by(format!("a holder that is not hk-top ({held})"))),
        }
    }
    Ok(Some(taken_at))
}

/// Commands to the lease's key, wherever its slot is now: to the node that
/// last answered for it, following `MOVED` and `ASK`.
struct KeyLink {
    link: Box<dyn Link + Send>,
    owner: String,
}

impl KeyLink {
    fn run(&mut self, cmd: &redis::Cmd) -> Result<Value, Error> {
        self.try_run(cmd)
            .map_err(|e| Error::node(&self.owner, "the lease", e))
    }

    fn try_run(&mut self, cmd: &redis::Cmd) -> RedisResult<Value> {
        let mut address = self.owner.clone();
        let mut asking = false;
        let mut redirects = 0;
        loop {
            if asking {
                // The next command on the same connection: the link keeps
                // one per node.
                self.link.run(&address, &redis::cmd("ASKING"))?;
            }
            match self.link.run(&address, cmd) {
                Err(e)
                    if matches!(e.kind(), ErrorKind::Moved | ErrorKind::Ask) && redirects < 5 =>
                {
                    let Some((to, _)) = e.redirect_node() else {
                        return Err(e);
                    };
                    redirects += 1;
                    asking = e.kind() == ErrorKind::Ask;
                    address = to.to_string();
                    if !asking {
                        self.owner = address.clone();
                    }
                }
                reply => return reply,
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "?".into())
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return true;
    };
    // Signal 0 asks whether the process exists; EPERM: it does, as another user's.
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// The refusal of a run that finds the lease held by `holder`.
fn held_by(holder: String) -> Error {
    Error::Held {
        holder,
        lapses_s: TTL.as_secs(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebalance::fake_cluster::LeaseKey;

    #[test]
    fn a_holder_reads_back_from_its_value_and_is_described() {
        let me = Holder::me();
        assert_eq!(Holder::parse(&me.to_value()), Some(me.clone()));
        assert!(!me.died_here(), "this process runs");
        let said = me.describe();
        assert!(said.contains(&format!("pid {}", me.pid)), "{said}");
        assert!(said.contains("s ago"), "{said}");
        assert_eq!(Holder::parse("not a lease"), None);
    }

    fn take(held: Option<Holder>) -> Result<Lease, Error> {
        let held = held.as_ref().map(Holder::to_value);
        Lease::take(Box::new(LeaseKey { held, renewed: 1 }), "a:1")
    }

    #[test]
    fn a_lease_is_taken_where_its_key_is_refused_while_held_and_taken_over_from_the_dead() {
        let lease = take(None).unwrap();
        assert!(lease.check().is_ok());
        assert_eq!(lock(&lease.shared.keeper).owner, "b:1", "MOVED followed");
        let (host, pid) = ("elsewhere".to_string(), u32::MAX / 2);
        match take(Some(Holder {
            host,
            ..Holder::me()
        })) {
            Err(Error::Held { holder, .. }) => assert!(holder.contains("elsewhere"), "{holder}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let dead = Holder {
            pid,
            ..Holder::me()
        };
        assert!(dead.died_here(), "dead on this host");
        assert!(take(Some(dead)).is_ok(), "taken over from the dead");
    }
}
