//! A latency histogram's counts without its bookkeeping: what an operation's completion records
//! into, folded into the [`hdrhistogram`] histograms the reports read once the core is done.
//!
//! `Histogram::record` also checks its range, keeps the minimum, the maximum and the total, and
//! returns a `Result`: about 100 instructions, and each measured operation records three to
//! five values. A `Tally` uses the very same buckets (values in ns from 1, three significant
//! digits: 2,048 sub-buckets a power of two) and only counts, ~15 instructions; [`drain_into`]
//! then records each bucket's count at the bucket's lowest value, which the histogram files in
//! the same bucket — so the histogram, its minimum and maximum (both reported as bucket bounds)
//! and every percentile come out exactly as if each value had been recorded there directly
//! (the tests compare them against `hdrhistogram` itself).
//!
//! [`drain_into`]: Tally::drain_into

use super::MAX_LATENCY_NS;
use hdrhistogram::Histogram;

/// log2 of half the sub-buckets per bucket: 2,048 sub-buckets for 3 significant digits.
const HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// 64 − log2(sub-buckets): the leading zeros of a value in bucket 0.
const LEADING_ZERO_BASE: u32 = 64 - (HALF_MAGNITUDE + 1);

#[derive(Debug, Clone)]
pub struct Tally {
    counts: Vec<u64>,
    recorded: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally { counts: vec![0; index(MAX_LATENCY_NS) + 1], recorded: 0 }
    }
}

/// The bucket of `value` (≥ 1), as `hdrhistogram` indexes it for a histogram whose lowest
/// discernible value is 1.
#[inline]
fn index(value: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = (value >> bucket) as usize;
    ((bucket as usize + 1) << HALF_MAGNITUDE) + sub_bucket - (1 << HALF_MAGNITUDE)
}

/// The lowest value of bucket `index` (the inverse of [`index`]).
fn lowest(index: usize) -> u64 {
    let half = 1usize << HALF_MAGNITUDE;
    let bucket = (index >> HALF_MAGNITUDE) as isize - 1;
    let sub_bucket = (index & (half - 1)) + half;
    match bucket {
        b if b < 0 => (sub_bucket - half) as u64,
        b => (sub_bucket as u64) << b,
    }
}

impl Tally {
    /// Count `ns`, clamped into the histograms' range (1 ns to an hour).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[index(ns.clamp(1, MAX_LATENCY_NS))] += 1;
        self.recorded += 1;
    }

    /// Move the counts into `h` (one of [`super::histogram`]'s) and start again from zero.
    pub fn drain_into(&mut self, h: &mut Histogram<u64>) {
        if self.recorded == 0 {
            return;
        }
        for (i, count) in self.counts.iter_mut().enumerate().filter(|(_, c)| **c > 0) {
            h.saturating_record_n(lowest(i), *count);
            *count = 0;
        }
        self.recorded = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram;

    #[test]
    fn every_bucket_maps_back_to_itself() {
        for i in 0..Tally::default().counts.len() {
            assert_eq!(index(lowest(i).max(1)), i.max(1), "bucket {i}");
        }
    }

    #[test]
    fn a_drained_tally_is_the_histogram_the_values_would_have_made() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut tally = Tally::default();
        let mut direct = histogram();
        // Values over every magnitude, the edges of the range and beyond it included.
        let mut values =
            vec![0, 1, 2, 2047, 2048, 2049, 4095, 4096, MAX_LATENCY_NS, MAX_LATENCY_NS + 1, u64::MAX];
        values.extend((0..100_000).map(|_| {
            let magnitude = rng.u32(1..43);
            rng.u64(1..1 << magnitude)
        }));
        for &v in &values {
            tally.record(v);
            direct.saturating_record(v.clamp(1, MAX_LATENCY_NS));
        }
        let mut drained = histogram();
        tally.drain_into(&mut drained);
        assert!(drained == direct, "the same counts in the same buckets");
        assert_eq!((drained.len(), drained.min(), drained.max()), (direct.len(), direct.min(), direct.max()));
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(drained.value_at_quantile(q), direct.value_at_quantile(q), "quantile {q}");
        }
        assert_eq!(drained.mean(), direct.mean());
        let mut again = histogram();
        tally.drain_into(&mut again);
        assert!(again.is_empty(), "drained means emptied");
    }
}
