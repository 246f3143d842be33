//! What `search --json` writes: the rule, each step with its run's result, and the answer.

use crate::stats::result::RunResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `search --json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    pub target: String,
    /// The rule a step passed by, in words.
    pub rule: String,
    pub steps: Vec<SearchStep>,
    /// The highest rate that passed, ops/s; `None` when none did.
    pub answer: Option<f64>,
}

/// One paced step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchStep {
    pub offered: f64,
    pub passed: bool,
    /// Why it failed (empty when it passed).
    pub why: String,
    pub result: RunResult,
}
