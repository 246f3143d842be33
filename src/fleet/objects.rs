//! The objects one run creates, as the API takes them: written as the manifests a reader knows
//! (JSON in the shape of YAML), then typed by k8s-openapi, so that a misspelt field fails here,
//! in a test, not in the cluster.
//!
//! The barrier ConfigMap is the root: every other object names it as its owner, so deleting it
//! takes the run away (the coordinator deletes it first). A coordinator that died leaves it and
//! the small objects it owns (`kubectl delete cm -l wirebench.dev/run=NAME` removes them all);
//! the Job stops by itself (`activeDeadlineSeconds`) and goes after a while
//! (`ttlSecondsAfterFinished`).

use super::{Barrier, Run};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the load pods are: how many, which image, what each may use, what each runs.
#[derive(Debug, Clone)]
pub struct PodSpec {
    pub pods: u32,
    pub image: String,
    /// `IfNotPresent`, `Always` or `Never`.
    pub pull: String,
    /// CPU per pod, requested and limited alike (whole CPUs: Guaranteed QoS, exclusive CPUs
    /// under the static CPU manager policy), e.g. `1`, `500m`.
    pub cpu: String,
    pub memory: String,
    pub node_selector: BTreeMap<String, String>,
    /// `bench`'s arguments (URL and load options), as the agent runs them.
    pub bench: Vec<String>,
    /// The Job stops every pod after this long, whatever happens.
    pub deadline: Duration,
    /// How long an agent waits at the barrier, and how often it asks.
    pub wait: Duration,
    pub poll: Duration,
}

/// How long a finished run's Job stays if nobody deletes it.
const TTL_AFTER_FINISHED_S: u64 = 600;

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> anyhow::Result<T> {
    Ok(serde_json::from_value(value)?)
}

/// The barrier: the run's root object, waiting.
pub fn barrier(run: &Run) -> anyhow::Result<ConfigMap> {
    typed(json!({
        "metadata": {"name": run.name, "namespace": run.namespace, "labels": run.labels()},
        "data": Barrier::Waiting.to_data(),
    }))
}

/// Metadata of an object owned by the barrier (`uid`: the barrier's).
fn owned(run: &Run, name: &str, uid: &str) -> serde_json::Value {
    json!({
        "name": name,
        "namespace": run.namespace,
        "labels": run.labels(),
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": run.name, "uid": uid}],
    })
}

/// The agents' identity and its only rights: to read the barrier, and to create and write the
/// run's `agents` ConfigMaps (no other object of the namespace: creating cannot be limited to
/// names, the rest is).
pub fn access(run: &Run, uid: &str, agents: u32) -> anyhow::Result<(ServiceAccount, Role, RoleBinding)> {
    let meta = owned(run, &run.name, uid);
    let own: Vec<String> = (0..agents).map(|i| run.agent_map(i)).collect();
    Ok((
        typed(json!({"metadata": meta, "automountServiceAccountToken": true}))?,
        typed(json!({
            "metadata": meta,
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [run.name], "verbs": ["get", "watch"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": own, "verbs": ["get", "update", "patch"]},
            ],
        }))?,
        typed(json!({
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": run.name},
            "subjects": [{"kind": "ServiceAccount", "name": run.name, "namespace": run.namespace}],
        }))?,
    ))
}

/// The Indexed Job of load pods: each index fails alone (`backoffLimitPerIndex: 0`: a pod
/// that fails or is deleted is not retried, and the others go on), pods spread over nodes
/// where they can be.
pub fn job(run: &Run, uid: &str, spec: &PodSpec) -> anyhow::Result<Job> {
    // The agent learns its pod and node from the API.
    let field =
        |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
    let env = json!([field("WB_POD", "metadata.name"), field("WB_NODE", "spec.nodeName"),]);
    let wait = format!("--wait={}ms", spec.wait.as_millis());
    let poll = format!("--poll={}ms", spec.poll.as_millis());
    let mut command = vec![
        "wirebench".to_string(),
        "agent".into(),
        "--run".into(),
        run.name.clone(),
        wait,
        poll,
        "--".into(),
    ];
    command.extend(spec.bench.iter().cloned());
    let resources = json!({"cpu": spec.cpu, "memory": spec.memory});
    typed(json!({
        "metadata": owned(run, &run.name, uid),
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.pods,
            "parallelism": spec.pods,
            "backoffLimitPerIndex": 0,
            "activeDeadlineSeconds": spec.deadline.as_secs().max(1),
            "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
            "template": {
                "metadata": {"labels": run.labels()},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": run.name,
                    "nodeSelector": spec.node_selector,
                    "terminationGracePeriodSeconds": 5,
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {super::RUN_LABEL: run.name}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }]}},
                    "containers": [{
                        "name": "load",
                        "image": spec.image,
                        "imagePullPolicy": spec.pull,
                        // An agent that cannot reach the API says why in its pod's status
                        // (its last lines): the coordinator reads that, not the logs.
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "command": command,
                        "env": env,
                        "resources": {"requests": resources, "limits": resources},
                    }],
                },
            },
        },
    }))
}

/// The server's watcher: a pod on the server pod's node, in its process namespace (`hostPID`),
/// that samples the server pod's processes over the load's window as agent `index`.
#[derive(Debug, Clone)]
pub struct WatcherSpec {
    pub index: u32,
    pub node: String,
    /// The server pod's uid, and its first container's id: its processes are found by their
    /// cgroup.
    pub target_uid: String,
    pub container: Option<String>,
    pub image: String,
    pub pull: String,
    /// The load's warm-up (not watched) and measured window.
    pub after: Duration,
    pub window: Duration,
}

pub fn watcher(run: &Run, uid: &str, spec: &WatcherSpec) -> anyhow::Result<Pod> {
    let mut meta = owned(run, &format!("{}-watch", run.name), uid);
    meta["labels"][super::INDEX_LABEL] = json!(spec.index.to_string());
    let ms = |d: Duration| format!("{}ms", d.as_millis());
    let mut command: Vec<String> = [
        "wirebench",
        "agent",
        "--run",
        &run.name,
        "--index",
        &spec.index.to_string(),
        "--watch-pod-uid",
        &spec.target_uid,
        "--watch-after",
        &ms(spec.after),
        "--watch-for",
        &ms(spec.window),
    ]
    .map(String::from)
    .into();
    if let Some(id) = &spec.container {
        command.extend(["--watch-container".to_string(), id.clone()]);
    }
    let field =
        |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
    typed(json!({
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": run.name,
            "nodeName": spec.node,
            "hostPID": true,
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "watch",
                "image": spec.image,
                "imagePullPolicy": spec.pull,
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "command": command,
                "env": [field("WB_POD", "metadata.name"), field("WB_NODE", "spec.nodeName")],
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
            }],
        },
    }))
}

/// An agent's own ConfigMap, owned by the barrier (`uid`) as the rest of the run: it outlives
/// its pod (a pod deleted mid-run still says why it stopped).
pub fn agent_map(
    run: &Run,
    index: u32,
    uid: &str,
    data: BTreeMap<String, String>,
    last: bool,
) -> anyhow::Result<ConfigMap> {
    let mut meta = owned(run, &run.agent_map(index), uid);
    if last {
        meta["labels"][super::FINAL_LABEL] = json!("true");
    }
    meta["labels"][super::INDEX_LABEL] = json!(index.to_string());
    typed(json!({"metadata": meta, "data": data}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PodSpec {
        PodSpec {
            pods: 3,
            image: "wirebench:test".into(),
            pull: "Never".into(),
            cpu: "1".into(),
            memory: "256Mi".into(),
            node_selector: BTreeMap::from([("kubernetes.io/os".into(), "linux".into())]),
            bench: vec!["http://web:8080/".into(), "-c".into(), "16".into()],
            deadline: Duration::from_secs(90),
            wait: Duration::from_secs(60),
            poll: Duration::from_millis(20),
        }
    }

    #[test]
    fn every_object_types_and_names_its_run() {
        let run = Run { name: "wb-0123abcd".into(), namespace: "load".into() };
        let root = barrier(&run).unwrap();
        assert_eq!(root.metadata.name.as_deref(), Some("wb-0123abcd"));
        let (sa, role, binding) = access(&run, "u-1", 4).unwrap();
        let rules = role.rules.as_ref().unwrap();
        assert_eq!(rules[2].resource_names.as_ref().unwrap().len(), 4, "each agent's own map, no other");
        for meta in [&sa.metadata, &role.metadata, &binding.metadata] {
            assert_eq!(meta.owner_references.as_ref().unwrap()[0].uid, "u-1");
            assert_eq!(meta.labels.as_ref().unwrap()[super::super::RUN_LABEL], "wb-0123abcd");
        }
        let job = job(&run, "u-1", &spec()).unwrap();
        let js = job.spec.unwrap();
        assert_eq!((js.completions, js.parallelism, js.backoff_limit_per_index), (Some(3), Some(3), Some(0)));
        let pod = js.template.spec.unwrap();
        let c = &pod.containers[0];
        assert_eq!(
            c.command.as_ref().unwrap()[..9].join(" "),
            "wirebench agent --run wb-0123abcd --wait=60000ms --poll=20ms -- http://web:8080/ -c"
        );
        // Requests equal limits: Guaranteed QoS.
        let r = c.resources.as_ref().unwrap();
        assert_eq!(r.requests, r.limits);
        assert_eq!(pod.service_account_name.as_deref(), Some("wb-0123abcd"));
        let map = agent_map(&run, 2, "u-1", BTreeMap::new(), true).unwrap();
        assert_eq!(map.metadata.name.as_deref(), Some("wb-0123abcd-2"));
        let labels = map.metadata.labels.unwrap();
        assert_eq!(
            (labels[super::super::INDEX_LABEL].as_str(), labels[super::super::FINAL_LABEL].as_str()),
            ("2", "true")
        );
        assert_eq!(map.metadata.owner_references.unwrap()[0].uid, "u-1");
    }
}
