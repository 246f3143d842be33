//! `report --html` and `bench --html`: one self-contained HTML file from results — what ran,
//! the figures, latency by percentile and over time, bytes by class, each core's share, the
//! audit; several runs side by side, and their merge. Everything is inline: the styles, and the
//! charts as SVG drawn by the same code as `plot` (no script, no font or file fetched), so the
//! file opens from disk in any browser with no network. Each figure a reader checks carries a
//! `data-k` attribute naming its field in the result's JSON, so a test can compare the page
//! with the JSON it came from.

use super::{micros, si};
use crate::stats::result::{CoreResult, RunResult};
use anyhow::Result;
use std::fmt::Write;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1240px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.bad{color:#b00;font-weight:600}\
.ok{color:#070}.note{color:#666;font-size:12px}svg{max-width:100%;height:auto}";

/// The page for `runs` (each with its name: the file it came from, or the run's label), and
/// the plot of them all (with their merged latency as `total` when there are several).
pub fn page(runs: &[(String, RunResult)], total: Option<&hdrhistogram::Histogram<u64>>) -> Result<String> {
    let mut s = String::new();
    let title = match runs {
        [(name, _)] => format!("wirebench: {}", escape(name)),
        _ => format!("wirebench: {} runs", runs.len()),
    };
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    s += &summary_table(runs);
    s += "<h2>Latency by percentile, and over time</h2>\n";
    s += &super::svg::plot(&plot_runs(runs), total)?;
    s += "\n<p class=\"note\">Latency from when each operation was due; over time from the run's <code>--report-every</code> intervals (none without them).</p>\n";
    for (i, (name, r)) in runs.iter().enumerate() {
        s += &run_section(i, name, r);
    }
    s += "<p class=\"note\">Written by wirebench; every figure is the result JSON's, as <code>bench --json</code> and <code>merge</code> write it.</p>\n</body></html>\n";
    Ok(s)
}

/// What `plot` draws for each run: its latency histogram and its intervals.
pub fn plot_runs(runs: &[(String, RunResult)]) -> Vec<super::svg::PlotRun> {
    runs.iter()
        .map(|(name, r)| {
            let series = r
                .series
                .as_ref()
                .map(|s| {
                    s.intervals
                        .iter()
                        .map(|iv| {
                            let width = (iv.to_s - iv.from_s).max(1e-9);
                            (iv.from_s, iv.ops as f64 / width, iv.p99_us.unwrap_or(0.0) / 1e3)
                        })
                        .collect()
                })
                .unwrap_or_default();
            super::svg::PlotRun { label: name.clone(), latency: r.histograms.latency.0.clone(), series }
        })
        .collect()
}

/// One row per run: the figures a reader compares first.
fn summary_table(runs: &[(String, RunResult)]) -> String {
    let mut s = String::from(
        "<table id=\"summary\"><tr><th>run</th><th>protocol</th><th>ops</th><th>ops/s</th><th>p50</th><th>p99</th><th>max</th><th>tx/op</th><th>rx/op</th><th>failed</th><th>cpu/op</th><th>audit</th></tr>\n",
    );
    for (i, (name, r)) in runs.iter().enumerate() {
        let l = &r.latency_us;
        let failed = crate::stats::result::class_total(&r.failed);
        let _ = writeln!(
            s,
            "<tr data-run=\"{i}\"><td>{}</td><td>{}</td><td data-k=\"ops\">{}</td><td data-k=\"ops_per_sec\" title=\"{}\">{}</td><td data-k=\"latency_us.p50\" title=\"{}\">{}</td><td data-k=\"latency_us.p99\" title=\"{}\">{}</td><td>{}</td><td data-k=\"bytes.tx_per_op\">{:.2}</td><td data-k=\"bytes.rx_per_op\">{:.2}</td><td data-k=\"failed.total\" class=\"{}\">{failed}</td><td data-k=\"cpu_us_per_op\">{:.2}us</td><td data-k=\"audit\" class=\"{}\">{}</td></tr>",
            escape(name),
            escape(&r.protocol),
            r.ops,
            r.ops_per_sec,
            si(r.ops_per_sec),
            l.p50,
            micros(l.p50),
            l.p99,
            micros(l.p99),
            micros(l.max),
            r.bytes.tx_per_op,
            r.bytes.rx_per_op,
            if failed > 0 { "bad" } else { "ok" },
            r.cpu_us_per_op,
            if audit_word(r) == "DIFFER" { "bad" } else { "ok" },
            audit_word(r),
        );
    }
    s + "</table>\n"
}

fn audit_word(r: &RunResult) -> &'static str {
    if r.audit.unchecked() {
        "unchecked"
    } else if r.audit.matches {
        "match"
    } else {
        "DIFFER"
    }
}

/// A run's own section: its set-up, latency spectrum, bytes by class, failures, cores, audit.
fn run_section(i: usize, name: &str, r: &RunResult) -> String {
    let mut s = format!("<section id=\"run-{i}\">\n<h2>{}</h2>\n", escape(name));
    let _ = writeln!(
        s,
        "<p>{} {} — {} engine on CPU {}, {} connections, depth {}, {:.2} s measured; sent {} = {} completed + {} failed.</p>",
        escape(&r.protocol),
        escape(&r.target),
        escape(&r.engine),
        crate::cpus::format(&r.cores),
        r.connections,
        r.depth,
        r.duration_s,
        r.sent,
        r.ops,
        crate::stats::result::class_total(&r.failed),
    );
    let l = &r.latency_us;
    s += "<table><tr><th>latency</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n";
    let _ = writeln!(
        s,
        "<tr><td>from when due</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
        micros(l.min),
        micros(l.mean),
        micros(l.p50),
        micros(l.p90),
        micros(l.p99),
        micros(l.p999),
        micros(l.max)
    );
    s += &bytes_table(r);
    s += &outcomes(r);
    s += &cores_table(&r.per_core);
    let a = &r.audit;
    let _ = writeln!(
        s,
        "<p>audit: app tx {} rx {}, kernel tx {} rx {} ({} sockets): <span class=\"{}\">{}</span></p>\n</section>",
        a.app_tx,
        a.app_rx,
        a.kernel_tx,
        a.kernel_rx,
        a.sockets,
        if audit_word(r) == "DIFFER" { "bad" } else { "ok" },
        audit_word(r)
    );
    s
}

/// Bytes by class, both ways: the operations', set-up's, control's, warm-up's, failed ones', TLS's own.
fn bytes_table(r: &RunResult) -> String {
    let b = &r.bytes;
    let mut s = String::from("<table><tr><th>bytes</th><th>tx</th><th>rx</th></tr>\n");
    for (what, tx, rx) in [
        ("per completed operation", b.tx_per_op, b.rx_per_op),
        ("operations", b.op_tx as f64, b.op_rx as f64),
        ("set-up (handshakes)", b.handshake_tx as f64, b.handshake_rx as f64),
        ("control", b.control_tx as f64, b.control_rx as f64),
        ("warm-up", b.warmup_tx as f64, b.warmup_rx as f64),
        ("failed operations", b.failed_tx as f64, b.failed_rx as f64),
        ("TLS's own records", b.tls_tx as f64, b.tls_rx as f64),
    ] {
        let _ = writeln!(s, "<tr><td>{what}</td><td>{}</td><td>{}</td></tr>", number(tx), number(rx));
    }
    s + "</table>\n"
}

/// Failures and connection errors by class, and the protocol's answers.
fn outcomes(r: &RunResult) -> String {
    let row = |what: &str, map: &std::collections::BTreeMap<String, u64>| {
        let parts: Vec<String> = map
            .iter()
            .filter(|(k, v)| *k != "total" && **v > 0)
            .map(|(k, v)| format!("{}: {v}", escape(k)))
            .collect();
        let text = if parts.is_empty() { "none".to_string() } else { parts.join(", ") };
        format!("<tr><td>{what}</td><td style=\"text-align:left\">{text}</td></tr>\n")
    };
    let mut s = String::from("<table>");
    s += &row("failed operations", &r.failed);
    s += &row("connection errors", &r.connection_errors);
    s += &row("answers", &r.status_counts);
    s + "</table>\n"
}

/// Each core's operations, share and CPU.
fn cores_table(cores: &[CoreResult]) -> String {
    let total: u64 = cores.iter().map(|c| c.ops).sum();
    let mut s = String::from(
        "<table class=\"cores\"><tr><th>core</th><th>ops</th><th>share</th><th>busy</th><th>cpu/op</th></tr>\n",
    );
    for c in cores {
        let share = 100.0 * crate::stats::ratio(c.ops as f64, total as f64);
        let _ = writeln!(
            s,
            "<tr><td>{}{}</td><td data-k=\"per_core.ops\">{}</td><td>{share:.1}%</td><td>{:.0}%</td><td>{:.2}us</td></tr>",
            c.core,
            c.run.as_deref().map(|r| format!(" ({})", escape(r))).unwrap_or_default(),
            c.ops,
            100.0 * c.cpu_util,
            c.cpu_us_per_op
        );
    }
    s + "</table>\n"
}

/// A byte count or a mean, without float noise.
fn number(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::result::fixtures;

    #[test]
    fn the_page_is_whole_escaped_and_names_its_figures() {
        let mut r = fixtures::run("a", 1000, 20_000, 2);
        r.target = "http://h/<x>".into();
        let html = page(&[("run <1>".to_string(), r.clone())], None).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert!(html.contains("run &lt;1&gt;") && html.contains("http://h/&lt;x&gt;"));
        assert!(!html.contains("<x>"), "nothing unescaped");
        assert!(html.contains(&format!("<td data-k=\"ops\">{}</td>", r.ops)));
        assert!(html.contains("<svg"), "the chart inline");
        // Nothing to fetch: no script, no stylesheet, no image by address.
        for fetch in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(fetch), "{fetch}");
        }
    }
}
