//! Faults the tests ask for, in debug builds only (the release binary has
//! none): `HK_TOP_TEST_PANIC=poller` panics in the poller thread, `=key` on
//! the first key, so that the tests can see the terminal restored after a
//! panic in either thread.

use std::time::Duration;

#[expect(
    clippy::panic,
    reason = "the fault the tests inject: debug builds only, to see the terminal restored"
)]
pub fn panic_if_asked(place: &str) {
    if cfg!(debug_assertions) && std::env::var("HK_TOP_TEST_PANIC").as_deref() == Ok(place) {
        panic!("hk-top test fault: a panic in the {place} path");
    }
}

/// `HK_TOP_TEST_STOP=place` ends the process there (exit code 9), as a
/// kill would: the tests see what an interrupted rebalance leaves. The
/// places of a slot's move: `importing` (the target told), `migrating`
/// (the source told), `keys` (a batch of keys moved), `given` (the target
/// told it owns the slot, the source not yet).
pub fn stop_if_asked(place: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("HK_TOP_TEST_STOP").as_deref() == Ok(place) {
        std::process::exit(9);
    }
    #[cfg(not(debug_assertions))]
    let _ = place;
}

/// `HK_TOP_TEST_SLOT_PAUSE_MS=n` waits `n` ms before each slot's move, so
/// that the tests can land a fault between two slots, or in one.
pub fn pause_before_slot() {
    std::thread::sleep(scaled("HK_TOP_TEST_SLOT_PAUSE_MS", Duration::ZERO));
}

/// `variable=n` (ms) instead of `production`: `HK_TOP_TEST_REPLY_MS`, how
/// long a reply may take (a test stalls a node past it in a second, not
/// 20); `HK_TOP_TEST_SETTLE_MS`, how long the primaries get to agree (a
/// cluster that never will, a node stopped, is refused at once).
pub fn scaled(variable: &str, production: Duration) -> Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = (std::env::var(variable).ok()).and_then(|v| v.parse().ok()) {
        return Duration::from_millis(ms);
    }
    #[cfg(not(debug_assertions))]
    let _ = variable;
    production
}

/// `HK_TOP_TEST_READ_PAUSE_MS=n` waits `n` ms once the run has read the
/// cluster under its lease, saying so on stderr, so that the tests can
/// change the cluster under the run's view of it (a failover).
pub fn pause_after_read() {
    #[cfg(debug_assertions)]
    if std::env::var_os("HK_TOP_TEST_READ_PAUSE_MS").is_some() {
        eprintln!("hk-top test: the cluster is read");
    }
    std::thread::sleep(scaled("HK_TOP_TEST_READ_PAUSE_MS", Duration::ZERO));
}
