//! `wirebench plot RUN.json … --svg PATH`: each result's latency percentile spectrum (and the
//! merged total's, when there are several), and throughput and p99 over time from their
//! `--report-every` intervals, in one SVG. Merged results plot like runs.

use super::PlotArgs;
use crate::report::svg::{PlotRun, plot};
use anyhow::{Context, Result};

pub fn main(args: &PlotArgs) -> Result<()> {
    crate::report::check_writable(&[("--svg", Some(args.svg.as_path()))])?;
    let results = args.files.iter().map(|f| super::merge::read(f)).collect::<Result<Vec<_>>>()?;
    let plotted: Vec<PlotRun> =
        results.iter().map(|r| PlotRun::of(r.label.as_deref().unwrap_or("merged"), r)).collect();
    // Several runs: their merge too (histograms added; the same refusals as `merge`).
    let total = if results.len() > 1 {
        Some(super::merge::merge(&results, args.force)?.histograms.latency.0)
    } else {
        None
    };
    let svg = plot(&plotted, total.as_ref())?;
    std::fs::write(&args.svg, svg).with_context(|| format!("cannot write {}", args.svg.display()))
}
