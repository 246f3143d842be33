//! `bench udp://` against `serve udp` (UDP_RR, the floor under QUIC): an operation's bytes
//! are the two sizes exactly, each one datagram (the set-up's 8-byte datagram and its echo
//! apart), every operation accounted for, and the server's own count of requests and bytes
//! equal to ours — the kernel keeps no per-socket UDP counts, so the server's is the check,
//! with the machine's `/proc/net/snmp`. Datagrams up to the largest, pacing, the default
//! duration; a server that drops answers (each a timeout, the run going on), one that answers
//! the set-up wrongly, a flood of garbage beside a client served, and the refusals.

mod common;
use common::*;
use std::net::UdpSocket;
use std::time::Duration;

fn url_of(server: &wirebench::engine::ServerHandle) -> String {
    format!("udp://{}", server.addr())
}

#[test]
fn exact_sizes_each_one_datagram_and_the_servers_count() {
    let cpu = client_cpu().to_string();
    // netperf's default, an echo past the drain's 16 KiB, and the largest datagrams both ways
    // (past every receive buffer but the engine's datagram-sized ones).
    for (size, response, rx) in [("1", "1", 1.0), ("20000", "echo", 20000.0), ("65507", "65507", 65507.0)] {
        let server = start_builtin("udp");
        let url = url_of(&server);
        let n = 500;
        let r = bench_on(
            "uring",
            &[
                &url,
                "-c",
                "3",
                "-n",
                &n.to_string(),
                "--size",
                size,
                "--response-size",
                response,
                "--cores",
                &cpu,
            ],
        );
        let what = format!("{size}/{response}");
        assert_eq!(r.errors_total(), 0, "{what}: {:?} {:?}", r.failed, r.error_samples);
        assert_accounted(&r);
        assert_eq!(r.ops, n, "{what}");
        assert_eq!((r.tx_per_op(), r.rx_per_op()), (size.parse::<f64>().unwrap(), rx), "{what}");
        // The set-up: one 8-byte datagram a socket, and its echo.
        assert_eq!((r.tx.handshake, r.rx.handshake), (8 * r.connects, 8 * r.connects), "{what}");
        assert_eq!(r.datagrams.tx, r.ops + r.connects, "{what}: a datagram a request, and the set-up");
        assert_eq!(r.datagrams.rx, r.ops + r.connects, "{what}");
        // The kernel keeps no UDP counts a socket: every socket says so.
        assert_eq!(r.audit.sockets, 0, "{what}");
        assert_eq!(r.audit.inexact.get(&wirebench::stats::Inexact::Udp).copied(), Some(r.connects), "{what}");
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert_eq!(tally.requests, r.ops, "{what}: the server answered every request");
        assert_eq!(tally.connections, r.connects, "{what}: a set-up a socket");
        assert_eq!(
            tally.rx,
            r.tx.total() + r.preflight.tx,
            "{what}: every byte sent was read (the pre-flight's request too, dropped: it set nothing up)"
        );
        assert_eq!(r.preflight.rx, 0, "{what}: serve udp answers no client not set up");
        assert_eq!(tally.tx, r.rx.total(), "{what}: and the other way");
    }
}

#[test]
fn the_default_duration_and_pacing() {
    let server = start_builtin("udp");
    let url = url_of(&server);
    let cpu = client_cpu().to_string();
    let closed = bench_on("uring", &[&url, "-c", "4", "--size", "400", "--cores", &cpu]);
    assert_eq!(closed.errors_total(), 0, "{:?}", closed.error_samples);
    assert!((closed.elapsed.as_secs_f64() - 10.0).abs() < 0.5, "{:?}", closed.elapsed);
    let paced = bench_on("uring", &[&url, "-c", "2", "--rate", "500", "-d", "2s", "--cores", &cpu]);
    assert_eq!(paced.errors_total(), 0, "{:?}", paced.error_samples);
    assert!((900..=1100).contains(&paced.sent), "{} sent at 500/s for 2 s", paced.sent);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.requests, closed.sent + paced.sent, "the server answered every request");
}

/// A UDP server of our own on loopback: echoes set-ups, then answers requests by `answer`
/// (the request's index among this server's) until the test ends.
fn scripted_udp(answer: impl Fn(u64, &[u8]) -> Option<Vec<u8>> + Send + 'static) -> String {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        let mut seen = std::collections::HashSet::new();
        let mut index = 0;
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < until {
            let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
            let reply = if n == 8 && seen.insert(from) {
                Some(buf[..n].to_vec())
            } else if !seen.contains(&from) {
                None // the pre-flight's request: not set up
            } else {
                index += 1;
                answer(index, &buf[..n])
            };
            if let Some(reply) = reply {
                let _ = sock.send_to(&reply, from);
            }
        }
    });
    format!("udp://{addr}")
}

#[test]
fn a_lost_answer_is_a_timeout_and_the_run_goes_on() {
    // Every 5th request goes unanswered.
    let url = scripted_udp(|i, _| (i % 5 != 0).then(|| vec![b'x'; 1]));
    let cpu = client_cpu().to_string();
    let began = std::time::Instant::now();
    let r = bench_on("uring", &[&url, "-c", "2", "-d", "2s", "--timeout", "200ms", "--cores", &cpu]);
    assert!(began.elapsed() < Duration::from_secs(5), "the run ends on time: {:?}", began.elapsed());
    assert_accounted(&r);
    assert!(r.ops > 0, "{:?}", r.error_samples);
    let timeouts = r.failed.total();
    assert!(timeouts > 0, "lost answers counted: {:?}", r.failed);
    // Each loss ends its socket (a late answer must not complete the next request): a new
    // socket, a new set-up.
    assert!(r.connects >= timeouts, "{} sockets for {timeouts} losses", r.connects);
}

#[test]
fn a_set_up_answered_wrongly_is_one_clear_failure() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < until {
            if let Ok((n, from)) = sock.recv_from(&mut buf)
                && n > 0
            {
                let _ = sock.send_to(b"not-echo", from);
            }
        }
    });
    let cpu = client_cpu().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["bench", &format!("udp://{addr}"), "-c", "1", "-d", "1s", "--cores", &cpu])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "nothing completed: {text}");
    assert!(text.contains("is it serve udp?"), "{text}");
}

#[test]
fn a_flood_of_garbage_beside_a_client_served() {
    let server = start_builtin("udp");
    let url = url_of(&server);
    let target = server.addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooding = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut sent = 0u64;
            // Bounded: at most 20 s, at most 2 million datagrams.
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && std::time::Instant::now() < until
                && sent < 2_000_000
            {
                let size = (sent % 9) as usize * 1000; // empty, 1000 … 8000 bytes: never a set-up
                let _ = sock.send_to(&vec![0xee; size], target);
                sent += 1;
            }
            sent
        })
    };
    let cpu = client_cpu().to_string();
    let r = bench_on(
        "uring",
        &[&url, "-c", "2", "-n", "2000", "--size", "100", "--timeout", "2s", "--cores", &cpu],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flood = flooding.join().unwrap();
    assert!(flood > 0);
    assert_accounted(&r);
    // The server's socket buffer may drop a request under the flood (a timeout, retried on a
    // new socket); every request the client counted complete was answered at its size.
    assert_eq!(r.ops + r.failed.total(), r.sent);
    assert!(r.ops >= 1900, "the client is served beside the flood: {} of 2000, {:?}", r.ops, r.failed);
    assert_eq!(r.rx.op, r.ops, "one byte back for each");
    let tally = ServerTally::sum(&server.stop().unwrap());
    // Garbage is no request: what was answered is the client's, no more than it sent.
    assert!((r.ops..=r.sent).contains(&tally.requests), "{} answered, {} sent", tally.requests, r.sent);
}

#[test]
fn refusals_are_one_line() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().unwrap()
    };
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).to_string();
    let free = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let out = run(&["bench", &format!("udp://{free}"), "-n", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("ICMP port unreachable"), "{}", said(&out));
    let url = format!("udp://{free}");
    let dir = std::env::temp_dir().join(format!("wb-udp-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (hello_file, big_file) = (dir.join("hello"), dir.join("big"));
    std::fs::write(&hello_file, [0, 0, 0, 41, 0, 0, 0, 50]).unwrap();
    std::fs::write(&big_file, vec![b'x'; 65_508]).unwrap();
    let (hello_file, big_file) = (hello_file.display().to_string(), big_file.display().to_string());
    for (args, words) in [
        (&["bench", &url, "--engine", "glommio", "-n", "1"][..], "--engine uring"),
        (&["bench", &url, "--depth", "2", "-n", "1"], "--depth 1"),
        (&["bench", &url, "--no-keepalive", "-n", "1"], "TCP_CRR"),
        (&["bench", &url, "--size", "65508", "-n", "1"], "at most 65507"),
        (&["bench", &url, "--response-size", "70000", "-n", "1"], "at most 65507"),
        (&["serve", "udp", "--tls", "-d", "1s"], "serves no TLS"),
        (&["bench", &url, "--proxy-protocol", "v1", "-n", "1"], "applies to TCP targets"),
        (&["bench", &url, "--body-file", &hello_file, "-n", "1"], "reads as serve udp's set-up"),
        (&["bench", &url, "--body-file", &big_file, "-n", "1"], "at most 65507"),
        (&["serve", "udp", "--listen", "unix:/tmp/wb-udp.sock", "-d", "1s"], "cannot listen on unix:"),
    ] {
        let out = run(args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(said(&out).contains(words), "{args:?}: {}", said(&out));
        assert_eq!(said(&out).trim().lines().count(), 1, "{args:?}: {}", said(&out));
    }
}
