//! A run's measured window cut into intervals (`--report-every`).

use super::MAX_LATENCY_NS;
use hdrhistogram::Histogram;
use std::time::Duration;

/// A run cut into intervals of `every` from the start of its measured window
/// (`--report-every`): operations completed, operations failed, and their latency.
#[derive(Debug, Clone)]
pub struct Series {
    pub every: Duration,
    /// The start of the measured window (known once a measured operation ends).
    pub from: Option<crate::clock::Instant>,
    pub intervals: Vec<Interval>,
    /// Operations that ended after the last interval a series keeps ([`MAX_INTERVALS`]): a
    /// `-n` run longer than they cover. Counted, not given a width they did not have.
    pub beyond: Option<Interval>,
}

/// One interval of a [`Series`].
#[derive(Debug, Clone)]
pub struct Interval {
    pub ops: u64,
    pub errors: u64,
    pub latency: Histogram<u64>,
}

impl Interval {
    fn new() -> Interval {
        // Two significant digits: a series holds many of these (~36 KiB each).
        let latency = Histogram::new_with_bounds(1, MAX_LATENCY_NS, 2).expect("static histogram bounds");
        Interval { ops: 0, errors: 0, latency }
    }

    pub(super) fn merge(&mut self, o: &Interval) {
        self.ops += o.ops;
        self.errors += o.errors;
        self.latency.add(&o.latency).expect("same histogram bounds");
    }
}

/// Most intervals a series keeps, each with its latency histogram of ~36 KiB per core: an
/// hour of seconds, or 36 s of 10 ms, at most ~130 MiB per core. A timed run that would cut
/// into more is refused (`--report-every`); a `-n` run that outlasts them counts the rest
/// apart ([`Series::beyond`]). (Before, a series kept 86,400, about 3 GiB per core, and
/// folded what came after into the last, reported as one interval wide.)
pub const MAX_INTERVALS: usize = 3_600;
/// Intervals kept past [`MAX_INTERVALS`] for what ends after a timed run's last one: its
/// answers in flight at the end are waited for up to a second (at 10 ms, 100 intervals).
const DRAIN_INTERVALS: usize = 128;

impl Series {
    pub fn new(every: Duration) -> Series {
        Series { every, from: None, intervals: Vec::new(), beyond: None }
    }

    /// The interval holding instant `at` of a window that began at `from`.
    pub(super) fn at(&mut self, from: crate::clock::Instant, at: crate::clock::Instant) -> &mut Interval {
        let from = *self.from.get_or_insert(from);
        let index = at.saturating_duration_since(from).as_nanos() / self.every.as_nanos().max(1);
        if index >= (MAX_INTERVALS + DRAIN_INTERVALS) as u128 {
            return self.beyond.get_or_insert_with(Interval::new);
        }
        while self.intervals.len() <= index as usize {
            self.intervals.push(Interval::new());
        }
        &mut self.intervals[index as usize]
    }

    pub(super) fn merge(&mut self, o: &Series) {
        self.from = match (self.from, o.from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (i, b) in o.intervals.iter().enumerate() {
            match self.intervals.get_mut(i) {
                Some(a) => a.merge(b),
                None => self.intervals.push(b.clone()),
            }
        }
        if let Some(b) = &o.beyond {
            self.beyond.get_or_insert_with(Interval::new).merge(b);
        }
    }

    /// Where interval `i` begins and ends in the window, s: the last one ends with the window
    /// (`elapsed`), not a whole interval later (nor earlier, after [`fold_short_tail`](Self::fold_short_tail)).
    pub fn span(&self, i: usize, elapsed: Duration) -> (f64, f64) {
        span(self.every.as_secs_f64(), i, self.intervals.len(), elapsed.as_secs_f64())
    }

    /// A last interval shorter than a tenth of the period (a run's window ends with its last
    /// answer, a few ms past a whole interval) goes into the one before: alone, its few
    /// operations over a few ms read as a rate many times the run's.
    pub fn fold_short_tail(&mut self, elapsed: Duration) {
        let n = self.intervals.len();
        let tail = elapsed.saturating_sub(self.every * (n.max(1) as u32 - 1));
        if n >= 2 && tail < self.every / 10 {
            let last = self.intervals.pop().expect("two or more");
            self.intervals[n - 2].merge(&last);
        }
    }
}

/// Where interval `i` of `n`, `every` s long, begins and ends in a window of `window` s: none
/// past the window; the last one, when the window ended less than a tenth of a period after
/// it (its tail folded in, [`Series::fold_short_tail`]), ends with the window.
pub fn span(every: f64, i: usize, n: usize, window: f64) -> (f64, f64) {
    let from = i as f64 * every;
    let end = from + every;
    let folded = i + 1 == n && window > end && window < end + every / 10.0;
    let to = if folded { window } else { end.min(window.max(from)) };
    (from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 s run of 1 s intervals whose window ended 3 ms after its third second (its last
    /// answer): the 3 ms of 100 operations go into the third interval, which ends at 3.003 s
    /// (they read as 33,300 ops/s alone); a tail of a tenth or more stays an interval.
    #[test]
    fn a_tail_shorter_than_a_tenth_goes_into_the_interval_before() {
        let start = crate::clock::Instant::now();
        let mut s = Series::new(Duration::from_secs(1));
        for (at_ms, n) in [(500, 16_000), (1_500, 21_000), (2_500, 18_000), (3_001, 100)] {
            for _ in 0..n {
                s.at(start, start + Duration::from_millis(at_ms)).ops += 1;
            }
        }
        let mut folded = s.clone();
        folded.fold_short_tail(Duration::from_millis(3_003));
        assert_eq!(folded.intervals.iter().map(|i| i.ops).collect::<Vec<_>>(), [16_000, 21_000, 18_100]);
        assert_eq!(folded.span(2, Duration::from_millis(3_003)), (2.0, 3.003));
        let mut kept = s;
        kept.fold_short_tail(Duration::from_millis(3_100));
        assert_eq!(kept.intervals.len(), 4);
        assert_eq!(kept.span(3, Duration::from_millis(3_100)), (3.0, 3.1));
    }
}
