//! When each connection's next operation is due: the only thing a workload decides.
//!
//! The engine's connection loop asks its [`Pacer`] for the intended send time of the next
//! operation and sends it then (never earlier). Latency is measured from that intended time, so a
//! paced workload that falls behind shows the queueing it caused (wrk2's correction); in a closed
//! loop the intended time is simply "now". New modes (fixed rate, per-connection interval,
//! connection per operation) belong here and need no second copy of the engine's loop.

use std::time::{Duration, Instant};

/// How operations are paced; one value for the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Each connection keeps `depth` operations in flight and sends the next one as soon as a
    /// response frees a slot (wrk, ab, wsbench).
    ClosedLoop,
}

impl Workload {
    /// The pacer of one connection.
    pub fn pacer(self) -> Pacer {
        Pacer { workload: self }
    }
}

/// One connection's schedule.
#[derive(Debug, Clone)]
pub struct Pacer {
    workload: Workload,
}

impl Pacer {
    /// The intended send time of the next operation, given the time now.
    pub fn next_due(&mut self, now: Instant) -> Instant {
        match self.workload {
            Workload::ClosedLoop => now,
        }
    }

    /// How long the engine may wait for a free slot before re-asking; closed loops never wait.
    pub fn idle_wait(&self) -> Option<Duration> {
        match self.workload {
            Workload::ClosedLoop => None,
        }
    }
}

/// When a connection stops sending: at a time, after a number of operations, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Operations this connection sends in the measured window (`-n` split across connections).
    pub ops: Option<u64>,
    /// No operation is sent at or after this instant.
    pub deadline: Instant,
    /// Operations intended before this instant are warm-up: sent, audited, not reported.
    pub measure_from: Instant,
}

/// Split `total` operations over `parts` connections as evenly as possible (the first
/// `total % parts` get one more).
pub fn split_ops(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts.max(1) as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_is_due_now() {
        let mut p = Workload::ClosedLoop.pacer();
        let now = Instant::now();
        assert_eq!(p.next_due(now), now);
        assert_eq!(p.idle_wait(), None);
    }

    #[test]
    fn ops_split_evenly_and_add_up() {
        let parts: Vec<u64> = (0..7).map(|i| split_ops(100, 7, i)).collect();
        assert_eq!(parts.iter().sum::<u64>(), 100);
        assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
        assert_eq!(split_ops(3, 5, 4), 0);
    }
}
