//! A fleet's run on Kubernetes (`wirebench kube`), beside its merged result: the start it
//! chose, how far apart the pods began, and each pod's part (merged, or why not).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fleet: how the run was started and each pod's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetResult {
    /// The run's name (every object it created carried it).
    pub run: String,
    pub namespace: String,
    pub image: String,
    /// Pods asked for.
    pub pods: u32,
    /// Pods whose results are in the total.
    pub merged: u32,
    /// From the Job's creation until the last pod was ready at the barrier, s.
    pub ready_in_s: f64,
    /// The start written into the barrier, Unix seconds (the coordinator's clock).
    pub start_at_unix_s: f64,
    /// A pod is merged only if its measured window began within this of the start, ms.
    pub tolerance_ms: f64,
    /// The merged pods' start skew: the latest first measured operation minus the earliest,
    /// ms (each by its own node's clock).
    pub skew_ms: Option<f64>,
    /// From the command's start to the merged result, s.
    pub command_to_result_s: f64,
    pub per_pod: Vec<PodLine>,
    /// `--watch-pod`: the pod that watched the server (`watched`, or why not); its figures are
    /// the result's `server_watch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watcher: Option<PodLine>,
}

/// One pod of a fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodLine {
    pub pod: String,
    pub index: Option<u32>,
    pub node: String,
    /// `merged`, `watched` (the server's watcher), `late` (began outside the tolerance), `failed` (its agent said why), `lost`
    /// (the pod failed or was deleted before it gave a result), `not ready` (not at the barrier
    /// in time).
    pub state: String,
    /// Why it is not merged, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The pod's QoS class (`Guaranteed`: whole CPUs requested as limits).
    pub qos: Option<String>,
    /// The CPUs the pod's process may run on, and the node's online CPUs: fewer than the
    /// node's, and as many as it asked for, under the kubelet's static CPU manager policy
    /// (exclusive CPUs); the shared pool otherwise.
    pub cpus_allowed: String,
    pub cpus_online: String,
    /// The CPUs its engine threads were pinned to.
    pub engine_cores: Vec<usize>,
    /// When it sent its first measured operation, minus the start (plus warm-up), ms, by its
    /// clock: how late it really began.
    pub start_offset_ms: Option<f64>,
    /// Its clock when it saw the start, minus the coordinator's when it wrote it, ms: the
    /// start's delivery (the pods ask every 20 ms) plus the two clocks' offset — the offset's
    /// upper bound.
    pub seen_after_written_ms: Option<f64>,
    /// The offset's lower bound: its clock when it last asked and the start was not there yet,
    /// minus the coordinator's when the write was answered, ms. Its clock minus the
    /// coordinator's lies between this and `seen_after_written_ms` (none: its first ask saw
    /// the start).
    pub clock_offset_min_ms: Option<f64>,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub p99_us: Option<f64>,
    pub audit_match: Option<bool>,
}
