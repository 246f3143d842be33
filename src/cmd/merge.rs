//! `wirebench merge A.json B.json …`: runs of one load from several hosts, added into one
//! result ([`RunResult::merge`]: histograms added, so the total's percentiles are those of
//! every sample together, never an average of percentiles; counters and bytes summed; audits
//! combined) — a row per run (by its `--label`) and a total. Reads `bench --json` results, or
//! merged ones (a merged result merges again); refuses to mix protocols or targets unless
//! `--force`; a malformed, truncated or foreign file is one clear line and exit 2.

use super::MergeArgs;
use crate::report::{self, micros, si};
use crate::stats::result::{RunLine, RunResult, WatchFile};
use anyhow::{Context, Result, bail};
use std::fmt::Write;
use std::path::Path;

/// The histograms a result carries, by their place in it: a file whose histogram does not
/// decode is named with the place.
const HISTOGRAMS: [&str; 8] = [
    "latency",
    "latency_uncorrected",
    "schedule_lag",
    "connect",
    "tls",
    "handshake",
    "waiting",
    "processing",
];

/// Read a result (`bench --json`, or `merge --json`); every way it can be wrong is one line
/// naming the file. Its derived figures are computed afresh from its counts.
pub fn read(path: &Path) -> Result<RunResult> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{name} is not JSON (truncated?)"))?;
    // The histograms first, each by name: serde's own error would not say which.
    for h in HISTOGRAMS {
        if let Some(encoded) = json.pointer(&format!("/histograms/{h}")).and_then(|v| v.as_str()) {
            crate::stats::encoded::decode(encoded)
                .map_err(|e| anyhow::anyhow!("{name}: histograms.{h}: {e}"))?;
        }
    }
    let mut result: RunResult = serde_json::from_value(json)
        .map_err(|e| anyhow::anyhow!("{name} is not a `wirebench bench --json` result: {e}"))?;
    if result.label.is_none() && result.runs.is_empty() {
        result.label = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    result.derive();
    Ok(result)
}

/// A `watch --json` file (the server's side of the window).
fn read_watch(path: &Path) -> Result<WatchFile> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
    serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{name} is not a `wirebench watch --json` result: {e}"))
}

/// Add `results` together; refuse mixed protocols or targets unless `force`.
pub fn merge(results: &[RunResult], force: bool) -> Result<RunResult> {
    let names: Vec<String> =
        results.iter().map(|r| r.label.clone().unwrap_or_else(|| "a merged result".into())).collect();
    merge_named(results, &names, force)
}

/// The same, each result named as the user gave it (its file) in what is refused.
fn merge_named(results: &[RunResult], names: &[String], force: bool) -> Result<RunResult> {
    let Some(first) = results.first() else { bail!("give at least one JSON file") };
    for (i, r) in results.iter().enumerate().skip(1) {
        for (what, theirs, ours) in
            [("protocol", &r.protocol, &first.protocol), ("target", &r.target, &first.target)]
        {
            if theirs != ours && !force {
                bail!(
                    "{} has {what} {theirs} but {} has {ours}: these are not one load (--force merges them anyway)",
                    names[i],
                    names[0]
                );
            }
        }
        // The same run twice would count every operation twice.
        if let Some(j) = results[..i].iter().position(|o| o == r)
            && !force
        {
            bail!(
                "{} holds the same run as {}: merged, each of its operations would count twice (--force merges anyway)",
                names[i],
                names[j]
            );
        }
    }
    Ok(RunResult::merge_all(results).expect("at least one"))
}

fn row(s: &mut String, line: &RunLine) {
    let l = &line.latency_us;
    let _ = writeln!(
        s,
        "{:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  {}",
        line.label,
        line.ops,
        si(line.ops_per_sec),
        micros(l.p50),
        micros(l.p99),
        micros(l.p999),
        micros(l.max),
        line.errors,
        if line.audit_match { "match" } else { "DIFFER" }
    );
}

pub fn main(args: &MergeArgs) -> Result<()> {
    let conditions = crate::check::parse_all(&args.thresholds.fail_if)?;
    crate::report::check_writable(&[("--json", args.json.as_deref())])?;
    let results = args.files.iter().map(|f| read(f)).collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let mut total = merge_named(&results, &names, args.force)?;
    let held = crate::check::apply(&conditions, &mut total);
    let runs = total.runs.len().max(1);
    let mut s = format!(
        "wirebench merge: {runs} run{} of {} {} (histograms added: the total's percentiles are of every sample)\n",
        if runs == 1 { "" } else { "s" },
        total.protocol,
        total.target
    );
    let _ = writeln!(
        s,
        "{:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  audit",
        "run", "ops", "ops/s", "p50", "p99", "p99.9", "max", "errors"
    );
    for line in &total.runs {
        row(&mut s, line);
    }
    let own = RunLine {
        label: "total".into(),
        ops: total.ops,
        ops_per_sec: total.ops_per_sec,
        latency_us: total.latency_us,
        errors: total.errors(),
        audit_match: total.audit.matches,
        intervals: Vec::new(),
    };
    row(&mut s, &own);
    let _ =
        writeln!(s, "ops/s of the total: its operations over the longest window (the runs ran side by side)");
    if let Some(path) = &args.server {
        let w = read_watch(path)?;
        let _ = writeln!(
            s,
            "server (pid {}, {} samples): CPU mean {:.0}% max {:.0}%, memory {} of the machine, RSS max {:.0} KiB",
            w.watch.pid,
            w.watch.samples,
            w.watch.cpu_pct.mean,
            w.watch.cpu_pct.max,
            w.watch.mem_pct.map_or("?".into(), |m| format!("{m:.2}%")),
            w.watch.rss_kib.max,
        );
        total.server_watch = Some(w.watch);
    }
    if args.json.as_deref() != Some(Path::new("-")) {
        report::out(&s);
    }
    if let Some(path) = &args.json {
        report::json::write(path, &total)?;
    }
    crate::check::verdict(held.into_iter().map(|c| ("total".to_string(), c)).collect())
}
