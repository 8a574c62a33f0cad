//! Threads' CPU clocks: what the tracker's work costs, without the time
//! slices another process took from it on a busy machine (a wall clock
//! would charge those), and the same on a fast machine, a slow one or one
//! under a profiler.

use std::thread::JoinHandle;

/// The calling thread's CPU time so far, in ns (0 if the kernel cannot say).
pub fn thread_cpu_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// How long the calling thread has waited, runnable, for a CPU so far, in
/// ns (the second figure of `/proc/thread-self/schedstat`; 0 where the
/// kernel cannot say). Beside its CPU time, the time it wanted a CPU: a
/// thread that has work but shares its core with other processes is busy
/// less of the time than one alone, and waits the rest.
pub fn thread_waited_ns() -> u64 {
    use std::os::unix::fs::FileExt;
    thread_local! {
        // Opened once per thread (the path names the thread that opens
        // it): each read is then one `pread`, ~1 µs.
        static SCHEDSTAT: Option<std::fs::File> =
            std::fs::File::open("/proc/thread-self/schedstat").ok();
    }
    SCHEDSTAT
        .with(|file| {
            let mut text = [0u8; 96];
            let n = file.as_ref()?.read_at(&mut text, 0).ok()?;
            second_figure(text.get(..n)?)
        })
        .unwrap_or(0)
}

/// The second of the whitespace-separated numbers in `text`.
fn second_figure(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The CPU clock of a thread this process started.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    pub fn of(thread: &JoinHandle<()>) -> Option<Self> {
        use std::os::unix::thread::JoinHandleExt;
        let mut clock: libc::clockid_t = 0;
        // SAFETY: the handle's pthread_t is alive while the handle is; a
        // valid out-pointer.
        let found = unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut clock) };
        (found == 0).then_some(ThreadClock(clock))
    }

    /// The thread's CPU time so far, in ns; ask only while it runs.
    pub fn now_ns(self) -> Option<u64> {
        read(self.0)
    }
}

fn read(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; a clock id the kernel handed out.
    (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| {
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_the_second_figure_and_a_clock_that_only_goes_on() {
        assert_eq!(second_figure(b"44905310 574052 87\n"), Some(574_052));
        assert_eq!(second_figure(b"44905310\n"), None);
        assert_eq!(second_figure(b""), None);
        let first = thread_waited_ns();
        assert!(thread_waited_ns() >= first);
    }
}
