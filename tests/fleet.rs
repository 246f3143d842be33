//! Several load hosts on one machine: network namespaces joined by veth pairs and a bridge
//! (in a namespace of its own), a private test subnet that exists only inside them, a built-in
//! server in one and `bench --start-at` in three others at once, then `merge`. Needs root and
//! `ip netns`; skipped with a clear message where they are not available (a failure under `CI=true`). The namespaces are
//! removed whatever happens (a guard's `Drop`, which runs on panic too). No address outside
//! them is ever used.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use wirebench::stats::encoded::decode;

/// The test subnet: inside the namespaces only.
const SUBNET: &str = "10.251.7";

/// Namespaces made by this test, deleted on drop.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A bridge namespace and one namespace per host, each host's `eth0` on the bridge with
/// address `SUBNET.n`. `Err` if this machine cannot make them (not root, no `ip netns`).
fn build(hosts: &[(&str, u8)], nets: &mut Namespaces) -> Result<(), String> {
    let tag = std::process::id() % 100_000;
    let bridge = format!("wbbr{tag}");
    ip(&["netns", "add", &bridge])?;
    nets.0.push(bridge.clone());
    ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"])?;
    ip(&["-n", &bridge, "link", "set", "br0", "up"])?;
    for (name, n) in hosts {
        ip(&["netns", "add", name])?;
        nets.0.push(name.to_string());
        let port = format!("p{n}");
        ip(&["link", "add", "eth0", "netns", name, "type", "veth", "peer", "name", &port, "netns", &bridge])?;
        ip(&["-n", &bridge, "link", "set", &port, "master", "br0"])?;
        ip(&["-n", &bridge, "link", "set", &port, "up"])?;
        ip(&["-n", name, "addr", "add", &format!("{SUBNET}.{n}/24"), "dev", "eth0"])?;
        ip(&["-n", name, "link", "set", "eth0", "up"])?;
        ip(&["-n", name, "link", "set", "lo", "up"])?;
    }
    Ok(())
}

fn in_ns(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_wirebench")]).args(args);
    c
}

#[test]
#[ignore = "needs root and ip netns: run by .ci/run"]
fn three_hosts_in_namespaces_start_together_and_merge_exactly() {
    let tag = std::process::id() % 100_000;
    let names: Vec<String> = ["srv", "h1", "h2", "h3"].iter().map(|n| format!("wb{n}{tag}")).collect();
    let hosts: Vec<(&str, u8)> = names.iter().map(String::as_str).zip([1u8, 11, 12, 13]).collect();
    let mut nets = Namespaces(Vec::new());
    if let Err(why) = build(&hosts, &mut nets) {
        return skip(&format!("cannot make network namespaces here ({why}); run as root with iproute2"));
    }
    // The server, in its namespace, on the server CPU.
    let server_addr = format!("{SUBNET}.1:8080");
    let mut server = in_ns(
        &names[0],
        &["serve", "http", "--listen", &server_addr, "--cores", &server_cpu().to_string(), "-d", "60s"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("ip netns exec runs");
    let line = BufReader::new(server.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    assert!(line.contains("listening on"), "{line}");
    let _server = Peer(server);
    // Three generators, one start time two seconds ahead.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let at = format!("{:.3}", now.as_secs_f64() + 2.0);
    let dir = std::env::temp_dir().join(format!("wirebench-fleet-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("h{i}.json"))).collect();
    let url = format!("http://{server_addr}/");
    let cpu = client_cpu().to_string();
    let runs: Vec<_> = (0..3)
        .map(|i| {
            let label = format!("h{}", i + 1);
            in_ns(&names[i + 1], &["bench", &url, "-c", "4", "-d", "1s", "--start-at", &at, "--cores", &cpu])
                .args(["--label", &label, "--json", files[i].to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("ip netns exec runs")
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let merged = dir.join("merged.json");
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .arg("merge")
        .args(&files)
        .args(["--json", merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read =
        |p: &PathBuf| -> serde_json::Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let m = read(&merged);
    let runs: Vec<serde_json::Value> = files.iter().map(read).collect();
    let ops: Vec<u64> = runs.iter().map(|r| r["ops"].as_u64().unwrap()).collect();
    assert!(ops.iter().all(|&n| n > 0), "every host worked: {ops:?}");
    assert_eq!(m["ops"].as_u64(), Some(ops.iter().sum()));
    assert_eq!(m["audit"]["match"], true);
    let mut all = wirebench::stats::histogram();
    for r in &runs {
        assert_eq!(r["audit"]["match"], true, "{}", r["label"]);
        all.add(decode(r["histograms"]["latency"].as_str().unwrap()).unwrap()).unwrap();
    }
    assert_eq!(m["latency_us"]["count"].as_u64(), Some(all.len()));
    assert_eq!(m["latency_us"]["p99"].as_f64(), Some(all.value_at_quantile(0.99) as f64 / 1e3));
    // Each host waited for the common start: its window opened about 2 s after it began.
    for r in &runs {
        let set_up = r["set_up_in_s"].as_f64().unwrap();
        assert!((1.0..3.0).contains(&set_up), "{}: window after {set_up} s", r["label"]);
    }
}
