//! The text summary, in the spirit of wrk and ab: what ran, throughput, latency, bytes per
//! operation, totals, errors by class, a per-core table, and the kernel audit line. It reads
//! a [`RunResult`] (what `--json` writes, and what `merge` makes), a section per function.

use super::{RunInfo, bytes, micros, si};
use crate::cpus::format as list_cores;
use crate::outcome::ErrorClass;
use crate::stats::ratio;
use crate::stats::result::{CoreResult, Hist, RunResult, Spread};
use std::fmt::Write;

/// Steal above this share of a run flags its timings.
const STOLEN_CORE: f64 = 0.02;
/// An engine thread this busy may be what limits the run.
pub const BUSY_CORE: f64 = 0.90;

/// The whole summary of a run.
pub fn render(info: &RunInfo, r: &RunResult) -> String {
    let mut s = String::new();
    s += &header(info, r);
    s += &throughput(r);
    s += &latency(r);
    s += &phases(r);
    s += &traffic(r);
    s += &outcomes(r);
    s += &cores(info, r);
    s += &audit(r);
    if !r.stages.is_empty() {
        s += &stages_table(&r.stages);
    } else if let Some(series) = &r.series {
        s += &series_table(series);
    }
    if let Some(rep) = &r.repeat {
        s += &repeats(rep);
    }
    s
}

/// What ran, and the window measured.
fn header(info: &RunInfo, r: &RunResult) -> String {
    let targets = match r.targets.as_ref().map_or(0, |t| t.len().saturating_sub(1)) {
        0 => r.target.clone(),
        more => format!("{} and {more} more (round-robin)", r.target),
    };
    format!(
        "{} {} — {} engine on CPU {}, {} connection{}, depth {}{}, {:.2}s measured\n",
        r.protocol,
        targets,
        r.engine,
        list_cores(&r.cores),
        r.connections,
        if r.connections == 1 { "" } else { "s" },
        r.depth,
        info.interval.map(|i| format!(", one op every {i:?} per connection")).unwrap_or_default(),
        r.duration_s
    )
}

/// Operations, per target, messages.
fn throughput(r: &RunResult) -> String {
    let mut s = String::new();
    let failed = r.failed.get("total").copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "  ops         {} completed in {:.2}s = {} ops/s  (sent {} = {} completed + {} failed)",
        r.ops,
        r.duration_s,
        si(r.ops_per_sec),
        r.sent,
        r.ops,
        failed
    );
    if let Some(targets) = &r.targets {
        let _ = writeln!(
            s,
            "  per target  {:<40} {:>10} {:>7} {:>8} {:>10} {:>10}",
            "url", "completed", "share", "failed", "p50", "p99"
        );
        for t in targets {
            let _ = writeln!(
                s,
                "              {:<40} {:>10} {:>6.1}% {:>8} {:>10} {:>10}",
                t.url,
                t.ops,
                100.0 * ratio(t.ops as f64, r.ops as f64),
                t.failed,
                micros(t.latency_us.p50),
                micros(t.latency_us.p99)
            );
        }
    }
    if let Some(kinds) = &r.requests {
        let _ = writeln!(
            s,
            "  per kind    {:<28} {:>7} {:>10} {:>7} {:>8} {:>9} {:>9} {:>10} {:>10}",
            "label", "entries", "completed", "share", "failed", "tx/op", "rx/op", "p50", "p99"
        );
        // QUIC's bytes are counted per datagram, which carries several requests' frames: none
        // per kind to stand behind.
        let quic = r.datagrams.is_some();
        let per_op = |n: f64| if quic { "-".to_string() } else { format!("{n:.1}") };
        for k in kinds {
            let _ = writeln!(
                s,
                "              {:<28} {:>7} {:>10} {:>6.1}% {:>8} {:>9} {:>9} {:>10} {:>10}",
                k.label,
                k.entries,
                k.ops,
                100.0 * ratio(k.ops as f64, r.ops as f64),
                k.failed,
                per_op(k.tx_per_op),
                per_op(k.rx_per_op),
                micros(k.latency_us.p50),
                micros(k.latency_us.p99)
            );
        }
        if quic {
            let _ = writeln!(
                s,
                "              (QUIC: bytes are counted per datagram, not per request: none per kind)"
            );
        }
    }
    if !r.accounted {
        let _ = writeln!(
            s,
            "  WARNING     {} operation(s) sent ended neither completed nor failed: a wirebench bug, please report it",
            r.sent as i128 - (r.ops + failed) as i128
        );
    }
    if r.messages_per_op > 1 {
        let _ = writeln!(
            s,
            "  messages    {} ({} per op) = {} msg/s",
            r.messages,
            r.messages_per_op,
            si(r.messages_per_sec)
        );
    }
    s
}

/// The latency line, the uncorrected one, the schedule's lag and what it never sent.
fn latency(r: &RunResult) -> String {
    let mut s = String::new();
    let l = &r.latency_us;
    if l.count == 0 {
        let _ = writeln!(s, "  latency     (no operation completed)");
    } else {
        let [min, mean, p50, p90, p99, p999, max] = super::spread_cells(l);
        let _ = writeln!(
            s,
            "  latency     min {min}  mean {mean}  p50 {p50}  p90 {p90}  p99 {p99}  p99.9 {p999}  max {max}"
        );
    }
    if let Some(h) = &r.latency_uncorrected_us {
        let _ = writeln!(
            s,
            "  uncorrected p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (from the actual send; the line above counts from when each op was due)",
            micros(h.p50),
            micros(h.p90),
            micros(h.p99),
            micros(h.p999),
            micros(h.max),
        );
    }
    if r.schedule_lag_us.is_some() || r.due_while_busy > 0 {
        let h = r.schedule_lag_us.unwrap_or_default();
        let _ = writeln!(
            s,
            "  sched lag   p50 {}  p99 {}  p99.9 {}  max {}  (how late the generator sent ops due on a free connection; {} more came due on a busy one)",
            micros(h.p50),
            micros(h.p99),
            micros(h.p999),
            micros(h.max),
            r.due_while_busy,
        );
    }
    if r.due_unsent > 0 {
        // Blame the side the evidence points to: operations that came due on busy connections
        // say the server was slow; none did, and the generator was late (its own lag).
        let why = if r.due_while_busy > 0 {
            "their connections still waited for answers: the server did not keep up with the rate".to_string()
        } else {
            format!(
                "no connection was busy: the generator was late sending them (its lag p99 {}) — give it more cores or fewer connections per core",
                micros(r.schedule_lag_us.unwrap_or_default().p99)
            )
        };
        let _ = writeln!(
            s,
            "  NOT SENT    {} operations came due before the end and were never sent: {why}",
            r.due_unsent
        );
    }
    s
}

/// Milliseconds from µs, as ab prints its tables.
fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

/// ab's "Connection Times (ms)" table, a row per phase that was measured, and its "served
/// within" percentiles of the total.
fn phases(r: &RunResult) -> String {
    let mut s = String::new();
    let (p, total) = (&r.phases_us.phases, r.phases_us.total);
    if r.latency_us.count == 0 {
        return s;
    }
    let rows = [
        ("connect", p.connect, "per connection"),
        ("tls", p.tls, "TLS handshake, per connection"),
        ("handshake", p.handshake, "per connection"),
        ("waiting", p.waiting, "written to first byte"),
        ("processing", p.processing, "sent to last byte"),
        ("total", total, "due to last byte"),
    ];
    let _ = writeln!(s, "  phases (ms)        min      mean   [+/-sd]    median       max");
    for (name, spread, what) in rows {
        let Some(h): Option<Spread> = spread else { continue };
        let _ = writeln!(
            s,
            "    {name:<11} {:>9} {:>9} {:>9} {:>9} {:>9}  ({what}, {} samples)",
            ms(h.min),
            ms(h.mean),
            ms(h.sd),
            ms(h.p50),
            ms(h.max),
            h.count
        );
    }
    let total = &r.histograms.latency.0;
    let within: Vec<String> = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0]
        .iter()
        .map(|pct| format!("{pct:.0}% {}", ms(total.value_at_percentile(*pct) as f64 / 1e3)))
        .collect();
    let _ = writeln!(s, "  served in   {} (ms, of the total)", within.join("  "));
    s
}

/// Bytes per operation, transfer, the pre-flight, TLS, the other classes, connections.
fn traffic(r: &RunResult) -> String {
    let mut s = String::new();
    let b = &r.bytes;
    let secs = r.duration_s.max(1e-9);
    let _ = writeln!(
        s,
        "  bytes/op    tx {:.2}  rx {:.2}  (bytes of completed operations / completed)",
        b.tx_per_op, b.rx_per_op
    );
    let _ = writeln!(
        s,
        "  transfer    tx {} ({}/s)  rx {} ({}/s) in the measured window",
        bytes(b.op_tx as f64),
        bytes(b.op_tx as f64 / secs),
        bytes(b.op_rx as f64),
        bytes(b.op_rx as f64 / secs),
    );
    if let Some(d) = &r.datagrams {
        let per = |n: u64| ratio(n as f64, r.ops as f64);
        let _ = writeln!(
            s,
            "  datagrams   tx {} rx {} ({:.2} / {:.2} per op; UDP payload above, set-up included)",
            d.tx,
            d.rx,
            per(d.tx),
            per(d.rx)
        );
        if let Some(net) = &r.kernel_net {
            let _ = writeln!(
                s,
                "              the machine's over the run (/proc/net/snmp, every process; a GSO send counts once out, a GRO receive once in): out {} in {}, {} dropped at a full receive buffer",
                net.udp.datagrams_out, net.udp.datagrams_in, net.udp.receive_buffer_drops
            );
        }
    }
    let pre = &r.preflight;
    // A pre-flight that only connected has nothing to set apart: no line.
    if pre.connections > 0 && pre.tx + pre.rx > 0 {
        let _ = writeln!(
            s,
            "  pre-flight  {} connection{} before the run to check the target: tx {} rx {} (not in the figures above)",
            pre.connections,
            if pre.connections == 1 { "" } else { "s" },
            bytes(pre.tx as f64),
            bytes(pre.rx as f64),
        );
    }
    if let Some(tls) = &r.tls {
        s += &tls_lines(r, tls);
    }
    if let Some(l) = &r.layers {
        s += &layers_lines(l);
    }
    let others = [b.handshake_tx, b.handshake_rx, b.control_tx, b.control_rx, b.warmup_tx, b.warmup_rx];
    let any_other = others.iter().chain([&b.failed_tx, &b.failed_rx, &b.tls_tx, &b.tls_rx]).any(|n| *n > 0);
    if any_other {
        let _ = writeln!(
            s,
            "  other bytes handshake tx {} rx {}  control tx {} rx {}  warm-up tx {} rx {}  failed ops tx {} rx {}{}",
            b.handshake_tx,
            b.handshake_rx,
            b.control_tx,
            b.control_rx,
            b.warmup_tx,
            b.warmup_rx,
            b.failed_tx,
            b.failed_rx,
            if r.tls.is_some() { format!("  tls tx {} rx {}", b.tls_tx, b.tls_rx) } else { String::new() }
        );
    }
    s + &connection_lines(r)
}

/// The bytes per operation by a protocol's layers, first request and later ones.
fn layers_lines(l: &crate::stats::Layers) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  layers/op   each connection's first request ({}) / the ones after it ({}), every one sent:",
        l.first.ops, l.steady.ops
    );
    s += &super::layer_heading(13);
    s += &super::layer_lines("             ", l);
    if l.stopped > 0 {
        let _ = writeln!(
            s,
            "              {} {} stopped by the server before all their bytes went: tx counts what was handed to the transport (at most what went)",
            l.stopped,
            if l.stopped == 1 { "request was" } else { "requests were" }
        );
    }
    s
}

/// Connections opened and reopened, when the window began, and `--connect-rate auto`'s pace.
fn connection_lines(r: &RunResult) -> String {
    let mut s = String::new();
    let _ = write!(s, "  connections {} opened, {} reconnects", r.connects, r.reconnects);
    match r.set_up_in_s {
        Some(secs) => {
            let _ = writeln!(
                s,
                "; the measured window began {} after the start (every connection set up, or failed its first try)",
                micros(secs * 1e6)
            );
        }
        None => s.push('\n'),
    }
    if let Some(auto) = &r.connect_rate_auto {
        let _ = writeln!(
            s,
            "  opening     paced as set-ups kept up (--connect-rate auto, or a core's openings past its first {}): peaked at {}/s, {}/s at the end, halved {} time{} (a set-up over 1 s, or failed)",
            crate::opener::Opener::BURST,
            si(auto.peak_per_s),
            si(auto.final_per_s),
            auto.decreases,
            if auto.decreases == 1 { "" } else { "s" }
        );
    }
    s
}

/// What TLS cost: per operation the wire beside the plaintext and the records, and the
/// handshakes (full, resumed) with their bytes each.
fn tls_lines(r: &RunResult, t: &crate::stats::result::TlsResult) -> String {
    let per = |n: u64| ratio(n as f64, r.ops as f64);
    let p = &t.per_op;
    let mut s = format!(
        "  tls/op      tx {:.2} = plaintext {:.2} + {:.2} TLS  rx {:.2} = {:.2} + {:.2}  records tx {:.2} rx {:.2}\n",
        per(r.bytes.op_tx),
        p.plain_tx,
        p.overhead_tx,
        per(r.bytes.op_rx),
        p.plain_rx,
        p.overhead_rx,
        p.records_tx,
        p.records_rx,
    );
    let each = |h: &crate::stats::result::HandshakeResult| {
        format!("{} (tx {:.0} rx {:.0} B each)", h.count, h.tx_each, h.rx_each)
    };
    let _ = writeln!(
        s,
        "  tls hands   full {}  resumed {}; TLS's own records in all (handshakes, tickets, alerts): tx {} rx {} B",
        each(&t.full),
        each(&t.resumed),
        r.bytes.tls_tx,
        r.bytes.tls_rx
    );
    s
}

/// Answers in the protocol's words, errors by class, refusals, samples.
fn outcomes(r: &RunResult) -> String {
    let mut s = String::new();
    if !r.status_counts.is_empty() {
        let all: Vec<String> = r.status_counts.iter().map(|(a, n)| format!("{a}: {n}")).collect();
        let odd = r.not_successful;
        let note = if odd > 0 { format!("  ({odd} not successful)") } else { String::new() };
        let _ = writeln!(s, "  answers     {}{note}", all.join(", "));
    }
    // In the classes' own order (connect first, TLS last), the nonzero ones.
    let classes = |counts: &std::collections::BTreeMap<String, u64>| {
        ErrorClass::ALL
            .iter()
            .filter_map(|c| counts.get(c.name()).filter(|n| **n > 0).map(|n| format!("{} {n}", c.name())))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let total = |counts: &std::collections::BTreeMap<String, u64>| counts.get("total").copied().unwrap_or(0);
    if r.errors() == 0 {
        let _ = writeln!(s, "  errors      none");
    } else {
        if total(&r.failed) > 0 {
            let _ = writeln!(s, "  failed ops  {} ({})", total(&r.failed), classes(&r.failed));
        }
        if total(&r.connection_errors) > 0 {
            let _ = writeln!(
                s,
                "  conn errors {} ({})",
                total(&r.connection_errors),
                classes(&r.connection_errors)
            );
        }
        if !r.failures.is_empty() {
            let f: Vec<String> = r.failures.iter().map(|(f, n)| format!("{f} ×{n}")).collect();
            let _ = writeln!(s, "              refused: {}", f.join(", "));
        }
    }
    for sample in &r.error_samples {
        let _ = writeln!(s, "              e.g. {sample}");
    }
    s
}

/// Share of the wall time a core spent working (spinning for a paced send left out).
fn work_util(c: &CoreResult) -> f64 {
    ratio((c.cpu_s - c.spin_s).max(0.0), c.wall_s)
}

/// The per-core table, and what its figures warn of (steal, a busy generator).
fn cores(info: &RunInfo, r: &RunResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "  per core    cpu  ops         share   busy   cpu/op");
    for c in &r.per_core {
        let _ = writeln!(
            s,
            "              {:>3}  {:<10}  {:>5.1}%  {:>4.0}%  {:.2}us{}",
            c.core,
            c.ops,
            100.0 * ratio(c.ops as f64, r.ops as f64),
            100.0 * c.cpu_util,
            c.cpu_us_per_op,
            c.run.as_ref().map(|run| format!("  ({run})")).unwrap_or_default()
        );
    }
    if r.per_core.len() > 1 {
        let _ = writeln!(s, "              imbalance {:.1}% ((max − min) / mean ops)", r.imbalance_pct);
    }
    s += &kernel_note(r);
    let gathered = r.per_core.iter().map(|c| c.gathered_us).fold(0.0, f64::max);
    if gathered > 0.0 {
        let _ = writeln!(
            s,
            "  note        wake-ups gathered: an answer may have been read, and timed, up to {gathered:.0}us late (1/64 of the mean latency at most; --gather 0 wakes for each)"
        );
    }
    for c in r.per_core.iter().filter(|c| c.steal_pct.is_some_and(|p| p >= 100.0 * STOLEN_CORE)) {
        let _ = writeln!(
            s,
            "  warning     the hypervisor took {:.0}% of engine CPU {}'s time during the run (steal): latencies and lag include those pauses; rerun on a quieter host",
            c.steal_pct.unwrap_or(0.0),
            c.core,
        );
    }
    for c in r.per_core.iter().filter(|c| c.cpu_util >= BUSY_CORE) {
        if work_util(c) >= BUSY_CORE {
            let _ = writeln!(
                s,
                "  warning     engine CPU {} was {:.0}% busy: the generator may be the bottleneck; give it more cores with --cores",
                c.core,
                100.0 * c.cpu_util
            );
        } else {
            let _ = writeln!(
                s,
                "  note        engine CPU {} was {:.0}% busy, {:.0} points of it awake for paced sends due within {}us (a sleep would wake them late): working {:.0}%, not a bottleneck",
                c.core,
                100.0 * c.cpu_util,
                c.spin_pct,
                info.spin.unwrap_or_default().as_micros(),
                100.0 * work_util(c)
            );
        }
    }
    s
}

/// Drops the machine saw and retransmits on this run's own connections: an answer caught in one
/// waits 200 ms or more. Silent when neither touched the run (other processes' retransmits
/// are theirs).
fn kernel_note(r: &RunResult) -> String {
    let Some(net) = r.kernel_net else { return String::new() };
    let drops = net.window.map_or(net.backlog_drops, |w| w.backlog_drops);
    let ours = r.audit.retransmits;
    if drops == 0 && ours == 0 {
        return String::new();
    }
    format!(
        "  note        {ours} TCP segments retransmitted on this run's connections, {drops} packets dropped at the kernel's input backlog in the measured window (machine-wide): an answer caught in one waits 200 ms or more; on loopback, a CPU too busy to run its softirqs\n"
    )
}

/// The kernel's counts against ours, and what could not be checked.
fn audit(r: &RunResult) -> String {
    let mut s = String::new();
    let a = &r.audit;
    if a.unchecked() {
        // No socket's counts could be read (UDP and Unix sockets: the kernel keeps none).
        let reasons: Vec<String> = a.inexact.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "  audit       unchecked: app tx {} rx {} on {} socket(s) the kernel keeps no counts for ({}); a packet capture (UDP, tests/capture.rs) or the server's own count checks them",
            a.inexact_tx,
            a.inexact_rx,
            a.inexact.values().sum::<u64>(),
            reasons.join(", ")
        );
        return s;
    }
    let closed = r.bytes.tx == a.app_tx + a.inexact_tx && r.bytes.rx == a.app_rx + a.inexact_rx;
    let verdict = if !(a.app_tx == a.kernel_tx && a.app_rx == a.kernel_rx) {
        format!(
            "DIFFER by tx {:+} rx {:+}",
            a.kernel_tx as i128 - a.app_tx as i128,
            a.kernel_rx as i128 - a.app_rx as i128
        )
    } else if !closed {
        format!(
            "match, but tx {} rx {} bytes were on sockets never closed",
            r.bytes.tx as i128 - (a.app_tx + a.inexact_tx) as i128,
            r.bytes.rx as i128 - (a.app_rx + a.inexact_rx) as i128
        )
    } else {
        "match".to_string()
    };
    let unacked = match a.kernel_unacked {
        0 => String::new(),
        n => format!(", {n} B written never acknowledged"),
    };
    let _ = writeln!(
        s,
        "  audit       app tx {} rx {}  kernel tx {} rx {} (TCP_INFO at close, {}, segs out {} in {}{unacked}): {verdict}",
        a.app_tx,
        a.app_rx,
        a.kernel_tx,
        a.kernel_rx,
        super::count(a.sockets, "socket"),
        a.segs_out,
        a.segs_in,
    );
    let inexact: u64 = a.inexact.values().sum();
    if inexact > 0 {
        let reasons: Vec<String> = a.inexact.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "              not checkable: {inexact} socket(s) ({}), app tx {} rx {} on them, set apart",
            reasons.join(", "),
            a.inexact_tx,
            a.inexact_rx
        );
    }
    s
}

/// `--latency`: the full percentile spectrum of the total latency, as wrk2 prints it.
pub fn spectrum(latency: &Hist) -> String {
    let mut s = String::from("  latency spectrum (total, from when each operation was due)\n");
    let _ = writeln!(
        s,
        "  {:>12} {:>12} {:>12} {:>18}",
        "Value(ms)", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0;
    for v in latency.0.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let inverse = if q < 1.0 { format!("{:.2}", 1.0 / (1.0 - q)) } else { "inf".into() };
        let _ = writeln!(
            s,
            "  {:>12} {:>12.6} {:>12} {:>18}",
            ms(v.value_iterated_to() as f64 / 1e3),
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
fn repeats(rep: &crate::stats::result::RepeatResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  runs        {} back to back; the figures above are run {}'s, the median by ops/s",
        rep.runs.len(),
        rep.median_run
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
    let (ops, p99) = (&rep.ops_per_sec, &rep.p99_us);
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
/// A line per stage of a `--rate` schedule: offered, achieved, latency, errors.
fn stages_table(stages: &[crate::stats::result::StageResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  stages      {:>8} {:>8} {:>17} {:>9} {:>10} {:>7} {:>9} {:>9}",
        "from s", "to s", "offered ops/s", "ops", "ops/s", "errors", "p50", "p99"
    );
    for st in stages {
        let offered = if st.from_rate == st.to_rate {
            si(st.from_rate)
        } else {
            format!("{}..{}", si(st.from_rate), si(st.to_rate))
        };
        let spread = st.latency_us.unwrap_or_default();
        let _ = writeln!(
            s,
            "              {:>8.2} {:>8.2} {:>17} {:>9} {:>10} {:>7} {:>9} {:>9}",
            st.from_s,
            st.to_s,
            offered,
            st.ops,
            si(st.ops_per_sec),
            st.errors,
            micros(spread.p50),
            micros(spread.p99)
        );
    }
    s
}

fn series_table(series: &crate::stats::result::SeriesResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  intervals   {:>8} {:>8} {:>9} {:>10} {:>7} {:>9} {:>9}",
        "from s", "to s", "ops", "ops/s", "errors", "p50", "p99"
    );
    for iv in &series.intervals {
        let _ = writeln!(
            s,
            "              {:>8.2} {:>8.2} {:>9} {:>10} {:>7} {:>9} {:>9}",
            iv.from_s,
            iv.to_s,
            iv.ops,
            si(iv.ops as f64 / (iv.to_s - iv.from_s).max(1e-9)),
            iv.errors,
            micros(iv.p50_us.unwrap_or(0.0)),
            micros(iv.p99_us.unwrap_or(0.0))
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

mod lines;
pub use lines::{live_heading, live_row, starting, summary};

#[cfg(test)]
mod tests;
