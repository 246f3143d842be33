//! The JSON every command writes has a type, and its schema is published: `docs/schema/*.json`
//! are what `wirebench schema` generates from the types, and the output of `bench`, `merge`,
//! `compare`, `sweep` and `watch` validates against them with a real validator (Python's
//! `jsonschema`, installed by `tools/install-peers.sh`).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wirebench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().expect("binary runs")
}

fn docs(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("docs/schema/{kind}.json"))
}

#[test]
fn the_published_schemas_are_the_types() {
    for kind in ["result", "compare", "sweep", "watch"] {
        let out = wirebench(&["schema", kind]);
        assert!(out.status.success());
        let published = std::fs::read_to_string(docs(kind)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            published,
            "docs/schema/{kind}.json is stale: wirebench schema {kind} > docs/schema/{kind}.json"
        );
    }
}

/// Python's `jsonschema` validates `file` against `docs/schema/KIND.json`; `None` if the
/// validator is not installed (allowed outside CI).
fn validate(kind: &str, file: &Path) -> Option<()> {
    let script = "import json, sys, jsonschema\nschema = json.load(open(sys.argv[1]))\njsonschema.validate(json.load(open(sys.argv[2])), schema)\nprint('valid')";
    let out = Command::new("python3").args(["-c", script]).arg(docs(kind)).arg(file).output().ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No module named 'jsonschema'") {
        skip("Python's jsonschema is not installed (tools/install-peers.sh)");
        return None;
    }
    assert!(out.status.success(), "{} does not validate as {kind}: {stderr}", file.display());
    Some(())
}

#[test]
fn every_commands_json_validates_against_its_schema() {
    let dir = std::env::temp_dir().join(format!("wirebench-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name);
    let (http, tls) = (start_builtin("http"), serve_started("uring", "http", &["--tls"]));
    let ca = file("ca.pem");
    std::fs::write(&ca, &tls.tls.as_ref().unwrap().cert_pem).unwrap();
    let cpu = client_cpu().to_string();
    let url = format!("http://{}/", http.addr());
    let tls_url = tls.urls[0][0].clone();
    let run = |args: &[&str]| {
        let out = wirebench(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let (a, b, m, c, s, w) =
        (file("a.json"), file("b.json"), file("m.json"), file("c.json"), file("s.json"), file("w.json"));
    let p = |p: &PathBuf| p.to_str().unwrap().to_string();
    // A run with every optional part: intervals, a paced schedule, two targets, a label,
    // requests from a file.
    let requests = file("requests.jsonl");
    std::fs::write(&requests, "{\"path\":\"/a\"}\n{\"method\":\"POST\",\"body\":\"x\"}\n").unwrap();
    run(&[
        "bench",
        &url,
        &url,
        "--requests",
        &p(&requests),
        "-c",
        "2",
        "--rate",
        "500",
        "-d",
        "1s",
        "--report-every",
        "200ms",
        "--cores",
        &cpu,
        "--label",
        "a",
        "--json",
        &p(&a),
    ]);
    run(&[
        "bench",
        &tls_url,
        "--ca",
        &p(&ca),
        "-c",
        "2",
        "-n",
        "200",
        "--repeat",
        "2",
        "--cores",
        &cpu,
        "--json",
        &p(&b),
    ]);
    run(&["merge", &p(&a), &p(&b), "--force", "--json", &p(&m)]);
    run(&["compare", "-n", "300", "--json", &p(&c)]);
    run(&["sweep", "--serve", "http", "--server-cores", "1", "-c", "2", "-d", "300ms", "--json", &p(&s)]);
    run(&["watch", "--pid", &std::process::id().to_string(), "-d", "300ms", "--json", &p(&w)]);
    for (kind, f) in
        [("result", &a), ("result", &b), ("result", &m), ("compare", &c), ("sweep", &s), ("watch", &w)]
    {
        if validate(kind, f).is_none() {
            return; // skipped: said by validate
        }
    }
    tls.handle.stop().unwrap();
}
