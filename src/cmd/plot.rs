//! `wirebench plot RUN.json … --svg PATH`: each run's latency percentile spectrum (and the
//! merged total's, when there are several), and throughput and p99 over time from their
//! `--report-every` intervals, in one SVG.

use super::PlotArgs;
use super::merge::Run;
use crate::report::svg::{PlotRun, plot};
use anyhow::{Context, Result};

pub fn main(args: &PlotArgs) -> Result<()> {
    let runs = args.files.iter().map(|f| Run::read(f)).collect::<Result<Vec<_>>>()?;
    let plotted: Vec<PlotRun> = runs
        .iter()
        .map(|r| {
            let every = r.json["series"]["every_s"].as_f64().unwrap_or(1.0);
            let series = r.json["series"]["intervals"]
                .as_array()
                .map(|ivs| {
                    ivs.iter()
                        .map(|iv| {
                            let ops = iv["ops"].as_f64().unwrap_or(0.0);
                            let p99 = iv["p99_us"].as_f64().unwrap_or(0.0) / 1e3;
                            (iv["from_s"].as_f64().unwrap_or(0.0), ops / every, p99)
                        })
                        .collect()
                })
                .unwrap_or_default();
            PlotRun { label: r.label.clone(), latency: r.histograms[0].clone(), series }
        })
        .collect();
    // Several runs: their merge too (histograms added; the same refusals as `merge`).
    let total = if runs.len() > 1 {
        Some(super::merge::merge(&runs, args.force)?.histograms[0].clone())
    } else {
        None
    };
    let svg = plot(&plotted, total.as_ref())?;
    std::fs::write(&args.svg, svg).with_context(|| format!("cannot write {}", args.svg.display()))
}
