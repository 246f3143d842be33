//! `--csv PATH`: the figures a spreadsheet or a dashboard reads, one row each — `bench`'s
//! intervals (`--report-every`, 1 s unless given) and `compare`'s rows. Plain RFC 4180: a header
//! line, commas, fields quoted when they hold a comma or a quote; times in µs, sizes in bytes,
//! an empty field where there is no figure (an interval in which nothing completed).

use super::compare::CompareResult;
use crate::stats::result::RunResult;
use std::fmt::Write as _;

/// One row per interval of the run's series (none without one).
pub fn intervals(r: &RunResult) -> String {
    let mut s = String::from("from_s,to_s,ops,ops_per_sec,errors,p50_us,p90_us,p99_us,max_us\n");
    let Some(series) = &r.series else { return s };
    for i in &series.intervals {
        let width = i.to_s - i.from_s;
        let rate = if width > 0.0 { i.ops as f64 / width } else { 0.0 };
        let q = |q: f64| if i.histogram.0.is_empty() { String::new() } else { num(i.histogram.us(q)) };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            num(i.from_s),
            num(i.to_s),
            i.ops,
            num(rate),
            i.errors,
            q(0.5),
            q(0.9),
            q(0.99),
            q(1.0)
        );
    }
    s
}

/// One row per protocol of a comparison, its table's columns.
pub fn compare_rows(c: &CompareResult) -> String {
    let mut s = String::from(
        "row,protocol,target,tx_per_msg,rx_per_msg,payload_bytes,overhead_pct,segs_per_msg,wire_per_msg,msgs_per_sec,p50_us,p99_us,cpu_us_per_msg,errors,audit,bytes_vs_floor,cpu_vs_floor\n",
    );
    for row in &c.rows {
        let r = &row.result;
        let d = row.derived.as_ref();
        let floor = d.and_then(|d| d.vs_floor.as_ref());
        let f = |v: Option<f64>| v.map(num).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            field(r.label.as_deref().unwrap_or_default()),
            field(&r.protocol),
            field(&r.target),
            f(d.map(|d| d.tx_per_msg)),
            f(d.map(|d| d.rx_per_msg)),
            f(d.map(|d| d.payload_bytes)),
            f(d.map(|d| d.overhead * 100.0)),
            f(d.map(|d| d.segs_per_msg)),
            f(d.map(|d| d.wire_per_msg)),
            f(d.map(|d| d.msgs_per_sec)),
            num(r.latency_us.p50),
            num(r.latency_us.p99),
            f(d.map(|d| d.cpu_us_per_msg)),
            r.errors(),
            match r.audit.word() {
                "DIFFER" => "mismatch",
                word => word,
            },
            f(floor.map(|m| m.bytes)),
            f(floor.map(|m| m.cpu)),
        );
    }
    s
}

/// A number without float noise (3 decimals at most).
fn num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A text field, quoted when it must be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Write `text` to `path` (`-`: stdout).
pub fn write(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    if path == std::path::Path::new("-") {
        super::out(text);
        Ok(())
    } else {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        assert_eq!(field("HTTP/1.1 POST"), "HTTP/1.1 POST");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(num(500.30900001), "500.309");
        assert_eq!(num(2.0), "2");
    }
}
