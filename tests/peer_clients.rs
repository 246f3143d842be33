//! The built-in servers under the real clients users point at them: ab with and without
//! keep-alive (HTTP/1.0, where the answer must say `Connection: keep-alive` or the client waits
//! for a close that never comes), wrk, h2load over HTTP/1.1, and curl. Each must finish with
//! every request answered and none failed, on every server engine.
//! Needs ab, wrk, h2load and curl (`tools/install-peers.sh`); run by `.ci/run`.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

/// Run a client with a deadline (a hang is a failure, not a stuck test); its stdout.
fn run(program: &str, args: &[&str]) -> String {
    let path = which(program).unwrap_or_else(|| panic!("{program} is installed (tools/install-peers.sh)"));
    let out = Command::new("timeout")
        .arg("60")
        .arg(path)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{program} {args:?}: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    text
}

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no '{name}' in:\n{text}"))
}

#[test]
#[ignore = "needs ab, wrk, h2load and curl: run by .ci/run"]
fn ab_wrk_h2load_and_curl_finish_against_serve_http() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "http");
        let url = format!("http://{}/", server.addr());
        for keep_alive in [true, false] {
            let n = if keep_alive { "20000" } else { "2000" };
            let mut args = vec!["-c", "16", "-n", n];
            if keep_alive {
                args.push("-k");
            }
            args.push(&url);
            let out = run("ab", &args);
            assert_eq!(field(&out, "Complete requests:"), n, "{engine}, keep-alive {keep_alive}");
            assert_eq!(field(&out, "Failed requests:"), "0", "{engine}");
            if keep_alive {
                assert_eq!(field(&out, "Keep-Alive requests:"), n, "{engine}: every request kept alive");
            }
            assert!(!out.contains("Non-2xx"), "{engine}: {out}");
        }
        let out = run("wrk", &["-t1", "-c16", "-d1s", &url]);
        assert!(!out.contains("Socket errors") && !out.contains("Non-2xx"), "{engine}: {out}");
        let out = run("h2load", &["--h1", "-n", "2000", "-c", "16", &url]);
        assert!(out.contains("2000 succeeded, 0 failed, 0 errored, 0 timeout"), "{engine}: {out}");
        let out = run("curl", &["-s", "--max-time", "5", &url]);
        assert_eq!(out, "Hello World");
        let out = run("curl", &["-s", "--max-time", "5", "--http1.0", "-X", "POST", "-d", "hello", &url]);
        assert_eq!(out, "OK");
        server.stop().unwrap();
    }
}

#[test]
#[ignore = "needs ab: run by .ci/run"]
fn ab_keep_alive_finishes_against_the_nsq_http_sink() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "nsq");
        let dir = std::env::temp_dir().join(format!("wirebench-ab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("message");
        std::fs::write(&body, vec![b'x'; 400]).unwrap();
        let url = format!("http://{}/pub?topic=ab", server.addrs[1]);
        let out = run("ab", &["-k", "-c", "8", "-n", "5000", "-p", body.to_str().unwrap(), &url]);
        assert_eq!(field(&out, "Complete requests:"), "5000", "{engine}");
        assert_eq!(field(&out, "Failed requests:"), "0", "{engine}");
        assert_eq!(field(&out, "Keep-Alive requests:"), "5000", "{engine}");
        std::thread::sleep(Duration::from_millis(50));
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert_eq!(tally.messages, 5000, "{engine}: the sink counted every message");
    }
}

#[test]
#[ignore = "needs ab: run by .ci/run"]
fn no_keepalive_times_are_of_the_order_of_abs() {
    // The same target, the same shape (4 concurrent, a connection per request): ab's mean time
    // per request and wirebench's mean total agree within a factor of three either way (both
    // are a connect and a loopback round trip, tenths of a millisecond here; ab prints its
    // connection-times table in whole milliseconds, so its mean is the finer figure to use).
    let server = start_builtin_on("tokio-uring", "http");
    let url = format!("http://{}/", server.addr());
    let out = run("taskset", &["-c", &client_cpu().to_string(), "ab", "-c", "4", "-n", "3000", &url]);
    assert_eq!(field(&out, "Failed requests:"), "0");
    let line = out.lines().find(|l| l.starts_with("Time per request:") && l.ends_with("(mean)")).unwrap();
    let ab_ms: f64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    // ab's "(mean)" line is the concurrency times the wall time per request: the mean total.
    let r = bench(&[&url, "--no-keepalive", "-c", "4", "-n", "3000", "--cores", &client_cpu().to_string()]);
    assert_clean(&r);
    assert_eq!(r.connects, 3000);
    let ours_ms = r.latency.mean() / 1e6;
    eprintln!(
        "mean per request: ab {ab_ms:.3} ms, wirebench {ours_ms:.3} ms (connect {:.3}, waiting {:.3})",
        r.phases.connect.mean() / 1e6,
        r.phases.waiting.mean() / 1e6
    );
    assert!(ab_ms / 3.0 <= ours_ms && ours_ms <= ab_ms * 3.0, "ab {ab_ms} ms, wirebench {ours_ms} ms");
}

/// `serve h2` under real HTTP/2 clients: h2load with streams in flight (GETs and POSTs, its
/// succeeded count against the server's own), curl with prior knowledge, Node's `http2`
/// module, and Python's grpcio calling the gRPC echo with messages up to 3 MB.
#[test]
#[ignore = "needs h2load, curl, node and Python's grpcio: run by .ci/run"]
fn h2load_curl_node_and_grpcio_against_serve_h2() {
    let dir = std::env::temp_dir().join(format!("wirebench-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    std::fs::write(&body, vec![b'x'; 1000]).unwrap();
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "h2");
        let addr = server.addr().to_string();
        let url = format!("http://{addr}/");
        let out = run("h2load", &["-n", "20000", "-c", "8", "-m", "10", &url]);
        assert!(out.contains("20000 succeeded, 0 failed, 0 errored, 0 timeout"), "{engine}: {out}");
        let out = run("h2load", &["-n", "2000", "-c", "4", "-m", "4", "-d", body.to_str().unwrap(), &url]);
        assert!(out.contains("2000 succeeded, 0 failed, 0 errored, 0 timeout"), "{engine}: {out}");
        let out = run("curl", &["-s", "--max-time", "5", "--http2-prior-knowledge", &url]);
        assert_eq!(out, "Hello World", "{engine}");
        let node = "const h=require('http2');const c=h.connect(process.argv[1]);let n=0,ok=0;\
            for(let i=0;i<100;i++){const r=c.request({':method':'POST',':path':'/'});r.end('hello');\
            let b='';r.on('data',d=>b+=d);r.on('end',()=>{if(b==='OK')ok++;\
            if(++n===100){console.log('ok',ok);c.close();}});}";
        let out = run("node", &["-e", node, &url]);
        assert_eq!(out.trim(), "ok 100", "{engine}");
        let client = format!("{}/tools/grpc-echo-client.py", env!("CARGO_MANIFEST_DIR"));
        for (count, size) in [("500", "100"), ("3", "3000000"), ("2", "0")] {
            let out = run("python3", &[&client, &addr, "/wirebench.Echo/Unary", count, size]);
            assert_eq!(out.trim(), format!("echo ok {count}"), "{engine}");
        }
        std::thread::sleep(Duration::from_millis(50));
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert_eq!(tally.requests, 20000 + 2000 + 1 + 100 + 505, "{engine}: the server's own count");
    }
}
