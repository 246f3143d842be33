//! The sweep table: one row per core count, with speedup and efficiency against the first
//! step, the spread of work across the scaled cores, and the server's CPU and memory where a
//! server process is known.

use super::{bytes, micros, si};
use crate::stats::ServerTally;
use crate::stats::result::{RunResult, WatchResult};
use crate::stats::{Report, imbalance_pct, ratio};
use crate::watch::WatchReport;
use std::fmt::Write;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct SweepInfo {
    /// What scales: "client cores", "built-in http server cores", "server cores".
    pub what: String,
    pub target: String,
    pub connections: usize,
    pub duration: Duration,
    pub engine: &'static str,
}

/// One step of a sweep.
#[derive(Debug, Clone)]
pub struct Step {
    pub info: super::RunInfo,
    pub cores: usize,
    pub cpus: Vec<usize>,
    pub placement: String,
    pub report: Report,
    /// The server process's CPU and memory (`--server-cmd`, `--watch-pid`).
    pub watched: Option<WatchReport>,
    /// The built-in server's per-core tallies.
    pub server: Option<Vec<ServerTally>>,
    /// Whether the step's CPUs are the server's (a server sweep) rather than the generator's.
    pub server_scales: bool,
}

impl Step {
    pub fn speedup(&self, first: &Step) -> f64 {
        ratio(self.report.ops_per_sec(), first.report.ops_per_sec())
    }
    /// Speedup divided by the growth in cores: 1.0 is perfect scaling.
    pub fn efficiency(&self, first: &Step) -> f64 {
        ratio(self.speedup(first), self.cores as f64 / first.cores as f64)
    }
    /// Work per scaled core: server requests per core for a built-in server, CPU % per CPU for
    /// a watched one that scales, the generator's ops per core otherwise (a generator sweep
    /// with `--watch-pid`: the watched server is not on the scaled CPUs).
    pub fn per_core(&self) -> (Vec<f64>, &'static str) {
        if let Some(t) = &self.server {
            (t.iter().map(|t| t.requests as f64).collect(), "requests")
        } else if let Some(w) =
            self.watched.as_ref().filter(|w| self.server_scales && !w.per_cpu_pct.is_empty())
        {
            (self.cpus.iter().map(|c| w.per_cpu_pct.get(c).copied().unwrap_or(0.0)).collect(), "cpu%")
        } else {
            (self.report.per_core.iter().map(|c| c.ops as f64).collect(), "ops")
        }
    }
    pub fn imbalance(&self) -> f64 {
        let (v, _) = self.per_core();
        imbalance_pct(&v.iter().map(|x| x.round() as u64).collect::<Vec<_>>())
    }
    /// The generator's busiest core's share of its wall time on CPU (1 = saturated).
    pub fn generator_busy(&self) -> f64 {
        self.report
            .per_core
            .iter()
            .map(|c| ratio(c.cpu.as_secs_f64(), c.wall.as_secs_f64()))
            .fold(0.0, f64::max)
    }

    /// The server's CPU % (100 = one CPU) and peak RSS in KiB, where known.
    pub fn server_cpu_rss(&self) -> (Option<f64>, Option<f64>) {
        if let Some(w) = &self.watched {
            return (Some(w.cpu_pct.mean), Some(w.rss_kib.max));
        }
        if let Some(t) = &self.server {
            let sum = ServerTally::sum(t);
            return (Some(100.0 * ratio(sum.cpu.as_secs_f64(), sum.wall.as_secs_f64())), None);
        }
        (None, None)
    }
}

pub fn header(info: &SweepInfo) -> String {
    format!(
        "wirebench sweep of {} {}, {} connections, {:.0?} per step, {} engine\n\n\
         cores        ops/s  speedup  effic.      p50      p99  per-core min..max     imbal.  gen cpu/op  gen busy  server cpu   server RSS  placement",
        info.what,
        if info.target.is_empty() {
            "on the built-in server".to_string()
        } else {
            format!("of {}", info.target)
        },
        info.connections,
        info.duration,
        info.engine
    )
}

pub fn line(s: &Step, first: Option<&Step>) -> String {
    let first = first.unwrap_or(s);
    let (per, unit) = s.per_core();
    let min = per.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per.iter().copied().fold(0.0, f64::max);
    let (cpu, rss) = s.server_cpu_rss();
    format!(
        "{:>5}  {:>11}  {:>6.2}x  {:>5.0}%  {:>7}  {:>7}  {:<20}  {:>5.1}%  {:>8.2}us  {:>7.0}%  {:>10}  {:>11}  {}",
        s.cores,
        si(s.report.ops_per_sec()),
        s.speedup(first),
        100.0 * s.efficiency(first),
        micros(s.report.latency_us(0.5)),
        micros(s.report.latency_us(0.99)),
        format!("{}..{} {unit}", si(if min.is_finite() { min } else { 0.0 }), si(max)),
        s.imbalance(),
        s.report.cpu_us_per_op(),
        s.generator_busy() * 100.0,
        cpu.map_or("-".into(), |c| format!("{c:.0}%")),
        rss.map_or("-".into(), |r| bytes(r * 1024.0)),
        s.placement
    )
}

pub fn footer(steps: &[Step]) -> String {
    let mut s = String::from(
        "\nspeedup: ops/s over the first step's; efficiency: speedup / core ratio (100% = linear); \
         imbalance: (max − min) / mean of the per-core figures\n",
    );
    // A step whose server did not use its CPUs measured something else (the generator, the
    // network): said, so its efficiency is not read as the server's (a server sweep's steps:
    // in a generator sweep the step's cores are the generator's).
    for st in steps.iter().filter(|st| st.server_scales) {
        let (cpu, _) = st.server_cpu_rss();
        let busy = st.generator_busy();
        if let Some(cpu) = cpu.filter(|c| *c < 80.0 * st.cores as f64) {
            let _ = writeln!(
                s,
                "{} cores: the server used {cpu:.0}% of {}% — not saturated, so this step's figures are {}, not the server's limit",
                st.cores,
                100 * st.cores,
                if busy > 0.9 {
                    format!(
                        "the generator's (its busiest core {:.0}% busy: give it more cores)",
                        busy * 100.0
                    )
                } else {
                    "the load's (more connections, or a faster generator)".to_string()
                }
            );
        }
    }
    for st in steps.iter().filter(|st| st.report.errors_total() > 0 || !st.report.audit_matches()) {
        let _ = writeln!(
            s,
            "{} cores: {} errors{}; e.g. {}",
            st.cores,
            st.report.errors_total(),
            if st.report.audit_matches() { "" } else { ", audit differs" },
            st.report.error_samples.join("; ")
        );
    }
    s
}

/// What `sweep --json` writes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SweepResult {
    pub what: String,
    pub target: String,
    pub connections: usize,
    pub steps: Vec<StepResult>,
}

/// One step: its cores, the table's figures, and its run's whole result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct StepResult {
    pub cores: usize,
    pub cpus: Vec<usize>,
    pub placement: String,
    pub ops_per_sec: f64,
    pub speedup: f64,
    pub efficiency: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Operations per scaled core (a built-in server's own counts, else the generator's), and
    /// what they count.
    pub per_core: Vec<f64>,
    pub per_core_unit: String,
    pub imbalance_pct: f64,
    pub generator_cpu_us_per_op: f64,
    pub server_cpu_pct: Option<f64>,
    pub server_rss_kib: Option<f64>,
    pub errors: u64,
    pub audit_match: bool,
    pub server_watch: Option<WatchResult>,
    pub result: RunResult,
}

pub fn json(info: &SweepInfo, steps: &[Step]) -> SweepResult {
    let first = steps.first();
    SweepResult {
        what: info.what.clone(),
        target: info.target.clone(),
        connections: info.connections,
        steps: steps
            .iter()
            .map(|s| {
                let first = first.unwrap_or(s);
                let (per_core, unit) = s.per_core();
                let (cpu, rss) = s.server_cpu_rss();
                StepResult {
                    cores: s.cores,
                    cpus: s.cpus.clone(),
                    placement: s.placement.clone(),
                    ops_per_sec: s.report.ops_per_sec(),
                    speedup: s.speedup(first),
                    efficiency: s.efficiency(first),
                    p50_us: s.report.latency_us(0.5),
                    p99_us: s.report.latency_us(0.99),
                    per_core,
                    per_core_unit: unit.to_string(),
                    imbalance_pct: s.imbalance(),
                    generator_cpu_us_per_op: s.report.cpu_us_per_op(),
                    server_cpu_pct: cpu,
                    server_rss_kib: rss,
                    errors: s.report.errors_total(),
                    audit_match: s.report.audit_matches(),
                    server_watch: s.watched.as_ref().map(WatchResult::of),
                    result: super::json::bench(&s.info, &s.report, Some(s.placement.clone())),
                }
            })
            .collect(),
    }
}
