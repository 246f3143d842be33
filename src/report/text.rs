//! The text summary, in the spirit of wrk and ab: what ran, throughput, latency, bytes per
//! operation, totals, errors by class, a per-core table, and the kernel audit line.

use super::{RunInfo, bytes, micros, si};
use crate::cpus::format as list_cores;
use crate::stats::Report;
use std::fmt::Write;

/// Steal above this share of a run flags its timings.
const STOLEN_CORE: f64 = 0.02;
/// An engine thread this busy may be what limits the run.
pub const BUSY_CORE: f64 = 0.90;

pub fn render(info: &RunInfo, r: &Report) -> String {
    let mut s = String::new();
    let secs = r.elapsed.as_secs_f64();
    let _ = writeln!(
        s,
        "{} {} — {} engine on CPU {}, {} connection{}, depth {}{}, {:.2}s measured",
        info.protocol,
        if info.also.is_empty() {
            info.target.clone()
        } else {
            format!("{} and {} more (round-robin)", info.target, info.also.len())
        },
        info.engine,
        list_cores(&info.cores),
        info.connections,
        if info.connections == 1 { "" } else { "s" },
        info.depth,
        info.interval.map(|i| format!(", one op every {i:?} per connection")).unwrap_or_default(),
        secs
    );
    let _ = writeln!(
        s,
        "  ops         {} completed in {:.2}s = {} ops/s  (sent {} = {} completed + {} failed)",
        r.ops,
        secs,
        si(r.ops_per_sec()),
        r.sent,
        r.ops,
        r.failed.total()
    );
    if !r.targets.is_empty() {
        let _ = writeln!(
            s,
            "  per target  {:<40} {:>10} {:>7} {:>8} {:>10} {:>10}",
            "url", "completed", "share", "failed", "p50", "p99"
        );
        for (url, t) in std::iter::once(&info.target).chain(&info.also).zip(&r.targets) {
            let q = |q: f64| {
                micros(if t.latency.is_empty() { 0.0 } else { t.latency.value_at_quantile(q) as f64 / 1e3 })
            };
            let _ = writeln!(
                s,
                "              {:<40} {:>10} {:>6.1}% {:>8} {:>10} {:>10}",
                url,
                t.ops,
                100.0 * crate::stats::ratio(t.ops as f64, r.ops as f64),
                t.failed(),
                q(0.5),
                q(0.99)
            );
        }
    }
    if !r.accounted() {
        let _ = writeln!(
            s,
            "  WARNING     {} operation(s) sent ended neither completed nor failed: a wirebench bug, please report it",
            r.sent as i128 - (r.ops + r.failed.total()) as i128
        );
    }
    if info.messages_per_op > 1 {
        let _ = writeln!(
            s,
            "  messages    {} ({} per op) = {} msg/s",
            r.ops * info.messages_per_op,
            info.messages_per_op,
            si(r.ops_per_sec() * info.messages_per_op as f64)
        );
    }
    if r.latency.is_empty() {
        let _ = writeln!(s, "  latency     (no operation completed)");
    } else {
        let _ = writeln!(
            s,
            "  latency     min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            micros(r.latency.min() as f64 / 1e3),
            micros(r.latency.mean() / 1e3),
            micros(r.latency_us(0.5)),
            micros(r.latency_us(0.9)),
            micros(r.latency_us(0.99)),
            micros(r.latency_us(0.999)),
            micros(r.latency.max() as f64 / 1e3),
        );
    }
    if !r.latency_uncorrected.is_empty() {
        let h = &r.latency_uncorrected;
        let _ = writeln!(
            s,
            "  uncorrected p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (from the actual send; the line above counts from when each op was due)",
            micros(h.value_at_quantile(0.5) as f64 / 1e3),
            micros(h.value_at_quantile(0.9) as f64 / 1e3),
            micros(h.value_at_quantile(0.99) as f64 / 1e3),
            micros(h.value_at_quantile(0.999) as f64 / 1e3),
            micros(h.max() as f64 / 1e3),
        );
    }
    if !r.schedule_lag.is_empty() || r.due_while_busy > 0 {
        let h = &r.schedule_lag;
        let q = |q: f64| micros(if h.is_empty() { 0.0 } else { h.value_at_quantile(q) as f64 / 1e3 });
        let _ = writeln!(
            s,
            "  sched lag   p50 {}  p99 {}  p99.9 {}  max {}  (how late the generator sent ops due on a free connection; {} more came due on a busy one)",
            q(0.5),
            q(0.99),
            q(0.999),
            micros(h.max() as f64 / 1e3),
            r.due_while_busy,
        );
    }
    if r.due_unsent > 0 {
        let _ = writeln!(
            s,
            "  NOT SENT    {} operations came due before the end and were never sent (their connections still waited for answers): the server did not keep up with the rate",
            r.due_unsent,
        );
    }
    s.push_str(&phases(r));
    let _ = writeln!(
        s,
        "  bytes/op    tx {:.2}  rx {:.2}  (bytes of completed operations / completed)",
        r.tx_per_op(),
        r.rx_per_op()
    );
    let _ = writeln!(
        s,
        "  transfer    tx {} ({}/s)  rx {} ({}/s) in the measured window",
        bytes(r.tx.op as f64),
        bytes(r.tx.op as f64 / secs.max(1e-9)),
        bytes(r.rx.op as f64),
        bytes(r.rx.op as f64 / secs.max(1e-9)),
    );
    if r.preflight.connections > 0 {
        let _ = writeln!(
            s,
            "  pre-flight  {} connection{} before the run to check the target: tx {} rx {} (not in the figures above)",
            r.preflight.connections,
            if r.preflight.connections == 1 { "" } else { "s" },
            bytes(r.preflight.tx as f64),
            bytes(r.preflight.rx as f64),
        );
    }
    if r.tls.used() {
        s += &tls_lines(r);
    }
    let _ = writeln!(
        s,
        "  other bytes handshake tx {} rx {}  control tx {} rx {}  warm-up tx {} rx {}  failed ops tx {} rx {}{}",
        r.tx.handshake,
        r.rx.handshake,
        r.tx.control,
        r.rx.control,
        r.tx.warmup_op,
        r.rx.warmup_op,
        r.tx.failed,
        r.rx.failed,
        if r.tls.used() { format!("  tls tx {} rx {}", r.tx.tls, r.rx.tls) } else { String::new() }
    );
    let _ = write!(s, "  connections {} opened, {} reconnects", r.connects, r.reconnects);
    match r.set_up_in {
        Some(d) => {
            let _ = writeln!(
                s,
                "; the measured window began {} after the start (every connection set up, or failed its first try)",
                micros(d.as_secs_f64() * 1e6)
            );
        }
        None => s.push('\n'),
    }
    if !r.answers.is_empty() {
        let all: Vec<String> = r.answers.sorted().iter().map(|(a, n)| format!("{a}: {n}")).collect();
        let odd = r.answers.unsuccessful();
        let note = if odd > 0 { format!("  ({odd} not successful)") } else { String::new() };
        let _ = writeln!(s, "  answers     {}{note}", all.join(", "));
    }
    let classes = |counts: &crate::outcome::ClassCounts| {
        counts.nonzero().map(|(c, n)| format!("{} {n}", c.name())).collect::<Vec<_>>().join(", ")
    };
    if r.errors_total() == 0 {
        let _ = writeln!(s, "  errors      none");
    } else {
        if r.failed.total() > 0 {
            let _ = writeln!(s, "  failed ops  {} ({})", r.failed.total(), classes(&r.failed));
        }
        if r.conn_errors.total() > 0 {
            let _ = writeln!(s, "  conn errors {} ({})", r.conn_errors.total(), classes(&r.conn_errors));
        }
        if !r.failures.is_empty() {
            let f: Vec<String> = r.failures.iter().map(|(f, n)| format!("{f} ×{n}")).collect();
            let _ = writeln!(s, "              refused: {}", f.join(", "));
        }
    }
    for sample in &r.error_samples {
        let _ = writeln!(s, "              e.g. {sample}");
    }
    let _ = writeln!(s, "  per core    cpu  ops         share   busy   cpu/op");
    for c in &r.per_core {
        let _ = writeln!(
            s,
            "              {:>3}  {:<10}  {:>5.1}%  {:>4.0}%  {:.2}us",
            c.core,
            c.ops,
            100.0 * crate::stats::ratio(c.ops as f64, r.ops as f64),
            100.0 * c.cpu_util(),
            c.cpu_us_per_op()
        );
    }
    if r.per_core.len() > 1 {
        let _ = writeln!(s, "              imbalance {:.1}% ((max − min) / mean ops)", r.imbalance_pct());
    }
    let a = &r.audit;
    let verdict = if !a.matches() {
        format!(
            "DIFFER by tx {:+} rx {:+}",
            a.kernel.tx as i128 - a.app_tx as i128,
            a.kernel.rx as i128 - a.app_rx as i128
        )
    } else if !r.bytes_on_closed_sockets() {
        format!(
            "match, but tx {} rx {} bytes were on sockets never closed",
            r.tx.total() as i128 - (a.app_tx + a.inexact_tx) as i128,
            r.rx.total() as i128 - (a.app_rx + a.inexact_rx) as i128
        )
    } else {
        "match".to_string()
    };
    let _ = writeln!(
        s,
        "  audit       app tx {} rx {}  kernel tx {} rx {} (TCP_INFO at close, {} sockets, segs out {} in {}{}): {}",
        a.app_tx,
        a.app_rx,
        a.kernel.tx,
        a.kernel.rx,
        a.sockets,
        a.kernel.segs_out,
        a.kernel.segs_in,
        if a.kernel.unacked > 0 {
            format!(", {} B written never acknowledged", a.kernel.unacked)
        } else {
            String::new()
        },
        verdict
    );
    if a.inexact_sockets() > 0 {
        let reasons: Vec<String> = a.inexact.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
        let _ = writeln!(
            s,
            "              not checkable: {} socket(s) ({}), app tx {} rx {} on them, set apart",
            a.inexact_sockets(),
            reasons.join(", "),
            a.inexact_tx,
            a.inexact_rx
        );
    }
    if let Some(net) = r.net.filter(|n| n.backlog_drops > 0 || n.retransmits > 0) {
        let window = r.window_net.map(|(a, b)| b.since(a)).unwrap_or(net);
        let _ = writeln!(
            s,
            "  note        the kernel dropped {} packets at its input backlog (net.core.netdev_max_backlog) and retransmitted {} TCP segments in the measured window, {} and {} in the whole run with set-up and close (machine-wide; {} retransmits on these connections): an answer caught in that waits a retransmission timeout, 200 ms or more; on loopback it means a CPU too busy to run its softirqs",
            window.backlog_drops,
            window.retransmits,
            net.backlog_drops,
            net.retransmits,
            r.audit.kernel.retrans
        );
    }
    for c in r.per_core.iter().filter(|c| c.steal_share().is_some_and(|s| s >= STOLEN_CORE)) {
        let _ = writeln!(
            s,
            "  warning     the hypervisor took {:.0}% of engine CPU {}'s time during the run (steal): latencies and lag include those pauses; rerun on a quieter host",
            100.0 * c.steal_share().unwrap_or(0.0),
            c.core,
        );
    }
    for c in r.per_core.iter().filter(|c| c.cpu_util() >= BUSY_CORE) {
        if c.work_util() >= BUSY_CORE {
            let _ = writeln!(
                s,
                "  warning     engine CPU {} was {:.0}% busy: the generator may be the bottleneck; give it more cores with --cores",
                c.core,
                100.0 * c.cpu_util()
            );
        } else {
            let _ = writeln!(
                s,
                "  note        engine CPU {} was {:.0}% busy, {:.0} points of it awake for paced sends due within {}us (a sleep would wake them late): working {:.0}%, not a bottleneck",
                c.core,
                100.0 * c.cpu_util(),
                100.0 * c.spin_share(),
                info.spin.unwrap_or_default().as_micros(),
                100.0 * c.work_util()
            );
        }
    }
    if let Some(series) = &r.series {
        s.push_str(&series_table(series, r.elapsed));
    }
    if let Some(rep) = &r.repeats {
        s.push_str(&repeats(rep));
    }
    s
}

/// What TLS cost: per operation the wire beside the plaintext and the records, and the
/// handshakes (full, resumed) with their bytes each.
fn tls_lines(r: &Report) -> String {
    let t = &r.tls;
    let per = |n: u64| crate::stats::ratio(n as f64, r.ops as f64);
    let mut s = format!(
        "  tls/op      tx {:.2} = plaintext {:.2} + {:.2} TLS  rx {:.2} = {:.2} + {:.2}  records tx {:.2} rx {:.2}\n",
        per(r.tx.op),
        per(t.plain_tx.op),
        per(r.tx.op.saturating_sub(t.plain_tx.op)),
        per(r.rx.op),
        per(t.plain_rx.op),
        per(r.rx.op.saturating_sub(t.plain_rx.op)),
        per(t.records_tx.op),
        per(t.records_rx.op),
    );
    let each = |h: &crate::stats::Handshakes| {
        let n = h.count.max(1) as f64;
        format!("{} (tx {:.0} rx {:.0} B each)", h.count, h.tx as f64 / n, h.rx as f64 / n)
    };
    let _ = writeln!(
        s,
        "  tls hands   full {}  resumed {}; TLS's own records in all (handshakes, tickets, alerts): tx {} rx {} B",
        each(&t.full),
        each(&t.resumed),
        r.tx.tls,
        r.rx.tls
    );
    s
}

/// Milliseconds from a histogram's nanoseconds, as ab prints its tables (with µs precision).
fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// ab's "Connection Times (ms)" table, a row per phase that was measured, and its "served
/// within" percentiles of the total.
fn phases(r: &Report) -> String {
    let mut s = String::new();
    let p = &r.phases;
    let rows = [
        ("connect", &p.connect, "per connection"),
        ("tls", &p.tls, "TLS handshake, per connection"),
        ("handshake", &p.handshake, "per connection"),
        ("waiting", &p.waiting, "written to first byte"),
        ("processing", &p.processing, "sent to last byte"),
        ("total", &r.latency, "due to last byte"),
    ];
    if r.latency.is_empty() {
        return s;
    }
    let _ = writeln!(s, "  phases (ms)        min      mean   [+/-sd]    median       max");
    for (name, h, what) in rows.iter().filter(|(_, h, _)| !h.is_empty()) {
        let _ = writeln!(
            s,
            "    {name:<11} {:>9} {:>9} {:>9} {:>9} {:>9}  ({what}, {} samples)",
            ms(h.min() as f64),
            ms(h.mean()),
            ms(h.stdev()),
            ms(h.value_at_quantile(0.5) as f64),
            ms(h.max() as f64),
            h.len()
        );
    }
    let within: Vec<String> = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0]
        .iter()
        .map(|pct| format!("{pct:.0}% {}", ms(r.latency.value_at_percentile(*pct) as f64)))
        .collect();
    let _ = writeln!(s, "  served in   {} (ms, of the total)", within.join("  "));
    s
}

/// `--latency`: the full percentile spectrum of the total latency, as wrk2 prints it.
pub fn spectrum(r: &Report) -> String {
    let mut s = String::from(
        "  latency spectrum (total, from when each operation was due)
",
    );
    let _ = writeln!(
        s,
        "  {:>12} {:>12} {:>12} {:>18}",
        "Value(ms)", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0;
    for v in r.latency.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let inverse = if q < 1.0 { format!("{:.2}", 1.0 / (1.0 - q)) } else { "inf".into() };
        let _ = writeln!(
            s,
            "  {:>12} {:>12.6} {:>12} {:>18}",
            ms(v.value_iterated_to() as f64),
            q,
            total,
            inverse
        );
    }
    s
}

/// The `--watch-pid` lines: the server's CPU and memory during the run.
pub fn render_watch(w: &crate::watch::WatchReport) -> String {
    let mut s = format!(
        "  server pid {} ({} samples): CPU min {:.0}% mean {:.0}% max {:.0}%  RSS min {} mean {} max {}\n",
        w.pid,
        w.samples,
        w.cpu_pct.min,
        w.cpu_pct.mean,
        w.cpu_pct.max,
        super::bytes(w.rss_kib.min * 1024.0),
        super::bytes(w.rss_kib.mean * 1024.0),
        super::bytes(w.rss_kib.max * 1024.0),
    );
    if !w.per_cpu_pct.is_empty() {
        let per: Vec<String> = w.per_cpu_pct.iter().map(|(c, p)| format!("cpu{c} {p:.0}%")).collect();
        let _ = writeln!(s, "              per CPU (by each thread's last CPU): {}", per.join("  "));
    }
    s
}

/// `--repeat`: a line per run, then the median, min, max and spread of ops/s and p99.
fn repeats(rep: &crate::stats::Repeats) -> String {
    use crate::stats::Spread;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  runs        {} back to back; the figures above are run {}'s, the median by ops/s",
        rep.runs.len(),
        rep.median + 1
    );
    for (i, run) in rep.runs.iter().enumerate() {
        let _ = writeln!(
            s,
            "              run {:<3} {:>9} ops/s  p50 {:>9}  p99 {:>9}  cpu/op {:>9}  errors {}",
            i + 1,
            si(run.ops_per_sec),
            micros(run.p50_us),
            micros(run.p99_us),
            micros(run.cpu_us_per_op),
            run.errors
        );
    }
    let ops = Spread::of(&rep.runs.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
    let p99 = Spread::of(&rep.runs.iter().map(|r| r.p99_us).collect::<Vec<_>>());
    let _ = writeln!(
        s,
        "  over runs   ops/s median {} min {} max {} spread {:.1}%   p99 median {} min {} max {} spread {:.1}%",
        si(ops.median),
        si(ops.min),
        si(ops.max),
        ops.spread_pct,
        micros(p99.median),
        micros(p99.min),
        micros(p99.max),
        p99.spread_pct
    );
    s
}

/// `--report-every`: a line per interval of the measured window (the last one as long as
/// the window lasted into it).
fn series_table(series: &crate::stats::Series, elapsed: std::time::Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  intervals   {:>8} {:>8} {:>9} {:>10} {:>7} {:>9} {:>9}",
        "from s", "to s", "ops", "ops/s", "errors", "p50", "p99"
    );
    for (i, iv) in series.intervals.iter().enumerate() {
        let q = |q: f64| {
            micros(if iv.latency.is_empty() { 0.0 } else { iv.latency.value_at_quantile(q) as f64 / 1e3 })
        };
        let (from, to) = series.span(i, elapsed);
        let _ = writeln!(
            s,
            "              {:>8.2} {:>8.2} {:>9} {:>10} {:>7} {:>9} {:>9}",
            from,
            to,
            iv.ops,
            si(iv.ops as f64 / (to - from).max(1e-9)),
            iv.errors,
            q(0.5),
            q(0.99)
        );
    }
    if let Some(b) = &series.beyond {
        let _ = writeln!(
            s,
            "              after the {} intervals kept: {} ops, {} errors (not cut into intervals)",
            series.intervals.len(),
            b.ops,
            b.errors
        );
    }
    s
}
