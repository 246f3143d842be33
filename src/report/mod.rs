//! Presentation: the text summary, JSON, and the progress line. Nothing here measures; every
//! figure comes from a [`Report`](crate::stats::Report).

pub mod compare;
pub mod csv;
pub mod html;
pub mod json;
pub mod search;
pub mod svg;
pub mod sweep;
pub mod text;
pub mod tui;

use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::time::Duration;

/// Write `text` to stdout. Output to a closed pipe (`wirebench compare | head -2`) ends the
/// process quietly with status 0, as ripgrep does: the reader has all it wanted.
/// Check, before a run, that each output path given can be written (`-`: stdout, always): a
/// run of minutes must not end in `cannot write`. A file that did not exist is made and
/// removed again; one that did is opened, not truncated.
pub fn check_writable(outputs: &[(&str, Option<&std::path::Path>)]) -> anyhow::Result<()> {
    for (flag, path) in outputs {
        let Some(path) = path.filter(|p| *p != std::path::Path::new("-")) else { continue };
        let existed = path.exists();
        std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(|e| {
            anyhow::anyhow!("cannot write {flag} {}: {e} (checked before the run)", path.display())
        })?;
        if !existed {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(())
}

/// The prose lines of `text` wrapped at `width` columns on spaces (a table's rows, which keep
/// their columns apart with two spaces or more, are left whole): footers that explain a table
/// are read, not scrolled.
pub fn wrap_prose(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.chars().count() <= width || body.trim_start().contains("  ") {
            out.push_str(line);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == ' ').collect();
        let mut current = String::new();
        for word in body.split(' ').filter(|w| !w.is_empty()) {
            if !current.is_empty() && current.chars().count() + 1 + word.chars().count() > width {
                out.push_str(&current);
                out.push('\n');
                current.clear();
            }
            if current.is_empty() {
                current.push_str(&indent);
            } else {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push_str(&current);
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

pub fn out(text: &str) {
    use std::io::Write;
    // A series' view holds the terminal: the text is drawn there, and printed when it closes.
    if tui::series::said(text) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("wirebench: error: cannot write the output: {e}");
        std::process::exit(2);
    }
}

/// The end of a table command (`compare`, `sweep`): the footer for people, then `--json` and
/// `--svg` where asked (with `--json -`, stdout carries the JSON alone).
pub fn finish_table<J: serde::Serialize>(
    footer: &str,
    json: Option<&std::path::Path>,
    to_json: impl FnOnce() -> J,
    svg: Option<&std::path::Path>,
    to_svg: impl FnOnce() -> anyhow::Result<String>,
) -> anyhow::Result<()> {
    let human = json != Some(std::path::Path::new("-"));
    if human {
        out(footer);
    }
    if let Some(path) = json {
        json::write(path, &to_json())?;
    }
    if let Some(path) = svg {
        use anyhow::Context;
        std::fs::write(path, to_svg()?).with_context(|| format!("cannot write {}", path.display()))?;
        if human {
            out(&format!("chart: {}\n", path.display()));
        }
    }
    Ok(())
}

pub use crate::plan::RunInfo;

/// The progress line: on a terminal only, drawn from the counts the cores publish.
pub struct Progress {
    bar: Option<ProgressBar>,
    ops: Option<u64>,
    expected: Duration,
}

/// Steps of the progress bar: per mille of whichever limit comes first.
const PROGRESS_STEPS: u64 = 1000;

impl Progress {
    /// A run ends at `-n`'s count or its duration, whichever comes first (`compare` gives
    /// both: 100,000 messages or 10 s): the bar follows the nearer.
    pub fn new(visible: bool, ops: Option<u64>, expected: Duration) -> Progress {
        let bar = visible.then(|| {
            let bar = ProgressBar::new(PROGRESS_STEPS);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Progress { bar, ops, expected }
    }

    pub fn update(&self, done: u64, elapsed: Duration) {
        let Some(bar) = &self.bar else { return };
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
        let by_count = self.ops.map_or(0.0, |n| done as f64 / n.max(1) as f64);
        let by_time = elapsed.as_secs_f64() / self.expected.as_secs_f64().max(1e-9);
        bar.set_position((by_count.max(by_time).min(1.0) * PROGRESS_STEPS as f64) as u64);
        bar.set_message(format!("{done} ops, {} ops/s", si(rate)));
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A latency spread's min, mean, p50, p90, p99, p99.9 and max, each in its unit.
pub fn spread_cells(l: &crate::stats::result::Spread) -> [String; 7] {
    [l.min, l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(micros)
}

/// `n` and its noun, plural unless `n` is 1: `1 socket`, `2 sockets`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// 1234567 → `1.23M`; for rates and counts in one line of text.
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Bytes for people: `512 B`, `1.50 KiB`, `3.20 MiB`.
pub fn bytes(n: f64) -> String {
    if n >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", n / (1024.0 * 1024.0 * 1024.0))
    } else if n >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", n / (1024.0 * 1024.0))
    } else if n >= 1024.0 {
        format!("{:.2} KiB", n / 1024.0)
    } else {
        format!("{n:.0} B")
    }
}

/// A latency in µs for people: `850us`, `12.3ms`, `1.20s`.
pub fn micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{us:.1}us")
    }
}

/// `--hlog PATH`: the run's interval histograms as an HdrHistogram interval log (the standard
/// text format: `#[StartTime: …]` and `#[BaseTime: …]` headers, then one line per interval:
/// start offset, length, max, the histogram in V2 deflate base64, tagged `latency`), which
/// HdrHistogram's own log readers and plotters take. Values in ns.
pub fn write_hlog(
    path: &std::path::Path,
    series: &crate::stats::Series,
    elapsed: Duration,
    label: &str,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    // The window's start on the wall clock: the monotonic instant carried over now.
    let from = series.from.unwrap_or_else(crate::clock::Instant::now);
    let start = std::time::SystemTime::now() - from.elapsed();
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(&format!("wirebench {} run {label}: latency in ns", env!("CARGO_PKG_VERSION")))
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut out, &mut serializer)?;
        for (i, interval) in series.intervals.iter().enumerate() {
            let (from, to) = series.span(i, elapsed);
            let (at, width) = (Duration::from_secs_f64(from), Duration::from_secs_f64(to - from));
            log.write_histogram(&interval.latency, at, width, Tag::new("latency"))
                .map_err(|e| anyhow::anyhow!("cannot encode interval {i}: {e:?}"))?;
        }
    }
    std::fs::write(path, out).with_context(|| format!("cannot write --hlog {}", path.display()))
}

/// The layers' names, in [`crate::stats::LayerBytes::per`]'s order.
const LAYERS: [&str; 5] = ["headers", "trailers", "framing", "prefix", "payload"];

/// A mean of bytes: whole when it is (HPACK's blocks are), else to a tenth.
fn mean_bytes(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// Bytes per operation by layer, each connection's first operation / the ones after it: a
/// line per direction, `label` before the first (and as wide in blanks before the second).
pub fn layer_lines(label: &str, l: &crate::stats::Layers) -> String {
    let mut s = String::new();
    for (dir, first, steady) in [("tx", &l.first.tx, &l.steady.tx), ("rx", &l.first.rx, &l.steady.rx)] {
        let lead = if dir == "tx" { label.to_string() } else { " ".repeat(label.chars().count()) };
        let _ = write!(s, "{lead} {dir} ");
        let (a, b) = (first.per(l.first.ops), steady.per(l.steady.ops));
        for i in 0..LAYERS.len() {
            let _ = write!(s, " {:>13}", format!("{} / {}", mean_bytes(a[i]), mean_bytes(b[i])));
        }
        let total = |v: [f64; 5]| v.iter().sum::<f64>();
        let _ = writeln!(s, " {:>15}", format!("{} / {}", mean_bytes(total(a)), mean_bytes(total(b))));
    }
    s
}

/// The heading over [`layer_lines`] whose labels are `width` wide.
pub fn layer_heading(width: usize) -> String {
    let mut s = format!("{:<width$}    ", "");
    for name in LAYERS {
        let _ = write!(s, " {name:>13}");
    }
    s += &format!(" {:>15}\n", "total");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(999.0), "999");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(micros(850.0), "850.0us");
        assert_eq!(micros(12_300.0), "12.30ms");
    }

    /// The layers' lines, exactly: means per operation, first / after, whole numbers bare.
    #[test]
    fn layer_lines_are_exactly_these() {
        let mut l = crate::stats::Layers::default();
        l.first.ops = 1;
        l.first.tx.headers = 20;
        l.first.tx.framing = 18;
        l.first.tx.payload = 400;
        l.steady.ops = 4;
        l.steady.tx.headers = 21;
        l.steady.tx.framing = 72;
        l.steady.tx.payload = 1600;
        let want = format!(
            "{}\n{}\n",
            "HTTP/2 tx       20 / 5.2         0 / 0       18 / 18         0 / 0     400 / 400     438 / 423.2",
            "       rx          0 / 0         0 / 0         0 / 0         0 / 0         0 / 0           0 / 0"
        );
        assert_eq!(super::layer_lines("HTTP/2", &l), want);
    }

    /// Prose past the width wraps on spaces, keeping its indent; a table row (columns two
    /// spaces apart) and short lines stay whole.
    #[test]
    fn prose_wraps_and_tables_do_not() {
        let prose = format!("  {}\n", ["word"; 30].join(" "));
        let row = format!("{}\n", ["col"; 40].join("  "));
        let wrapped = super::wrap_prose(&format!("{prose}{row}short\n"), 40);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines[..4].iter().all(|l| l.len() <= 40 && l.starts_with("  word")), "{wrapped}");
        assert_eq!(lines.iter().map(|l| l.matches("word").count()).sum::<usize>(), 30);
        assert!(wrapped.contains(row.trim_end()) && wrapped.ends_with("short\n"), "{wrapped}");
    }
}
