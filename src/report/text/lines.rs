//! The text's short forms, printed while a run goes or in place of the summary: the line that
//! says a run has begun, `--report-every`'s rows, and `--quiet`'s few lines.

use super::super::{RunInfo, micros, si};
use crate::stats::result::RunResult;

/// The heading of `--report-every`'s rows as the run goes.
pub fn live_heading() -> String {
    format!(
        "  live        {:>8} {:>8} {:>9} {:>10} {:>7} {:>9} {:>9}\n",
        "from s", "to s", "ops", "ops/s", "errors", "p50", "p99"
    )
}

/// One of them: what happened between `from` and `to` of the run (latency of the operations
/// completed then, ns).
pub fn live_row(
    from: std::time::Duration,
    to: std::time::Duration,
    ops: u64,
    errors: u64,
    latency: Option<&hdrhistogram::Histogram<u64>>,
) -> String {
    let width = (to - from).as_secs_f64().max(1e-9);
    let q = |q: f64| {
        latency.filter(|h| !h.is_empty()).map_or("-".into(), |h| micros(h.value_at_quantile(q) as f64 / 1e3))
    };
    format!(
        "              {:>8.2} {:>8.2} {:>9} {:>10} {:>7} {:>9} {:>9}\n",
        from.as_secs_f64(),
        to.as_secs_f64(),
        ops,
        si(ops as f64 / width),
        errors,
        q(0.5),
        q(0.99)
    )
}

/// The line that says a run has begun, where no progress line shows: what, where, how long.
pub fn starting(plan: &crate::plan::LoadPlan) -> String {
    let shape = &plan.load.shape;
    let until = match shape.ops {
        Some(n) => super::super::count(n, "operation"),
        None => format!("{:.0?}", shape.warmup + shape.duration),
    };
    format!(
        "running {until} of {} @ {}: {} connection{}, depth {}, on CPU {}\n",
        plan.protocol.name,
        plan.targets().map(|t| t.url.as_str()).collect::<Vec<_>>().join(" "),
        shape.connections,
        if shape.connections == 1 { "" } else { "s" },
        shape.depth,
        crate::cpus::format(&plan.load.cores),
    )
}

/// `--quiet`: the run in a few lines, for scripts — rate, latency, failures, bytes, audit.
pub fn summary(info: &RunInfo, r: &RunResult) -> String {
    let l = &r.latency_us;
    let failed = crate::stats::result::class_total(&r.failed);
    format!(
        "{} {}: {} ops in {:.2}s = {} ops/s, p50 {} p99 {} max {}\nfailed {failed} of {} sent, connection errors {}; bytes/op tx {:.1} rx {:.1}; audit {}\n",
        info.protocol,
        info.target,
        r.ops,
        r.duration_s,
        si(r.ops_per_sec),
        micros(l.p50),
        micros(l.p99),
        micros(l.max),
        r.sent,
        crate::stats::result::class_total(&r.connection_errors),
        r.bytes.tx_per_op,
        r.bytes.rx_per_op,
        r.audit.word()
    )
}
