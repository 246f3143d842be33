//! `wirebench merge`: three generators loading one server at once, as three hosts would, merged
//! into one exact result; and every way a file can be wrong.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::{Command, Output};
use wirebench::stats::encoded::decode;

fn wirebench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().expect("binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirebench-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run a Python script on `file` (HdrHistogram's own reader); its stdout.
fn python(script: &str, file: &std::path::Path) -> String {
    let out =
        Command::new("python3").args(["-c", script, file.to_str().unwrap()]).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `wirebench bench ARGS… --cores CLIENT_CPU --json FILE`, which must succeed.
fn bench_json(file: &std::path::Path, args: &[&str]) {
    let cpu = client_cpu().to_string();
    let out = wirebench(&[&["bench"], args, &["--cores", &cpu, "--json", file.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn read(path: &PathBuf) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn three_hosts_merge_into_the_exact_total() {
    let (_server, addr) = serve_process("http", &[]);
    let url = format!("http://{addr}/");
    let files: Vec<PathBuf> = (0..3).map(|i| scratch(&format!("host{i}.json"))).collect();
    // Three generators at once, each with its own label, on the client CPU.
    let runs: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let (url, file) = (url.clone(), file.clone());
            std::thread::spawn(move || {
                let label = format!("host-{i}");
                bench_json(&file, &[&url, "-c", "4", "-d", "1s", "--label", &label]);
            })
        })
        .collect();
    for r in runs {
        r.join().unwrap();
    }
    let merged = scratch("merged.json");
    let names: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let out = wirebench(&[&["merge"], &names[..], &["--json", merged.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for label in ["host-0", "host-1", "host-2", "total"] {
        assert!(text.contains(label), "a row for {label}: {text}");
    }
    let m = read(&merged);
    let runs: Vec<serde_json::Value> = files.iter().map(read).collect();
    // Counters are the sums.
    let sum = |key: &str| runs.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(m["ops"].as_u64(), Some(sum("ops")));
    assert_eq!(m["sent"].as_u64(), Some(sum("sent")));
    assert!(sum("ops") > 0);
    assert_eq!(m["audit"]["match"], true);
    // The histogram is the sum: its count, and its p99 is that of every sample together,
    // computed here from the three runs' own histograms.
    let mut all = wirebench::stats::histogram();
    for r in &runs {
        all.add(decode(r["histograms"]["latency"].as_str().unwrap()).unwrap()).unwrap();
    }
    assert_eq!(m["latency_us"]["count"].as_u64(), Some(all.len()));
    assert_eq!(all.len(), sum("ops"), "one latency sample per completed operation");
    assert_eq!(m["latency_us"]["p99"].as_f64(), Some(all.value_at_quantile(0.99) as f64 / 1e3));
    let back = decode(m["histograms"]["latency"].as_str().unwrap()).unwrap();
    assert_eq!(back, all, "the merged histogram travels exactly too");
    // A merged result is a result: merged again with the third run, it is the merge of all
    // three, field for field.
    let (two, again) = (scratch("two.json"), scratch("again.json"));
    let out = wirebench(&["merge", names[0], names[1], "--json", two.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = wirebench(&["merge", two.to_str().unwrap(), names[2], "--json", again.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read(&again), m, "merge(merge(a, b), c) = merge(a, b, c)");
    assert_eq!(m["kind"], "merge");
    let labels: Vec<&str> =
        m["runs"].as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["host-0", "host-1", "host-2"]);
    // And it plots like a run.
    let svg = scratch("merged.svg");
    let out = wirebench(&["plot", merged.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_wrong_file_is_one_clear_line_and_mixed_loads_need_force() {
    let (http, other_http, ws) = (start_builtin("http"), start_builtin("http"), start_builtin("ws"));
    let run = |url: &str, name: &str| {
        let file = scratch(name);
        bench_json(&file, &[url, "-c", "1", "-n", "200"]);
        file
    };
    let a = run(&format!("http://{}/", http.addr()), "a.json");
    let b = run(&format!("http://{}/", other_http.addr()), "b.json");
    let w = run(&format!("ws://{}/", ws.addr()), "w.json");
    let text = std::fs::read_to_string(&a).unwrap();
    let truncated = scratch("truncated.json");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let foreign = scratch("foreign.json");
    std::fs::write(&foreign, r#"{"protocol": "http1", "target": "x"}"#).unwrap();
    let bad_histogram = scratch("bad-histogram.json");
    std::fs::write(&bad_histogram, text.replacen("\"latency\": \"", "\"latency\": \"AAAA", 1)).unwrap();
    let missing = scratch("missing.json");
    for (file, says) in [
        (&truncated, "not JSON"),
        (&foreign, "not a `wirebench bench --json` result"),
        (&bad_histogram, "histograms.latency"),
        (&missing, "cannot read"),
    ] {
        let out = wirebench(&["merge", a.to_str().unwrap(), file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{file:?}: {err}");
    }
    // Two targets are not one load, nor two protocols, unless asked.
    for other in [&b, &w] {
        let out = wirebench(&["merge", a.to_str().unwrap(), other.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
        let out = wirebench(&["merge", a.to_str().unwrap(), other.to_str().unwrap(), "--force"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
#[ignore = "needs Python's hdrhistogram (PyPI): tools/install-peers.sh, run by .ci/run"]
fn hdrhistograms_own_python_reader_reads_the_histograms() {
    let server = start_builtin("http");
    let file = scratch("python.json");
    let url = format!("http://{}/", server.addr());
    bench_json(&file, &[&url, "-c", "2", "-n", "3000"]);
    // The reader decodes the latency histogram: its count and p99 are the run's.
    let script = "import json, sys\nfrom hdrh.histogram import HdrHistogram\nv = json.load(open(sys.argv[1]))\nh = HdrHistogram.decode(v['histograms']['latency'])\nprint(h.get_total_count(), h.get_value_at_percentile(99))";
    let said = python(script, &file);
    let v = read(&file);
    let ours = decode(v["histograms"]["latency"].as_str().unwrap()).unwrap();
    assert_eq!(said.trim(), format!("3000 {}", ours.value_at_quantile(0.99)), "python read: {said}");
}

#[test]
#[ignore = "needs Python's hdrhistogram (PyPI): tools/install-peers.sh, run by .ci/run"]
fn hdrhistograms_own_log_reader_reads_the_interval_log() {
    let server = start_builtin("http");
    let (json, hlog) = (scratch("hlog.json"), scratch("run.hlog"));
    let url = format!("http://{}/", server.addr());
    let hlog_path = hlog.to_str().unwrap();
    bench_json(&json, &[&url, "-c", "2", "-d", "1500ms", "--report-every", "500ms", "--hlog", hlog_path]);
    let script = "import sys\nfrom hdrh.log import HistogramLogReader\nfrom hdrh.histogram import HdrHistogram\nr = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600 * 10**9, 2))\ncounts = []\nwhile True:\n    h = r.get_next_interval_histogram()\n    if h is None:\n        break\n    counts.append(h.get_total_count())\nprint(' '.join(map(str, counts)))";
    let counts: Vec<u64> = python(script, &hlog).split_whitespace().map(|c| c.parse().unwrap()).collect();
    let v = read(&json);
    let ours: Vec<u64> =
        v["series"]["intervals"].as_array().unwrap().iter().map(|i| i["ops"].as_u64().unwrap()).collect();
    assert_eq!(counts, ours, "every interval read back with its count");
    assert_eq!(counts.iter().sum::<u64>(), v["ops"].as_u64().unwrap());
}

#[test]
fn the_servers_side_is_watched_over_the_window_and_merged_beside_the_total() {
    let (server, addr) = serve_process("http", &[]);
    let pid = server.0.id().to_string();
    let at = {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        format!("{:.3}", now.as_secs_f64() + 1.0)
    };
    let (watched, run) = (scratch("watch.json"), scratch("watched-run.json"));
    let watch = {
        let (pid, at, watched) = (pid.clone(), at.clone(), watched.clone());
        std::thread::spawn(move || {
            wirebench(&[
                "watch",
                "--pid",
                &pid,
                "-d",
                "1s",
                "--start-at",
                &at,
                "--json",
                watched.to_str().unwrap(),
            ])
        })
    };
    let url = format!("http://{addr}/");
    bench_json(&run, &[&url, "-c", "4", "-d", "1s", "--start-at", &at]);
    let out = watch.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let w = read(&watched);
    assert!(w["samples"].as_u64().unwrap() >= 2, "{w}");
    assert!(w["cpu_pct"]["mean"].as_f64().unwrap() > 10.0, "the server worked while watched: {w}");
    assert!(w["mem_pct"].as_f64().unwrap() > 0.0);
    let out = wirebench(&["merge", run.to_str().unwrap(), "--server", watched.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("server (pid {pid}")));
    // A run is not a watch, and nobody is named so.
    let out = wirebench(&["merge", run.to_str().unwrap(), "--server", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = wirebench(&["watch", "--name", "no-such-process", "-d", "100ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no process named"));
}

/// Two labelled runs with intervals, written as JSON.
fn two_runs() -> Vec<PathBuf> {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    ["plot-a", "plot-b"]
        .iter()
        .map(|label| {
            let file = scratch(&format!("{label}.json"));
            bench_json(&file, &[&url, "-c", "2", "-d", "1s", "--report-every", "250ms", "--label", label]);
            file
        })
        .collect()
}

/// `wirebench plot` of [`two_runs`] into scratch file `name`.
fn plot_of_two_runs(name: &str) -> PathBuf {
    let files = two_runs();
    let svg = scratch(name);
    let (a, b) = (files[0].to_str().unwrap(), files[1].to_str().unwrap());
    let out = wirebench(&["plot", a, b, "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    svg
}

#[test]
fn a_plot_draws_every_run_and_their_total() {
    let svg = plot_of_two_runs("plot.svg");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for words in
        ["plot-a", "plot-b", "total", "latency by percentile", "ops/s over time", "p99 over time", "99.9%"]
    {
        assert!(text.contains(words), "{words}");
    }
    let out = wirebench(&["plot", "/nonexistent.json", "--svg", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[ignore = "needs chromium: run by .ci/run"]
fn the_plot_renders_in_a_browser() {
    let (svg, png) = (plot_of_two_runs("render.svg"), scratch("render.png"));
    screenshot(&svg, &png);
    let (pixels, size) = pixels(&png);
    assert_eq!(size, (1200, 560));
    // Each run's line in its colour, the total in black.
    for (name, colour) in
        [("first run", [0x4c, 0x78, 0xa8]), ("second run", [0xe4, 0x57, 0x56]), ("total", [0, 0, 0])]
    {
        let count = pixels.iter().filter(|p| near(p, colour)).count();
        assert!(count > 200, "{name}: {count} pixels");
    }
}
