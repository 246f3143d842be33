//! Numbers: what each core recorded during a run, and their merge into one report.
//!
//! Each engine thread owns a [`CoreRecorder`] (histogram and plain counters, no atomics, no
//! locks); after the run the recorders are merged into a [`Report`]. Nothing here knows how the
//! numbers were produced: the engine counts bytes where its syscalls returned them and hands
//! them over with the class ([`Traffic`]) they belong to.

use crate::proto::{ErrorClass, Failure};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// Latencies are recorded in nanoseconds with 3 significant digits, up to this bound (larger
/// values are clamped to it; a run's per-operation timeout is far below).
const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// Which part of a connection's life some bytes belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Per-connection set-up (WebSocket upgrade, NSQ magic and IDENTIFY).
    Handshake,
    /// An operation sent in the measured window, or its response.
    Op,
    /// An operation sent during warm-up, or its response: in the audit, not in per-op figures.
    WarmupOp,
    /// Anything else: heartbeats, pings, closes, bytes left undecoded when a connection ended.
    Control,
}

/// Bytes in one direction, by [`Traffic`] class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByteSplit {
    pub handshake: u64,
    pub op: u64,
    pub warmup_op: u64,
    pub control: u64,
}

impl ByteSplit {
    pub fn add(&mut self, traffic: Traffic, n: u64) {
        match traffic {
            Traffic::Handshake => self.handshake += n,
            Traffic::Op => self.op += n,
            Traffic::WarmupOp => self.warmup_op += n,
            Traffic::Control => self.control += n,
        }
    }
    /// Everything, warm-up included: what the kernel must have counted too.
    pub fn total(&self) -> u64 {
        self.handshake + self.op + self.warmup_op + self.control
    }
    fn merge(&mut self, other: &ByteSplit) {
        self.handshake += other.handshake;
        self.op += other.op;
        self.warmup_op += other.warmup_op;
        self.control += other.control;
    }
}

/// What the kernel counted for the connections, read with `TCP_INFO` before each close.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u64,
    pub segs_in: u64,
    /// Sockets whose counters were read; one that could not be read makes the audit incomplete.
    pub sockets: u64,
    pub unreadable: u64,
}

impl KernelCounts {
    fn merge(&mut self, o: &KernelCounts) {
        self.bytes_acked += o.bytes_acked;
        self.bytes_received += o.bytes_received;
        self.segs_out += o.segs_out;
        self.segs_in += o.segs_in;
        self.sockets += o.sockets;
        self.unreadable += o.unreadable;
    }
}

/// Everything one engine thread records. Owned by that thread alone.
#[derive(Debug, Clone)]
pub struct CoreRecorder {
    pub core: usize,
    /// Operations completed in the measured window (failed ones included in `errors`, not here).
    pub ops: u64,
    /// Latency from the intended send time, ns.
    pub latency: Histogram<u64>,
    /// Latency from the actual send time, ns: kept for paced workloads only (in a closed loop
    /// the two are the same), where it shows what coordinated omission would have hidden.
    pub latency_uncorrected: Histogram<u64>,
    pub errors: BTreeMap<ErrorClass, u64>,
    /// The servers' refusals by kind (HTTP status, NSQ error code), for the summary.
    pub failures: BTreeMap<Failure, u64>,
    /// The first few distinct error messages, so the user reads what happened, not just a count.
    pub error_samples: Vec<String>,
    pub tx: ByteSplit,
    pub rx: ByteSplit,
    pub connects: u64,
    pub reconnects: u64,
    pub kernel: KernelCounts,
    /// CPU time (user + system) the engine thread used, and the wall time it ran.
    pub cpu: Duration,
    pub wall: Duration,
}

/// How many distinct error messages a core keeps.
const MAX_ERROR_SAMPLES: usize = 8;

impl CoreRecorder {
    pub fn new(core: usize) -> Self {
        CoreRecorder {
            core,
            ops: 0,
            latency: Histogram::new_with_max(MAX_LATENCY_NS, 3).expect("static histogram bounds"),
            latency_uncorrected: Histogram::new_with_max(MAX_LATENCY_NS, 3).expect("static histogram bounds"),
            errors: BTreeMap::new(),
            failures: BTreeMap::new(),
            error_samples: Vec::new(),
            tx: ByteSplit::default(),
            rx: ByteSplit::default(),
            connects: 0,
            reconnects: 0,
            kernel: KernelCounts::default(),
            cpu: Duration::ZERO,
            wall: Duration::ZERO,
        }
    }

    pub fn record_latency(&mut self, ns: u64) {
        self.latency.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
    }

    pub fn record_uncorrected(&mut self, ns: u64) {
        self.latency_uncorrected.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
    }

    /// Count an error of `class`, keeping its message if it is new.
    pub fn error(&mut self, class: ErrorClass, message: impl FnOnce() -> String) {
        *self.errors.entry(class).or_default() += 1;
        if self.error_samples.len() < MAX_ERROR_SAMPLES {
            let text = format!("{}: {}", class.name(), message());
            if !self.error_samples.contains(&text) {
                self.error_samples.push(text);
            }
        }
    }

    pub fn failure(&mut self, failure: Failure) {
        *self.failures.entry(failure).or_default() += 1;
        self.error(failure.class(), || failure.to_string());
    }
}

/// Per-core figures kept apart in the report so that imbalance stays visible.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSummary {
    pub core: usize,
    pub ops: u64,
    pub cpu: Duration,
    pub wall: Duration,
}

impl CoreSummary {
    /// Share of the thread's wall time spent on a CPU, 0..1.
    pub fn cpu_util(&self) -> f64 {
        ratio(self.cpu.as_secs_f64(), self.wall.as_secs_f64())
    }
    pub fn cpu_us_per_op(&self) -> f64 {
        ratio(self.cpu.as_secs_f64() * 1e6, self.ops as f64)
    }
}

/// All cores merged: their totals (a recorder of its own, read through `Deref`: `report.tx`,
/// `report.ops`), the measured window, and each core's figures kept apart.
#[derive(Debug, Clone)]
pub struct Report {
    pub totals: CoreRecorder,
    /// Measured window: from the end of warm-up until the last connection finished.
    pub elapsed: Duration,
    pub per_core: Vec<CoreSummary>,
}

impl std::ops::Deref for Report {
    type Target = CoreRecorder;
    fn deref(&self) -> &CoreRecorder {
        &self.totals
    }
}

impl CoreRecorder {
    /// Add another core's figures to these (its CPU and wall time stay in its summary).
    pub fn absorb(&mut self, c: &CoreRecorder) {
        self.ops += c.ops;
        self.latency.add(&c.latency).expect("same histogram bounds");
        self.latency_uncorrected.add(&c.latency_uncorrected).expect("same histogram bounds");
        for (k, v) in &c.errors {
            *self.errors.entry(*k).or_default() += v;
        }
        for (k, v) in &c.failures {
            *self.failures.entry(*k).or_default() += v;
        }
        for s in &c.error_samples {
            if self.error_samples.len() < MAX_ERROR_SAMPLES && !self.error_samples.contains(s) {
                self.error_samples.push(s.clone());
            }
        }
        self.tx.merge(&c.tx);
        self.rx.merge(&c.rx);
        self.connects += c.connects;
        self.reconnects += c.reconnects;
        self.kernel.merge(&c.kernel);
    }
}

impl Report {
    pub fn merge(cores: Vec<CoreRecorder>, elapsed: Duration) -> Report {
        let mut totals = CoreRecorder::new(usize::MAX);
        for c in &cores {
            totals.absorb(c);
        }
        let per_core = cores
            .iter()
            .map(|c| CoreSummary { core: c.core, ops: c.ops, cpu: c.cpu, wall: c.wall })
            .collect();
        Report { totals, elapsed, per_core }
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }
    pub fn error_count(&self, class: ErrorClass) -> u64 {
        self.errors.get(&class).copied().unwrap_or(0)
    }
    pub fn ops_per_sec(&self) -> f64 {
        ratio(self.ops as f64, self.elapsed.as_secs_f64())
    }
    pub fn tx_per_op(&self) -> f64 {
        ratio(self.tx.op as f64, self.ops as f64)
    }
    pub fn rx_per_op(&self) -> f64 {
        ratio(self.rx.op as f64, self.ops as f64)
    }
    /// Latency percentile in microseconds (0 when nothing was recorded).
    pub fn latency_us(&self, quantile: f64) -> f64 {
        if self.latency.is_empty() { 0.0 } else { self.latency.value_at_quantile(quantile) as f64 / 1e3 }
    }
    /// The app's byte totals equal the kernel's, both ways, with every socket read.
    pub fn audit_matches(&self) -> bool {
        self.kernel.unreadable == 0
            && self.tx.total() == self.kernel.bytes_acked
            && self.rx.total() == self.kernel.bytes_received
    }
    /// Generator CPU per operation over all engine threads.
    pub fn cpu_us_per_op(&self) -> f64 {
        let cpu: f64 = self.per_core.iter().map(|c| c.cpu.as_secs_f64()).sum();
        ratio(cpu * 1e6, self.ops as f64)
    }
    /// Spread of operations across cores: (max − min) / mean, in percent.
    pub fn imbalance_pct(&self) -> f64 {
        imbalance_pct(&self.per_core.iter().map(|c| c.ops).collect::<Vec<_>>())
    }
}

/// (max − min) / mean × 100 of the given counts; 0 for fewer than two or all zero.
pub fn imbalance_pct(counts: &[u64]) -> f64 {
    if counts.len() < 2 {
        return 0.0;
    }
    let max = *counts.iter().max().unwrap_or(&0) as f64;
    let min = *counts.iter().min().unwrap_or(&0) as f64;
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    ratio((max - min) * 100.0, mean)
}

/// a / b, or 0 where b is 0 (an empty run prints zeros, never NaN or infinity).
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sums_and_keeps_cores_apart() {
        let mut a = CoreRecorder::new(0);
        a.ops = 10;
        a.record_latency(1_000);
        a.tx.add(Traffic::Op, 100);
        a.tx.add(Traffic::WarmupOp, 7);
        a.rx.add(Traffic::Op, 50);
        a.kernel = KernelCounts { bytes_acked: 107, bytes_received: 50, sockets: 1, ..Default::default() };
        let mut b = CoreRecorder::new(1);
        b.ops = 30;
        b.record_latency(3_000);
        b.error(ErrorClass::Read, || "reset".into());
        b.tx.add(Traffic::Op, 300);
        b.rx.add(Traffic::Op, 150);
        b.rx.add(Traffic::Control, 1);
        b.kernel = KernelCounts { bytes_acked: 300, bytes_received: 151, sockets: 1, ..Default::default() };
        let r = Report::merge(vec![a, b], Duration::from_secs(2));
        assert_eq!(r.ops, 40);
        assert_eq!(r.ops_per_sec(), 20.0);
        assert_eq!(r.tx_per_op(), 10.0);
        assert_eq!(r.rx_per_op(), 5.0);
        assert_eq!(r.errors_total(), 1);
        assert!(r.audit_matches());
        assert_eq!(r.per_core.len(), 2);
        assert_eq!(r.imbalance_pct(), 100.0);
    }

    #[test]
    fn audit_notices_a_difference() {
        let mut a = CoreRecorder::new(0);
        a.tx.add(Traffic::Op, 10);
        a.kernel = KernelCounts { bytes_acked: 9, sockets: 1, ..Default::default() };
        assert!(!Report::merge(vec![a], Duration::from_secs(1)).audit_matches());
    }

    #[test]
    fn imbalance_arithmetic() {
        assert_eq!(imbalance_pct(&[100, 100]), 0.0);
        assert_eq!(imbalance_pct(&[50, 150]), 100.0);
        assert_eq!(imbalance_pct(&[5]), 0.0);
        assert_eq!(imbalance_pct(&[0, 0]), 0.0);
    }
}
