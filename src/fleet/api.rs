//! The calls a run makes to the Kubernetes API (kube-rs): create the run's objects, write and
//! read the barrier and the agents' ConfigMaps, see the pods, delete it all. Every call is
//! bounded: the client connects within 5 s and reads within 10 s, and each call as a whole
//! (kube-rs retries a busy server) ends within [`CALL_TIMEOUT`]; the loops that repeat them are
//! the callers', each bounded in time.

use super::objects::{self, PodSpec};
use super::{Agent, Barrier, Run};
use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use std::collections::BTreeMap;

/// The longest one call may take, retries included.
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A client from the user's kubeconfig (`KUBECONFIG`, `~/.kube/config`) or, in a pod, its
/// service account.
pub async fn client() -> Result<kube::Client> {
    let reach =
        "cannot reach a Kubernetes cluster: set KUBECONFIG (or ~/.kube/config) to one whose API answers";
    let mut config = kube::Config::infer().await.context(reach)?;
    config.connect_timeout = Some(std::time::Duration::from_secs(5));
    config.read_timeout = Some(std::time::Duration::from_secs(10));
    kube::Client::try_from(config).context(reach)
}

/// `call`, or an error once it has taken [`CALL_TIMEOUT`].
pub async fn within<T>(what: &str, call: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => anyhow::bail!("{what}: no answer from the API in {CALL_TIMEOUT:?}"),
    }
}

/// Create the run: the barrier (waiting), the agents' access, then the Job. The barrier's uid
/// (what the run's objects name as their owner).
pub async fn create(client: &kube::Client, run: &Run, spec: &PodSpec) -> Result<String> {
    let pp = PostParams::default();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    let root = maps
        .create(&pp, &objects::barrier(run)?)
        .await
        .with_context(|| format!("cannot create ConfigMap {} in namespace {}", run.name, run.namespace))?;
    let uid = root.metadata.uid.context("the API gave the barrier no uid")?;
    // The watcher, if any, is agent `pods`.
    let (sa, role, binding) = objects::access(run, &uid, spec.pods + 1)?;
    let ns = &run.namespace;
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(&pp, &sa)
        .await
        .context("cannot create the ServiceAccount")?;
    Api::<Role>::namespaced(client.clone(), ns).create(&pp, &role).await.context("cannot create the Role")?;
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(&pp, &binding)
        .await
        .context("cannot create the RoleBinding")?;
    Api::<Job>::namespaced(client.clone(), ns)
        .create(&pp, &objects::job(run, &uid, spec)?)
        .await
        .context("cannot create the Job")?;
    Ok(uid)
}

/// Start the server's watcher (owned by the barrier, as the rest).
pub async fn create_watcher(
    client: &kube::Client,
    run: &Run,
    root_uid: &str,
    spec: &objects::WatcherSpec,
) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &run.namespace);
    pods.create(&PostParams::default(), &objects::watcher(run, root_uid, spec)?)
        .await
        .context("cannot create the server's watcher pod")?;
    Ok(())
}

/// A pod's node, uid and first container's id (`--watch-pod`): one line if there is none so
/// named, or it has no node yet.
pub async fn pod_place(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<(String, String, Option<String>)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod = pods
        .get_opt(name)
        .await
        .context("cannot read the pods")?
        .with_context(|| format!("--watch-pod: no pod {name} in namespace {namespace}"))?;
    let first = pod.spec.as_ref().and_then(|s| s.containers.first()).map(|c| c.name.clone());
    // `containerd://ID`: the ID is in the cgroup path of the container's processes.
    let container = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref()).and_then(|all| {
        let c = all.iter().find(|c| Some(&c.name) == first.as_ref())?;
        Some(c.container_id.as_ref()?.rsplit("://").next()?.to_string())
    });
    let node = pod
        .spec
        .and_then(|s| s.node_name)
        .with_context(|| format!("--watch-pod: pod {name} is on no node yet"))?;
    Ok((node, pod.metadata.uid.context("the API gave the pod no uid")?, container))
}

/// Write the barrier.
pub async fn set_barrier(client: &kube::Client, run: &Run, barrier: Barrier) -> Result<()> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    let mut root = maps.get(&run.name).await.context("cannot read the barrier")?;
    root.data = Some(barrier.to_data());
    maps.replace(&run.name, &PostParams::default(), &root).await.context("cannot write the barrier")?;
    Ok(())
}

/// Read the barrier (gone: `Abort`).
pub async fn barrier(client: &kube::Client, run: &Run) -> Result<Barrier> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    Ok(match maps.get_opt(&run.name).await.context("cannot read the barrier")? {
        Some(map) => Barrier::from_data(&map.data.unwrap_or_default()),
        None => Barrier::Abort,
    })
}

/// Every agent's latest word, by index. A last word (done or failed: a result may be most of a
/// MiB) is read once and kept in `last`; the others are listed whole at each call, the last
/// words only by name.
pub async fn agents(
    client: &kube::Client,
    run: &Run,
    last: &mut BTreeMap<u32, Agent>,
) -> Result<Vec<(u32, Agent)>> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    let index_of = |meta: &kube::api::ObjectMeta| -> Option<u32> {
        meta.labels.as_ref()?.get(super::INDEX_LABEL)?.parse().ok()
    };
    let so_far = format!("{},{},!{}", run.selector(), super::INDEX_LABEL, super::FINAL_LABEL);
    let list = maps
        .list(&ListParams::default().labels(&so_far))
        .await
        .context("cannot list the agents' ConfigMaps")?;
    let mut words: BTreeMap<u32, Agent> = list
        .items
        .into_iter()
        .filter_map(|m| Some((index_of(&m.metadata)?, Agent::from_data(&m.data.unwrap_or_default())?)))
        .collect();
    let done = format!("{},{},{}", run.selector(), super::INDEX_LABEL, super::FINAL_LABEL);
    let names = maps
        .list_metadata(&ListParams::default().labels(&done))
        .await
        .context("cannot list the agents' ConfigMaps")?;
    for meta in names.items.into_iter().map(|m| m.metadata) {
        let (Some(index), Some(name)) = (index_of(&meta), meta.name) else { continue };
        if let std::collections::btree_map::Entry::Vacant(slot) = last.entry(index) {
            let map = maps.get(&name).await.with_context(|| format!("cannot read {name}"))?;
            if let Some(agent) = Agent::from_data(&map.data.unwrap_or_default()) {
                slot.insert(agent);
            }
        }
    }
    words.extend(last.iter().map(|(i, a)| (*i, a.clone())));
    Ok(words.into_iter().collect())
}

/// The barrier's uid: what the run's objects name as their owner.
pub async fn root_uid(client: &kube::Client, run: &Run) -> Result<String> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    let root =
        maps.get(&run.name).await.with_context(|| format!("cannot read the run's barrier {}", run.name))?;
    root.metadata.uid.context("the API gave the barrier no uid")
}

/// Write agent `index`'s ConfigMap (created the first time, replaced after), owned by the
/// barrier (`root_uid`).
pub async fn put_agent(
    client: &kube::Client,
    run: &Run,
    index: u32,
    root_uid: &str,
    agent: &Agent,
) -> Result<()> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &run.namespace);
    let last = matches!(agent, Agent::Done { .. } | Agent::Failed { .. });
    let map = objects::agent_map(run, index, root_uid, agent.to_data(), last)?;
    let name = run.agent_map(index);
    match maps.get_opt(&name).await? {
        None => drop(
            maps.create(&PostParams::default(), &map)
                .await
                .with_context(|| format!("cannot create {name}"))?,
        ),
        Some(old) => {
            let mut map = map;
            map.metadata.resource_version = old.metadata.resource_version;
            maps.replace(&name, &PostParams::default(), &map)
                .await
                .with_context(|| format!("cannot write {name}"))?;
        }
    }
    Ok(())
}

/// A load pod as the API sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodState {
    pub name: String,
    pub index: Option<u32>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` (or `Unknown`).
    pub phase: String,
    /// Why it failed or waits, when the API says (`Evicted`, `ErrImageNeverPull`, exit codes).
    pub reason: Option<String>,
    pub qos: Option<String>,
    /// Being deleted.
    pub deleting: bool,
}

/// The run's pods.
pub async fn pods(client: &kube::Client, run: &Run) -> Result<Vec<PodState>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &run.namespace);
    let list =
        api.list(&ListParams::default().labels(&run.selector())).await.context("cannot list the pods")?;
    Ok(list.items.into_iter().map(pod_state).collect())
}

fn pod_state(pod: Pod) -> PodState {
    // A Job's pod by its completion index; the watcher by its label.
    let index = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
        .or_else(|| pod.metadata.labels.as_ref()?.get(super::INDEX_LABEL))
        .and_then(|i| i.parse().ok());
    let status = pod.status.unwrap_or_default();
    // The first container's waiting or terminated reason, else the pod's.
    let container = status.container_statuses.as_ref().and_then(|c| c.first()).and_then(|c| c.state.clone());
    let from_container = container.and_then(|s| {
        s.waiting
            .and_then(|w| {
                w.reason.map(|r| format!("{r}{}", w.message.map(|m| format!(": {m}")).unwrap_or_default()))
            })
            .or_else(|| {
                s.terminated.map(|t| {
                    let why = t.reason.unwrap_or_else(|| "Terminated".into());
                    let said =
                        t.message.as_deref().and_then(|m| m.lines().rev().find(|l| !l.trim().is_empty()));
                    format!(
                        "{why} (exit {}){}",
                        t.exit_code,
                        said.map(|m| format!(": {}", m.trim())).unwrap_or_default()
                    )
                })
            })
    });
    PodState {
        name: pod.metadata.name.unwrap_or_default(),
        index,
        phase: status.phase.unwrap_or_else(|| "Unknown".into()),
        reason: status.reason.or(from_container),
        qos: status.qos_class,
        deleting: pod.metadata.deletion_timestamp.is_some(),
    }
}

/// Delete the run: the Job with its pods at once, then the root (the rest is owned by it).
/// Best effort, each failure said; gone already is fine.
pub async fn delete(client: &kube::Client, run: &Run) -> Vec<String> {
    let ns = &run.namespace;
    let watcher = format!("{}-watch", run.name);
    // The root first: what it owns goes with it even if this is cut short. Then the rest, not
    // left to the garbage collector's pace.
    let failed = [
        gone_or(Api::<ConfigMap>::namespaced(client.clone(), ns), &run.name).await,
        gone_or(Api::<Job>::namespaced(client.clone(), ns), &run.name).await,
        gone_or(Api::<Pod>::namespaced(client.clone(), ns), &watcher).await,
        gone_or(Api::<RoleBinding>::namespaced(client.clone(), ns), &run.name).await,
        gone_or(Api::<Role>::namespaced(client.clone(), ns), &run.name).await,
        gone_or(Api::<ServiceAccount>::namespaced(client.clone(), ns), &run.name).await,
    ];
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let agents = tokio::time::timeout(
        CALL_TIMEOUT,
        maps.delete_collection(&background(), &ListParams::default().labels(&run.selector())),
    )
    .await;
    let agents = match agents {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("the agents' ConfigMaps: {e}")),
        Err(_) => Some(format!("the agents' ConfigMaps: no answer in {CALL_TIMEOUT:?}")),
    };
    failed.into_iter().flatten().chain(agents).collect()
}

fn background() -> DeleteParams {
    DeleteParams { propagation_policy: Some(PropagationPolicy::Background), ..Default::default() }
}

/// Delete `name` (with what it owns, in the background) within [`CALL_TIMEOUT`]; gone already
/// is fine. Why not, if it could not.
async fn gone_or<K>(api: Api<K>, name: &str) -> Option<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).into_owned();
    match tokio::time::timeout(CALL_TIMEOUT, api.delete(name, &background())).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) if gone(&e) => None,
        Ok(Err(e)) => Some(format!("{kind} {name}: {e}")),
        Err(_) => Some(format!("{kind} {name}: no answer in {CALL_TIMEOUT:?}")),
    }
}

fn gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}
