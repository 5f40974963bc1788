//! CPU time of the calling thread, for the few tests that compare how long two inputs take
//! (linear, not quadratic) or bound a parse: wall-clock time on this shared 2-core machine
//! includes whatever else runs (the other tests of this binary, other builds), CPU time of the
//! thread does not.

use std::time::Duration;

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
