//! `wirebench merge A.json B.json …`: runs of one load from several hosts, added into one —
//! histograms added (so the total's percentiles are those of every sample together, never an
//! average of percentiles), counters and bytes summed, audits combined — a row per run (by its
//! `--label`) and a total. Reads `bench --json` files; refuses to mix protocols or targets
//! unless `--force`; a malformed, truncated or foreign file is one clear line and exit 2.

use super::MergeArgs;
use crate::report::json::spread;
use crate::report::{self, micros, si};
use crate::stats::encoded::{decode, encode};
use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use std::fmt::Write;
use std::path::Path;

/// The histograms a run's JSON carries, merged by name.
const HISTOGRAMS: [&str; 7] =
    ["latency", "latency_uncorrected", "schedule_lag", "connect", "handshake", "waiting", "processing"];
/// Counters summed as they are (paths into the JSON).
const SUMMED: [&str; 19] = [
    "sent",
    "ops",
    "messages",
    "connects",
    "reconnects",
    "failed/total",
    "connection_errors/total",
    "bytes/tx",
    "bytes/rx",
    "bytes/op_tx",
    "bytes/op_rx",
    "bytes/handshake_tx",
    "bytes/handshake_rx",
    "bytes/control_tx",
    "bytes/control_rx",
    "audit/app_tx",
    "audit/app_rx",
    "audit/kernel_tx",
    "audit/kernel_rx",
];

/// One run read back.
pub struct Run {
    pub label: String,
    pub json: Value,
    pub histograms: Vec<Histogram<u64>>,
}

impl Run {
    /// Read a `bench --json` file; every way it can be wrong is one line naming the file.
    pub fn read(path: &Path) -> Result<Run> {
        let name = path.display();
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
        let json: Value =
            serde_json::from_str(&text).with_context(|| format!("{name} is not JSON (truncated?)"))?;
        let foreign = |what: &str| anyhow::anyhow!("{name} is not a `wirebench bench --json` result: {what}");
        for key in ["protocol", "target", "ops_per_sec", "duration_s"] {
            if json.get(key).is_none() {
                return Err(foreign(&format!("no `{key}`")));
            }
        }
        for path in SUMMED {
            if counter(&json, path).is_none() {
                return Err(foreign(&format!("no counter `{}`", path.replace('/', "."))));
            }
        }
        let histograms = HISTOGRAMS
            .iter()
            .map(|h| {
                let text = json["histograms"][h].as_str().ok_or_else(|| {
                    foreign(&format!("no `histograms.{h}` (written before version 0.1 of merge?)"))
                })?;
                decode(text).map_err(|e| anyhow::anyhow!("{name}: histograms.{h}: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let label = json["label"].as_str().map_or_else(
            || path.file_stem().map_or("run".into(), |s| s.to_string_lossy().into_owned()),
            str::to_string,
        );
        Ok(Run { label, json, histograms })
    }

    fn latency(&self) -> &Histogram<u64> {
        &self.histograms[0]
    }
}

/// A `watch --json` file (the server's side of the window).
fn read_watch(path: &Path) -> Result<Value> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
    let json: Value =
        serde_json::from_str(&text).with_context(|| format!("{name} is not JSON (truncated?)"))?;
    if json["kind"] != "watch" || json["cpu_pct"]["mean"].as_f64().is_none() {
        bail!("{name} is not a `wirebench watch --json` result");
    }
    Ok(json)
}

/// A counter at `path` (`a/b`), if the run has it as a whole number.
fn counter(json: &Value, path: &str) -> Option<u64> {
    json.pointer(&format!("/{path}")).and_then(Value::as_u64)
}

/// The merged result of `runs`.
pub struct Merged {
    pub counters: Vec<(&'static str, u64)>,
    pub histograms: Vec<Histogram<u64>>,
    /// The runs ran side by side: their rates add up.
    pub ops_per_sec: f64,
    pub audit_match: bool,
}

/// Add `runs` together; refuse mixed protocols or targets unless `force`.
pub fn merge(runs: &[Run], force: bool) -> Result<Merged> {
    let Some(first) = runs.first() else { bail!("give at least one JSON file") };
    for r in &runs[1..] {
        for key in ["protocol", "target"] {
            if r.json[key] != first.json[key] && !force {
                bail!(
                    "{} has {key} {} but {} has {}: these are not one load (--force merges them anyway)",
                    r.label,
                    r.json[key],
                    first.label,
                    first.json[key]
                );
            }
        }
    }
    let counters =
        SUMMED.iter().map(|p| (*p, runs.iter().filter_map(|r| counter(&r.json, p)).sum())).collect();
    let mut histograms: Vec<Histogram<u64>> = first.histograms.clone();
    for r in &runs[1..] {
        for (sum, h) in histograms.iter_mut().zip(&r.histograms) {
            sum.add(h).map_err(|e| anyhow::anyhow!("{}: histograms cannot be added: {e:?}", r.label))?;
        }
    }
    Ok(Merged {
        counters,
        histograms,
        ops_per_sec: runs.iter().filter_map(|r| r.json["ops_per_sec"].as_f64()).sum(),
        audit_match: runs.iter().all(|r| r.json["audit"]["match"] == true),
    })
}

impl Merged {
    pub fn get(&self, path: &str) -> u64 {
        self.counters.iter().find(|(p, _)| *p == path).map_or(0, |(_, v)| *v)
    }
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() { 0.0 } else { h.value_at_quantile(q) as f64 / 1e3 }
}

pub fn main(args: &MergeArgs) -> Result<()> {
    let runs = args.files.iter().map(|f| Run::read(f)).collect::<Result<Vec<_>>>()?;
    let merged = merge(&runs, args.force)?;
    let first = &runs[0].json;
    let mut s = format!(
        "wirebench merge: {} runs of {} {} (histograms added: the total's percentiles are of every sample)\n",
        runs.len(),
        first["protocol"].as_str().unwrap_or("?"),
        first["target"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        s,
        "{:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  audit",
        "run", "ops", "ops/s", "p50", "p99", "p99.9", "max", "errors"
    );
    let errors = |j: &Value| {
        counter(j, "failed/total").unwrap_or(0) + counter(j, "connection_errors/total").unwrap_or(0)
    };
    for r in &runs {
        let h = r.latency();
        let _ = writeln!(
            s,
            "{:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  {}",
            r.label,
            counter(&r.json, "ops").unwrap_or(0),
            si(r.json["ops_per_sec"].as_f64().unwrap_or(0.0)),
            micros(us(h, 0.5)),
            micros(us(h, 0.99)),
            micros(us(h, 0.999)),
            micros(us(h, 1.0)),
            errors(&r.json),
            if r.json["audit"]["match"] == true { "match" } else { "DIFFER" }
        );
    }
    let h = &merged.histograms[0];
    let _ = writeln!(
        s,
        "{:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  {}",
        "total",
        merged.get("ops"),
        si(merged.ops_per_sec),
        micros(us(h, 0.5)),
        micros(us(h, 0.99)),
        micros(us(h, 0.999)),
        micros(us(h, 1.0)),
        merged.get("failed/total") + merged.get("connection_errors/total"),
        if merged.audit_match { "match" } else { "DIFFER" }
    );
    let _ = writeln!(s, "ops/s of the total: the runs' rates added (they ran side by side)");
    let server = args.server.as_deref().map(read_watch).transpose()?;
    if let Some(w) = &server {
        let _ = writeln!(
            s,
            "server (pid {}, {} samples): CPU mean {:.0}% max {:.0}%, memory {} of the machine, RSS max {:.0} KiB",
            w["pid"],
            w["samples"],
            w["cpu_pct"]["mean"].as_f64().unwrap_or(0.0),
            w["cpu_pct"]["max"].as_f64().unwrap_or(0.0),
            w["mem_pct"].as_f64().map_or("?".into(), |m| format!("{m:.2}%")),
            w["rss_kib"]["max"].as_f64().unwrap_or(0.0),
        );
    }
    if args.json.as_deref() != Some(Path::new("-")) {
        report::out(&s);
    }
    if let Some(path) = &args.json {
        let counters: serde_json::Map<String, Value> =
            merged.counters.iter().map(|(p, v)| (p.replace('/', "."), json!(v))).collect();
        let value = json!({
            "protocol": first["protocol"],
            "target": first["target"],
            "runs": runs.iter().map(|r| json!({
                "label": r.label,
                "ops": r.json["ops"],
                "ops_per_sec": r.json["ops_per_sec"],
                "latency_us": spread(r.latency()),
                "errors": errors(&r.json),
                "audit_match": r.json["audit"]["match"],
            })).collect::<Vec<_>>(),
            "total": {
                "ops_per_sec": merged.ops_per_sec,
                "counters": counters,
                "audit_match": merged.audit_match,
                "latency_us": spread(h),
                "phases_us": HISTOGRAMS[3..].iter().zip(&merged.histograms[3..]).map(|(n, h)| (n.to_string(), spread(h))).collect::<serde_json::Map<_, _>>(),
                "server": server,
                "histograms": HISTOGRAMS.iter().zip(&merged.histograms).map(|(n, h)| (n.to_string(), json!(encode(h)))).collect::<serde_json::Map<_, _>>(),
            },
        });
        report::json::write(path, &value)?;
    }
    Ok(())
}
