//! `report --html` and `bench --html`: one self-contained HTML file from results — what ran,
//! the figures, latency by percentile and over time, bytes by class, each core's share, the
//! audit; several runs side by side, and their merge; a comparison's, a sweep's and a search's
//! own table above their runs. Everything is inline: the styles, and the
//! charts as SVG drawn by the same code as `plot` (no script, no font or file fetched), so the
//! file opens from disk in any browser with no network. Each figure a reader checks carries a
//! `data-k` attribute naming its field in the result's JSON, so a test can compare the page
//! with the JSON it came from.

use super::compare::CompareResult;
use super::search::SearchResult;
use super::sweep::SweepResult;
use super::{micros, si};
use crate::stats::result::{CoreResult, RunResult};
use anyhow::Result;
use std::fmt::Write;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1240px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.bad{color:#b00;font-weight:600}\
.ok{color:#070}.note{color:#666;font-size:12px}svg{max-width:100%;height:auto}";

/// A result file, by what wrote it.
pub enum Doc {
    /// `bench --json`, `merge --json`: a run (its name: its label, or its file).
    Run(String, Box<RunResult>),
    Compare(String, CompareResult),
    Sweep(String, SweepResult),
    Search(String, SearchResult),
}

impl Doc {
    /// The document `json` is (read from `name`): a comparison has `rows`, a search `steps` and
    /// an `answer`, a sweep `steps` and `what`; anything else is read as a run by `run`.
    pub fn of(name: String, json: serde_json::Value, run: impl FnOnce() -> Result<RunResult>) -> Result<Doc> {
        let has = |k: &str| json.get(k).is_some();
        Ok(if has("rows") {
            Doc::Compare(name, serde_json::from_value(json)?)
        } else if has("steps") && has("answer") {
            Doc::Search(name, serde_json::from_value(json)?)
        } else if has("steps") && has("what") {
            Doc::Sweep(name, serde_json::from_value(json)?)
        } else {
            Doc::Run(name, Box::new(run()?))
        })
    }

    /// Its runs, each named: a run itself, a comparison's rows, a sweep's or a search's steps.
    fn runs(&self) -> Vec<(String, RunResult)> {
        match self {
            Doc::Run(name, r) => vec![(name.clone(), (**r).clone())],
            Doc::Compare(_, c) => c
                .rows
                .iter()
                .map(|r| {
                    (r.result.label.clone().unwrap_or_else(|| r.result.target.clone()), r.result.clone())
                })
                .collect(),
            Doc::Sweep(_, w) => {
                w.steps.iter().map(|s| (format!("{} cores", s.cores), s.result.clone())).collect()
            }
            Doc::Search(_, q) => {
                q.steps.iter().map(|s| (format!("{} ops/s", si(s.offered)), s.result.clone())).collect()
            }
        }
    }
}

/// The page for `docs`: each comparison's, sweep's and search's own table, a summary row for
/// every run (a run, a comparison's rows, a sweep's or search's steps), the plot of them all
/// (with the runs' merged latency as `total` when given), and each plain run's own section.
pub fn page(docs: &[Doc], total: Option<&hdrhistogram::Histogram<u64>>) -> Result<String> {
    let mut s = String::new();
    let runs: Vec<(String, RunResult)> = docs.iter().flat_map(Doc::runs).collect();
    let title = match docs {
        [Doc::Run(name, _)] => format!("wirebench: {}", escape(name)),
        [Doc::Compare(name, _)] => format!("wirebench compare: {}", escape(name)),
        [Doc::Sweep(_, w)] => format!("wirebench sweep of {}", escape(&w.what)),
        [Doc::Search(_, q)] => format!("wirebench search of {}", escape(&q.target)),
        _ => format!("wirebench: {} runs", runs.len()),
    };
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    for doc in docs {
        s += &match doc {
            Doc::Run(..) => String::new(),
            Doc::Compare(name, c) => compare_table(name, c),
            Doc::Sweep(name, w) => sweep_table(name, w),
            Doc::Search(name, q) => search_table(name, q),
        };
    }
    s += "<h2>Runs</h2>\n";
    s += &summary_table(&runs);
    s += "<h2>Latency by percentile, and over time</h2>\n";
    s += &super::svg::plot(&plot_runs(&runs), total)?;
    s += "\n<p class=\"note\">Latency from when each operation was due; over time from the run's <code>--report-every</code> intervals (none without them).</p>\n";
    let plain = docs.iter().filter_map(|d| if let Doc::Run(name, r) = d { Some((name, r)) } else { None });
    for (i, (name, r)) in plain.enumerate() {
        s += &run_section(i, name, r);
    }
    s += "<p class=\"note\">Written by wirebench; every figure is the result JSON's, as <code>bench --json</code> and <code>merge</code> write it.</p>\n</body></html>\n";
    Ok(s)
}

/// What `plot` draws for each run.
pub fn plot_runs(runs: &[(String, RunResult)]) -> Vec<super::svg::PlotRun> {
    runs.iter().map(|(name, r)| super::svg::PlotRun::of(name, r)).collect()
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

/// A comparison: a row per protocol with its bytes and speed per message, and as a multiple of
/// the floor under it; and its bytes per message as bars, payload and framing.
fn compare_table(name: &str, c: &CompareResult) -> String {
    let mut s = format!(
        "<h2>compare: {}</h2>\n<p>{}-byte payload, {}, depth {}</p>\n<table class=\"compare\"><tr><th>protocol</th><th>tx/msg</th><th>rx/msg</th><th>payload</th><th>overhead</th><th>segs/msg</th><th>msg/s</th><th>p99</th><th>cpu/msg</th><th>bytes vs floor</th><th>cpu vs floor</th><th>audit</th></tr>\n",
        escape(name),
        c.setup.payload,
        super::count(c.setup.connections as u64, "connection"),
        c.setup.depth
    );
    let mut bars = Vec::new();
    for row in &c.rows {
        let r = &row.result;
        let label = escape(r.label.as_deref().unwrap_or(&r.target));
        let Some(d) = &row.derived else {
            let _ = writeln!(s, "<tr><td>{label}</td><td colspan=\"11\" class=\"bad\">no result</td></tr>");
            continue;
        };
        let times = |m: Option<f64>| m.map_or("-".to_string(), |m| format!("{m:.2}x"));
        let floor = d.vs_floor.as_ref();
        let _ = writeln!(
            s,
            "<tr><td>{label}</td><td data-k=\"derived.tx_per_msg\">{:.1}</td><td>{:.1}</td><td>{:.0}</td><td>{:.1}%</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{:.2}us</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.tx_per_msg,
            d.rx_per_msg,
            d.payload_bytes,
            100.0 * d.overhead,
            d.segs_per_msg,
            si(d.msgs_per_sec),
            micros(r.latency_us.p99),
            d.cpu_us_per_msg,
            times(floor.map(|m| m.bytes)),
            times(floor.map(|m| m.cpu)),
            audit_word(r),
        );
        bars.push((label, d.payload_bytes, d.tx_per_msg + d.rx_per_msg - d.payload_bytes));
    }
    s += "</table>\n";
    s + &bytes_bars(&bars)
}

/// Horizontal bars, one per row: payload, then framing (an SVG of its own, no script).
fn bytes_bars(bars: &[(String, f64, f64)]) -> String {
    let most = bars.iter().map(|b| b.1 + b.2.max(0.0)).fold(1.0, f64::max);
    let (row, left, width) = (22.0, 190.0, 700.0);
    let height = row * bars.len() as f64 + 30.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        left + width + 80.0
    );
    for (i, (label, payload, framing)) in bars.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let (p, f) = (width * payload / most, width * framing.max(0.0) / most);
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text><rect x=\"{left}\" y=\"{y}\" width=\"{p:.1}\" height=\"16\" fill=\"#4c78a8\"/><rect x=\"{:.1}\" y=\"{y}\" width=\"{f:.1}\" height=\"16\" fill=\"#e45756\"/><text x=\"{:.1}\" y=\"{}\">{:.0} B</text>",
            left - 6.0,
            y + 12.0,
            left + p,
            left + p + f + 4.0,
            y + 12.0,
            payload + framing
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{left}\" y=\"{}\" fill=\"#4c78a8\">payload</text><text x=\"{}\" y=\"{}\" fill=\"#e45756\">framing (tx + rx − payload), bytes per message</text></svg>",
        height - 6.0,
        left + 60.0,
        height - 6.0
    );
    s
}

/// A sweep: a row per step — cores, rate, speedup, efficiency, latency, imbalance, CPU.
fn sweep_table(name: &str, w: &SweepResult) -> String {
    let mut s = format!(
        "<h2>sweep of {} ({})</h2>\n<p>{}, {}</p>\n<table class=\"sweep\"><tr><th>cores</th><th>ops/s</th><th>speedup</th><th>efficiency</th><th>p50</th><th>p99</th><th>imbalance</th><th>gen cpu/op</th><th>server cpu</th><th>audit</th></tr>\n",
        escape(&w.what),
        escape(name),
        escape(&w.target),
        super::count(w.connections as u64, "connection")
    );
    for st in &w.steps {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td data-k=\"ops_per_sec\">{}</td><td>{:.2}x</td><td>{:.0}%</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.2}us</td><td>{}</td><td>{}</td></tr>",
            st.cores,
            si(st.ops_per_sec),
            st.speedup,
            100.0 * st.efficiency,
            micros(st.p50_us),
            micros(st.p99_us),
            st.imbalance_pct,
            st.generator_cpu_us_per_op,
            st.server_cpu_pct.map_or("-".into(), |c| format!("{c:.0}%")),
            if st.audit_match { "match" } else { "DIFFER" }
        );
    }
    s + "</table>\n"
}

/// A search: its rule, a row per step (offered, measured, p99, verdict), and its answer.
fn search_table(name: &str, q: &SearchResult) -> String {
    let mut s = format!(
        "<h2>search of {} ({})</h2>\n<p class=\"note\">{}</p>\n<table class=\"search\"><tr><th>step</th><th>offered</th><th>ops/s</th><th>p50</th><th>p99</th><th>verdict</th></tr>\n",
        escape(&q.target),
        escape(name),
        escape(&q.rule)
    );
    for (i, st) in q.steps.iter().enumerate() {
        let verdict = if st.passed { "pass".to_string() } else { format!("fail: {}", escape(&st.why)) };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\" style=\"text-align:left\">{verdict}</td></tr>",
            i + 1,
            si(st.offered),
            si(st.result.ops_per_sec),
            micros(st.result.latency_us.p50),
            micros(st.result.latency_us.p99),
            if st.passed { "ok" } else { "bad" }
        );
    }
    let answer = q.answer.map_or("none: no step passed".to_string(), |a| format!("{} ops/s", si(a)));
    s + &format!("</table>\n<p>answer: <b data-k=\"answer\">{answer}</b></p>\n")
}

fn audit_word(r: &RunResult) -> &'static str {
    r.audit.word()
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
        "<tr><td>from when due</td><td>{}</td></tr></table>",
        super::spread_cells(l).join("</td><td>")
    );
    s += &hosts_table(r);
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

/// A merged result's load hosts, a row each (their lines in the charts above).
fn hosts_table(r: &RunResult) -> String {
    if r.runs.len() < 2 {
        return String::new();
    }
    let mut s = "<table><tr><th>load host</th><th>ops</th><th>ops/s</th><th>p50</th><th>p99</th><th>errors</th><th>audit</th></tr>\n".to_string();
    for (i, l) in r.runs.iter().enumerate() {
        let _ = writeln!(
            s,
            "<tr data-host=\"{i}\"><td>{}</td><td data-k=\"ops\">{}</td><td>{}</td><td>{}</td><td data-k=\"p99\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&l.label),
            l.ops,
            number(l.ops_per_sec),
            super::micros(l.latency_us.p50),
            super::micros(l.latency_us.p99),
            l.errors,
            if l.audit_match { "match" } else { "DIFFER" }
        );
    }
    s + "</table>\n"
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
        let html = page(&[Doc::Run("run <1>".to_string(), Box::new(r.clone()))], None).unwrap();
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
