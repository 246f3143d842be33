//! `wirebench kube` on a real Kubernetes cluster (tools/cluster/up.sh: one node on this machine,
//! its pods on a bridge of its own): load pods released together, their results gathered
//! through the API and merged, checked against the server's own count; a pod deleted mid-run
//! named while the others make the result; a Guaranteed pod pinned to its exclusive CPU; the
//! plain deploy/k8s/ manifests applied as a kubectl user would. kubectl sets the scene here (the
//! server, its Service, the deletion): the product itself calls only the API.
//!
//! Ignored by plain `cargo test` (they need root and the cluster); `.ci/run` brings the cluster
//! up and runs them. One at a time (a lock): the node has 1.9 CPUs to give.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn cache() -> PathBuf {
    std::env::var_os("WB_CLUSTER_CACHE").map_or("/var/cache/wirebench/k8s".into(), PathBuf::from)
}

fn kubeconfig() -> PathBuf {
    let state =
        std::env::var_os("WB_CLUSTER_STATE").map_or("/var/lib/wirebench-cluster".into(), PathBuf::from);
    state.join("pki/admin.kubeconfig")
}

/// The cluster answers (else: skipped, or failed under CI).
fn cluster_up() -> bool {
    let up = kubeconfig().exists()
        && kubectl_cmd().args(["get", "--raw", "/readyz"]).output().is_ok_and(|o| o.status.success());
    if !up {
        common::skip("no test cluster answers: run tools/cluster/up.sh (as root) first");
    }
    up
}

/// A namespace of the test's own, deleted (with all in it) when dropped.
struct Namespace(String);

impl Namespace {
    fn new(tag: &str) -> Namespace {
        let name = format!("wbt-{tag}-{}", std::process::id());
        kubectl(&["create", "namespace", &name]);
        Namespace(name)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = kubectl_cmd().args(["delete", "namespace", &self.0, "--wait=true", "--timeout=60s"]).output();
    }
}

/// kubectl of the test cluster, with its kubeconfig.
fn kubectl_cmd() -> Command {
    let mut c = Command::new(cache().join("bin/kubectl"));
    c.env("KUBECONFIG", kubeconfig());
    c
}

fn kubectl_output(args: &[&str]) -> Output {
    kubectl_cmd().args(args).output().unwrap()
}

fn kubectl(args: &[&str]) -> String {
    let out = kubectl_output(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl_apply(ns: &str, yaml: &str) {
    let mut child = kubectl_cmd()
        .args(["apply", "-n", ns, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "kubectl apply: {}\n{yaml}", String::from_utf8_lossy(&out.stderr));
}

/// This build of wirebench as the cluster's image `wirebench:test` (tools/cluster/image.sh).
fn image() -> &'static str {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/cluster/image.sh");
        let out =
            Command::new(script).args([env!("CARGO_BIN_EXE_wirebench"), "wirebench:test"]).output().unwrap();
        assert!(out.status.success(), "image.sh: {}", String::from_utf8_lossy(&out.stderr));
    });
    "wirebench:test"
}

/// `serve http` as a Deployment of one pod in `ns`, with a Service: its URL.
fn server(ns: &str) -> String {
    server_of(ns, "http", "http")
}

/// `serve KIND` as a Deployment of one pod in `ns`, with a Service; the URL (`SCHEME://`) of
/// its ClusterIP. No readiness probe: a TCP probe's connections would be in the server's count
/// (the wait for the Service's route covers the few milliseconds it takes to listen).
fn server_of(ns: &str, kind: &str, scheme: &str) -> String {
    kubectl_apply(
        ns,
        &format!(
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 20
      containers:
      - name: serve
        image: {}
        imagePullPolicy: Never
        command: ["wirebench", "serve", "{kind}", "--listen", "0.0.0.0:8080"]
        resources: {{requests: {{cpu: 250m, memory: 128Mi}}, limits: {{cpu: 250m, memory: 128Mi}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 8080, targetPort: 8080}}]
"#,
            image()
        ),
    );
    kubectl(&["wait", "-n", ns, "--for=condition=Available", "deployment/web", "--timeout=90s"]);
    // The Service routes once its endpoints are out and kube-proxy has written them (it
    // syncs at most every second): until then a connection to it is refused.
    let t0 = Instant::now();
    let selector = "kubernetes.io/service-name=web";
    while kubectl(&["get", "endpointslices", "-n", ns, "-l", selector, "-o", "jsonpath={..addresses}"])
        .trim()
        .is_empty()
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "the Service never had an endpoint");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let ip = kubectl(&["get", "svc", "web", "-n", ns, "-o", "jsonpath={.spec.clusterIP}"]);
    format!("{scheme}://{}:8080/", ip.trim())
}

/// The server's pod (the Deployment's one).
fn server_pod(ns: &str) -> String {
    kubectl(&["get", "pods", "-n", ns, "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"])
        .trim()
        .to_string()
}

/// The server's own count, as it prints it when stopped (SIGTERM, by deleting its Deployment):
/// (requests, connections, rx bytes, tx bytes).
fn server_count(ns: &str) -> (u64, u64, u64, u64) {
    let pod = server_pod(ns);
    let logs = kubectl_cmd().args(["logs", "-f", &pod, "-n", ns]).stdout(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    kubectl(&[
        "delete",
        "deployment",
        "web",
        "-n",
        ns,
        "--cascade=foreground",
        "--wait=true",
        "--timeout=60s",
    ]);
    let text = String::from_utf8_lossy(&logs.wait_with_output().unwrap().stdout).into_owned();
    let line =
        text.lines().find(|l| l.starts_with("served ")).unwrap_or_else(|| panic!("no tally in:\n{text}"));
    // served N requests (M messages) on C connections in Ts; rx X B tx Y B; …
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |w: &str| words[words.iter().position(|x| *x == w).unwrap() + 1].parse::<u64>().unwrap();
    (words[1].parse().unwrap(), after("on"), after("rx"), after("tx"))
}

fn kube(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wirebench"));
    c.env("KUBECONFIG", kubeconfig())
        .args(["kube", "--namespace", ns, "--image", image(), "--pull", "Never"])
        .args(args);
    c
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirebench-kube-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn three_pods_start_together_and_merge_to_the_servers_own_count() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("merge");
    let url = server(&ns.0);
    let dir = temp("merge");
    // --fail-if on the merged result: a p99 under a microsecond never holds, status 3.
    let failing = dir.join("failing.json");
    let out = kube(
        &ns.0,
        &[&url, "-c", "4", "-d", "2s", "--pods", "2", "--pod-cpu", "300m", "--pod-memory", "256Mi"],
    )
    .args(["--fail-if", "p99>1us", "--json", failing.to_str().unwrap()])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    // The run: 3 pods × 16 connections × 10 s.
    let total = dir.join("total.json");
    let pods = dir.join("pods");
    let t0 = Instant::now();
    let out = kube(
        &ns.0,
        &[&url, "-c", "16", "-d", "10s", "--pods", "3", "--pod-cpu", "300m", "--pod-memory", "256Mi"],
    )
    .args(["--json", total.to_str().unwrap(), "--pod-json", pods.to_str().unwrap()])
    .args(["--watch-pod", &server_pod(&ns.0)])
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{stdout}(in {:.1} s)", t0.elapsed().as_secs_f64());
    let (served, connections, rx, tx) = server_count(&ns.0);
    let (t, f) = (read(&total), read(&failing));
    let fleet = &t["fleet"];
    assert_eq!(fleet["merged"], 3, "{fleet}");
    let per_pod = fleet["per_pod"].as_array().unwrap();
    for p in per_pod {
        assert_eq!(p["state"], "merged", "{p}");
        assert_eq!(p["audit_match"], true, "{p}");
        assert!(p["ops"].as_u64().unwrap() > 0, "{p}");
        // A 300m pod is not Guaranteed with whole CPUs: it shares the node's CPUs.
        assert_eq!(p["cpus_allowed"], p["cpus_online"], "{p}");
        // One node, one clock: the offset's bounds hold zero.
        let hi = p["seen_after_written_ms"].as_f64().unwrap();
        assert!(hi >= 0.0, "{p}");
        if let Some(lo) = p["clock_offset_min_ms"].as_f64() {
            assert!(lo <= 0.0 && lo <= hi, "{p}");
        }
    }
    let skew = fleet["skew_ms"].as_f64().unwrap();
    assert!(skew >= 0.0 && skew <= fleet["tolerance_ms"].as_f64().unwrap(), "skew {skew} ms");
    assert_eq!(t["audit"]["match"], true);
    // The server's side, watched from its node over the window: its CPU, within its 250m.
    assert_eq!(fleet["watcher"]["state"], "watched", "{fleet}");
    let cpu = t["server_watch"]["cpu_pct"]["mean"].as_f64().unwrap();
    assert!(cpu > 1.0 && cpu < 40.0, "{}", t["server_watch"]);
    assert!(t["server_watch"]["samples"].as_u64().unwrap() >= 10, "{}", t["server_watch"]);
    // The server's own count: every request the pods sent (both runs), every byte they wrote.
    let sum = |k: &str| t[k].as_u64().unwrap() + f[k].as_u64().unwrap();
    assert_eq!(served, sum("sent"), "the server counted every request sent");
    let ops = t["ops"].as_u64().unwrap();
    let in_flight = t["sent"].as_u64().unwrap() - ops;
    assert_eq!(ops, served - f["sent"].as_u64().unwrap() - in_flight, "completed = served − in flight");
    assert_eq!(rx, t["bytes"]["tx"].as_u64().unwrap() + f["bytes"]["tx"].as_u64().unwrap());
    assert_eq!(tx, t["bytes"]["rx"].as_u64().unwrap() + f["bytes"]["rx"].as_u64().unwrap());
    let pre = |r: &Value| r["preflight"]["connections"].as_u64().unwrap();
    assert_eq!(connections, sum("connects") + pre(&t) + pre(&f));
    // The merged histogram is the merge of the pods' own results.
    let files: Vec<PathBuf> = std::fs::read_dir(&pods).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 3);
    let again = dir.join("again.json");
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .arg("merge")
        .args(&files)
        .args(["--json", again.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = read(&again);
    for k in ["ops", "sent"] {
        assert_eq!(m[k], t[k], "{k}");
    }
    assert_eq!(m["histograms"]["latency"], t["histograms"]["latency"]);
    assert_eq!(m["latency_us"], t["latency_us"]);
}

/// Wait until `run`'s pods are running and the start has passed by `into`.
fn pods_of(ns: &str) -> Vec<String> {
    kubectl(&["get", "pods", "-n", ns, "-l", "wirebench.dev/run", "-o", "jsonpath={.items[*].metadata.name}"])
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn running(ns: &str) -> usize {
    kubectl(&["get", "pods", "-n", ns, "-l", "wirebench.dev/run", "-o", "jsonpath={.items[*].status.phase}"])
        .split_whitespace()
        .filter(|p| *p == "Running")
        .count()
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn a_pod_deleted_mid_run_is_named_and_the_others_make_the_result() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("lost");
    let url = server(&ns.0);
    let dir = temp("lost");
    let total = dir.join("total.json");
    let child = kube(
        &ns.0,
        &[&url, "-c", "4", "-d", "8s", "--pods", "3", "--pod-cpu", "300m", "--pod-memory", "256Mi"],
    )
    .args(["--json", total.to_str().unwrap()])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while running(&ns.0) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(90), "the pods never ran");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Two seconds to the start, then three into the run.
    std::thread::sleep(Duration::from_secs(5));
    let victim = pods_of(&ns.0).into_iter().find(|p| p.contains("-1-")).expect("index 1's pod");
    kubectl(&["delete", "pod", &victim, "-n", &ns.0, "--wait=false"]);
    let out = finish(child);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(stdout.contains(&victim), "the deleted pod is named:\n{stdout}");
    let t = read(&total);
    let fleet = &t["fleet"];
    assert_eq!(fleet["merged"], 2, "{fleet}");
    let lost = fleet["per_pod"].as_array().unwrap().iter().find(|p| p["pod"] == victim.as_str()).unwrap();
    assert_ne!(lost["state"], "merged", "{lost}");
    let why = lost["why"].as_str().unwrap();
    assert!(why.contains("signal") || why.contains("deleted"), "{why}");
    let merged: u64 = fleet["per_pod"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["state"] == "merged")
        .map(|p| p["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(t["ops"].as_u64().unwrap(), merged, "the total is the others' operations");
    let _ = server_count(&ns.0);
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn a_guaranteed_pod_with_a_whole_cpu_pins_its_engine_to_its_exclusive_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("pin");
    let url = server(&ns.0);
    let dir = temp("pin");
    let total = dir.join("total.json");
    let out =
        kube(&ns.0, &[&url, "-c", "4", "-d", "2s", "--pods", "1", "--pod-cpu", "1", "--pod-memory", "256Mi"])
            .args(["--json", total.to_str().unwrap()])
            .output()
            .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = read(&total);
    let pod = &t["fleet"]["per_pod"][0];
    assert_eq!(pod["qos"], "Guaranteed", "{pod}");
    // The static CPU manager policy gave it one CPU of its own, and the engine ran there.
    let allowed = pod["cpus_allowed"].as_str().unwrap();
    let cpu: usize = allowed.parse().unwrap_or_else(|_| panic!("one exclusive CPU, not {allowed}: {pod}"));
    assert_ne!(allowed, pod["cpus_online"].as_str().unwrap());
    assert_eq!(pod["engine_cores"], serde_json::json!([cpu]), "{pod}");
    let _ = server_count(&ns.0);
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn the_deploy_k8s_manifests_run_as_a_kubectl_user_applies_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("deploy");
    let url = server(&ns.0);
    // The claim's volume: a directory of this machine (a cluster of one node; a real one has
    // a ReadWriteMany class).
    let results = temp("deploy");
    let volume = Volume(format!("wbt-results-{}", std::process::id()));
    kubectl_apply(
        &ns.0,
        &format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {}}}\nspec:\n  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteMany]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: \"\"\n  claimRef: {{namespace: {}, name: wirebench-results}}\n  hostPath: {{path: {}, type: Directory}}\n",
            volume.0,
            ns.0,
            results.display()
        ),
    );
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 20;
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s");
    let config = std::fs::read_to_string(deploy.join("config.yaml"))
        .unwrap()
        .replace("http://my-server.default.svc:8080/", &url)
        .replace("\"2026-11-30T23:30:00Z\"", &format!("\"{at}\""))
        .replace("\"256\"", "\"4\"")
        .replace("\"60s\"", "\"3s\"")
        .replace("  resources:\n", "  storageClassName: \"\"\n  resources:\n");
    kubectl_apply(&ns.0, &config);
    // The node has 1.9 CPUs: 300m per load pod, and this build's image.
    let as_here = |yaml: String| {
        yaml.replace(
            "image: wirebench:latest",
            &format!("image: {}\n          imagePullPolicy: Never", image()),
        )
        .replace("cpu: \"2\"", "cpu: 300m")
        .replace("cpu: \"1\"", "cpu: 200m")
        .replace("memory: 1Gi", "memory: 256Mi")
    };
    kubectl_apply(&ns.0, &as_here(std::fs::read_to_string(deploy.join("load-job.yaml")).unwrap()));
    kubectl(&["wait", "-n", &ns.0, "--for=condition=Complete", "job/wirebench-load", "--timeout=120s"]);
    kubectl_apply(&ns.0, &as_here(std::fs::read_to_string(deploy.join("merge-job.yaml")).unwrap()));
    kubectl(&["wait", "-n", &ns.0, "--for=condition=Complete", "job/wirebench-merge", "--timeout=60s"]);
    let (served, ..) = server_count(&ns.0);
    let total = read(&results.join("total.json"));
    let loads: Vec<Value> = (0..3).map(|i| read(&results.join(format!("load-{i}.json")))).collect();
    let sum = |k: &str| loads.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(total["ops"].as_u64().unwrap(), sum("ops"));
    assert_eq!(total["runs"].as_array().unwrap().len(), 3);
    assert_eq!(served, sum("sent"), "the server counted every request the three pods sent");
    assert_eq!(total["audit"]["match"], true);
}

/// A PersistentVolume (not namespaced), deleted when dropped.
struct Volume(String);

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = kubectl_output(&["delete", "pv", &self.0, "--wait=false"]);
    }
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn ctrl_c_deletes_what_the_run_created() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("stop");
    let url = server(&ns.0);
    for phase in ["before the window opens", "during the window"] {
        // A start far ahead holds the pods before their window; a near one lets them run.
        let start_in = if phase == "before the window opens" { "60s" } else { "1s" };
        let child = kube(
            &ns.0,
            &[&url, "-c", "2", "-d", "60s", "--pods", "2", "--pod-cpu", "200m", "--pod-memory", "128Mi"],
        )
        .args(["--start-in", start_in])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let t0 = Instant::now();
        while running(&ns.0) < 2 {
            assert!(t0.elapsed() < Duration::from_secs(90), "{phase}: the pods never ran");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(3));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let stopped = Instant::now();
        let out = finish(child);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{phase}: {stderr}");
        assert!(stderr.contains("interrupted"), "{phase}: {stderr}");
        assert!(stopped.elapsed() < Duration::from_secs(20), "{phase}: it ended promptly");
        // Everything the run made goes (pods within their grace period).
        let kinds = "job,configmap,serviceaccount,role,rolebinding,pod";
        let t0 = Instant::now();
        loop {
            let left = kubectl(&["get", kinds, "-n", &ns.0, "-l", "wirebench.dev/run", "-o", "name"]);
            if left.trim().is_empty() {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "{phase}: left behind: {left}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    let _ = server_count(&ns.0);
}

#[test]
#[ignore = "needs the test cluster (tools/cluster/up.sh, as root): run by .ci/run"]
fn a_websocket_load_merges_to_its_servers_own_count() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cluster_up() {
        return;
    }
    let ns = Namespace::new("ws");
    let url = server_of(&ns.0, "ws", "ws");
    let total = temp("ws").join("total.json");
    let out = kube(
        &ns.0,
        &[&url, "-c", "8", "-d", "4s", "--pods", "2", "--pod-cpu", "300m", "--pod-memory", "256Mi"],
    )
    .args(["--json", total.to_str().unwrap()])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (served, connections, rx, tx) = server_count(&ns.0);
    let t = read(&total);
    assert_eq!(t["fleet"]["merged"], 2, "{}", t["fleet"]);
    assert_eq!(t["audit"]["match"], true);
    let n = |k: &str| t[k].as_u64().unwrap();
    assert!(n("ops") > 0);
    assert_eq!(served, n("sent"), "the server counted every message the pods sent");
    assert_eq!(rx, t["bytes"]["tx"].as_u64().unwrap(), "every byte written, handshakes included");
    assert_eq!(tx, t["bytes"]["rx"].as_u64().unwrap());
    assert_eq!(connections, n("connects") + t["preflight"]["connections"].as_u64().unwrap());
}
