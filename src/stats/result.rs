//! One typed result: what `bench --json` writes and `merge`, `plot` and the checks read, and
//! what `compare` and `sweep` carry per row and step. A result holds what was counted — every
//! counter, every byte by class, every histogram whole (HdrHistogram's interchange form) — and
//! the figures derived from them (rates, percentiles, per-operation bytes, the audit's
//! verdict), which [`RunResult::derive`] recomputes from the counts whenever they change.
//!
//! Results merge exactly ([`RunResult::merge`]): counts add, histograms add (percentiles come
//! from the sum, never averaged), and the merge names every field — a field added later and
//! not merged does not compile. A merged result is a result: it merges again (merge(merge(a,
//! b), c) is merge(a, b, c)), plots and checks like a run, with its runs listed beside it.
//! What cannot be merged says so in its field's comment (and the README's).

use super::encoded::{decode, encode};
use super::{Audit, ByteSplit, Handshakes, Report, Series, ratio};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Round to 3 decimals so the JSON shows measured precision, not float noise.
pub fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// A time in seconds to the microsecond: what a result keeps of a duration it derives from,
/// so that the figures derived from it are the same in the file and after reading it back.
fn secs(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

/// A histogram in a result, ns: in JSON, HdrHistogram's V2 encoding, deflated, in base64 (what
/// HdrHistogram's own libraries read); added when results merge.
#[derive(Debug, Clone, PartialEq)]
pub struct Hist(pub Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist(super::histogram())
    }
}

impl Hist {
    fn add(&mut self, o: &Hist) {
        // Values past this one's range are clamped into it (every histogram here has the same
        // range, an hour; the intervals' have fewer significant digits).
        if self.0.add(&o.0).is_err() {
            for v in o.0.iter_recorded() {
                self.0.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Percentile `q` in µs (0 when empty).
    pub fn us(&self, q: f64) -> f64 {
        if self.0.is_empty() { 0.0 } else { self.0.value_at_quantile(q) as f64 / 1e3 }
    }
}

impl Serialize for Hist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map(Hist).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Hist {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Histogram".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "An HdrHistogram (ns): V2 encoding, deflated, base64.",
        })
    }
}

/// What a result is: one run, or runs added together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Bench,
    Merge,
}

/// The result of a run, or of runs merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    #[serde(default)]
    pub kind: Kind,
    /// `--label` (the host's name by default); `None` for a merged result.
    pub label: Option<String>,
    pub target: String,
    /// With several targets (`bench URL URL …`), each one's share.
    pub targets: Option<Vec<TargetResult>>,
    pub protocol: String,
    pub engine: String,
    pub cores: Vec<usize>,
    pub connections: usize,
    pub depth: usize,
    /// The measured window, s (merged: the longest of the runs', which ran side by side).
    pub duration_s: f64,
    pub sent: u64,
    pub ops: u64,
    /// Measured operations that failed, by class, and their total.
    pub failed: BTreeMap<String, u64>,
    /// Derived: sent = completed + failed.
    #[serde(default)]
    pub accounted: bool,
    /// Derived: ops / duration_s.
    #[serde(default)]
    pub ops_per_sec: f64,
    pub messages_per_op: u64,
    /// Derived: ops × messages_per_op, and per second.
    #[serde(default)]
    pub messages: u64,
    #[serde(default)]
    pub messages_per_sec: f64,
    /// Connections that failed, by class, and their total.
    pub connection_errors: BTreeMap<String, u64>,
    /// The servers' refusals by kind (`HTTP 503`, `E_BAD_TOPIC`).
    pub failures: BTreeMap<String, u64>,
    /// Derived: each phase's spread from its histogram, µs.
    #[serde(default)]
    pub phases_us: PhasesUs,
    /// Every measured answer in the protocol's words, and the closes servers sent.
    pub status_counts: BTreeMap<String, u64>,
    pub not_successful: u64,
    /// The first few distinct error messages (merged: the first eight of all runs').
    pub error_samples: Vec<String>,
    pub connects: u64,
    pub reconnects: u64,
    /// How long after the start every connection was set up (merged: the longest).
    pub set_up_in_s: Option<f64>,
    /// `--repeat`: every run's line. Not merged (a merged result lists its runs in `runs`).
    pub repeat: Option<RepeatResult>,
    /// Paced operations that came due while their connection was busy, and that came due
    /// and were never sent.
    pub due_while_busy: u64,
    pub due_unsent: u64,
    pub tls: Option<TlsResult>,
    pub bytes: Bytes,
    /// Derived from the latency histogram, µs.
    #[serde(default)]
    pub latency_us: Spread,
    #[serde(default)]
    pub latency_uncorrected_us: Option<Spread>,
    #[serde(default)]
    pub schedule_lag_us: Option<Spread>,
    pub preflight: super::Preflight,
    pub histograms: Histograms,
    pub series: Option<SeriesResult>,
    /// Derived: generator CPU per operation, and the spread of operations over its cores.
    #[serde(default)]
    pub cpu_us_per_op: f64,
    #[serde(default)]
    pub imbalance_pct: f64,
    /// Per engine core (merged: every run's, each with its run's label).
    pub per_core: Vec<CoreResult>,
    /// The machine's drops and retransmits (merged: summed over the runs, whose machines
    /// differ; runs from one machine count them once each).
    pub kernel_net: Option<KernelNet>,
    pub audit: AuditResult,
    /// `--watch-pid`: the server's CPU and memory (merged: the first run's that has one).
    pub server_watch: Option<WatchResult>,
    /// A merged result's runs, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunLine>,
}

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

    fn of_nonempty(h: &Hist) -> Option<Spread> {
        (!h.0.is_empty()).then(|| Spread::of(h))
    }
}

/// Each phase of an operation's time, and of a connection's set-up (`None`: not recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhasesUs {
    pub connect: Option<Spread>,
    pub tls: Option<Spread>,
    pub handshake: Option<Spread>,
    pub waiting: Option<Spread>,
    pub processing: Option<Spread>,
    pub total: Option<Spread>,
}

/// Every histogram of a run whole (ns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Histograms {
    pub latency: Hist,
    pub latency_uncorrected: Hist,
    pub schedule_lag: Hist,
    pub connect: Hist,
    pub tls: Hist,
    pub handshake: Hist,
    pub waiting: Hist,
    pub processing: Hist,
}

/// Bytes on the wire by class, both ways (`tx`/`rx` and per operation derived).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bytes {
    /// Derived: everything, warm-up included.
    #[serde(default)]
    pub tx: u64,
    #[serde(default)]
    pub rx: u64,
    pub op_tx: u64,
    pub op_rx: u64,
    pub warmup_tx: u64,
    pub warmup_rx: u64,
    pub handshake_tx: u64,
    pub handshake_rx: u64,
    pub control_tx: u64,
    pub control_rx: u64,
    pub failed_tx: u64,
    pub failed_rx: u64,
    pub tls_tx: u64,
    pub tls_rx: u64,
    /// Derived: bytes of completed operations per completed operation.
    #[serde(default)]
    pub tx_per_op: f64,
    #[serde(default)]
    pub rx_per_op: f64,
}

impl Bytes {
    fn of(tx: &ByteSplit, rx: &ByteSplit) -> Bytes {
        Bytes {
            op_tx: tx.op,
            op_rx: rx.op,
            warmup_tx: tx.warmup_op,
            warmup_rx: rx.warmup_op,
            handshake_tx: tx.handshake,
            handshake_rx: rx.handshake,
            control_tx: tx.control,
            control_rx: rx.control,
            failed_tx: tx.failed,
            failed_rx: rx.failed,
            tls_tx: tx.tls,
            tls_rx: rx.tls,
            ..Bytes::default()
        }
    }

    fn derive(&mut self, ops: u64) {
        self.tx =
            self.op_tx + self.warmup_tx + self.handshake_tx + self.control_tx + self.failed_tx + self.tls_tx;
        self.rx =
            self.op_rx + self.warmup_rx + self.handshake_rx + self.control_rx + self.failed_rx + self.tls_rx;
        self.tx_per_op = r3(ratio(self.op_tx as f64, ops as f64));
        self.rx_per_op = r3(ratio(self.op_rx as f64, ops as f64));
    }

    fn merge(&mut self, o: &Bytes) {
        let Bytes {
            tx: _,
            rx: _,
            op_tx,
            op_rx,
            warmup_tx,
            warmup_rx,
            handshake_tx,
            handshake_rx,
            control_tx,
            control_rx,
            failed_tx,
            failed_rx,
            tls_tx,
            tls_rx,
            tx_per_op: _,
            rx_per_op: _,
        } = *o;
        self.op_tx += op_tx;
        self.op_rx += op_rx;
        self.warmup_tx += warmup_tx;
        self.warmup_rx += warmup_rx;
        self.handshake_tx += handshake_tx;
        self.handshake_rx += handshake_rx;
        self.control_tx += control_tx;
        self.control_rx += control_rx;
        self.failed_tx += failed_tx;
        self.failed_rx += failed_rx;
        self.tls_tx += tls_tx;
        self.tls_rx += tls_rx;
    }
}

/// Bytes in one direction by class (the plaintext or records inside TLS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Split {
    pub handshake: u64,
    pub op: u64,
    pub warmup_op: u64,
    pub failed: u64,
    pub control: u64,
    pub tls: u64,
}

impl From<ByteSplit> for Split {
    fn from(b: ByteSplit) -> Split {
        let ByteSplit { handshake, op, warmup_op, failed, control, tls } = b;
        Split { handshake, op, warmup_op, failed, control, tls }
    }
}

impl Split {
    fn merge(&mut self, o: &Split) {
        let Split { handshake, op, warmup_op, failed, control, tls } = *o;
        self.handshake += handshake;
        self.op += op;
        self.warmup_op += warmup_op;
        self.failed += failed;
        self.control += control;
        self.tls += tls;
    }
}

/// TLS handshakes of one kind and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HandshakeResult {
    pub count: u64,
    pub tx: u64,
    pub rx: u64,
    /// Derived: per handshake.
    #[serde(default)]
    pub tx_each: f64,
    #[serde(default)]
    pub rx_each: f64,
}

impl HandshakeResult {
    fn of(h: &Handshakes) -> HandshakeResult {
        HandshakeResult { count: h.count, tx: h.tx, rx: h.rx, ..HandshakeResult::default() }
    }
    fn derive(&mut self) {
        self.tx_each = r3(ratio(self.tx as f64, self.count as f64));
        self.rx_each = r3(ratio(self.rx as f64, self.count as f64));
    }
    fn merge(&mut self, o: &HandshakeResult) {
        let HandshakeResult { count, tx, rx, tx_each: _, rx_each: _ } = *o;
        self.count += count;
        self.tx += tx;
        self.rx += rx;
    }
}

/// TLS beside the wire's bytes (`bytes` holds the wire's): the plaintext by class, the records
/// by the class of what they carry, and the handshakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsResult {
    pub plain_tx: Split,
    pub plain_rx: Split,
    pub records_tx: Split,
    pub records_rx: Split,
    pub full: HandshakeResult,
    pub resumed: HandshakeResult,
    /// Derived: per completed operation.
    #[serde(default)]
    pub per_op: TlsPerOp,
}

/// TLS per completed operation: the plaintext, what the records added, and the records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsPerOp {
    pub plain_tx: f64,
    pub plain_rx: f64,
    pub overhead_tx: f64,
    pub overhead_rx: f64,
    pub records_tx: f64,
    pub records_rx: f64,
}

impl TlsResult {
    fn derive(&mut self, ops: u64, bytes: &Bytes) {
        let per = |n: u64| r3(ratio(n as f64, ops as f64));
        self.full.derive();
        self.resumed.derive();
        self.per_op = TlsPerOp {
            plain_tx: per(self.plain_tx.op),
            plain_rx: per(self.plain_rx.op),
            overhead_tx: per(bytes.op_tx.saturating_sub(self.plain_tx.op)),
            overhead_rx: per(bytes.op_rx.saturating_sub(self.plain_rx.op)),
            records_tx: per(self.records_tx.op),
            records_rx: per(self.records_rx.op),
        };
    }
    fn merge(&mut self, o: &TlsResult) {
        let TlsResult { plain_tx, plain_rx, records_tx, records_rx, full, resumed, per_op: _ } = o;
        self.plain_tx.merge(plain_tx);
        self.plain_rx.merge(plain_rx);
        self.records_tx.merge(records_tx);
        self.records_rx.merge(records_rx);
        self.full.merge(full);
        self.resumed.merge(resumed);
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

impl SeriesResult {
    fn of(s: &Series) -> SeriesResult {
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

    fn derive(&mut self, duration_s: f64) {
        let every = self.every_s;
        for (i, iv) in self.intervals.iter_mut().enumerate() {
            let from = i as f64 * every;
            iv.from_s = r3(from);
            iv.to_s = r3((from + every).min(duration_s.max(from)));
            let nonempty = !iv.histogram.0.is_empty();
            iv.p50_us = nonempty.then(|| r3(iv.histogram.us(0.5)));
            iv.p99_us = nonempty.then(|| r3(iv.histogram.us(0.99)));
        }
    }

    /// Interval by interval (the runs' windows are taken to start together: `--start-at`).
    fn merge(&mut self, o: &SeriesResult) {
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
}

impl CoreResult {
    fn derive(&mut self) {
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
    /// byte counted was on a socket closed and looked at.
    #[serde(rename = "match", default)]
    pub matches: bool,
}

impl AuditResult {
    fn of(a: &Audit) -> AuditResult {
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

    fn derive(&mut self, bytes: &Bytes) {
        self.matches = self.app_tx == self.kernel_tx
            && self.app_rx == self.kernel_rx
            && bytes.tx == self.app_tx + self.inexact_tx
            && bytes.rx == self.app_rx + self.inexact_rx;
    }

    fn merge(&mut self, o: &AuditResult) {
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

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatRun {
    pub ops: u64,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors: u64,
    pub cpu_us_per_op: f64,
}

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

/// One run of a merged result, in a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunLine {
    pub label: String,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub latency_us: Spread,
    pub errors: u64,
    pub audit_match: bool,
}

/// What a run was, for its result: what `bench` says about itself beside the counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub label: Option<String>,
    pub target: String,
    pub also: Vec<String>,
    pub protocol: String,
    pub engine: String,
    pub cores: Vec<usize>,
    pub connections: usize,
    pub depth: usize,
    pub messages_per_op: u64,
}

fn add_counts(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += v;
    }
}

/// Per class, without the one that cannot happen there, and a `total` (derived).
fn classes(counts: &crate::outcome::ClassCounts, skip: crate::outcome::ErrorClass) -> BTreeMap<String, u64> {
    crate::outcome::ErrorClass::ALL
        .into_iter()
        .filter(|c| *c != skip)
        .map(|c| (c.name().to_string(), counts.get(c)))
        .collect()
}

/// The total of a class map (its `total` entry left out).
pub fn class_total(m: &BTreeMap<String, u64>) -> u64 {
    m.iter().filter(|(k, _)| k.as_str() != "total").map(|(_, v)| v).sum()
}

/// How many distinct error messages a result keeps.
const MAX_ERROR_SAMPLES: usize = 8;

impl RunResult {
    /// The result of a run: what it counted, and what it was.
    pub fn of(ran: &Ran, r: &Report) -> RunResult {
        let targets = (!r.targets.is_empty()).then(|| {
            std::iter::once(&ran.target)
                .chain(&ran.also)
                .zip(&r.targets)
                .map(|(url, t)| TargetResult {
                    url: url.clone(),
                    sent: t.sent,
                    ops: t.ops,
                    failed: 0,
                    latency_us: Spread::default(),
                    histogram: Hist(t.latency.clone()),
                })
                .collect()
        });
        let repeat = r.repeats.as_ref().map(|rep| {
            let spread = |values: Vec<f64>| {
                let s = super::Spread::of(&values);
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
        });
        let t = &r.tls;
        let tls = t.used().then(|| TlsResult {
            plain_tx: t.plain_tx.into(),
            plain_rx: t.plain_rx.into(),
            records_tx: t.records_tx.into(),
            records_rx: t.records_rx.into(),
            full: HandshakeResult::of(&t.full),
            resumed: HandshakeResult::of(&t.resumed),
            per_op: TlsPerOp::default(),
        });
        let mut result = RunResult {
            kind: Kind::Bench,
            label: ran.label.clone(),
            target: ran.target.clone(),
            targets,
            protocol: ran.protocol.clone(),
            engine: ran.engine.clone(),
            cores: ran.cores.clone(),
            connections: ran.connections,
            depth: ran.depth,
            duration_s: secs(r.elapsed),
            sent: r.sent,
            ops: r.ops,
            failed: classes(&r.failed, crate::outcome::ErrorClass::Connect),
            accounted: false,
            ops_per_sec: 0.0,
            messages_per_op: ran.messages_per_op,
            messages: 0,
            messages_per_sec: 0.0,
            connection_errors: classes(&r.conn_errors, crate::outcome::ErrorClass::Status),
            failures: r.failures.iter().map(|(f, n)| (f.to_string(), *n)).collect(),
            phases_us: PhasesUs::default(),
            status_counts: r.answers.sorted().iter().map(|(a, n)| (a.to_string(), *n)).collect(),
            not_successful: r.answers.unsuccessful(),
            error_samples: r.error_samples.clone(),
            connects: r.connects,
            reconnects: r.reconnects,
            set_up_in_s: r.set_up_in.map(secs),
            repeat,
            due_while_busy: r.due_while_busy,
            due_unsent: r.due_unsent,
            tls,
            bytes: Bytes::of(&r.tx, &r.rx),
            latency_us: Spread::default(),
            latency_uncorrected_us: None,
            schedule_lag_us: None,
            preflight: r.preflight,
            histograms: Histograms {
                latency: Hist(r.latency.clone()),
                latency_uncorrected: Hist(r.latency_uncorrected.clone()),
                schedule_lag: Hist(r.schedule_lag.clone()),
                connect: Hist(r.phases.connect.clone()),
                tls: Hist(r.phases.tls.clone()),
                handshake: Hist(r.phases.handshake.clone()),
                waiting: Hist(r.phases.waiting.clone()),
                processing: Hist(r.phases.processing.clone()),
            },
            series: r.series.as_ref().map(SeriesResult::of),
            cpu_us_per_op: 0.0,
            imbalance_pct: 0.0,
            per_core: r
                .per_core
                .iter()
                .map(|c| CoreResult {
                    run: None,
                    core: c.core,
                    ops: c.ops,
                    cpu_s: secs(c.cpu),
                    wall_s: secs(c.wall),
                    steal_s: c.steal.map(secs),
                    spin_s: secs(c.spin),
                    cpu_util: 0.0,
                    cpu_us_per_op: 0.0,
                    steal_pct: None,
                    spin_pct: 0.0,
                })
                .collect(),
            kernel_net: r.net.map(|n| KernelNet {
                backlog_drops: n.backlog_drops,
                retransmits: n.retransmits,
                window: r
                    .window_net
                    .map(|(a, b)| b.since(a))
                    .map(|w| NetWindow { backlog_drops: w.backlog_drops, retransmits: w.retransmits }),
            }),
            audit: AuditResult::of(&r.audit),
            server_watch: None,
            runs: Vec::new(),
        };
        result.derive();
        result
    }

    /// Recompute every derived figure from the counts (after building or merging; a result
    /// read from a file has them recomputed too, whatever the file said).
    pub fn derive(&mut self) {
        self.failed.remove("total");
        self.connection_errors.remove("total");
        let failed = class_total(&self.failed);
        let conn_errors = class_total(&self.connection_errors);
        self.failed.insert("total".into(), failed);
        self.connection_errors.insert("total".into(), conn_errors);
        self.accounted = self.sent == self.ops + failed;
        self.ops_per_sec = r3(ratio(self.ops as f64, self.duration_s));
        self.messages = self.ops * self.messages_per_op;
        self.messages_per_sec = r3(self.ops_per_sec * self.messages_per_op as f64);
        let h = &self.histograms;
        self.phases_us = PhasesUs {
            connect: Spread::of_nonempty(&h.connect),
            tls: Spread::of_nonempty(&h.tls),
            handshake: Spread::of_nonempty(&h.handshake),
            waiting: Spread::of_nonempty(&h.waiting),
            processing: Spread::of_nonempty(&h.processing),
            total: Spread::of_nonempty(&h.latency),
        };
        self.latency_us = Spread::of(&h.latency);
        self.latency_uncorrected_us = Spread::of_nonempty(&h.latency_uncorrected);
        self.schedule_lag_us = Spread::of_nonempty(&h.schedule_lag);
        self.bytes.derive(self.ops);
        if let Some(tls) = &mut self.tls {
            tls.derive(self.ops, &self.bytes);
        }
        if let Some(targets) = &mut self.targets {
            for t in targets {
                t.failed = t.sent.saturating_sub(t.ops);
                t.latency_us = Spread::of(&t.histogram);
            }
        }
        if let Some(series) = &mut self.series {
            series.derive(self.duration_s);
        }
        for c in &mut self.per_core {
            c.derive();
        }
        let cpu: f64 = self.per_core.iter().map(|c| c.cpu_s).sum();
        self.cpu_us_per_op = r3(ratio(cpu * 1e6, self.ops as f64));
        self.imbalance_pct =
            r3(super::imbalance_pct(&self.per_core.iter().map(|c| c.ops).collect::<Vec<_>>()));
        self.audit.derive(&self.bytes);
    }

    /// Failed operations and failed connections.
    pub fn errors(&self) -> u64 {
        class_total(&self.failed) + class_total(&self.connection_errors)
    }

    /// This result as a line of a merged result's `runs` (a merged one: its own lines).
    fn lines(&self) -> Vec<RunLine> {
        if self.kind == Kind::Merge {
            return self.runs.clone();
        }
        vec![RunLine {
            label: self.label.clone().unwrap_or_else(|| self.target.clone()),
            ops: self.ops,
            ops_per_sec: self.ops_per_sec,
            latency_us: self.latency_us,
            errors: self.errors(),
            audit_match: self.audit.matches,
        }]
    }

    /// Add `other` to this result: runs of one load from several hosts, side by side. Every
    /// field is named here: counts and histograms add, the window is the longest, the lists
    /// are joined; what cannot be added is said.
    pub fn merge(&mut self, other: &RunResult) {
        let runs = [self.lines(), other.lines()].concat();
        let own_label = self.label.clone();
        let RunResult {
            kind: _,
            label: _,
            // The load must be one (checked by the caller unless forced): the first's.
            target: _,
            targets,
            protocol: _,
            engine,
            cores,
            connections,
            depth,
            duration_s,
            sent,
            ops,
            failed,
            accounted: _,
            ops_per_sec: _,
            messages_per_op: _,
            messages: _,
            messages_per_sec: _,
            connection_errors,
            failures,
            phases_us: _,
            status_counts,
            not_successful,
            error_samples,
            connects,
            reconnects,
            set_up_in_s,
            repeat: _,
            due_while_busy,
            due_unsent,
            tls,
            bytes,
            latency_us: _,
            latency_uncorrected_us: _,
            schedule_lag_us: _,
            preflight,
            histograms,
            series,
            cpu_us_per_op: _,
            imbalance_pct: _,
            per_core,
            kernel_net,
            audit,
            server_watch,
            runs: _,
        } = other;
        if self.kind == Kind::Bench {
            // The first run's cores carry its label from now on.
            for c in &mut self.per_core {
                c.run = c.run.take().or_else(|| own_label.clone());
            }
        }
        self.kind = Kind::Merge;
        self.label = None;
        self.runs = runs;
        if let Some(theirs) = targets {
            let ours = self.targets.get_or_insert_with(Vec::new);
            for t in theirs {
                match ours.iter_mut().find(|o| o.url == t.url) {
                    Some(o) => {
                        o.sent += t.sent;
                        o.ops += t.ops;
                        o.histogram.add(&t.histogram);
                    }
                    None => ours.push(t.clone()),
                }
            }
        }
        if &self.engine != engine && !self.engine.split('+').any(|e| e == engine) {
            self.engine = format!("{}+{engine}", self.engine);
        }
        for c in cores {
            if !self.cores.contains(c) {
                self.cores.push(*c);
            }
        }
        self.cores.sort_unstable();
        self.connections += connections;
        self.depth = self.depth.max(*depth);
        self.duration_s = self.duration_s.max(*duration_s);
        self.sent += sent;
        self.ops += ops;
        add_counts(&mut self.failed, failed);
        add_counts(&mut self.connection_errors, connection_errors);
        add_counts(&mut self.failures, failures);
        add_counts(&mut self.status_counts, status_counts);
        self.not_successful += not_successful;
        for s in error_samples {
            if self.error_samples.len() < MAX_ERROR_SAMPLES && !self.error_samples.contains(s) {
                self.error_samples.push(s.clone());
            }
        }
        self.connects += connects;
        self.reconnects += reconnects;
        self.set_up_in_s = match (self.set_up_in_s, set_up_in_s) {
            (Some(a), Some(b)) => Some(a.max(*b)),
            (a, b) => a.or(*b),
        };
        // A merged result is not a repeat: its runs are in `runs`.
        self.repeat = None;
        self.due_while_busy += due_while_busy;
        self.due_unsent += due_unsent;
        match (&mut self.tls, tls) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(*b),
            _ => {}
        }
        self.bytes.merge(bytes);
        self.preflight.connections += preflight.connections;
        self.preflight.tx += preflight.tx;
        self.preflight.rx += preflight.rx;
        let Histograms {
            latency,
            latency_uncorrected,
            schedule_lag,
            connect,
            tls,
            handshake,
            waiting,
            processing,
        } = histograms;
        let h = &mut self.histograms;
        h.latency.add(latency);
        h.latency_uncorrected.add(latency_uncorrected);
        h.schedule_lag.add(schedule_lag);
        h.connect.add(connect);
        h.tls.add(tls);
        h.handshake.add(handshake);
        h.waiting.add(waiting);
        h.processing.add(processing);
        match (&mut self.series, series) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
        let label = other.label.clone();
        self.per_core.extend(
            per_core.iter().map(|c| CoreResult { run: c.run.clone().or_else(|| label.clone()), ..c.clone() }),
        );
        self.kernel_net = match (self.kernel_net, kernel_net) {
            (Some(a), Some(b)) => Some(KernelNet {
                backlog_drops: a.backlog_drops + b.backlog_drops,
                retransmits: a.retransmits + b.retransmits,
                window: match (a.window, b.window) {
                    (Some(x), Some(y)) => Some(NetWindow {
                        backlog_drops: x.backlog_drops + y.backlog_drops,
                        retransmits: x.retransmits + y.retransmits,
                    }),
                    (x, y) => x.or(y),
                },
            }),
            (a, b) => a.or(*b),
        };
        self.audit.merge(audit);
        if self.server_watch.is_none() {
            self.server_watch = server_watch.clone();
        }
        self.derive();
    }

    /// `results` added together, in order (`None`: there were none).
    pub fn merge_all<'a>(results: impl IntoIterator<Item = &'a RunResult>) -> Option<RunResult> {
        let mut results = results.into_iter();
        let mut total = results.next()?.clone();
        for r in results {
            total.merge(r);
        }
        Some(total)
    }
}

/// Results made by hand, for the tests of what reads them (the renderers, merge).
#[cfg(test)]
pub mod fixtures {
    use super::*;
    use crate::outcome::{Answer, ErrorClass, Failure};
    use crate::stats::{CoreRecorder, Traffic};
    use std::time::Duration;

    /// A run's result from a recorder filled by hand: `ops` answered (latencies from
    /// `latency_ns` up, a nanosecond apart), one refused with a 503, one lost to a timeout,
    /// one failed connect; 100 bytes out and 50 in per operation; 10 ms of CPU a second.
    pub fn run(label: &str, ops: u64, latency_ns: u64, secs: u64) -> RunResult {
        let mut c = CoreRecorder::new(0).with_series(Some(Duration::from_secs(1)));
        let t0 = crate::clock::Instant::now();
        for i in 0..ops {
            c.sent += 1;
            c.ops += 1;
            c.record_latency(latency_ns + i);
            c.series_op(t0, t0 + Duration::from_millis(i % (secs * 1000)), latency_ns + i);
            c.tx.add(Traffic::Op, 100);
            c.rx.add(Traffic::Op, 50);
            c.answered(Answer::Status(200));
        }
        c.sent += 2;
        c.refused(Failure::Status(503));
        c.ops_failed(ErrorClass::Timeout, 1);
        c.conn_error(ErrorClass::Connect, || "connect: refused".into());
        c.connects = 3;
        c.tx.add(Traffic::Handshake, 7);
        c.audit.add(
            100 * ops + 7,
            50 * ops,
            Ok(crate::stats::KernelSocket { tx: 100 * ops + 7, rx: 50 * ops, ..Default::default() }),
        );
        c.cpu = Duration::from_millis(10 * secs);
        c.wall = Duration::from_secs(secs);
        let report = Report::merge(vec![c], Duration::from_nanos(secs * 1_000_000_000 - 1_234_567));
        let ran = Ran {
            label: Some(label.into()),
            target: "http://t/".into(),
            also: vec![],
            protocol: "http1".into(),
            engine: "uring".into(),
            cores: vec![0],
            connections: 4,
            depth: 1,
            messages_per_op: 1,
        };
        RunResult::of(&ran, &report)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::run;
    use super::*;

    /// A result written and read back, as `merge` reads it.
    fn round_trip(r: &RunResult) -> RunResult {
        let text = serde_json::to_string(r).unwrap();
        let mut back: RunResult = serde_json::from_str(&text).unwrap();
        back.derive();
        back
    }

    #[test]
    fn a_result_survives_its_json_exactly() {
        let a = run("a", 1000, 20_000, 2);
        assert_eq!(round_trip(&a), a);
        assert_eq!((a.sent, a.ops, a.failed["total"], a.connection_errors["total"]), (1002, 1000, 2, 1));
        assert!(a.accounted && a.audit.matches, "{:?}", a.audit);
        assert_eq!(a.duration_s, 1.998765, "to the microsecond");
        assert_eq!(a.ops_per_sec, r3(1000.0 / 1.998765));
        assert_eq!((a.bytes.tx_per_op, a.bytes.rx_per_op), (100.0, 50.0));
        assert_eq!(a.status_counts["200"], 1000);
        assert_eq!(a.failures["HTTP 503"], 1);
    }

    #[test]
    fn a_merge_of_merges_is_the_merge_of_all_and_adds_every_count() {
        let (a, b, c) = (run("a", 1000, 20_000, 2), run("b", 500, 90_000, 3), run("c", 10, 1_000_000, 1));
        let ab = round_trip(&RunResult::merge_all([&a, &b]).unwrap());
        let ab_c = round_trip(&RunResult::merge_all([&ab, &c]).unwrap());
        let abc = round_trip(&RunResult::merge_all([&a, &b, &c]).unwrap());
        assert_eq!(ab_c, abc);
        assert_eq!(abc.kind, Kind::Merge);
        assert_eq!(abc.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!((abc.sent, abc.ops), (a.sent + b.sent + c.sent, 1510));
        assert_eq!(abc.failed["timeout"], 3);
        assert_eq!(abc.failed["status"], 3);
        assert_eq!(abc.connection_errors["connect"], 3);
        assert_eq!(abc.failures["HTTP 503"], 3);
        assert_eq!(abc.status_counts["200"], 1510);
        assert_eq!(abc.bytes.op_tx, 151_000);
        assert_eq!(abc.bytes.handshake_tx, 21);
        assert_eq!(abc.audit.sockets, 3);
        assert!(abc.audit.matches && abc.accounted);
        assert_eq!(abc.duration_s, 2.998765, "side by side: the longest window");
        assert_eq!(abc.per_core.len(), 3);
        assert_eq!(abc.per_core[2].run.as_deref(), Some("c"));
        // The percentiles are those of every sample together.
        let mut all = a.histograms.latency.clone();
        all.add(&b.histograms.latency);
        all.add(&c.histograms.latency);
        assert_eq!(abc.histograms.latency, all);
        assert_eq!(abc.latency_us.p99, Spread::of(&all).p99);
        assert_eq!(abc.latency_us.count, 1510);
        let series = abc.series.as_ref().unwrap();
        assert_eq!(series.intervals.iter().map(|i| i.ops).sum::<u64>(), 1510);
    }
}
