//! `bench tcp://` against `serve tcp` on every engine: an operation's bytes are the two sizes
//! exactly (the set-up's 8 bytes apart), every operation accounted for, the server's own count
//! of requests equal to ours, the audit against the kernel's counts — with a response larger
//! than every buffer, a connection per operation (TCP_CRR), depth, pacing, the default
//! duration and TLS.

mod common;
use common::*;

#[test]
fn exact_sizes_on_every_engine_with_keepalive_and_a_connection_per_operation() {
    // (request, response): netperf's default, an echo, and a response past every buffer (the
    // client's 64 KiB pieces, the server's 1 MiB batch, a receive buffer).
    let cases: [(&str, &str, f64); 3] = [("1", "1", 1.0), ("1000", "echo", 1000.0), ("100", "3000000", 3e6)];
    for engine in ENGINES {
        for (size, response, rx) in cases {
            for per_op in [false, true] {
                let server = start_builtin("tcp");
                let url = format!("tcp://{}", server.addrs[0]);
                let cpu = client_cpu().to_string();
                let n = if rx > 1e6 { "40" } else { "600" };
                let mut args =
                    vec![url.as_str(), "-c", "2", "-n", n, "--size", size, "--response-size", response];
                args.extend(["--cores", &cpu]);
                if per_op {
                    args.push("--no-keepalive");
                }
                let r = bench_on(engine, &args);
                let what = format!("{engine} {size}/{response} no-keepalive {per_op}");
                assert_clean(&r);
                assert_eq!(r.ops.to_string(), n, "{what}");
                assert_eq!((r.tx_per_op(), r.rx_per_op()), (size.parse::<f64>().unwrap(), rx), "{what}");
                // The set-up: 8 bytes a connection, nothing back.
                assert_eq!((r.tx.handshake, r.rx.handshake), (8 * r.connects, 0), "{what}");
                if per_op {
                    assert_eq!(r.connects, r.ops, "{what}: TCP_CRR opens a connection per operation");
                }
                let tally = ServerTally::sum(&server.stop().unwrap());
                assert_eq!(tally.requests, r.ops, "{what}: the server answered every request");
                assert_eq!(tally.connections, r.connects + r.preflight.connections, "{what}");
            }
        }
    }
}

#[test]
fn the_default_duration_with_depth_and_pacing() {
    let server = start_builtin("tcp");
    let url = format!("tcp://{}", server.addrs[0]);
    let cpu = client_cpu().to_string();
    let deep = bench_on("uring", &[&url, "-c", "4", "--depth", "8", "--size", "400", "--cores", &cpu]);
    assert_clean(&deep);
    assert!((deep.elapsed.as_secs_f64() - 10.0).abs() < 0.5, "{:?}", deep.elapsed);
    let paced = bench_on("uring", &[&url, "-c", "2", "--rate", "500", "-d", "2s", "--cores", &cpu]);
    assert_clean(&paced);
    assert!((900..=1100).contains(&paced.sent), "{} sent at 500/s for 2 s", paced.sent);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.requests, deep.sent + paced.sent, "the server answered every request");
}

#[test]
fn tls_carries_the_floor() {
    let started = serve_started("uring", "tcp", &["--tls"]);
    let url = started.urls[0][0].clone();
    assert!(url.starts_with("tls://"), "{url}");
    let cpu = client_cpu().to_string();
    let r =
        bench_on("uring", &[&url, "-c", "1", "-n", "500", "--size", "400", "--insecure", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 500);
    assert!(r.tls.used(), "TLS counted");
    // One record each way per operation: 5 bytes of header and a 16-byte tag (TLS 1.3, and
    // its content type).
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (422.0, 23.0));
    // Pipelined large answers over TLS (the review's case: 1 MiB answers at depth 8 stranded
    // requests behind a 1 MiB bound per look): every one answered.
    let deep =
        ["-c", "1", "--depth", "8", "-n", "100", "--response-size", "1048576", "--insecure", "--cores", &cpu];
    for engine in ENGINES {
        let r = bench_on(engine, &[&[url.as_str()][..], &deep].concat());
        assert_clean(&r);
        assert_eq!((r.ops, r.rx_per_op() >= 1048576.0), (100, true), "{engine}");
    }
    assert_eq!(ServerTally::sum(&started.handle.stop().unwrap()).requests, 500 + 3 * 100);
}

#[test]
fn bad_tcp_urls_and_options_are_one_line() {
    for (args, says) in [
        (vec!["tcp://127.0.0.1:1/path"], "host and port only"),
        (vec!["tcp://127.0.0.1:1", "-H", "X: y"], "no headers"),
        (vec!["tcp://127.0.0.1:1", "--size", "0"], "1 to 16777216 bytes"),
        (vec!["tcp://127.0.0.1:1", "--size", "16777217"], "1 to 16777216 bytes"),
        (
            vec!["tcp://127.0.0.1:1", "--size", "1", "--response-size", "16777216", "--depth", "8"],
            "lower --depth",
        ),
        (vec!["tcp://127.0.0.1:1", "--proxy-protocol", "v1", "--proxy-source", "::1"], "address family"),
    ] {
        let mut argv = vec!["wirebench", "bench"];
        argv.extend(&args);
        let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
        let wirebench::cmd::Command::Bench(a) = cli.command else { unreachable!() };
        let Err(err) = wirebench::cmd::bench::run(&a) else { panic!("{args:?}: not refused") };
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
    for bad in ["0", "16777217", "lots"] {
        let argv = ["wirebench", "bench", "tcp://127.0.0.1:1", "--response-size", bad];
        let Err(e) = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(argv) else {
            panic!("{bad}: taken")
        };
        assert!(e.to_string().contains("or echo"), "{bad}: {e}");
    }
}

/// `--close-reset` closes with a reset (`SO_LINGER` 0), as neper does; without it, a FIN: a
/// server of our own reads what follows its answer — an error (reset) or the end (FIN).
#[test]
fn close_reset_closes_with_a_reset_on_every_engine() {
    use std::io::{Read, Write};
    for engine in ENGINES {
        for reset in [false, true] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let seen = std::thread::spawn(move || {
                // The pre-flight's connection, then the run's one.
                drop(listener.accept().unwrap());
                let (mut s, _) = listener.accept().unwrap();
                s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
                let mut got = [0u8; 9]; // the set-up and a 1-byte request
                s.read_exact(&mut got).unwrap();
                s.write_all(b"x").unwrap();
                let mut rest = [0u8; 16];
                s.read(&mut rest).map_err(|e| e.kind())
            });
            let cpu = client_cpu().to_string();
            let mut args = vec![format!("tcp://{addr}"), "-c".into(), "1".into(), "-n".into(), "1".into()];
            args.extend(["--cores".into(), cpu]);
            if reset {
                args.push("--close-reset".into());
            }
            let r = bench_on(engine, &args.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(r.ops, 1, "{engine}");
            let after = seen.join().unwrap();
            match reset {
                true => assert_eq!(after, Err(std::io::ErrorKind::ConnectionReset), "{engine}"),
                false => assert_eq!(after, Ok(0), "{engine}: a FIN"),
            }
        }
    }
}
