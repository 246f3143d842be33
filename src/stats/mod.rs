//! Numbers: what each core recorded during a run, and their merge into one report.
//!
//! Each engine thread owns a [`CoreRecorder`] (histogram and plain counters, no atomics, no
//! locks); after the run the recorders are merged into a [`Report`]. Nothing here knows how the
//! numbers were produced: the engine counts bytes where its syscalls returned them and hands
//! them over with the class ([`Traffic`]) they belong to.

mod audit;
mod bytes;
pub mod encoded;
mod layers;
pub mod live;
mod net;
pub mod result;
pub mod series;
mod server;
mod tally;

pub use audit::{Audit, Inexact, KernelSocket, SocketAudit};
pub use bytes::{ByteSplit, Datagrams, Handshakes, TlsTally, Traffic};
pub use layers::{LayerBytes, LayerCount, Layers, merge_into as layers_merge_into};
pub use net::NetCounters;
pub use series::{Interval, MAX_INTERVALS, Series};
pub use server::ServerTally;
pub use tally::Tally;

use crate::outcome::{Answer, AnswerCounts, ClassCounts, ErrorClass, Failure};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// Latencies are recorded in nanoseconds with 3 significant digits, up to this bound (larger
/// values are clamped to it; a run's per-operation timeout is far below).
const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// A latency histogram: ns, 3 significant digits, up to an hour.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_max(MAX_LATENCY_NS, 3).expect("static histogram bounds")
}

/// Record a duration in `h`, clamped into its range.
fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_nanos() as u64).clamp(1, MAX_LATENCY_NS));
}

/// A value per phase of an operation's time (and of its connection's set-up): a histogram
/// each while a run goes ([`Phases`], ns), in a result (`Histograms`), or their spreads in its
/// JSON (`PhasesUs`, µs). One declaration, so the phases are named once.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct PhaseSet<T> {
    /// SYN to established, per connection (per operation with a connection per operation).
    pub connect: T,
    /// The TLS handshake, per TLS connection (connected, or NSQ's `tls_v1` upgrade asked, to
    /// the server's `Finished` read); empty without TLS.
    pub tls: T,
    /// Connected (or TLS established) to the protocol's set-up done (WebSocket upgrade, NSQ
    /// `IDENTIFY`, Socket.IO join), per connection; empty for protocols without one. NSQ's
    /// `tls_v1` upgrade happens inside this phase; its TLS handshake is in `tls` too.
    pub handshake: T,
    /// The request fully written to the first byte of its answer, per operation.
    pub waiting: T,
    /// The request's first byte sent to its answer's last byte received, per operation.
    pub processing: T,
}

impl<T> PhaseSet<T> {
    /// Each phase's value made by `f`.
    pub fn map<U>(&self, mut f: impl FnMut(&T) -> U) -> PhaseSet<U> {
        PhaseSet {
            connect: f(&self.connect),
            tls: f(&self.tls),
            handshake: f(&self.handshake),
            waiting: f(&self.waiting),
            processing: f(&self.processing),
        }
    }

    /// Each phase's value beside `other`'s, for `f` to merge.
    pub fn merge_with(&mut self, other: &PhaseSet<T>, mut f: impl FnMut(&mut T, &T)) {
        f(&mut self.connect, &other.connect);
        f(&mut self.tls, &other.tls);
        f(&mut self.handshake, &other.handshake);
        f(&mut self.waiting, &other.waiting);
        f(&mut self.processing, &other.processing);
    }
}

/// Where an operation's time goes while a run goes, each phase in its own histogram (ns); the
/// whole, from the intended start to the last byte, is [`CoreRecorder::latency`].
pub type Phases = PhaseSet<Histogram<u64>>;

impl PhaseSet<Histogram<u64>> {
    /// Empty histograms, one per phase.
    pub fn empty() -> Phases {
        let h = histogram();
        PhaseSet {
            connect: h.clone(),
            tls: h.clone(),
            handshake: h.clone(),
            waiting: h.clone(),
            processing: h,
        }
    }
    pub fn connect(&mut self, d: Duration) {
        record(&mut self.connect, d);
    }
    pub fn tls(&mut self, d: Duration) {
        record(&mut self.tls, d);
    }
    pub fn handshake(&mut self, d: Duration) {
        record(&mut self.handshake, d);
    }
    fn merge(&mut self, o: &Phases) {
        self.merge_with(o, |a, b| a.add(b).expect("same histogram bounds"));
    }
}

/// What a core counts per measured operation before [`CoreRecorder::settle`] folds it in.
#[derive(Debug, Clone, Default)]
struct Staged {
    latency: Tally,
    processing: Tally,
    waiting: Tally,
}

/// The most of a server's first bytes kept for a verdict.
pub const FIRST_BYTES_KEPT: usize = 64;

/// Everything one engine thread records. Owned by that thread alone.
#[derive(Debug, Clone)]
pub struct CoreRecorder {
    pub core: usize,
    /// Measured operations sent. Every one ends exactly once: `sent = ops + failed.total()`.
    pub sent: u64,
    /// Measured operations completed successfully.
    pub ops: u64,
    /// Measured operations that failed, by class (refused by the server, or lost with their
    /// connection: one count per operation).
    pub failed: ClassCounts,
    /// Connections that failed, by class (one count per connection, whatever it had in flight).
    pub conn_errors: ClassCounts,
    /// Latency from the intended send time, ns.
    pub latency: Histogram<u64>,
    /// Latency from the actual send time, ns: kept for paced workloads only (in a closed loop
    /// the two are the same), where it shows what coordinated omission would have hidden.
    pub latency_uncorrected: Histogram<u64>,
    /// Paced workloads: how late each measured operation went out (actual send − intended
    /// send; with a connection per operation, its connect), ns. What an open loop that keeps
    /// its schedule holds near zero.
    pub schedule_lag: Histogram<u64>,
    /// Paced operations that came due while their connection was still busy (in its set-up,
    /// or `depth` answers outstanding): their wait is the server's, in the corrected latency,
    /// and not in `schedule_lag`.
    pub due_while_busy: u64,
    /// Paced operations that came due before the run's end and were never sent (their
    /// connections still waited for answers, or could not connect): the schedule the server
    /// did not let the generator keep. wrk2 leaves them out.
    pub due_unsent: u64,
    /// The parts of each measured operation's time, and of each connection's set-up.
    pub phases: Phases,
    /// Each measured operation's latency, processing and waiting, counted as it completes and
    /// folded into `latency` and `phases` by [`settle`](Self::settle) (see [`Tally`]).
    staged: Staged,
    /// The servers' refusals by kind (HTTP status, NSQ error code), for the summary.
    pub failures: BTreeMap<Failure, u64>,
    /// Every measured answer in the protocol's words (HTTP statuses, NSQ responses), and the
    /// codes of the WebSocket Closes servers sent.
    pub answers: AnswerCounts,
    /// The first few distinct error messages, so the user reads what happened, not just a count.
    pub error_samples: Vec<String>,
    /// The first bytes a server sent on the first connection that ended without an answer
    /// (at most [`FIRST_BYTES_KEPT`]): what a target that speaks another protocol says, for
    /// the verdict of a run that completed nothing.
    pub first_bytes: Option<Vec<u8>>,
    /// Bytes on the wire (what the kernel carried), by class: with TLS, each record counts
    /// with what it carries (see [`TlsTally`] for the plaintext beside it).
    pub tx: ByteSplit,
    pub rx: ByteSplit,
    /// TLS: plaintext, records and handshakes (all zero without TLS).
    pub tls: TlsTally,
    /// Operation bytes by the protocol's layers, where its codec counts them (HTTP/2, gRPC).
    pub layers: Option<Layers>,
    /// How many times the core copied its figures for the live view (`--tui`,
    /// `--metrics-listen`): a connection that sees it change gives the layers its codec
    /// counted since to `layers` (otherwise it gives them when it closes).
    pub live_epoch: u32,
    /// Datagrams each way, on the UDP engine (QUIC); zero on TCP.
    pub datagrams: Datagrams,
    pub connects: u64,
    pub reconnects: u64,
    pub audit: Audit,
    /// CPU time (user + system) the engine thread used, and the wall time it ran.
    pub cpu: Duration,
    pub wall: Duration,
    /// Time the hypervisor gave the engine's CPU to someone else during the run (`None`: not
    /// known); timing figures include it.
    pub steal: Option<Duration>,
    /// Of `cpu`, the time the engine stayed awake with nothing to do, for a paced send due
    /// within its spin window (the `uring` engine): chosen, not load.
    pub spin: Duration,
    /// The sum of the measured operations' latencies, ns (with `ops`, their mean): what the
    /// `uring` engine sizes its gathered wake-ups by (`--gather`).
    pub latency_total_ns: u64,
    /// The longest a gathered wake-up let a completion wait (`--gather`): how late an answer
    /// may have been read, and so timed, at most.
    pub gathered: Duration,
    /// When the last measured operation ended (completed or failed): the measured window ends
    /// there, not when the last socket closed (closing a million takes half a minute).
    pub last_end: Option<crate::clock::Instant>,
    /// When the first measured operation was sent: where the window really began on this core
    /// (a fleet's hosts compare it).
    pub first_sent: Option<crate::clock::Instant>,
    /// The machine's network counters at the window's opening and at its last operation (to
    /// within 100 ms): drops and retransmits inside the window, not the set-up's or close's.
    pub window_net: Option<(NetCounters, NetCounters)>,
    /// Per target, with several (empty with one: the totals are its figures).
    pub targets: Vec<ShareTally>,
    /// Per kind of `--requests` entry (empty without the file).
    pub kinds: Vec<ShareTally>,
    /// `--connect-rate auto`: this core's opener. Not a figure: the one state the connection
    /// machines of a core share, carried here because every one of them is handed the
    /// recorder; what it did is reported (its peak rate and its decreases).
    pub opener: Option<crate::opener::Opener>,
    /// The openers of the cores absorbed (a report's totals).
    pub openers: Option<crate::opener::Totals>,
    /// `--report-every`: the measured window cut into intervals.
    pub series: Option<Series>,
}

/// One share of a run's operations — a target's of a run with several (`bench URL URL …`), or
/// a kind's of `--requests` entries: its measured operations sent and completed (the rest
/// failed: every operation ends once), the wire bytes of the completed ones each way, and
/// their latency.
#[derive(Debug, Clone)]
pub struct ShareTally {
    pub sent: u64,
    pub ops: u64,
    pub tx: u64,
    pub rx: u64,
    pub latency: Histogram<u64>,
}

impl Default for ShareTally {
    fn default() -> Self {
        ShareTally { sent: 0, ops: 0, tx: 0, rx: 0, latency: histogram() }
    }
}

impl ShareTally {
    fn add(&mut self, b: &ShareTally) {
        self.sent += b.sent;
        self.ops += b.ops;
        self.tx += b.tx;
        self.rx += b.rx;
        self.latency.add(&b.latency).expect("same histogram bounds");
    }

    fn completed(&mut self, ns: u64, tx: u64, rx: u64) {
        self.ops += 1;
        self.tx += tx;
        self.rx += rx;
        self.latency.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
    }

    pub fn failed(&self) -> u64 {
        self.sent - self.ops
    }
}

/// How many distinct error messages a core keeps.
const MAX_ERROR_SAMPLES: usize = 8;

impl CoreRecorder {
    pub fn new(core: usize) -> Self {
        CoreRecorder {
            core,
            sent: 0,
            ops: 0,
            failed: ClassCounts::default(),
            conn_errors: ClassCounts::default(),
            latency: histogram(),
            latency_uncorrected: histogram(),
            schedule_lag: histogram(),
            due_while_busy: 0,
            due_unsent: 0,
            phases: Phases::empty(),
            staged: Staged::default(),
            failures: BTreeMap::new(),
            answers: AnswerCounts::default(),
            error_samples: Vec::new(),
            first_bytes: None,
            tx: ByteSplit::default(),
            rx: ByteSplit::default(),
            tls: TlsTally::default(),
            layers: None,
            live_epoch: 0,
            datagrams: Datagrams::default(),
            connects: 0,
            reconnects: 0,
            audit: Audit::default(),
            cpu: Duration::ZERO,
            wall: Duration::ZERO,
            steal: None,
            spin: Duration::ZERO,
            latency_total_ns: 0,
            gathered: Duration::ZERO,
            last_end: None,
            first_sent: None,
            window_net: None,
            targets: Vec::new(),
            kinds: Vec::new(),
            opener: None,
            openers: None,
            series: None,
        }
    }

    /// A measured operation of a window that began at `from` completed at `at` after `ns`.
    pub fn series_op(&mut self, from: crate::clock::Instant, at: crate::clock::Instant, ns: u64) {
        self.ended_at(at);
        if let Some(series) = &mut self.series {
            let i = series.at(from, at);
            i.ops += 1;
            i.latency.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
        }
    }

    /// `n` measured operations of a window that began at `from` failed at `at`.
    pub fn series_errors(&mut self, from: crate::clock::Instant, at: crate::clock::Instant, n: u64) {
        if n > 0 {
            self.ended_at(at);
        }
        if let Some(series) = &mut self.series
            && n > 0
        {
            series.at(from, at).errors += n;
        }
    }

    /// Measured operations sent and not yet ended (completed or failed).
    pub fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.ops + self.failed.total())
    }

    /// A measured operation ended at `at`.
    fn ended_at(&mut self, at: crate::clock::Instant) {
        if self.last_end.is_none_or(|end| end < at) {
            self.last_end = Some(at);
        }
    }

    /// A core's recorder for a run on `targets` targets (kept apart when more than one) with
    /// `kinds` kinds of `--requests` entries (0: no file).
    pub fn for_shares(core: usize, targets: usize, kinds: usize) -> Self {
        let mut rec = CoreRecorder::new(core);
        if targets > 1 {
            rec.targets = vec![ShareTally::default(); targets];
        }
        rec.kinds = vec![ShareTally::default(); kinds];
        rec
    }

    /// Keep a time series of intervals of `every` (`--report-every`).
    pub fn with_series(mut self, every: Option<Duration>) -> Self {
        self.series = every.map(Series::new);
        self
    }

    /// A measured operation of kind `kind` was sent to `target`.
    #[inline]
    pub fn share_sent(&mut self, target: usize, kind: usize) {
        if let Some(t) = self.targets.get_mut(target) {
            t.sent += 1;
        }
        if let Some(k) = self.kinds.get_mut(kind) {
            k.sent += 1;
        }
    }

    /// A measured operation of kind `kind` to `target` completed after `ns`, having written
    /// `tx` bytes and read `rx`.
    #[inline]
    pub fn share_completed(&mut self, target: usize, kind: usize, ns: u64, tx: u64, rx: u64) {
        if let Some(t) = self.targets.get_mut(target) {
            t.completed(ns, tx, rx);
        }
        if let Some(k) = self.kinds.get_mut(kind) {
            k.completed(ns, tx, rx);
        }
    }

    pub fn record_latency(&mut self, ns: u64) {
        self.staged.latency.record(ns);
        self.latency_total_ns = self.latency_total_ns.wrapping_add(ns);
    }

    /// A measured operation's time from its request's first byte sent to its answer's last
    /// byte, and (when its request was written whole) from then to its answer's first byte.
    pub fn record_phases(&mut self, processing: Duration, waiting: Option<Duration>) {
        self.staged.processing.record(processing.as_nanos() as u64);
        if let Some(waiting) = waiting {
            self.staged.waiting.record(waiting.as_nanos() as u64);
        }
    }

    /// Fold the operations counted since into the histograms the reports read.
    pub fn settle(&mut self) {
        self.staged.latency.drain_into(&mut self.latency);
        self.staged.processing.drain_into(&mut self.phases.processing);
        self.staged.waiting.drain_into(&mut self.phases.waiting);
    }

    pub fn record_uncorrected(&mut self, ns: u64) {
        self.latency_uncorrected.saturating_record(ns.clamp(1, MAX_LATENCY_NS));
    }

    pub fn record_lag(&mut self, lag: Duration) {
        record(&mut self.schedule_lag, lag);
    }

    /// Keep an error message if it is new (and there is room).
    pub fn sample(&mut self, message: impl FnOnce() -> String) {
        if self.error_samples.len() < MAX_ERROR_SAMPLES {
            let text = message();
            if !self.error_samples.contains(&text) {
                self.error_samples.push(text);
            }
        }
    }

    /// A connection failed with `class`.
    pub fn conn_error(&mut self, class: ErrorClass, message: impl FnOnce() -> String) {
        self.conn_errors.add(class, 1);
        self.sample(|| format!("{}: {}", class.name(), message()));
    }

    /// `n` measured operations failed with `class` (lost with their connection).
    pub fn ops_failed(&mut self, class: ErrorClass, n: u64) {
        self.failed.add(class, n);
    }

    /// The server answered a measured operation in these words.
    pub fn answered(&mut self, answer: Answer) {
        self.answers.add(answer, 1);
    }

    /// The first bytes of a connection that answered nothing, kept once (see `first_bytes`).
    pub fn first_bytes(&mut self, bytes: &[u8]) {
        if self.first_bytes.is_none() && !bytes.is_empty() {
            self.first_bytes = Some(bytes[..bytes.len().min(FIRST_BYTES_KEPT)].to_vec());
        }
    }

    /// The server refused a measured operation.
    pub fn refused(&mut self, failure: Failure) {
        *self.failures.entry(failure).or_default() += 1;
        self.failed.add(failure.class(), 1);
        self.sample(|| format!("{}: {failure}", failure.class().name()));
    }
}

/// Per-core figures kept apart in the report so that imbalance stays visible.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSummary {
    pub core: usize,
    pub ops: u64,
    pub cpu: Duration,
    pub wall: Duration,
    pub steal: Option<Duration>,
    /// Of `cpu`, awake waiting for a paced send (see [`CoreRecorder::spin`]).
    pub spin: Duration,
    /// See [`CoreRecorder::gathered`].
    pub gathered: Duration,
}

impl CoreSummary {
    /// Share of the thread's wall time spent on a CPU, 0..1.
    pub fn cpu_util(&self) -> f64 {
        ratio(self.cpu.as_secs_f64(), self.wall.as_secs_f64())
    }
    /// Share of the wall time spent on a CPU with something to do (spinning for a paced send
    /// left out), 0..1: what says whether the generator limited the run.
    pub fn work_util(&self) -> f64 {
        ratio(self.cpu.saturating_sub(self.spin).as_secs_f64(), self.wall.as_secs_f64())
    }
    /// Share of the wall time spent spinning for paced sends, 0..1.
    pub fn spin_share(&self) -> f64 {
        ratio(self.spin.as_secs_f64(), self.wall.as_secs_f64())
    }
    pub fn cpu_us_per_op(&self) -> f64 {
        ratio(self.cpu.as_secs_f64() * 1e6, self.ops as f64)
    }
    /// Share of the wall time the hypervisor ran something else on this CPU, 0..1.
    pub fn steal_share(&self) -> Option<f64> {
        self.steal.map(|s| ratio(s.as_secs_f64(), self.wall.as_secs_f64()))
    }
}

/// All cores merged: their totals (a recorder of its own, read through `Deref`: `report.tx`,
/// `report.ops`), the measured window, and each core's figures kept apart.
#[derive(Debug, Clone)]
pub struct Report {
    pub totals: CoreRecorder,
    /// Measured window: from the end of warm-up until the last measured operation ended.
    pub elapsed: Duration,
    pub per_core: Vec<CoreSummary>,
    /// How long after the start every connection was set up: the measured window opened then
    /// (plus any warm-up). `None` with a connection per operation.
    pub set_up_in: Option<Duration>,
    /// The wall-clock instant the first measured operation was sent (of every core's): what a
    /// fleet's hosts compare to say how far apart they really started.
    pub first_sent: Option<std::time::SystemTime>,
    /// With `--repeat`: every run's summary; this report is the median one's.
    pub repeats: Option<Repeats>,
    /// The machine's network drops and retransmits during the run (`None`: not readable).
    pub net: Option<NetCounters>,
    /// The connections made before the run to check each target (reachable; its TLS
    /// handshake agreed): on the wire like the run's, counted apart from its figures.
    pub preflight: Preflight,
}

/// What the pre-flight checks put on the wire: a connection per target (with TLS, its
/// handshake), before any engine starts.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Preflight {
    pub connections: u64,
    pub tx: u64,
    pub rx: u64,
}

impl Preflight {
    pub fn add(&mut self, other: &Preflight) {
        self.connections += other.connections;
        self.tx += other.tx;
        self.rx += other.rx;
    }
}

/// One run of several (`--repeat`), in a line.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename = "RepeatRun")]
pub struct RunSummary {
    pub ops: u64,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors: u64,
    pub cpu_us_per_op: f64,
}

impl RunSummary {
    pub fn of(r: &Report) -> RunSummary {
        RunSummary {
            ops: r.ops,
            ops_per_sec: r.ops_per_sec(),
            p50_us: r.latency_us(0.5),
            p99_us: r.latency_us(0.99),
            errors: r.errors_total(),
            cpu_us_per_op: r.cpu_us_per_op(),
        }
    }
}

/// Runs back to back and which of them the report is (the median by ops/s).
#[derive(Debug, Clone, PartialEq)]
pub struct Repeats {
    pub median: usize,
    pub runs: Vec<RunSummary>,
}

/// Median, min, max and spread ((max − min) / median, %) of some figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub spread_pct: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let median = values.get(median_index(values)).copied().unwrap_or(0.0);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if values.is_empty() {
            return Spread { median: 0.0, min: 0.0, max: 0.0, spread_pct: 0.0 };
        }
        Spread { median, min, max, spread_pct: 100.0 * ratio(max - min, median) }
    }
}

/// Index of the median of `values` (the lower one of two middles; 0 when empty), so the
/// median is a real run, not an average of two.
pub fn median_index(values: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order.get(values.len().saturating_sub(1) / 2).copied().unwrap_or(0)
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
        self.sent += c.sent;
        self.ops += c.ops;
        self.failed.merge(&c.failed);
        self.conn_errors.merge(&c.conn_errors);
        self.latency.add(&c.latency).expect("same histogram bounds");
        self.latency_uncorrected.add(&c.latency_uncorrected).expect("same histogram bounds");
        self.schedule_lag.add(&c.schedule_lag).expect("same histogram bounds");
        self.due_while_busy += c.due_while_busy;
        self.due_unsent += c.due_unsent;
        if self.targets.len() < c.targets.len() {
            self.targets.resize(c.targets.len(), ShareTally::default());
        }
        if self.kinds.len() < c.kinds.len() {
            self.kinds.resize(c.kinds.len(), ShareTally::default());
        }
        match (&mut self.series, &c.series) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.series = Some(b.clone()),
            _ => {}
        }
        for (a, b) in self.targets.iter_mut().zip(&c.targets) {
            a.add(b);
        }
        for (a, b) in self.kinds.iter_mut().zip(&c.kinds) {
            a.add(b);
        }
        if let Some(o) = c.opener.as_ref().filter(|o| o.reported()) {
            self.openers.get_or_insert_default().add(o);
        }
        if let Some(t) = &c.openers {
            self.openers.get_or_insert_default().merge(t);
        }
        self.phases.merge(&c.phases);
        for (k, v) in &c.failures {
            *self.failures.entry(*k).or_default() += v;
        }
        self.answers.merge(&c.answers);
        for s in &c.error_samples {
            if self.error_samples.len() < MAX_ERROR_SAMPLES && !self.error_samples.contains(s) {
                self.error_samples.push(s.clone());
            }
        }
        if self.first_bytes.is_none() {
            self.first_bytes = c.first_bytes.clone();
        }
        self.tx.merge(&c.tx);
        self.rx.merge(&c.rx);
        self.tls.merge(&c.tls);
        layers::merge_into(&mut self.layers, c.layers.as_ref());
        self.datagrams.tx += c.datagrams.tx;
        self.datagrams.rx += c.datagrams.rx;
        self.connects += c.connects;
        self.reconnects += c.reconnects;
        self.audit.merge(&c.audit);
        self.last_end = self.last_end.max(c.last_end);
        self.latency_total_ns = self.latency_total_ns.wrapping_add(c.latency_total_ns);
        self.gathered = self.gathered.max(c.gathered);
        self.first_sent = match (self.first_sent, c.first_sent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Machine-wide counters: from the earliest opening to the latest end of any core.
        self.window_net = match (self.window_net, c.window_net) {
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
            (a, b) => a.or(b),
        };
    }
}

impl Report {
    pub fn merge(cores: Vec<CoreRecorder>, elapsed: Duration) -> Report {
        let mut cores = cores;
        let mut totals = CoreRecorder::new(usize::MAX);
        for c in &mut cores {
            c.settle();
            totals.absorb(c);
        }
        if let Some(series) = &mut totals.series {
            series.fold_short_tail(elapsed);
        }
        let per_core = cores
            .iter()
            .map(|c| CoreSummary {
                core: c.core,
                ops: c.ops,
                cpu: c.cpu,
                wall: c.wall,
                steal: c.steal,
                spin: c.spin,
                gathered: c.gathered,
            })
            .collect();
        // The engines' monotonic instant as the wall clock, read as the run ends.
        let first_sent = totals.first_sent.and_then(crate::clock::Instant::wall);
        Report {
            totals,
            elapsed,
            per_core,
            set_up_in: None,
            first_sent,
            repeats: None,
            net: None,
            preflight: Preflight::default(),
        }
    }

    /// Failed operations and failed connections: zero in a clean run.
    pub fn errors_total(&self) -> u64 {
        self.failed.total() + self.conn_errors.total()
    }
    /// Every measured operation sent ended once: completed or failed. False only if the
    /// engine lost track of one, which the report then says.
    pub fn accounted(&self) -> bool {
        self.sent == self.ops + self.failed.total()
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
    /// The app's byte counts equal the kernel's on every socket whose counts could be read,
    /// and every byte the app counted was on a socket it closed (checked or not).
    pub fn audit_matches(&self) -> bool {
        self.audit.matches() && self.bytes_on_closed_sockets()
    }
    /// Every byte counted belongs to a socket that was closed and looked at.
    pub fn bytes_on_closed_sockets(&self) -> bool {
        self.tx.total() == self.audit.app_tx + self.audit.inexact_tx
            && self.rx.total() == self.audit.app_rx + self.audit.inexact_rx
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
mod tests;
