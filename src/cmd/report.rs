//! `wirebench report FILE… --html PATH`: results written as one self-contained HTML page
//! (`report::html`) — `bench` and `merge` JSON as runs side by side (and, when they are one
//! load, their merged latency, with `merge`'s refusals unless `--force`), `compare`, `sweep`
//! and `search` JSON with their own tables above their runs.

use super::ReportArgs;
use crate::report::html::{Doc, page};
use anyhow::{Context, Result};

pub fn main(args: &ReportArgs) -> Result<()> {
    crate::report::check_writable(&[("--html", Some(args.html.as_path()))])?;
    let mut docs = Vec::new();
    for file in &args.files {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {name}"))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{name} is not JSON (truncated?)"))?;
        let doc = Doc::of(name.clone(), json, || super::merge::read(file))
            .with_context(|| format!("{name} is not a result wirebench wrote"))?;
        docs.push(match doc {
            Doc::Run(name, r) => Doc::Run(r.label.clone().unwrap_or(name), r),
            other => other,
        });
    }
    let runs: Vec<_> =
        docs.iter().filter_map(|d| if let Doc::Run(_, r) = d { Some((**r).clone()) } else { None }).collect();
    let total = if runs.len() > 1 && runs.len() == docs.len() && !args.force {
        Some(super::merge::merge(&runs, false)?.histograms.latency.0)
    } else {
        None
    };
    let html = page(&docs, total.as_ref())?;
    std::fs::write(&args.html, html).with_context(|| format!("cannot write --html {}", args.html.display()))
}
