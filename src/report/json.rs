//! `--json`: the same numbers as the text summary, with stable field names (see the README).

use super::RunInfo;
use crate::outcome::{ClassCounts, ErrorClass};
use crate::stats::Report;
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::Path;

/// Round to 3 decimals so the JSON shows measured precision, not float noise.
fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// A histogram (ns) in µs: count, min, mean, sd, percentiles, max (`null` when nothing was
/// recorded); the phases', and `merge`'s.
pub fn spread(h: &hdrhistogram::Histogram<u64>) -> Value {
    if h.is_empty() {
        return Value::Null;
    }
    let us = |ns: f64| r3(ns / 1e3);
    json!({
        "count": h.len(),
        "min": us(h.min() as f64),
        "mean": us(h.mean()),
        "sd": us(h.stdev()),
        "p50": us(h.value_at_quantile(0.5) as f64),
        "p90": us(h.value_at_quantile(0.9) as f64),
        "p99": us(h.value_at_quantile(0.99) as f64),
        "p999": us(h.value_at_quantile(0.999) as f64),
        "max": us(h.max() as f64),
    })
}

/// The `bench` object.
pub fn bench(info: &RunInfo, r: &Report) -> Value {
    let by_class = |counts: &ClassCounts, skip: ErrorClass| {
        let mut m = serde_json::Map::new();
        for class in ErrorClass::ALL.into_iter().filter(|c| *c != skip) {
            m.insert(class.name().into(), json!(counts.get(class)));
        }
        m.insert("total".into(), json!(counts.total()));
        Value::Object(m)
    };
    let phases = json!({
        "connect": spread(&r.phases.connect),
        "tls": spread(&r.phases.tls),
        "handshake": spread(&r.phases.handshake),
        "waiting": spread(&r.phases.waiting),
        "processing": spread(&r.phases.processing),
        "total": spread(&r.latency),
    });
    let failures: serde_json::Map<String, Value> =
        r.failures.iter().map(|(f, n)| (f.to_string(), json!(n))).collect();
    json!({
        "target": info.target,
        "targets": (!r.targets.is_empty()).then(|| {
            std::iter::once(&info.target).chain(&info.also).zip(&r.targets).map(|(url, t)| json!({
                "url": url,
                "sent": t.sent,
                "ops": t.ops,
                "failed": t.failed(),
                "latency_us": (!t.latency.is_empty()).then(|| json!({
                    "p50": r3(t.latency.value_at_quantile(0.5) as f64 / 1e3),
                    "p90": r3(t.latency.value_at_quantile(0.9) as f64 / 1e3),
                    "p99": r3(t.latency.value_at_quantile(0.99) as f64 / 1e3),
                    "max": r3(t.latency.max() as f64 / 1e3),
                })),
            })).collect::<Vec<_>>()
        }),
        "protocol": info.protocol,
        "engine": info.engine,
        "cores": info.cores,
        "connections": info.connections,
        "depth": info.depth,
        "duration_s": r3(r.elapsed.as_secs_f64()),
        "sent": r.sent,
        "ops": r.ops,
        "failed": by_class(&r.failed, ErrorClass::Connect),
        "accounted": r.accounted(),
        "ops_per_sec": r3(r.ops_per_sec()),
        "messages_per_op": info.messages_per_op,
        "messages": r.ops * info.messages_per_op,
        "messages_per_sec": r3(r.ops_per_sec() * info.messages_per_op as f64),
        "connection_errors": by_class(&r.conn_errors, ErrorClass::Status),
        "failures": failures,
        "phases_us": phases,
        "status_counts": r.answers.sorted().iter().map(|(a, n)| (a.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "not_successful": r.answers.unsuccessful(),
        "error_samples": r.error_samples,
        "connects": r.connects,
        "set_up_in_s": r.set_up_in.map(|d| r3(d.as_secs_f64())),
        "repeat": r.repeats.as_ref().map(repeats),
        "reconnects": r.reconnects,
        "tls": r.tls.used().then(|| tls(r)),
        "bytes": {
            "tx": r.tx.total(),
            "rx": r.rx.total(),
            "op_tx": r.tx.op,
            "op_rx": r.rx.op,
            "warmup_tx": r.tx.warmup_op,
            "warmup_rx": r.rx.warmup_op,
            "handshake_tx": r.tx.handshake,
            "handshake_rx": r.rx.handshake,
            "control_tx": r.tx.control,
            "control_rx": r.rx.control,
            "failed_tx": r.tx.failed,
            "failed_rx": r.rx.failed,
            "tls_tx": r.tx.tls,
            "tls_rx": r.rx.tls,
            "tx_per_op": r3(r.tx_per_op()),
            "rx_per_op": r3(r.rx_per_op()),
        },
        "latency_us": {
            "min": r3(if r.latency.is_empty() { 0.0 } else { r.latency.min() as f64 / 1e3 }),
            "mean": r3(r.latency.mean() / 1e3),
            "p50": r3(r.latency_us(0.5)),
            "p90": r3(r.latency_us(0.9)),
            "p99": r3(r.latency_us(0.99)),
            "p999": r3(r.latency_us(0.999)),
            "max": r3(if r.latency.is_empty() { 0.0 } else { r.latency.max() as f64 / 1e3 }),
        },
        "latency_uncorrected_us": (!r.latency_uncorrected.is_empty()).then(|| json!({
            "p50": r3(r.latency_uncorrected.value_at_quantile(0.5) as f64 / 1e3),
            "p90": r3(r.latency_uncorrected.value_at_quantile(0.9) as f64 / 1e3),
            "p99": r3(r.latency_uncorrected.value_at_quantile(0.99) as f64 / 1e3),
            "p999": r3(r.latency_uncorrected.value_at_quantile(0.999) as f64 / 1e3),
            "max": r3(r.latency_uncorrected.max() as f64 / 1e3),
        })),
        "schedule_lag_us": (!r.schedule_lag.is_empty() || r.due_while_busy > 0 || r.due_unsent > 0).then(|| json!({
            "mean": r3(r.schedule_lag.mean() / 1e3),
            "p50": r3(r.schedule_lag.value_at_quantile(0.5) as f64 / 1e3),
            "p90": r3(r.schedule_lag.value_at_quantile(0.9) as f64 / 1e3),
            "p99": r3(r.schedule_lag.value_at_quantile(0.99) as f64 / 1e3),
            "p999": r3(r.schedule_lag.value_at_quantile(0.999) as f64 / 1e3),
            "max": r3(r.schedule_lag.max() as f64 / 1e3),
            "ops": r.schedule_lag.len(),
            "due_while_busy": r.due_while_busy,
            "due_unsent": r.due_unsent,
        })),
        "preflight": { "connections": r.preflight.connections, "tx": r.preflight.tx, "rx": r.preflight.rx },
        "histograms": histograms(r),
        "series": r.series.as_ref().map(|series| json!({
            "every_s": series.every.as_secs_f64(),
            "intervals": series.intervals.iter().enumerate().map(|(i, iv)| json!({
                "from_s": r3(series.span(i, r.elapsed).0),
                "to_s": r3(series.span(i, r.elapsed).1),
                "ops": iv.ops,
                "errors": iv.errors,
                "p50_us": (!iv.latency.is_empty()).then(|| r3(iv.latency.value_at_quantile(0.5) as f64 / 1e3)),
                "p99_us": (!iv.latency.is_empty()).then(|| r3(iv.latency.value_at_quantile(0.99) as f64 / 1e3)),
            })).collect::<Vec<_>>(),
            "beyond": series.beyond.as_ref().map(|b| json!({ "ops": b.ops, "errors": b.errors })),
        })),
        "cpu_us_per_op": r3(r.cpu_us_per_op()),
        "imbalance_pct": r3(r.imbalance_pct()),
        "per_core": r.per_core.iter().map(|c| json!({
            "core": c.core,
            "ops": c.ops,
            "cpu_util": r3(c.cpu_util()),
            "cpu_us_per_op": r3(c.cpu_us_per_op()),
            "steal_pct": c.steal_share().map(|s| r3(100.0 * s)),
            "spin_pct": r3(100.0 * c.spin_share()),
        })).collect::<Vec<_>>(),
        "kernel_net": r.net.map(|n| {
            let window = r.window_net.map(|(a, b)| b.since(a));
            json!({
                "backlog_drops": n.backlog_drops,
                "retransmits": n.retransmits,
                "window": window.map(|w| json!({ "backlog_drops": w.backlog_drops, "retransmits": w.retransmits })),
            })
        }),
        "audit": {
            "app_tx": r.audit.app_tx,
            "app_rx": r.audit.app_rx,
            "kernel_tx": r.audit.kernel.tx,
            "kernel_rx": r.audit.kernel.rx,
            "kernel_unacked": r.audit.kernel.unacked,
            "segs_out": r.audit.kernel.segs_out,
            "segs_in": r.audit.kernel.segs_in,
            "retransmits": r.audit.kernel.retrans,
            "sockets": r.audit.sockets,
            "inexact": r.audit.inexact.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "inexact_tx": r.audit.inexact_tx,
            "inexact_rx": r.audit.inexact_rx,
            "match": r.audit_matches(),
        },
    })
}

/// The `--watch-pid` object.
pub fn watch(w: &crate::watch::WatchReport) -> Value {
    let spread = |s: crate::watch::Spread| json!({"min": r3(s.min), "mean": r3(s.mean), "max": r3(s.max)});
    json!({
        "pid": w.pid,
        "samples": w.samples,
        "cpu_pct": spread(w.cpu_pct),
        "rss_kib": spread(w.rss_kib),
        "per_cpu_pct": w.per_cpu_pct.iter().map(|(c, p)| (c.to_string(), json!(r3(*p)))).collect::<serde_json::Map<_, _>>(),
    })
}

/// Write `value` pretty-printed to `path` (`-`: stdout).
pub fn write(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    if path == Path::new("-") {
        super::out(&text);
        Ok(())
    } else {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// `--repeat`: every run's line, which one the report is, and the spread of ops/s and p99.
fn repeats(rep: &crate::stats::Repeats) -> Value {
    let spread = |values: Vec<f64>| {
        let s = crate::stats::Spread::of(&values);
        json!({ "median": r3(s.median), "min": r3(s.min), "max": r3(s.max), "spread_pct": r3(s.spread_pct) })
    };
    json!({
        "runs": rep.runs.iter().map(|r| json!({
            "ops": r.ops,
            "ops_per_sec": r3(r.ops_per_sec),
            "p50_us": r3(r.p50_us),
            "p99_us": r3(r.p99_us),
            "errors": r.errors,
            "cpu_us_per_op": r3(r.cpu_us_per_op),
        })).collect::<Vec<_>>(),
        "median_run": rep.median + 1,
        "ops_per_sec": spread(rep.runs.iter().map(|r| r.ops_per_sec).collect()),
        "p99_us": spread(rep.runs.iter().map(|r| r.p99_us).collect()),
    })
}

/// Every histogram of the run whole, in HdrHistogram's interchange form (ns), so that runs can
/// be merged exactly later (`wirebench merge`) or read by HdrHistogram's own tools.
fn histograms(r: &Report) -> Value {
    use crate::stats::encoded::encode;
    json!({
        "encoding": "HdrHistogram V2, deflate, base64",
        "unit": "ns",
        "latency": encode(&r.latency),
        "latency_uncorrected": encode(&r.latency_uncorrected),
        "schedule_lag": encode(&r.schedule_lag),
        "connect": encode(&r.phases.connect),
        "tls": encode(&r.phases.tls),
        "handshake": encode(&r.phases.handshake),
        "waiting": encode(&r.phases.waiting),
        "processing": encode(&r.phases.processing),
    })
}

/// TLS beside the wire's bytes (`bytes` holds the wire's): the plaintext by class, records, and
/// the handshakes with their bytes.
pub fn tls(r: &Report) -> Value {
    let t = &r.tls;
    let per = |n: u64| r3(crate::stats::ratio(n as f64, r.ops as f64));
    let handshakes = |h: &crate::stats::Handshakes| {
        let each = |n: u64| r3(crate::stats::ratio(n as f64, h.count as f64));
        json!({ "count": h.count, "tx": h.tx, "rx": h.rx, "tx_each": each(h.tx), "rx_each": each(h.rx) })
    };
    json!({
        "plaintext": {
            "op_tx": t.plain_tx.op, "op_rx": t.plain_rx.op,
            "handshake_tx": t.plain_tx.handshake, "handshake_rx": t.plain_rx.handshake,
            "control_tx": t.plain_tx.control, "control_rx": t.plain_rx.control,
            "failed_tx": t.plain_tx.failed, "failed_rx": t.plain_rx.failed,
            "tx_per_op": per(t.plain_tx.op), "rx_per_op": per(t.plain_rx.op),
        },
        "overhead_per_op": {
            "tx": per(r.tx.op.saturating_sub(t.plain_tx.op)),
            "rx": per(r.rx.op.saturating_sub(t.plain_rx.op)),
        },
        "records": {
            "tx_per_op": per(t.records_tx.op), "rx_per_op": per(t.records_rx.op),
            "tls_tx": t.records_tx.tls, "tls_rx": t.records_rx.tls,
        },
        "handshakes": { "full": handshakes(&t.full), "resumed": handshakes(&t.resumed) },
    })
}
