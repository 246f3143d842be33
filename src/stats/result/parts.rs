//! The parts of a result: bytes by class, TLS, the series, cores, the audit, repeats, the
//! server watched; each with how it is derived from its counts and how it merges.

use super::Bytes;
use super::{Hist, add_counts, r3};
use crate::stats::{Audit, Series, ratio};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One target's share of a run with several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TargetResult {
    pub url: String,
    pub sent: u64,
    pub ops: u64,
    /// Derived: sent − ops, and the latency's percentiles.
    #[serde(default)]
    pub failed: u64,
    #[serde(default)]
    pub latency_us: Spread,
    pub histogram: Hist,
}

/// What the cores' openers did (`--connect-rate auto`, or without `--connect-rate` past a
/// core's first 1,024 openings; rates in connections per second, the sum over the cores;
/// merged: over the runs too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutoRateResult {
    pub peak_per_s: f64,
    pub final_per_s: f64,
    /// Times a core halved its rate (a set-up slower than 1 s, or failed).
    pub decreases: u64,
}

impl AutoRateResult {
    pub fn of(t: &crate::opener::Totals) -> AutoRateResult {
        AutoRateResult { peak_per_s: t.peak, final_per_s: t.last, decreases: t.decreases }
    }

    pub fn add(&mut self, other: &AutoRateResult) {
        let AutoRateResult { peak_per_s, final_per_s, decreases } = other;
        self.peak_per_s += peak_per_s;
        self.final_per_s += final_per_s;
        self.decreases += decreases;
    }
}

/// One kind of `--requests` entry's share of a run (entries under one label).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KindResult {
    pub label: String,
    /// How many of the file's entries it holds.
    pub entries: usize,
    pub sent: u64,
    pub ops: u64,
    /// Wire bytes of its completed operations, each way (with TLS, their records).
    pub tx: u64,
    pub rx: u64,
    /// Derived: sent − ops, bytes per completed operation each way, the latency's percentiles.
    #[serde(default)]
    pub failed: u64,
    #[serde(default)]
    pub tx_per_op: f64,
    #[serde(default)]
    pub rx_per_op: f64,
    #[serde(default)]
    pub latency_us: Spread,
    pub histogram: Hist,
}

impl KindResult {
    pub fn of(label: &str, entries: usize, t: &crate::stats::ShareTally) -> KindResult {
        KindResult {
            label: label.to_string(),
            entries,
            sent: t.sent,
            ops: t.ops,
            tx: t.tx,
            rx: t.rx,
            failed: 0,
            tx_per_op: 0.0,
            rx_per_op: 0.0,
            latency_us: Spread::default(),
            histogram: Hist(t.latency.clone()),
        }
    }

    /// Another run's share of the same kind, added (every field named).
    pub fn add(&mut self, other: &KindResult) {
        let KindResult {
            label: _,
            entries: _,
            sent,
            ops,
            tx,
            rx,
            histogram,
            failed: _,
            tx_per_op: _,
            rx_per_op: _,
            latency_us: _,
        } = other;
        self.sent += sent;
        self.ops += ops;
        self.tx += tx;
        self.rx += rx;
        self.histogram.add(histogram);
    }

    pub fn derive(&mut self) {
        self.failed = self.sent.saturating_sub(self.ops);
        let per = |n: u64| if self.ops == 0 { 0.0 } else { n as f64 / self.ops as f64 };
        self.tx_per_op = per(self.tx);
        self.rx_per_op = per(self.rx);
        self.latency_us = Spread::of(&self.histogram);
    }
}

/// count, min, mean, standard deviation, percentiles and max of a histogram, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub sd: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(h: &Hist) -> Spread {
        let h = &h.0;
        if h.is_empty() {
            return Spread::default();
        }
        let us = |ns: f64| r3(ns / 1e3);
        Spread {
            count: h.len(),
            min: us(h.min() as f64),
            mean: us(h.mean()),
            sd: us(h.stdev()),
            p50: us(h.value_at_quantile(0.5) as f64),
            p90: us(h.value_at_quantile(0.9) as f64),
            p99: us(h.value_at_quantile(0.99) as f64),
            p999: us(h.value_at_quantile(0.999) as f64),
            max: us(h.max() as f64),
        }
    }

    pub(super) fn of_nonempty(h: &Hist) -> Option<Spread> {
        (!h.0.is_empty()).then(|| Spread::of(h))
    }
}

/// Each phase of an operation's time, and of a connection's set-up (`None`: not recorded),
/// and the whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhasesUs {
    #[serde(flatten)]
    pub phases: crate::stats::PhaseSet<Option<Spread>>,
    pub total: Option<Spread>,
}

/// Every histogram of a run whole (ns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Histograms {
    pub latency: Hist,
    pub latency_uncorrected: Hist,
    pub schedule_lag: Hist,
    #[serde(flatten)]
    pub phases: crate::stats::PhaseSet<Hist>,
}

impl Histograms {
    /// Every histogram added to its twin.
    pub(super) fn merge(&mut self, o: &Histograms) {
        let Histograms { latency, latency_uncorrected, schedule_lag, phases } = o;
        self.latency.add(latency);
        self.latency_uncorrected.add(latency_uncorrected);
        self.schedule_lag.add(schedule_lag);
        self.phases.merge_with(phases, Hist::add);
    }
}

/// `--report-every`: the window cut into intervals of `every_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeriesResult {
    pub every_s: f64,
    pub intervals: Vec<IntervalResult>,
    /// Operations after the last interval kept.
    pub beyond: Option<Beyond>,
}

/// One interval: where it lies in the window (the last one ends with the window), its
/// operations, errors and latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntervalResult {
    /// Derived: from the interval's index and the window's length.
    #[serde(default)]
    pub from_s: f64,
    #[serde(default)]
    pub to_s: f64,
    pub ops: u64,
    pub errors: u64,
    /// Derived from the histogram; `None` when the interval saw no operation complete.
    #[serde(default)]
    pub p50_us: Option<f64>,
    #[serde(default)]
    pub p99_us: Option<f64>,
    pub histogram: Hist,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Beyond {
    pub ops: u64,
    pub errors: u64,
}

impl IntervalResult {
    /// Its latency at quantile `q`, µs; `None` when nothing completed in it.
    fn quantile_us(&self, q: f64) -> Option<f64> {
        (!self.histogram.0.is_empty()).then(|| r3(self.histogram.us(q)))
    }
}

impl SeriesResult {
    pub(super) fn of(s: &Series) -> SeriesResult {
        SeriesResult {
            every_s: s.every.as_secs_f64(),
            intervals: s
                .intervals
                .iter()
                .map(|iv| IntervalResult {
                    from_s: 0.0,
                    to_s: 0.0,
                    ops: iv.ops,
                    errors: iv.errors,
                    p50_us: None,
                    p99_us: None,
                    histogram: Hist(iv.latency.clone()),
                })
                .collect(),
            beyond: s.beyond.as_ref().map(|b| Beyond { ops: b.ops, errors: b.errors }),
        }
    }

    /// Each interval as a line's: its start, rate and p99, in a window of `duration_s`.
    pub(super) fn lines(&self, duration_s: f64) -> Vec<super::LineInterval> {
        let (every, n) = (self.every_s, self.intervals.len());
        self.intervals
            .iter()
            .enumerate()
            .map(|(i, iv)| {
                let (from, to) = crate::stats::series::span(every, i, n, duration_s);
                super::LineInterval {
                    from_s: r3(from),
                    ops_per_sec: r3(iv.ops as f64 / (to - from).max(1e-9)),
                    p99_us: iv.quantile_us(0.99),
                }
            })
            .collect()
    }

    pub(super) fn derive(&mut self, duration_s: f64) {
        let (every, n) = (self.every_s, self.intervals.len());
        for (i, iv) in self.intervals.iter_mut().enumerate() {
            let (from, to) = crate::stats::series::span(every, i, n, duration_s);
            iv.from_s = r3(from);
            iv.to_s = r3(to);
            iv.p50_us = iv.quantile_us(0.5);
            iv.p99_us = iv.quantile_us(0.99);
        }
    }

    /// Interval by interval (the runs' windows are taken to start together: `--start-at`).
    pub(super) fn merge(&mut self, o: &SeriesResult) {
        let SeriesResult { every_s, intervals, beyond } = o;
        // Intervals of different lengths do not line up: kept as the first's.
        if (every_s - self.every_s).abs() > 1e-9 {
            return;
        }
        for (i, b) in intervals.iter().enumerate() {
            match self.intervals.get_mut(i) {
                Some(a) => {
                    let IntervalResult { from_s: _, to_s: _, ops, errors, p50_us: _, p99_us: _, histogram } =
                        b;
                    a.ops += ops;
                    a.errors += errors;
                    a.histogram.add(histogram);
                }
                None => self.intervals.push(b.clone()),
            }
        }
        if let Some(b) = beyond {
            let a = self.beyond.get_or_insert_with(Beyond::default);
            a.ops += b.ops;
            a.errors += b.errors;
        }
    }
}

/// One engine core's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CoreResult {
    /// The run it belongs to (merged results; `None` in a run's own).
    #[serde(default)]
    pub run: Option<String>,
    pub core: usize,
    pub ops: u64,
    /// CPU time the engine thread used in the window, its wall time, the hypervisor's steal
    /// and the time it stayed awake for paced sends, s.
    pub cpu_s: f64,
    pub wall_s: f64,
    pub steal_s: Option<f64>,
    pub spin_s: f64,
    /// Derived.
    #[serde(default)]
    pub cpu_util: f64,
    #[serde(default)]
    pub cpu_us_per_op: f64,
    #[serde(default)]
    pub steal_pct: Option<f64>,
    #[serde(default)]
    pub spin_pct: f64,
    /// The longest a gathered wake-up let an answer wait before it was read and timed, µs
    /// (`--gather`; 0: every completion woke the engine).
    #[serde(default)]
    pub gathered_us: f64,
}

impl CoreResult {
    pub(super) fn of(c: &crate::stats::CoreSummary) -> CoreResult {
        CoreResult {
            run: None,
            core: c.core,
            ops: c.ops,
            cpu_s: super::secs(c.cpu),
            wall_s: super::secs(c.wall),
            steal_s: c.steal.map(super::secs),
            spin_s: super::secs(c.spin),
            cpu_util: 0.0,
            cpu_us_per_op: 0.0,
            steal_pct: None,
            spin_pct: 0.0,
            gathered_us: r3(c.gathered.as_secs_f64() * 1e6),
        }
    }

    pub(super) fn derive(&mut self) {
        self.cpu_util = r3(ratio(self.cpu_s, self.wall_s));
        self.cpu_us_per_op = r3(ratio(self.cpu_s * 1e6, self.ops as f64));
        self.steal_pct = self.steal_s.map(|s| r3(100.0 * ratio(s, self.wall_s)));
        self.spin_pct = r3(100.0 * ratio(self.spin_s, self.wall_s));
    }
}

/// The machine's network drops and retransmits: over the run, and inside its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KernelNet {
    pub backlog_drops: u64,
    pub retransmits: u64,
    pub window: Option<NetWindow>,
    /// UDP datagrams in and out, and dropped at a full receive buffer, machine-wide over the
    /// run (beside a QUIC run's own counts: the kernel keeps none per socket).
    #[serde(default)]
    pub udp: UdpNet,
}

/// The machine's UDP datagrams over a run (`/proc/net/snmp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UdpNet {
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub receive_buffer_drops: u64,
}

impl KernelNet {
    /// Two machines' counters, summed.
    pub(super) fn merged(a: Option<KernelNet>, b: Option<KernelNet>) -> Option<KernelNet> {
        match (a, b) {
            (Some(a), Some(b)) => Some(KernelNet {
                backlog_drops: a.backlog_drops + b.backlog_drops,
                retransmits: a.retransmits + b.retransmits,
                udp: UdpNet {
                    datagrams_in: a.udp.datagrams_in + b.udp.datagrams_in,
                    datagrams_out: a.udp.datagrams_out + b.udp.datagrams_out,
                    receive_buffer_drops: a.udp.receive_buffer_drops + b.udp.receive_buffer_drops,
                },
                window: match (a.window, b.window) {
                    (Some(x), Some(y)) => Some(NetWindow {
                        backlog_drops: x.backlog_drops + y.backlog_drops,
                        retransmits: x.retransmits + y.retransmits,
                    }),
                    (x, y) => x.or(y),
                },
            }),
            (a, b) => a.or(b),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NetWindow {
    pub backlog_drops: u64,
    pub retransmits: u64,
}

/// The application's byte counts against the kernel's, over every socket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditResult {
    pub app_tx: u64,
    pub app_rx: u64,
    pub kernel_tx: u64,
    pub kernel_rx: u64,
    pub kernel_unacked: u64,
    pub segs_out: u64,
    pub segs_in: u64,
    pub retransmits: u64,
    pub sockets: u64,
    /// Sockets that could not be checked, by reason, and the application's bytes on them.
    pub inexact: BTreeMap<String, u64>,
    pub inexact_tx: u64,
    pub inexact_rx: u64,
    /// Derived: the kernel's counts equal the application's on every socket read, and every
    /// byte counted was on a socket closed and looked at — and at least one socket could be
    /// read, when bytes moved (a run on UDP alone checked nothing: no match).
    #[serde(rename = "match", default)]
    pub matches: bool,
}

impl AuditResult {
    pub(super) fn of(a: &Audit) -> AuditResult {
        AuditResult {
            app_tx: a.app_tx,
            app_rx: a.app_rx,
            kernel_tx: a.kernel.tx,
            kernel_rx: a.kernel.rx,
            kernel_unacked: a.kernel.unacked,
            segs_out: a.kernel.segs_out,
            segs_in: a.kernel.segs_in,
            retransmits: a.kernel.retrans,
            sockets: a.sockets,
            inexact: a.inexact.iter().map(|(k, n)| (k.name().to_string(), *n)).collect(),
            inexact_tx: a.inexact_tx,
            inexact_rx: a.inexact_rx,
            matches: false,
        }
    }

    pub(super) fn derive(&mut self, bytes: &Bytes) {
        self.matches = self.app_tx == self.kernel_tx
            && self.app_rx == self.kernel_rx
            && bytes.tx == self.app_tx + self.inexact_tx
            && bytes.rx == self.app_rx + self.inexact_rx
            && !self.unchecked();
    }

    /// The audit's verdict in a word: `match`, `DIFFER`, or `unchecked` (nothing it could
    /// check against the kernel: UDP's sockets, Unix sockets).
    pub fn word(&self) -> &'static str {
        if self.unchecked() {
            "unchecked"
        } else if self.matches {
            "match"
        } else {
            "DIFFER"
        }
    }

    /// Bytes moved, and none on a socket whose counts could be read (UDP, Unix): nothing checked.
    pub fn unchecked(&self) -> bool {
        self.sockets == 0 && self.inexact_tx + self.inexact_rx > 0
    }

    pub(super) fn merge(&mut self, o: &AuditResult) {
        let AuditResult {
            app_tx,
            app_rx,
            kernel_tx,
            kernel_rx,
            kernel_unacked,
            segs_out,
            segs_in,
            retransmits,
            sockets,
            inexact,
            inexact_tx,
            inexact_rx,
            matches: _,
        } = o;
        self.app_tx += app_tx;
        self.app_rx += app_rx;
        self.kernel_tx += kernel_tx;
        self.kernel_rx += kernel_rx;
        self.kernel_unacked += kernel_unacked;
        self.segs_out += segs_out;
        self.segs_in += segs_in;
        self.retransmits += retransmits;
        self.sockets += sockets;
        add_counts(&mut self.inexact, inexact);
        self.inexact_tx += inexact_tx;
        self.inexact_rx += inexact_rx;
    }
}

/// `--repeat`: each run's line, which one the result is, and the spread of ops/s and p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatResult {
    pub runs: Vec<RepeatRun>,
    /// 1-based.
    pub median_run: usize,
    pub ops_per_sec: RepeatSpread,
    pub p99_us: RepeatSpread,
}

impl RepeatResult {
    pub(super) fn of(rep: &crate::stats::Repeats) -> RepeatResult {
        let spread = |values: Vec<f64>| {
            let s = crate::stats::Spread::of(&values);
            RepeatSpread {
                median: r3(s.median),
                min: r3(s.min),
                max: r3(s.max),
                spread_pct: r3(s.spread_pct),
            }
        };
        RepeatResult {
            runs: rep
                .runs
                .iter()
                .map(|x| RepeatRun {
                    ops: x.ops,
                    ops_per_sec: r3(x.ops_per_sec),
                    p50_us: r3(x.p50_us),
                    p99_us: r3(x.p99_us),
                    errors: x.errors,
                    cpu_us_per_op: r3(x.cpu_us_per_op),
                })
                .collect(),
            median_run: rep.median + 1,
            ops_per_sec: spread(rep.runs.iter().map(|x| x.ops_per_sec).collect()),
            p99_us: spread(rep.runs.iter().map(|x| x.p99_us).collect()),
        }
    }
}

/// One run of several, as `stats` summed it up.
pub type RepeatRun = crate::stats::RunSummary;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatSpread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub spread_pct: f64,
}

/// A server's CPU and memory over a run (`--watch-pid`, `watch --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WatchResult {
    pub pid: u32,
    pub samples: usize,
    pub cpu_pct: MinMeanMax,
    pub rss_kib: MinMeanMax,
    /// Mean CPU % per CPU.
    pub per_cpu_pct: BTreeMap<String, f64>,
    /// Peak RSS / the machine's memory, % (`watch`; `None` where MemTotal is unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_pct: Option<f64>,
}

/// What `watch --json` writes: `kind` says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WatchFile {
    pub kind: WatchKind,
    pub duration_s: f64,
    #[serde(flatten)]
    pub watch: WatchResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WatchKind {
    Watch,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MinMeanMax {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl WatchResult {
    pub fn of(w: &crate::watch::WatchReport) -> WatchResult {
        let spread =
            |s: crate::watch::Spread| MinMeanMax { min: r3(s.min), mean: r3(s.mean), max: r3(s.max) };
        WatchResult {
            pid: w.pid,
            samples: w.samples,
            cpu_pct: spread(w.cpu_pct),
            rss_kib: spread(w.rss_kib),
            per_cpu_pct: w.per_cpu_pct.iter().map(|(c, p)| (c.to_string(), r3(*p))).collect(),
            mem_pct: None,
        }
    }
}

/// One stage of a `--rate` schedule and what it measured: the intervals of the series that fall
/// in it, added (an operation counts in the stage whose time it completed in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageResult {
    /// The offered rate, ops/s, at its start and its end (equal: a step).
    pub from_rate: f64,
    pub to_rate: f64,
    /// Where it lies in the measured window, s.
    pub from_s: f64,
    pub to_s: f64,
    /// Derived from the series.
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub ops_per_sec: f64,
    #[serde(default)]
    pub latency_us: Option<Spread>,
}

impl StageResult {
    /// A stage from `from_s` to `to_s` s into the window, offering `from_rate` to `to_rate`.
    pub fn new(from_rate: f64, to_rate: f64, from_s: f64, to_s: f64) -> StageResult {
        StageResult {
            from_rate,
            to_rate,
            from_s: r3(from_s),
            to_s: r3(to_s),
            ops: 0,
            errors: 0,
            ops_per_sec: 0.0,
            latency_us: None,
        }
    }

    /// Its figures, from the intervals of `series` that start within it. (The intervals
    /// are cut at the stages' edges; the last may run past the window's end, when a tail too
    /// short for an interval of its own was folded into it: it is still the last stage's.)
    pub(super) fn derive(&mut self, series: Option<&SeriesResult>) {
        let mut h = Hist::default();
        let (mut ops, mut errors) = (0, 0);
        for i in series.into_iter().flat_map(|s| &s.intervals) {
            if i.from_s + 1e-6 >= self.from_s && i.from_s + 1e-6 < self.to_s {
                ops += i.ops;
                errors += i.errors;
                h.add(&i.histogram);
            }
        }
        self.ops = ops;
        self.errors = errors;
        self.ops_per_sec = r3(ratio(ops as f64, self.to_s - self.from_s));
        self.latency_us = Spread::of_nonempty(&h);
    }
}
