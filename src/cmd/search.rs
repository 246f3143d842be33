//! `wirebench search URL --p99 5ms`: the highest rate a target serves within limits — tcpkali's
//! `-r @Latency`, websocket-bench's `--limit-rtt`. Paced steps (the same load as `bench`, at a
//! fixed rate for `--step` each): the rate doubles from `--start` while a step passes, halves
//! while the first ones fail, then the interval between the highest passing rate and the lowest
//! failing one is bisected until it is within `--precision` of the former (or `--max-steps`
//! ran). A step **passes** when its p99 (from when each operation was due) is at most `--p99`,
//! its failed operations at most `--failed` of those sent, and it completed at least 97 % of
//! the operations its rate offered (a server that cannot keep up is not serving that rate,
//! however fast the few it answers). A step that fails is run once more before it counts (a
//! shared machine's one stall is not the target's limit). The answer is the highest rate that
//! passed, printed with the rule it used; a row per run.

use super::SearchArgs;
use crate::plan::{self, Defaults};
use crate::report::search::{SearchResult, SearchStep};
use crate::report::{self, micros, si};
use crate::stats::result::RunResult;
use crate::workload::Workload;
use anyhow::{Context, Result, bail};
use std::time::Duration;

/// A step must complete this share of the operations its rate offered.
const KEPT_UP: f64 = 0.97;
/// A p99 needs this many samples to be one (of fewer, it is nearly the maximum, and 8 samples
/// answered `7 ops/s`): a step that cannot offer them is not run.
const P99_SAMPLES: f64 = 100.0;

/// The limits a step must keep.
struct Limits {
    p99_us: f64,
    failed_pct: f64,
}

impl Limits {
    /// Whether `r`, run at `offered` ops/s for `secs`, kept the limits, and if not why.
    fn judge(&self, r: &RunResult, offered: f64, secs: f64) -> (bool, String) {
        let failed = crate::stats::result::class_total(&r.failed);
        let failed_pct = if r.sent == 0 { 0.0 } else { failed as f64 * 100.0 / r.sent as f64 };
        let mut why = Vec::new();
        if r.latency_us.p99 > self.p99_us {
            why.push(format!("p99 {} > {}", micros(r.latency_us.p99), micros(self.p99_us)));
        }
        if failed_pct > self.failed_pct {
            why.push(format!("failed {failed_pct:.2}% > {}%", self.failed_pct));
        }
        let kept = r.ops as f64 / (offered * secs);
        if kept < KEPT_UP {
            why.push(format!("completed {:.0}% of the offered", kept * 100.0));
        }
        (why.is_empty(), why.join(", "))
    }
}

pub fn main(args: &SearchArgs) -> Result<()> {
    let (limits, load) = validated(args)?;
    let rule = format!(
        "a step passes when its p99 (from when each operation was due) is at most {}, at most {}% of the operations sent failed, and it completed at least {:.0}% of what its rate offered in {:?} (a failing step is run once more, and fails if it fails again); the rate doubles from {} while steps pass (halves while the first ones fail), then the highest passing and lowest failing rates are bisected to within {}% (at most {} steps)",
        micros(limits.p99_us),
        limits.failed_pct,
        KEPT_UP * 100.0,
        args.step,
        si(args.start),
        args.precision,
        args.max_steps
    );
    let human = args.json.as_deref() != Some(std::path::Path::new("-"));
    let screen = super::series_view(args.tui, !human, Some(limits.p99_us))?;
    let say = |text: &str| {
        if human {
            report::out(text);
        }
    };
    say(&format!("wirebench search {}: {rule}\n", args.url));
    say(&format!(
        "{:>5} {:>10} {:>10} {:>9} {:>9} {:>8}  verdict\n",
        "step", "offered", "ops/s", "p50", "p99", "failed"
    ));
    let interrupted = crate::interrupt::flag();
    let mut steps: Vec<SearchStep> = Vec::new();
    let (mut passing, mut failing): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = args.start;
    for n in 1..=args.max_steps {
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if too_few(rate, args.step) {
            say(&format!(
                "      {} ops/s for {:?} would offer {:.0} operations, too few for a p99 ({P99_SAMPLES} at least): no step below it\n",
                si(rate),
                args.step,
                rate * args.step.as_secs_f64()
            ));
            break;
        }
        if step(args, &load, &limits, n, rate, &mut steps, &say)? {
            passing = Some(passing.map_or(rate, |p| p.max(rate)));
        } else {
            failing = Some(failing.map_or(rate, |f| f.min(rate)));
        }
        rate = match (passing, failing) {
            (Some(p), None) => p * 2.0,
            (None, Some(f)) => f / 2.0,
            (Some(p), Some(f)) if (f - p) / p <= args.precision / 100.0 => break,
            (Some(p), Some(f)) => (p + f) / 2.0,
            (None, None) => unreachable!("a step either passed or failed"),
        };
        if rate < 1.0 {
            break;
        }
    }
    let answer = passing;
    say(&match (answer, failing) {
        (Some(a), Some(f)) => {
            format!("answer: {} ops/s (the highest that passed; {} failed)\n", si(a), si(f))
        }
        (Some(a), None) => format!("answer: at least {} ops/s (no step failed within --max-steps)\n", si(a)),
        (None, _) => "answer: none — no step passed; lower --start or loosen the limits\n".to_string(),
    });
    drop(screen);
    if let Some(path) = &args.json {
        report::json::write(path, &SearchResult { target: args.url.clone(), rule, steps, answer })?;
    }
    Ok(())
}

/// A step of `rate` for `--step` offers too few operations for a p99.
fn too_few(rate: f64, step: Duration) -> bool {
    rate * step.as_secs_f64() < P99_SAMPLES
}

/// The command's own flags checked, and the load every step starts from.
fn validated(args: &SearchArgs) -> Result<(Limits, plan::Load)> {
    crate::report::check_writable(&[("--json", args.json.as_deref())])?;
    let load_args = &args.load;
    if load_args.rate.is_some() || load_args.interval.is_some() || load_args.duration.is_some() {
        bail!(
            "search sets the rate and each step's length itself: leave out --rate, --interval and -d (see --start, --step)"
        );
    }
    if load_args.ops.is_some() || load_args.repeat > 1 {
        bail!("search runs timed steps: -n and --repeat cannot apply");
    }
    let p99_us = crate::check::Condition::parse(&format!("p99>{}", args.p99))
        .map_err(|_| anyhow::anyhow!("--p99 '{}': give a time with its unit, e.g. 5ms", args.p99))?;
    let limits = Limits { p99_us: p99_value(&p99_us, &args.p99)?, failed_pct: failed_pct(&args.failed)? };
    if !(args.start.is_finite() && args.start > 0.0) {
        bail!("--start must be a rate above 0");
    }
    if !(0.5..=50.0).contains(&args.precision) {
        bail!("--precision must be between 0.5 and 50 (%)");
    }
    if !(2..=64).contains(&args.max_steps) {
        bail!("--max-steps must be between 2 and 64");
    }
    if too_few(args.start, args.step) {
        bail!(
            "--start {} for --step {:?} offers {:.0} operations: too few for a p99 ({P99_SAMPLES} at least); start higher or lengthen --step",
            si(args.start),
            args.step,
            args.start * args.step.as_secs_f64()
        );
    }
    let online = crate::cpus::online();
    let load = plan::validate_load(load_args, &args.engine, &Defaults::BENCH, &online)?;
    crate::protocol::refuse_foreign_options(&crate::protocol::aim(&load, &args.url)?)?;
    Ok((limits, load))
}

/// Step `n`: `rate` for `--step`, judged, its row said; a step that fails is run once more
/// before it counts (one stall of a shared machine — a p99 spike while the median is
/// unmoved — must not set the answer). `true`: it passed.
fn step(
    args: &SearchArgs,
    load: &plan::Load,
    limits: &Limits,
    n: usize,
    rate: f64,
    steps: &mut Vec<SearchStep>,
    say: &dyn Fn(&str),
) -> Result<bool> {
    let mut step_load = load.clone();
    let interval = Duration::try_from_secs_f64(step_load.shape.connections as f64 / rate)
        .ok()
        .filter(|i| !i.is_zero() && *i <= Duration::from_secs(3600))
        .with_context(|| {
            format!("a rate of {rate} ops/s over {} connections", step_load.shape.connections)
        })?;
    step_load.shape.workload = Workload::FixedRate { interval };
    step_load.shape.duration = args.step;
    let interrupted = crate::interrupt::flag();
    for attempt in 0..2 {
        if attempt > 0 && interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let prepared = crate::run::prepare(crate::protocol::aim(&step_load, &args.url)?)
            .with_context(|| format!("step {n}"))?;
        let (info, rep) = crate::run::run(&prepared).with_context(|| format!("step {n}"))?;
        let result = report::json::bench(&info, &rep, Some(format!("{rate:.0}/s")));
        let (ok, why) = limits.judge(&result, rate, args.step.as_secs_f64());
        let verdict = match (ok, attempt) {
            (true, _) => "pass".to_string(),
            (false, 0) => format!("fail: {why} (run again)"),
            (false, _) => format!("FAIL: {why}"),
        };
        say(&format!(
            "{:>5} {:>10} {:>10} {:>9} {:>9} {:>8}  {verdict}\n",
            if attempt == 0 { n.to_string() } else { format!("{n}'") },
            si(rate),
            si(result.ops_per_sec),
            micros(result.latency_us.p50),
            micros(result.latency_us.p99),
            crate::stats::result::class_total(&result.failed),
        ));
        if result.ops > 0 {
            crate::report::tui::series::point(rate, result.latency_us.p99, ok);
        }
        steps.push(SearchStep { offered: rate, passed: ok, why, result });
        if ok {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `--p99`'s value in µs (through the thresholds' own parser).
fn p99_value(condition: &crate::check::Condition, text: &str) -> Result<f64> {
    condition.limit().with_context(|| format!("--p99 '{text}': give a time with its unit, e.g. 5ms"))
}

/// `--failed`'s share, in percent (`0.1%` or `0.1`).
fn failed_pct(text: &str) -> Result<f64> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => bail!("--failed '{text}': a share of the operations sent, e.g. 0.1%"),
    }
}
