//! `--json`: results as typed values ([`RunResult`] for `bench` and `merge`; `compare` and
//! `sweep` carry one per row and step), written with serde. Their JSON Schema is published in
//! `docs/` and checked against every command's output in the tests.

use super::RunInfo;
use crate::stats::Report;
use crate::stats::result::RunResult;
use anyhow::{Context, Result};
use std::path::Path;

/// The result of a `bench` run.
pub fn bench(info: &RunInfo, r: &Report, label: Option<String>) -> RunResult {
    RunResult::of(&info.ran(label), r)
}

/// Write `value` pretty-printed to `path` (`-`: stdout).
pub fn write(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    if path == Path::new("-") {
        super::out(&text);
        Ok(())
    } else {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}
