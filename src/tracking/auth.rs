//! Who is let in. A command filter runs before the server checks that the
//! client has logged in, so, left alone, a client that never authenticated
//! could make any key name look hot (and reach `hot` events and exports).
//!
//! - Where the default user needs no password (`on nopass`, the server's
//!   default), nobody is refused: every command counts.
//! - Otherwise, on servers whose filter names the client (Redis 7.2+,
//!   Valkey), a client's keys count once one of its commands has been seen
//!   to pass the check: its first command with keys is held, and when the
//!   next command arrives (or a slot ends) the server's count of `NOAUTH`
//!   replies says whether it was refused. One client is checked at a time,
//!   at most [`CHECKS_PER_SECOND`]; a client refused is not checked again
//!   for [`REFUSED_FOR_MS`] (or until it sends `AUTH`/`HELLO`), and its
//!   commands are dropped meanwhile.
//! - Redis 7.0's filter does not name the client: a counted slot of time in
//!   which a command was refused for want of authentication is discarded
//!   whole, and the slots kept stand for it (the tracker's `sampling::kept_time_slots`).
//!
//! Whether the default user needs a password is asked (`ACL GETUSER
//! default`) every second (every minute while every command is counted),
//! and taken as "it does" from the moment the filter sees an `ACL` or
//! `CONFIG` command until then.

use super::routing::text;
use crate::host::server_info;
use heavykeeper_tracker::server::client_table::Trust;
use heavykeeper_tracker::worker::key_batch::KeyBatch;
use redis_module::{Context, RedisValue};

pub const CHECKS_PER_SECOND: f64 = 200.0;
pub const REFUSED_FOR_MS: i64 = 1_000;
/// Who needs a password is asked every this many ticks (`ACL GETUSER`
/// costs the server ~600,000 instructions), and at once after the filter
/// saw a command that may change it.
const USERS_EVERY_TICKS: u64 = 10;
/// While every command is counted the filter sees every command that could
/// change it (and the server announces config changes), and a client
/// refused meanwhile shows in the server's `NOAUTH` count, read every tick:
/// asked only once a minute, as a safety net. (Once in 10 s it was ~7
/// instructions a `GET` at the pace a server runs under callgrind.)
const USERS_EVERY_TICKS_COUNTING_ALL: u64 = 600;

/// What to do with a client's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Count,
    /// Held until the client's check is over.
    Hold,
    Drop,
}

#[derive(Default)]
pub struct AuthWatch {
    /// Does the default user need no password? `None`: unknown, or changed
    /// since last asked.
    default_open: Option<bool>,
    /// A client being checked, and the server's `NOAUTH` count before its
    /// command ran.
    pending: Option<(u64, u64)>,
    /// The keys of the client being checked.
    held: KeyBatch,
    tokens: f64,
    tokens_at_ms: i64,
    /// Redis 7.0: the `NOAUTH` count when the slot opened.
    slot_noauth: Option<u64>,
    /// While everyone is let in: the `NOAUTH` count at the last tick.
    tick_noauth: Option<u64>,
    /// Accesses dropped because their client was not (known to be) let in.
    dropped: u64,
    checks: u64,
    refusals: u64,
    ticks: u64,
}

/// The outcome of a client's check.
pub struct Verdict {
    pub client: u64,
    pub trust: Trust,
}

impl AuthWatch {
    /// Unit tests: no server to ask, everyone taken as let in.
    #[cfg(test)]
    pub fn assume_everyone_let_in(&mut self) {
        self.default_open = Some(true);
    }

    /// Is every client let in (no password needed)?
    #[inline]
    pub fn all_let_in(&self) -> bool {
        self.default_open == Some(true)
    }

    /// An `ACL` or `CONFIG` command: ask again before trusting anyone.
    pub fn users_may_have_changed(&mut self) {
        self.default_open = None;
    }

    /// Asks the server whether the default user needs a password.
    pub fn refresh(&mut self, ctx: &Context) {
        self.default_open = default_user_open(ctx);
    }

    /// A tick: who needs a password is asked again if unknown, else every
    /// so many ticks, rarer while every command is counted (not `slots`).
    pub fn tick(&mut self, ctx: &Context, slots: bool) {
        self.ticks += 1;
        let every = match slots {
            true => USERS_EVERY_TICKS,
            false => USERS_EVERY_TICKS_COUNTING_ALL,
        };
        if self.ticks % every == 0 || self.default_open.is_none() {
            self.refresh(ctx);
        }
    }

    /// What to do with the keys of `client`, whose trust is `trust`; may
    /// start its check (then its keys are held).
    pub fn admit(&mut self, ctx: &Context, client: u64, trust: Trust, now_ms: i64) -> Admission {
        if self.all_let_in() || trust == Trust::Verified {
            return Admission::Count;
        }
        match self.pending {
            Some((pending, _)) if pending == client => return Admission::Hold,
            Some(_) => return Admission::Drop,
            None => {}
        }
        if matches!(trust, Trust::RefusedUntil(until) if now_ms < until) || !self.take_token(now_ms)
        {
            return Admission::Drop;
        }
        let Some(before) = noauth_count(ctx) else {
            return Admission::Drop;
        };
        self.checks += 1;
        self.pending = Some((client, before));
        Admission::Hold
    }

    /// Where a held client's keys go.
    pub fn held(&mut self) -> &mut KeyBatch {
        &mut self.held
    }

    /// The command of the client being checked has run: was it let in? Its
    /// held keys go to `batch` if so, are dropped if not.
    pub fn conclude(
        &mut self,
        ctx: &Context,
        batch: &mut KeyBatch,
        now_ms: i64,
    ) -> Option<Verdict> {
        let (client, before) = self.pending.take()?;
        let let_in = noauth_count(ctx) == Some(before);
        let trust = if let_in {
            batch.append(&self.held);
            Trust::Verified
        } else {
            self.refusals += 1;
            self.dropped += self.held.len() as u64;
            Trust::RefusedUntil(now_ms + REFUSED_FOR_MS)
        };
        self.held.clear();
        Some(Verdict { client, trust })
    }

    #[inline]
    pub fn is_checking(&self) -> bool {
        self.pending.is_some()
    }

    /// What was gathered is dropped: it may hold a refused client's keys.
    pub fn discard(&mut self, batch: &mut KeyBatch) {
        self.dropped(batch.weighted_len());
        batch.clear();
    }

    /// Keys of a client not let in (or not checked yet) were dropped.
    #[inline]
    pub fn dropped(&mut self, accesses: u64) {
        self.dropped += accesses;
    }

    fn take_token(&mut self, now_ms: i64) -> bool {
        let elapsed = (now_ms - self.tokens_at_ms).max(0) as f64 / 1000.0;
        self.tokens = (self.tokens + elapsed * CHECKS_PER_SECOND).min(CHECKS_PER_SECOND);
        self.tokens_at_ms = now_ms;
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }

    /// Redis 7.0 (no client ids) with a password needed: must each counted
    /// slot be checked for refusals?
    pub fn checks_slots(&self, names_clients: bool) -> bool {
        !names_clients && !self.all_let_in()
    }

    /// While everyone is thought let in: was a client refused since the
    /// last look? Then who needs a password changed unseen (an `ACL`
    /// command between counted slots).
    pub fn refused_while_open(&mut self, ctx: &Context) -> bool {
        let now = noauth_count(ctx);
        let before = std::mem::replace(&mut self.tick_noauth, now);
        matches!((before, now), (Some(b), Some(n)) if n > b)
    }

    /// A counted slot opens (Redis 7.0 with a password needed).
    pub fn slot_opened(&mut self, ctx: &Context) {
        self.slot_noauth = noauth_count(ctx);
    }

    /// The slot closes: may its accesses be kept (no command refused for
    /// want of authentication in it)?
    pub fn slot_clean(&mut self, ctx: &Context) -> bool {
        let before = self.slot_noauth.take();
        before.is_some() && noauth_count(ctx) == before
    }

    /// Accesses dropped, checks made, clients refused.
    pub fn figures(&self) -> (u64, u64, u64) {
        (self.dropped, self.checks, self.refusals)
    }

    pub fn default_open(&self) -> Option<bool> {
        self.default_open
    }
}

/// `NOAUTH` replies so far.
fn noauth_count(ctx: &Context) -> Option<u64> {
    server_info::error_count(ctx, c"errorstat_NOAUTH")
}

/// Is the default user on, with no password? `None` if the server will not
/// say (`ACL` renamed away, say): then every client is checked.
fn default_user_open(ctx: &Context) -> Option<bool> {
    let reply = ctx.call("ACL", &["GETUSER", "default"]).ok()?;
    let flags = user_flags(&reply)?;
    let has = |flag: &str| flags.iter().any(|f| f.eq_ignore_ascii_case(flag));
    Some(has("on") && has("nopass"))
}

/// The `flags` of an `ACL GETUSER` reply (name and value pairs, as a
/// module's call receives them).
fn user_flags(reply: &RedisValue) -> Option<Vec<String>> {
    let RedisValue::Array(fields) = reply else {
        return None;
    };
    let flags = fields
        .chunks(2)
        .find(|pair| pair.first().and_then(text).as_deref() == Some("flags"))
        .and_then(|pair| pair.get(1))?;
    match flags {
        RedisValue::Array(items) => Some(items.iter().filter_map(text).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> RedisValue {
        RedisValue::BulkString(s.into())
    }

    #[test]
    fn the_flags_of_an_acl_getuser_reply_are_read() {
        let reply = RedisValue::Array(vec![
            bulk("flags"),
            RedisValue::Array(vec![bulk("on"), bulk("nopass"), bulk("sanitize-payload")]),
            bulk("passwords"),
            RedisValue::Array(vec![]),
        ]);
        assert_eq!(
            user_flags(&reply).unwrap(),
            ["on", "nopass", "sanitize-payload"]
        );
        assert_eq!(user_flags(&RedisValue::Null), None);
    }

    #[test]
    fn checks_are_rate_limited() {
        let mut a = AuthWatch::default();
        let taken = (0..1_000).filter(|_| a.take_token(10_000)).count();
        assert_eq!(taken, CHECKS_PER_SECOND as usize);
        assert!(!a.take_token(10_000));
        assert!(a.take_token(10_010), "tokens come back with time");
    }
}
