//! HTTP/3 against hostile peers, on the QUIC engine (the one engine HTTP/3 runs on): aioquic
//! scripted to misbehave (`tools/h3-hostile.py`: a server that answers a POST early and stops
//! its body, says GOAWAY at once, closes every few requests, or trickles an answer for ever;
//! clients that send STOP_SENDING, close their critical streams, flood first flights, leave
//! field sections unfinished, never grant room), and `serve h3`'s bounds with a normal client
//! served throughout. aioquic plays the conformance suite HTTP/3 lacks here.

use super::common::*;
use super::kit::Run;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirebench::outcome::ErrorClass;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/h3-hostile.py");
const H3_NO_ERROR: u64 = 0x100;
const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
const H3_EXCESSIVE_LOAD: u64 = 0x107;
const H3_REQUEST_INCOMPLETE: u64 = 0x10d;

/// A hostile aioquic server in `mode` on a free UDP port: it, its stdout (its count once
/// stopped), the URL and the CA file that trusts it.
fn hostile_server(mode: &str) -> (Peer, std::io::BufReader<std::process::ChildStdout>, String, String) {
    let (cert, key) = h3_cert_files(mode);
    let port = free_port();
    let mut child = Command::new("python3")
        .args([SCRIPT, "server", &port.to_string(), cert.to_str().unwrap(), key.to_str().unwrap(), mode])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), format!("listening {port}"), "aioquic is installed (tools/install-peers.sh)");
    (Peer(child), out, format!("h3://127.0.0.1:{port}/"), cert.display().to_string())
}

/// A hostile aioquic client against `port` in `mode`: the JSON line it printed.
fn hostile_client(port: u16, mode: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new("timeout")
        .args(["60", "python3", SCRIPT, "client", &port.to_string(), mode])
        .args(args)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("{mode}: {text} {}", String::from_utf8_lossy(&out.stderr)))
}

/// A process's CPU time (user and system) from `/proc/PID/stat`, read by procfs as
/// `src/watch.rs` reads it. (A hand-rolled parse here kept only the fields that parsed as
/// u64: with no controlling terminal, as in CI, `tpgid` is -1 and the rest shifted, so it read
/// stime and cutime, and the idle bound never saw a debug server's handshakes' user time.)
fn cpu_time(pid: u32) -> Duration {
    let ticks =
        procfs::process::Process::new(pid as i32).and_then(|p| p.stat()).map_or(0, |s| s.utime + s.stime);
    Duration::from_millis(ticks * 1000 / procfs::ticks_per_second().max(1))
}

fn aioquic_here() -> bool {
    let ok = Command::new("python3").args(["-c", "import aioquic"]).status().is_ok_and(|s| s.success());
    if !ok {
        skip("aioquic is not installed (tools/install-peers.sh)");
    }
    ok
}

/// quic-go's HTTP/3 server (`tools/h3-go`) answering without reading bodies (`early`): it, the
/// URL and the CA file.
fn quic_go_early() -> (Peer, String, String) {
    let (cert, key) = h3_cert_files("quic-go-early");
    let port = free_port();
    let binary = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/bin/h3-go");
    let mut child = Command::new(binary)
        .args([&port.to_string(), cert.to_str().unwrap(), key.to_str().unwrap(), "early"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tools/bin/h3-go is built (tools/install-peers.sh)");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), format!("listening {port}"));
    (Peer(child), format!("h3://127.0.0.1:{port}/"), cert.display().to_string())
}

/// Item 9 of issue 33: a server that answers a POST before reading its body and stops it
/// (STOP_SENDING) — quic-go's, which frees a stream only once both halves are closed, and
/// aioquic's: the client resets its send half (RFC 9000 §3.5), so the server's stream credit
/// comes back — `-n 200` of 1 MiB POSTs against quic-go ends with 200 completed (it hung:
/// killed at 30 s), and a timed run goes on for its whole window.
#[test]
#[ignore = "needs quic-go's tools/bin/h3-go and Python's aioquic: run by .ci/run"]
fn an_early_answer_that_stops_the_body_does_not_stall_the_client() {
    if !aioquic_here() {
        return;
    }
    // Bodies past quic-go's stream window (512 KiB): part of each is still held by this side
    // when the answer comes, so the stream ends only if this side resets its half.
    let (_quic_go, url, ca) = quic_go_early();
    let post = ["--ca", ca.as_str(), "-m", "POST", "--size", "1048576", "-c", "1"];
    let run = Run { duration: Duration::from_secs(2), timeout: Duration::from_secs(1) };
    let (r, _) = run.on("uring", &url, &[&post[..], &["-n", "200"]].concat());
    assert_eq!((r.ops, r.failed.total()), (200, 0), "quic-go: {:?}", r.error_samples);
    let (_server, _, url, ca) = hostile_server("early");
    let post = ["--ca", ca.as_str(), "-m", "POST", "--size", "65536", "-c", "1"];
    let run = Run { duration: Duration::from_secs(2), timeout: Duration::from_secs(1) };
    let (r, _) = run.on("uring", &url, &[&post[..], &["-n", "200"]].concat());
    assert_eq!((r.ops, r.failed.total()), (200, 0), "{:?}", r.error_samples);
    let (r, _) = run.on("uring", &url, &post);
    assert_eq!(r.failed.total(), 0, "{:?}", r.error_samples);
    assert!(r.elapsed >= Duration::from_millis(1900), "measured {:?}", r.elapsed);
    // The layers cannot say how much of each stopped body went: they say how many were.
    assert_eq!(r.layers.unwrap().stopped, r.sent, "every request was stopped");
}

/// Item 15: a server that says GOAWAY(0) at once: connections that answer nothing are not
/// opened again without a pause, and `-n` gives up with a line that says why (442
/// connections in 3 s, `-n 10` still running at 25 s).
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn goaway_at_once_pauses_between_connections_and_n_gives_up() {
    if !aioquic_here() {
        return;
    }
    let (_server, _, url, ca) = hostile_server("goaway");
    let run = Run { duration: Duration::from_millis(1500), timeout: Duration::from_millis(500) };
    let (r, _) = run.on("uring", &url, &["--ca", &ca, "-c", "2"]);
    assert_eq!(r.ops, 0);
    // 2 connections, a pause of 100 ms after each futile one: at most ~15 each in 1.5 s.
    assert!(r.connects <= 40, "{} connections", r.connects);
    let started = Instant::now();
    let r = bench_on("uring", &[&url, "--ca", &ca, "-c", "1", "-n", "10", "--timeout", "500ms"]);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(r.error_samples.iter().any(|s| s.contains("gave up")), "{:?}", r.error_samples);
}

/// Item 14: a server closing every connection after 5 answers: `-n 100` gives 100 answered
/// (lost ones are sent again, as the TCP engines do; it gave 52 of 100).
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn n_sends_lost_requests_again() {
    if !aioquic_here() {
        return;
    }
    let (_server, _, url, ca) = hostile_server("close5");
    let run = Run { duration: Duration::from_secs(5), timeout: Duration::from_secs(1) };
    let (r, _) = run.on("uring", &url, &["--ca", &ca, "-c", "1", "-n", "100"]);
    assert_eq!(r.ops, 100, "{:?} {:?}", r.failed, r.error_samples);
    assert!(r.connects >= 20, "{} connections for 100 answers, 5 each", r.connects);
}

/// Item 3 on HTTP/3: an answer that trickles for ever fails `--timeout` after its request,
/// and the run ends in its window.
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn an_endless_answer_times_out_and_the_run_ends_on_time() {
    if !aioquic_here() {
        return;
    }
    let (_server, _, url, ca) = hostile_server("endless");
    let (r, _) = super::kit::SHORT.on("uring", &url, &["--ca", &ca]);
    assert_eq!(r.ops, 0);
    assert!(r.failed.get(ErrorClass::Timeout) > 0, "{:?} {:?}", r.failed, r.error_samples);
}

/// `serve h3 EXTRA…` in this process: its UDP port.
fn serve_h3(extra: &[&str]) -> (wirebench::engine::ServerHandle, u16) {
    let started = serve_started("uring", "h3", extra);
    let port = started.handle.addr().port();
    (started.handle, port)
}

/// Items 10, 13 and 16: `serve h3` answers STOP_SENDING with RESET_STREAM (120 of 120, and its
/// stream credit comes back past 100: it stayed at 100), closes a connection whose control or
/// QPACK stream the client ends (H3_CLOSED_CRITICAL_STREAM), and offers no QUIC DATAGRAM
/// frames.
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn serve_h3_resets_stopped_streams_guards_critical_ones_and_offers_no_datagrams() {
    if !aioquic_here() {
        return;
    }
    let (server, port) = serve_h3(&[]);
    let v = hostile_client(port, "stop-sending", &["120"]);
    assert_eq!(v["resets"], 120, "{v}");
    assert!(v["max_streams_bidi"].as_u64().unwrap() > 120, "{v}");
    for mode in ["close-control", "close-qpack"] {
        let v = hostile_client(port, mode, &[]);
        assert_eq!(v["closed"], H3_CLOSED_CRITICAL_STREAM, "{mode}: {v}");
    }
    assert_eq!(hostile_client(port, "datagrams", &[])["offered"], serde_json::Value::Null);
    let _ = server.stop();
}

/// Item 11: `serve h3` keeps the TCP servers' bounds — a request whose headers are not whole
/// a head timeout after its first byte is reset (H3_REQUEST_INCOMPLETE), a client that never
/// grants room is closed at the write timeout, field sections left unfinished on 100 streams
/// close the connection past 64 KiB (H3_EXCESSIVE_LOAD) — while a normal client is served.
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn serve_h3_bounds_slow_heads_clients_that_never_read_and_unfinished_headers() {
    if !aioquic_here() {
        return;
    }
    let (server, port) = serve_h3(&["--head-timeout", "1s", "--write-timeout", "1s"]);
    let url = format!("h3://127.0.0.1:{port}/");
    let cpu = client_cpu().to_string();
    let normal = std::thread::spawn(move || {
        bench_on("uring", &[&url, "--insecure", "-c", "2", "-d", "4s", "--cores", &cpu])
    });
    let v = hostile_client(port, "slow-head", &[]);
    assert_eq!(v["reset"], H3_REQUEST_INCOMPLETE, "{v}");
    let after = v["after_s"].as_f64().unwrap();
    assert!((0.9..4.0).contains(&after), "{v}");
    let v = hostile_client(port, "tiny-window", &[]);
    assert_eq!(v["closed"], H3_EXCESSIVE_LOAD, "{v}");
    let v = hostile_client(port, "partial", &["3"]);
    assert_eq!(
        v["closed"],
        serde_json::json!([H3_EXCESSIVE_LOAD, H3_EXCESSIVE_LOAD, H3_EXCESSIVE_LOAD]),
        "{v}"
    );
    let r = normal.join().unwrap();
    assert_accounted(&r);
    assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
    assert!(r.ops > 100, "{}", r.ops);
    let _ = (server.stop(), H3_NO_ERROR);
}

/// Item 11: a flood of 3,000 first flights from one address costs `serve h3` a bounded
/// memory (past 256 handshakes at once a client proves its address first, which costs the
/// server nothing; RSS went from 9.7 to 105 MB), and a normal client is served meanwhile.
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn a_flood_of_first_flights_costs_bounded_memory() {
    if !aioquic_here() {
        return;
    }
    let (server, addr) = serve_process("h3", &[]);
    let pid = server.0.id();
    let rss = || wirebench::watch::rss_kib(pid).unwrap_or(0) << 10;
    let before = rss();
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let flood = std::thread::spawn(move || hostile_client(port, "initials", &["3000"]));
    std::thread::sleep(Duration::from_secs(3));
    let url = format!("h3://{addr}/");
    let r =
        bench_on("uring", &[&url, "--insecure", "-c", "2", "-d", "1s", "--cores", &client_cpu().to_string()]);
    let after = rss();
    assert_accounted(&r);
    assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
    assert!(after < before + (30 << 20), "RSS {before} -> {after}");
    drop(server);
    let _ = flood.join();
}

/// Item 11: `--max-conns` holds for QUIC: 20 connections against `--max-conns 10` — 10 are
/// served (and the pre-flight's one before them), the others refused (CONNECTION_REFUSED)
/// and counted by both sides (200 Initials against it made 200 connections).
#[test]
fn serve_h3_refuses_connections_past_max_conns() {
    let (server, port) = serve_h3(&["--max-conns", "10"]);
    let url = format!("h3://127.0.0.1:{port}/");
    let cpu = client_cpu().to_string();
    let r = bench_on("uring", &[&url, "--insecure", "-c", "20", "-d", "1s", "--cores", &cpu]);
    assert!(r.ops > 0);
    assert!(r.conn_errors.total() > 0, "the refused ones are counted: {:?}", r.error_samples);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.connections, 11, "accepted: {tally:?}");
    assert!(tally.refused > 0, "{tally:?}");
}

/// Item 12: 2,000 idle connections cost `serve h3` (its own process, from `/proc`) less than
/// 50 ms of CPU in 3 s (10 ms measured), and a normal client beside them keeps at least half
/// its rate alone (the server walked every connection on every turn of its loop — each of
/// the normal client's datagrams a walk of 2,000: 3,476 ops/s alone, 134 beside them). The
/// idle ones are a paced client's, 2,000 connections at one request a second in all. A debug
/// build (CI's) spends 13× as much on them (130–150 ms measured): its bound is ten times.
#[test]
fn two_thousand_idle_connections_cost_serve_h3_almost_nothing() {
    let (server, addr) = serve_process("h3", &[]);
    let pid = server.0.id();
    let url = format!("h3://{addr}/");
    let cpu = client_cpu().to_string();
    let normal =
        || bench_on("uring", &[&url, "--insecure", "-c", "2", "-d", "2s", "--cores", &cpu]).ops_per_sec();
    let a = cpu_time(pid);
    let alone = normal();
    let serving = cpu_time(pid).saturating_sub(a);
    let (idle_url, idle_cpu) = (url.clone(), cpu.clone());
    // The handshakes paced, and the set-up waited for, not assumed done in 4 s. A debug
    // build's server answers ~280 handshakes a second on a slow host (2026-12-07): offered
    // 2,000 at once, a quarter timed out and were tried again, and the server spent the whole
    // test on them at 100 % (the normal client beside them got no answer in 3 s). The QUIC
    // engine ignored `--connect-rate` then (every connection opened at once): it paces them
    // now. A debug build offers 100 a second (its server at ~35 %), a release one 500; the
    // idle run ends a few seconds after the measurements below.
    let connect_rate = if cfg!(debug_assertions) { "100" } else { "500" };
    let idle = std::thread::spawn(move || {
        bench_on(
            "uring",
            &[
                &idle_url,
                "--insecure",
                "-c",
                "2000",
                "--rate",
                "1",
                "--connect-rate",
                connect_rate,
                "-d",
                "12s",
                "--cores",
                &idle_cpu,
            ],
        )
    });
    // Set up (until a second passes in which the server spends under 50 ms, at most 40 s),
    // then measured while they idle, then beside a normal client.
    let set_up_by = Instant::now() + Duration::from_secs(40);
    std::thread::sleep(Duration::from_secs(1));
    let mut before = cpu_time(pid);
    while Instant::now() < set_up_by {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu_time(pid);
        if now.saturating_sub(before) < Duration::from_millis(50) {
            break;
        }
        before = now;
    }
    let a = cpu_time(pid);
    std::thread::sleep(Duration::from_secs(3));
    let spent = cpu_time(pid).saturating_sub(a);
    let beside = normal();
    let r = idle.join().unwrap();
    assert!(r.connects >= 2000, "{:?}", r.error_samples);
    eprintln!(
        "serve h3: {serving:?} serving a normal client for 2 s, {spent:?} in 3 s on 2,000 idle connections; \
         the client alone {alone:.0} ops/s, beside them {beside:.0}"
    );
    let bound = Duration::from_millis(if cfg!(debug_assertions) { 500 } else { 50 });
    assert!(spent < bound, "serve h3 spent {spent:?} in 3 s on idle connections");
    assert!(beside > alone / 2.0, "alone {alone:.0} ops/s, beside 2,000 idle ones {beside:.0}");
}

/// Item 11's `--delay`: serve h3 holds each answer for it (it answered at once: p50 62 µs
/// with `--delay 50ms`).
#[test]
fn serve_h3_holds_each_answer_for_its_delay() {
    let (server, port) = serve_h3(&["--delay", "50ms"]);
    let url = format!("h3://127.0.0.1:{port}/");
    let cpu = client_cpu().to_string();
    let r = bench_on("uring", &[&url, "--insecure", "-c", "1", "-n", "20", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!((r.ops, r.errors_total()), (20, 0), "{:?}", r.error_samples);
    let min_ms = r.latency.min() as f64 / 1e6;
    assert!(min_ms >= 50.0, "the quickest answer came after {min_ms} ms");
    let _ = server.stop();
}

/// Item 17: the report names the engine that ran — HTTP/3 runs on the QUIC engine whatever
/// `--engine` says for TCP (it printed `glommio engine`).
#[test]
fn an_h3_run_names_the_quic_engine() {
    let (server, port) = serve_h3(&[]);
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["bench", &format!("h3://127.0.0.1:{port}/"), "--insecure", "-n", "20", "--engine", "glommio"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("quic engine"), "{text}");
    let _ = server.stop();
}
