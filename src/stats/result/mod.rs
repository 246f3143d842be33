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
//! What cannot be merged says so in its field's comment (and docs/measurement.md's).

use super::encoded::{decode, encode};
use super::{Report, ratio};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A wall-clock instant as Unix seconds (to the microsecond).
fn unix_s(t: std::time::SystemTime) -> Option<f64> {
    t.duration_since(std::time::UNIX_EPOCH).ok().map(secs)
}

/// Round to 3 decimals so the JSON shows measured precision, not float noise.
pub fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// A time in seconds to the microsecond: what a result keeps of a duration it derives from,
/// so that the figures derived from it are the same in the file and after reading it back.
pub(super) fn secs(d: std::time::Duration) -> f64 {
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
    pub(super) fn add(&mut self, o: &Hist) {
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
    /// With `--requests`, each kind of entry's share.
    #[serde(default)]
    pub requests: Option<Vec<KindResult>>,
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
    /// What the openers did: `--connect-rate auto`'s, or without `--connect-rate` those that
    /// paced openings past their core's first 1,024.
    #[serde(default)]
    pub connect_rate_auto: Option<AutoRateResult>,
    /// How long after the start every connection was set up (merged: the longest).
    pub set_up_in_s: Option<f64>,
    /// When the first measured operation was sent, Unix seconds by this host's clock (merged:
    /// the earliest run's).
    #[serde(default)]
    pub first_sent_unix_s: Option<f64>,
    /// `--repeat`: every run's line. Not merged (a merged result lists its runs in `runs`).
    pub repeat: Option<RepeatResult>,
    /// Paced operations that came due while their connection was busy, and that came due
    /// and were never sent.
    pub due_while_busy: u64,
    pub due_unsent: u64,
    pub tls: Option<TlsResult>,
    /// Operation bytes by the protocol's layers (header blocks, trailers, frame heads,
    /// message prefixes, payload), each connection's first operation apart; for the
    /// protocols whose codecs count them (HTTP/2, gRPC). Totals over every operation sent,
    /// warm-up and failed ones too: divide by `ops` of each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::stats::Layers>,
    /// UDP datagrams each way over the connections' lives (QUIC); absent on TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<crate::stats::Datagrams>,
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
    /// `--fail-if`: each condition and whether it held (a merged result's: on the total).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Checked>,
    /// `--rate` with stages: each stage and what it measured (derived from the series).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageResult>,
    /// `wirebench kube`: the fleet's start and each pod's part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetResult>,
}

/// A `--fail-if` condition checked against a result ([`crate::check`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checked {
    pub condition: String,
    /// The figure as measured, in the condition's unit (`7.31ms`, `0.200% (2 of 1002)`).
    pub measured: String,
    /// The condition holds: the run fails it.
    pub held: bool,
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
    /// The run's `--report-every` intervals (none without them): a merged result's charts
    /// draw a line per host from these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<LineInterval>,
}

/// One interval of a [`RunLine`]: where it starts in the window, its rate, its p99 (`None`:
/// nothing completed in it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LineInterval {
    pub from_s: f64,
    pub ops_per_sec: f64,
    pub p99_us: Option<f64>,
}

/// What a run was, for its result: what `bench` says about itself beside the counts.
#[derive(Debug, Clone, PartialEq)]
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
    /// `--requests`: each kind's label and how many entries it has (empty: no file).
    pub kinds: Vec<(String, usize)>,
    /// `--rate` with stages, laid out in the window (their figures not yet derived).
    pub stages: Vec<StageResult>,
}

pub(super) fn add_counts(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
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
pub(super) const MAX_ERROR_SAMPLES: usize = 8;

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
        let requests = (!ran.kinds.is_empty()).then(|| {
            let none = crate::stats::ShareTally::default();
            (ran.kinds.iter().enumerate())
                .map(|(i, (label, entries))| KindResult::of(label, *entries, r.kinds.get(i).unwrap_or(&none)))
                .collect()
        });
        let repeat = r.repeats.as_ref().map(RepeatResult::of);
        let tls = r.tls.used().then(|| TlsResult::of(&r.tls));
        let mut result = RunResult {
            kind: Kind::Bench,
            label: ran.label.clone(),
            target: ran.target.clone(),
            targets,
            requests,
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
            connect_rate_auto: r.openers.as_ref().map(AutoRateResult::of),
            set_up_in_s: r.set_up_in.map(secs),
            first_sent_unix_s: r.first_sent.and_then(unix_s),
            repeat,
            due_while_busy: r.due_while_busy,
            due_unsent: r.due_unsent,
            tls,
            layers: r.layers,
            datagrams: (r.datagrams.tx + r.datagrams.rx > 0).then_some(r.datagrams),
            bytes: Bytes::of(&r.tx, &r.rx),
            latency_us: Spread::default(),
            latency_uncorrected_us: None,
            schedule_lag_us: None,
            preflight: r.preflight,
            histograms: Histograms {
                latency: Hist(r.latency.clone()),
                latency_uncorrected: Hist(r.latency_uncorrected.clone()),
                schedule_lag: Hist(r.schedule_lag.clone()),
                phases: r.phases.map(|h| Hist(h.clone())),
            },
            series: r.series.as_ref().map(SeriesResult::of),
            cpu_us_per_op: 0.0,
            imbalance_pct: 0.0,
            per_core: r.per_core.iter().map(CoreResult::of).collect(),
            kernel_net: r.net.map(|n| KernelNet {
                backlog_drops: n.backlog_drops,
                retransmits: n.retransmits,
                udp: UdpNet {
                    datagrams_in: n.udp_in,
                    datagrams_out: n.udp_out,
                    receive_buffer_drops: n.udp_drops,
                },
                window: r
                    .window_net
                    .map(|(a, b)| b.since(a))
                    .map(|w| NetWindow { backlog_drops: w.backlog_drops, retransmits: w.retransmits }),
            }),
            audit: AuditResult::of(&r.audit),
            server_watch: None,
            runs: Vec::new(),
            checks: Vec::new(),
            stages: ran.stages.clone(),
            fleet: None,
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
        self.phases_us =
            PhasesUs { phases: h.phases.map(Spread::of_nonempty), total: Spread::of_nonempty(&h.latency) };
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
        for k in self.requests.iter_mut().flatten() {
            k.derive();
        }
        if let Some(series) = &mut self.series {
            series.derive(self.duration_s);
        }
        for stage in &mut self.stages {
            stage.derive(self.series.as_ref());
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
}

mod bytes;
mod fleet;
mod merge;
mod parts;

pub use bytes::*;
pub use fleet::*;
pub use parts::*;

#[cfg(test)]
pub mod fixtures;
#[cfg(test)]
mod tests;
