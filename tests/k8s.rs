//! The Kubernetes manifests under `deploy/k8s/`, checked offline: they parse, the load job is
//! an Indexed Job with whole CPUs requested as limits, and every `wirebench` command line in
//! them (with the variables Kubernetes substitutes filled in) is one the binary accepts.

use serde::Deserialize;
use serde_yaml::Value;

fn manifests() -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s");
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                docs.push((path.file_name().unwrap().to_string_lossy().into_owned(), value));
            }
        }
    }
    docs
}

fn kind<'a>(docs: &'a [(String, Value)], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// `$(VAR)` replaced as Kubernetes would, from the ConfigMap and the index.
fn substitute(arg: &str, config: &Value) -> String {
    let mut out = arg.to_string();
    for (key, value) in config["data"].as_mapping().unwrap() {
        out = out.replace(&format!("$({})", key.as_str().unwrap()), value.as_str().unwrap());
    }
    out.replace("$(JOB_COMPLETION_INDEX)", "0")
}

#[test]
fn the_manifests_parse_and_their_commands_are_the_binarys() {
    let docs = manifests();
    let config = kind(&docs, "ConfigMap", "wirebench-load");
    let load = kind(&docs, "Job", "wirebench-load");
    let spec = &load["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], spec["parallelism"], "every host at once");
    let container = &spec["template"]["spec"]["containers"][0];
    let resources = &container["resources"];
    assert_eq!(resources["requests"], resources["limits"], "Guaranteed QoS: requests = limits");
    let cpu = resources["limits"]["cpu"].as_str().unwrap();
    assert!(cpu.parse::<u32>().is_ok(), "whole CPUs for the static CPU manager: {cpu}");
    // The load command, as the pod runs it, parses as a `bench` with a label and a start.
    let argv: Vec<String> = container["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| substitute(a.as_str().unwrap(), config))
        .collect();
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(&argv).expect("the load command parses");
    let wirebench::cmd::Command::Bench(bench) = cli.command else { panic!("not a bench: {argv:?}") };
    assert_eq!(bench.label.as_deref(), Some("load-0"));
    assert!(bench.load.start_at.is_some() && bench.json.is_some());
    // The merge job's shell line names the binary's merge with the files the load job writes.
    let merge = kind(&docs, "Job", "wirebench-merge");
    let line = merge["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
    let argv: Vec<&str> =
        line.split_whitespace().map(|a| if a.contains('*') { "/results/load-0.json" } else { a }).collect();
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(&argv).expect("the merge command parses");
    assert!(matches!(cli.command, wirebench::cmd::Command::Merge(_)), "{argv:?}");
    // Both jobs write and read the same claim.
    for job in [load, merge] {
        let claim = &job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"];
        assert_eq!(claim, "wirebench-results");
    }
    kind(&docs, "PersistentVolumeClaim", "wirebench-results");
}
