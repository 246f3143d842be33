//! Gathered wake-ups, in a closed loop (`--gather`).
//!
//! An engine thread that has nothing to do sleeps in `io_uring_enter` until a completion
//! comes. Against a server slower than the client, every completion — one connection's
//! answers, a few requests' worth — wakes it once, and a wake-up costs more than the answers
//! (the sleep, the scheduler, on a VM the exits, cold caches after): against nginx's HTTP/2
//! 0.19 wake-ups a request. And the client, woken for one connection at a time, sends each
//! connection's next requests in small pieces, so the server reads them in small pieces too.
//!
//! So a thread with nothing pending and at least 8 operations out, on as many connections,
//! asks the kernel for a batch of completions (one a connection with operations out, at
//! most 1,024) but waits for it only until the window ends (Linux 6.12's `min_wait`): then
//! it takes what came, or, if nothing did, the first that comes. No completion waits longer
//! than the window, and an answer's time is read when the thread takes it, so the window is
//! how late an answer may be timed: at most `--gather` (50 µs by default) and at most
//! 1/[`GATHER_SHARE`] of the mean latency (of the first 16 measured answers, then of each
//! 5 ms); a run whose mean is under [`LEAST_MEAN`] (1 ms) does not gather at all. The report
//! gives the longest window a wait was given. Measured against nginx's h2c (64 connections ×
//! 10 streams, client on CPU 0, nginx on CPU 1, two alternating rounds): 0.21–0.23 → 0.038
//! wake-ups a request, the client's CPU 5.74–5.79 → 3.35–3.38 µs a request, nginx answering
//! 180,000–181,000 requests/s instead of 104,000–107,000 (docs/performance.md).

use crate::clock::Instant;
use crate::stats::CoreRecorder;
use std::time::Duration;

/// The window is at most this share of the mean latency (1/64: 1.6 %).
const GATHER_SHARE: u64 = 64;
/// A run whose answers take less than this on average does not gather: its window would be
/// under 16 µs, not worth its timer (one wake-up for each completion, then). Measured
/// against nginx, HTTP/1.1, 64 connections (a mean latency of 330 µs, a window of 5 µs; the
/// client on CPU 0, nginx on CPU 1, three alternating rounds of 5 s): wake-ups 0.014 → 0.0005
/// a request but the client's CPU 4.63-4.73 → 4.97-5.11 µs a request, the kernel's part
/// grown; at 256 connections (1.3 ms, a window of 20 µs) the same with and without.
const LEAST_MEAN: Duration = Duration::from_millis(1);
/// The mean is taken again this often, over the operations completed since (at least
/// [`MEAN_OF`] of them).
const EVERY: Duration = Duration::from_millis(5);
const MEAN_OF: u64 = 16;

pub(super) struct Gather {
    /// `--gather`: the longest window (zero: never gather).
    cap: Duration,
    /// The window now.
    window: Duration,
    /// When the mean is taken next, and the operations and their latencies' sum then.
    next: Instant,
    seen: (u64, u64),
}

impl Gather {
    pub fn new(cap: Duration, now: Instant) -> Gather {
        Gather { cap, window: Duration::ZERO, next: now, seen: (0, 0) }
    }

    /// How long the next wait may hold the completions that come (zero: wake for the first).
    pub fn window(&mut self, now: Instant, rec: &CoreRecorder) -> Duration {
        if self.cap.is_zero() {
            return Duration::ZERO;
        }
        if now >= self.next {
            self.next = now + EVERY;
            let (ops, sum) = (rec.ops - self.seen.0, rec.latency_total_ns.wrapping_sub(self.seen.1));
            if ops >= MEAN_OF {
                let mean = Duration::from_nanos(sum / ops);
                self.window = match mean < LEAST_MEAN {
                    true => Duration::ZERO,
                    false => (mean / GATHER_SHARE as u32).min(self.cap),
                };
                self.seen = (rec.ops, rec.latency_total_ns);
            }
        }
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window: 1/64 of the mean latency of the operations since it was last taken, within
    /// the bound, none for a mean under 1 ms, kept while too few operations came to take a mean.
    #[test]
    fn the_window_is_a_share_of_the_mean_latency_within_its_bound() {
        let start = Instant::now();
        let mut rec = CoreRecorder::new(0);
        let mut gather = Gather::new(Duration::from_micros(50), start);
        let complete = |rec: &mut CoreRecorder, n: u64, ns: u64| {
            for _ in 0..n {
                rec.ops += 1;
                rec.record_latency(ns);
            }
        };
        assert_eq!(gather.window(start, &rec), Duration::ZERO, "nothing measured yet");
        let mut at = start;
        let mut next = |gather: &mut Gather, rec: &CoreRecorder| {
            at += EVERY;
            gather.window(at, rec)
        };
        complete(&mut rec, 100, 1_280_000);
        assert_eq!(next(&mut gather, &rec), Duration::from_micros(20));
        complete(&mut rec, 100, 6_400_000);
        assert_eq!(next(&mut gather, &rec), Duration::from_micros(50), "bounded");
        complete(&mut rec, 5, 64_000);
        assert_eq!(next(&mut gather, &rec), Duration::from_micros(50), "5 are too few: kept");
        complete(&mut rec, 100, 640_000);
        assert_eq!(next(&mut gather, &rec), Duration::ZERO, "a 640 µs mean: not worth a timer");
        let mut short = Gather::new(Duration::from_micros(5), start);
        complete(&mut rec, 100, 6_400_000);
        assert_eq!(next(&mut short, &rec), Duration::from_micros(5), "a bound below 16 µs is kept");
        let mut off = Gather::new(Duration::ZERO, start);
        complete(&mut rec, 100, 6_400_000);
        assert_eq!(next(&mut off, &rec), Duration::ZERO);
    }
}
