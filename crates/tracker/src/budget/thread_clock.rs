//! Threads' CPU clocks: what the tracker's work costs, without the time
//! slices another process took from it on a busy machine (a wall clock
//! would charge those), and the same on a fast machine, a slow one or one
//! under a profiler.

use std::thread::JoinHandle;

/// The calling thread's CPU time so far, in ns (0 if the kernel cannot say).
pub fn thread_cpu_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
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
