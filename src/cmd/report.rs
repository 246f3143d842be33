//! `wirebench report RUN.json … --html PATH`: results written as one self-contained HTML page
//! (`report::html`), each run beside the others and, when there are several, their merged
//! latency drawn too (histograms added, with `merge`'s refusals unless `--force`).

use super::ReportArgs;
use anyhow::{Context, Result};

pub fn main(args: &ReportArgs) -> Result<()> {
    crate::report::check_writable(&[("--html", Some(args.html.as_path()))])?;
    let results = args.files.iter().map(|f| super::merge::read(f)).collect::<Result<Vec<_>>>()?;
    let total = if results.len() > 1 && !args.force {
        Some(super::merge::merge(&results, false)?.histograms.latency.0)
    } else {
        None
    };
    let runs: Vec<(String, crate::stats::result::RunResult)> = args
        .files
        .iter()
        .zip(results)
        .map(|(file, r)| (r.label.clone().unwrap_or_else(|| file.display().to_string()), r))
        .collect();
    let page = crate::report::html::page(&runs, total.as_ref())?;
    std::fs::write(&args.html, page).with_context(|| format!("cannot write --html {}", args.html.display()))
}
