//! The fleet on Kubernetes: what `wirebench kube` (the coordinator, on the user's machine) and
//! `wirebench agent` (one in each load pod) say to each other, through the Kubernetes API only —
//! no text logs are read, nothing is installed in the cluster but the image.
//!
//! One run is named once (`wb-…`) and everything it creates carries that name and the label
//! [`RUN_LABEL`]: a ServiceAccount with a Role that may read and write ConfigMaps (the agents'
//! only rights), the **barrier** ConfigMap the coordinator writes the start into, and an
//! Indexed Job of N pods. Each agent checks its options, then creates its own ConfigMap
//! (`<run>-<index>`) saying it is [`Agent::Ready`]; once every pod is ready (or the wait is
//! over) the coordinator writes one start time into the barrier; every agent opens its measured
//! window at that instant (`bench --start-at`) and, at the end, replaces its ConfigMap's content
//! with [`Agent::Done`] and its `RunResult` as JSON — or [`Agent::Failed`] and one line. The
//! coordinator merges the results exactly (`merge`), names every pod that failed, was deleted
//! or started too late, and deletes what it created.
//!
//! This file is the pure part (names, the ConfigMaps' content, the objects), tested without a
//! cluster; [`api`] does the calls.

pub mod api;
pub mod objects;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The label every object of a run carries, its value the run's name.
pub const RUN_LABEL: &str = "wirebench.dev/run";
/// The label of the pods' own ConfigMaps (value: the pod's index), beside [`RUN_LABEL`].
pub const INDEX_LABEL: &str = "wirebench.dev/index";
/// A ConfigMap holds at most 1 MiB; a result larger than this is refused by its agent.
pub const MAX_RESULT_BYTES: usize = 900 * 1024;
/// The label of an agent's ConfigMap once it holds its last word (done or failed): the
/// coordinator reads such a map once, not at every look.
pub const FINAL_LABEL: &str = "wirebench.dev/final";

/// How often the agents of a run of `pods` look at the barrier while they wait (a GET each):
/// every 20 ms, slower with many pods so that the API gets at most about 1,000 asks a second
/// from them (half a second at most: the start is seconds ahead).
pub fn barrier_poll(pods: u32) -> Duration {
    Duration::from_millis(u64::from(pods).clamp(20, 500))
}

/// The names of one run's objects, in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub name: String,
    pub namespace: String,
}

impl Run {
    /// A fresh run name: `wb-` and 8 hex digits from the clock and the process (a DNS label).
    pub fn fresh(namespace: &str) -> Run {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
        let mixed = (nanos ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Run { name: format!("wb-{:08x}", mixed >> 32), namespace: namespace.to_string() }
    }

    /// The ConfigMap agent `index` writes.
    pub fn agent_map(&self, index: u32) -> String {
        format!("{}-{index}", self.name)
    }

    /// The labels of every object of the run.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), "wirebench".to_string()),
            (RUN_LABEL.to_string(), self.name.clone()),
        ])
    }

    /// The selector of the run's objects.
    pub fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.name)
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The instant of `ns` nanoseconds since the Unix epoch.
pub fn from_unix_ns(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

/// `a - b` in milliseconds, negative when `a` is earlier.
pub fn signed_ms(a: SystemTime, b: SystemTime) -> f64 {
    match a.duration_since(b) {
        Ok(d) => d.as_secs_f64() * 1e3,
        Err(e) => -e.duration().as_secs_f64() * 1e3,
    }
}

/// What the coordinator writes into the barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Barrier {
    /// Not yet: wait.
    Waiting,
    /// Open the measured window at `start_at`; `written_at` is the coordinator's clock when it
    /// wrote this (an agent's clock when it saw it, minus this: its delivery plus the clocks'
    /// offset). Only the agents `admitted` (ready in time) run; the others exit.
    Start { start_at: SystemTime, written_at: SystemTime, admitted: Vec<u32> },
    /// The run was called off (Ctrl-C, or no pod became ready): exit.
    Abort,
}

impl Barrier {
    pub fn to_data(&self) -> BTreeMap<String, String> {
        match self {
            Barrier::Waiting => BTreeMap::from([("state".into(), "waiting".into())]),
            Barrier::Start { start_at, written_at, admitted } => BTreeMap::from([
                ("state".into(), "start".into()),
                ("start_at_ns".into(), unix_ns(*start_at).to_string()),
                ("written_at_ns".into(), unix_ns(*written_at).to_string()),
                ("admitted".into(), admitted.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
            ]),
            Barrier::Abort => BTreeMap::from([("state".into(), "abort".into())]),
        }
    }

    /// Read a barrier; anything unreadable is `Waiting` (the coordinator writes it whole).
    pub fn from_data(data: &BTreeMap<String, String>) -> Barrier {
        let ns = |k: &str| data.get(k).and_then(|v| v.parse::<u64>().ok()).map(from_unix_ns);
        match data.get("state").map(String::as_str) {
            Some("start") => {
                let admitted: Option<Vec<u32>> = data.get("admitted").and_then(|list| {
                    list.split(',').filter(|i| !i.is_empty()).map(|i| i.parse().ok()).collect()
                });
                match (ns("start_at_ns"), ns("written_at_ns"), admitted) {
                    (Some(start_at), Some(written_at), Some(admitted)) => {
                        Barrier::Start { start_at, written_at, admitted }
                    }
                    _ => Barrier::Waiting,
                }
            }
            Some("abort") => Barrier::Abort,
            _ => Barrier::Waiting,
        }
    }
}

/// Where an agent's pod runs: what it says when ready, and again with its result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    pub pod: String,
    pub node: String,
    /// The CPUs the agent may run on (`/proc/self/status` `Cpus_allowed_list`): its exclusive
    /// CPUs under the kubelet's static CPU manager policy, else the shared pool.
    pub cpus_allowed: String,
    /// The node's online CPUs, as the pod sees them (`/sys/devices/system/cpu/online`).
    pub cpus_online: String,
}

/// What an agent writes into its own ConfigMap.
#[derive(Debug, Clone, PartialEq)]
pub enum Agent {
    /// Its options check out; it waits at the barrier.
    Ready { place: Place, ready_at: SystemTime },
    /// It ran: the `RunResult` (JSON), when it saw the start, and when it last asked and the
    /// start was not there yet (none: the first answer had it) — between the two, by the pod's
    /// clock, the coordinator's write was stored: the clocks' offset is bounded by them.
    Done { place: Place, saw_start_at: SystemTime, asked_before: Option<SystemTime>, result_json: String },
    /// It could not run, and why, in one line.
    Failed { place: Place, why: String },
}

impl Agent {
    pub fn place(&self) -> &Place {
        match self {
            Agent::Ready { place, .. } | Agent::Done { place, .. } | Agent::Failed { place, .. } => place,
        }
    }

    pub fn to_data(&self) -> BTreeMap<String, String> {
        let p = self.place();
        let mut data = BTreeMap::from([
            ("pod".to_string(), p.pod.clone()),
            ("node".to_string(), p.node.clone()),
            ("cpus_allowed".to_string(), p.cpus_allowed.clone()),
            ("cpus_online".to_string(), p.cpus_online.clone()),
        ]);
        let mut put = |k: &str, v: String| data.insert(k.to_string(), v);
        match self {
            Agent::Ready { ready_at, .. } => {
                put("state", "ready".into());
                put("ready_at_ns", unix_ns(*ready_at).to_string());
            }
            Agent::Done { saw_start_at, asked_before, result_json, .. } => {
                put("state", "done".into());
                put("saw_start_at_ns", unix_ns(*saw_start_at).to_string());
                if let Some(t) = asked_before {
                    put("asked_before_ns", unix_ns(*t).to_string());
                }
                put("result.json", result_json.clone());
            }
            Agent::Failed { why, .. } => {
                put("state", "failed".into());
                put("why", why.clone());
            }
        }
        data
    }

    /// Read an agent's ConfigMap; `None` if it does not say one of the states whole.
    pub fn from_data(data: &BTreeMap<String, String>) -> Option<Agent> {
        let get = |k: &str| data.get(k).cloned();
        let place = Place {
            pod: get("pod")?,
            node: get("node").unwrap_or_default(),
            cpus_allowed: get("cpus_allowed").unwrap_or_default(),
            cpus_online: get("cpus_online").unwrap_or_default(),
        };
        let ns = |k: &str| data.get(k).and_then(|v| v.parse::<u64>().ok()).map(from_unix_ns);
        match data.get("state")?.as_str() {
            "ready" => Some(Agent::Ready { place, ready_at: ns("ready_at_ns")? }),
            "done" => Some(Agent::Done {
                place,
                saw_start_at: ns("saw_start_at_ns")?,
                asked_before: ns("asked_before_ns"),
                result_json: get("result.json")?,
            }),
            "failed" => Some(Agent::Failed { place, why: get("why").unwrap_or_default() }),
            _ => None,
        }
    }
}

/// The main process of the pod whose uid is `uid` (of its container `container`, when known:
/// not a sidecar's), as a pod sharing the node's process namespace (`hostPID`) sees it: of the
/// processes in the pod's cgroup (`…/pod<uid>/<container>` with cgroupfs,
/// `…pod<uid with _>.slice/…<container>…` with systemd) less the sandbox's `pause`, the first
/// whose parent is not among them (the container's first process).
pub fn pod_process(uid: &str, container: Option<&str>) -> Option<u32> {
    let marks = [format!("pod{uid}"), format!("pod{}", uid.replace('-', "_"))];
    let ours = |cgroup: &str| {
        marks.iter().any(|m| cgroup.contains(m.as_str())) && container.is_none_or(|c| cgroup.contains(c))
    };
    let mut members: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let in_pod = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|cgroup| ours(&cgroup));
        // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
        let Some(stat) = in_pod.then(|| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()).flatten()
        else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let ppid = stat[close + 1..].split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if &stat[open + 1..close] != "pause" {
            members.push((pid, ppid));
        }
    }
    members.sort_unstable();
    members.iter().find(|(_, ppid)| !members.iter().any(|(p, _)| p == ppid)).map(|(p, _)| *p)
}

/// This process's allowed CPUs and the machine's online ones, as the kernel lists them.
pub fn cpus_here() -> (String, String) {
    let allowed = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    (allowed, online)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_is_asked_at_most_about_a_thousand_times_a_second() {
        assert_eq!(barrier_poll(3), Duration::from_millis(20));
        assert_eq!(barrier_poll(200), Duration::from_millis(200));
        assert_eq!(barrier_poll(1000), Duration::from_millis(500));
    }

    #[test]
    fn a_pod_with_no_process_here_is_none() {
        assert_eq!(pod_process("00000000-0000-0000-0000-000000000000", None), None);
    }

    #[test]
    fn the_barrier_and_every_agent_state_read_back_as_written() {
        let t = |ns: u64| from_unix_ns(1_765_000_000_000_000_000 + ns);
        for b in [
            Barrier::Waiting,
            Barrier::Abort,
            Barrier::Start { start_at: t(7), written_at: t(3), admitted: vec![0, 2] },
            Barrier::Start { start_at: t(7), written_at: t(3), admitted: vec![] },
        ] {
            assert_eq!(Barrier::from_data(&b.to_data()), b);
        }
        let place = Place {
            pod: "wb-1-0-x".into(),
            node: "vm".into(),
            cpus_allowed: "1".into(),
            cpus_online: "0-1".into(),
        };
        for a in [
            Agent::Ready { place: place.clone(), ready_at: t(1) },
            Agent::Done {
                place: place.clone(),
                saw_start_at: t(2),
                asked_before: Some(t(1)),
                result_json: "{}".into(),
            },
            Agent::Done {
                place: place.clone(),
                saw_start_at: t(2),
                asked_before: None,
                result_json: "{}".into(),
            },
            Agent::Failed { place, why: "no".into() },
        ] {
            assert_eq!(Agent::from_data(&a.to_data()), Some(a));
        }
    }

    #[test]
    fn half_written_states_are_not_taken_for_whole_ones() {
        let mut data =
            Barrier::Start { start_at: from_unix_ns(5), written_at: from_unix_ns(4), admitted: vec![1] }
                .to_data();
        data.remove("start_at_ns");
        assert_eq!(Barrier::from_data(&data), Barrier::Waiting);
        let mut data = Agent::Done {
            place: Place { pod: "p".into(), ..Place::default() },
            saw_start_at: from_unix_ns(1),
            asked_before: None,
            result_json: "{}".into(),
        }
        .to_data();
        data.remove("result.json");
        assert_eq!(Agent::from_data(&data), None);
        assert_eq!(Agent::from_data(&BTreeMap::new()), None);
    }

    #[test]
    fn run_names_are_dns_labels_and_differ() {
        let a = Run::fresh("default");
        std::thread::sleep(Duration::from_millis(1));
        let b = Run::fresh("default");
        assert_ne!(a.name, b.name);
        assert!(
            a.name.len() <= 63
                && a.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert_eq!(a.agent_map(2), format!("{}-2", a.name));
    }
}
