//! The clock every engine and recorder reads: monotonic time as nanoseconds in one `u64`.
//!
//! `std::time::Instant` keeps seconds and nanoseconds apart, so each difference, sum and
//! comparison normalises a carry and checks for overflow: counted with callgrind, ~430 of the
//! generator's ~2,600 instructions per request were that arithmetic. This `Instant` reads the
//! same clock (`CLOCK_MONOTONIC`, as std does on Linux) and keeps plain nanoseconds, so the
//! hot path's time arithmetic is a subtraction. Its API is the subset of std's the crate uses,
//! saturating where std would panic (584 years of nanoseconds fit in a `u64`).

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point on the monotonic clock, in nanoseconds since the clock's own origin (boot).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Instant(u64);

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Instant {
    pub fn now() -> Instant {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux
        // (the vDSO answers without a syscall).
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Instant(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later (as std's since 1.60).
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// This instant on the machine's wall clock (as far as the two agree now).
    pub fn wall(self) -> Option<std::time::SystemTime> {
        std::time::SystemTime::now().checked_sub(Instant::now().saturating_duration_since(self))
    }

    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    pub fn checked_sub(&self, d: Duration) -> Option<Instant> {
        self.0.checked_sub(nanos(d)).map(Instant)
    }

    /// Nanoseconds since the clock's origin.
    pub fn as_nanos(&self) -> u64 {
        self.0
    }

    /// Nanoseconds from `earlier` to `self` (zero if `earlier` is later), without a `Duration`.
    pub fn nanos_since(&self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The same moment as a `std::time::Instant` (for runtimes' timers), read against both
    /// clocks now: off by the nanoseconds between the two reads at most.
    pub fn to_std(self) -> std::time::Instant {
        let (std_now, now) = (std::time::Instant::now(), Instant::now());
        if self >= now { std_now + (self - now) } else { std_now.checked_sub(now - self).unwrap_or(std_now) }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(nanos(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl From<Instant> for tokio::time::Instant {
    fn from(at: Instant) -> tokio::time::Instant {
        at.to_std().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_the_clock_std_reads() {
        let (a, s) = (Instant::now(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(5));
        let (b, t) = (Instant::now(), std::time::Instant::now());
        let (ours, theirs) = (b - a, t - s);
        assert!(ours >= Duration::from_millis(5), "{ours:?}");
        assert!(ours.abs_diff(theirs) < Duration::from_millis(1), "{ours:?} against std's {theirs:?}");
        assert!(a.to_std().duration_since(s) < Duration::from_millis(1));
    }

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let a = Instant::now();
        let later = a + Duration::from_millis(3);
        assert_eq!(later - a, Duration::from_millis(3));
        assert_eq!(a - later, Duration::ZERO);
        assert_eq!(later.nanos_since(a), 3_000_000);
        assert_eq!(Instant(5).checked_sub(Duration::from_nanos(6)), None);
        assert!(a + Duration::MAX > later);
    }
}
