//! HTTP/2 and gRPC bodies larger than every window and buffer, on every engine against the
//! built-in `serve h2`: each goes out under the server's flow control, every byte the client
//! says it wrote is one the server says it read, and a server that never makes room costs a
//! `timeout` per operation, not a hang.

mod common;
use common::*;
use std::io::{Read, Write};
use wirebench::outcome::ErrorClass;

/// A mebibyte: sixteen times the initial window (65,535), 64 DATA frames of 16,384 at least.
const MIB: usize = 1 << 20;

/// 1 MiB POSTs and 1 MiB gRPC calls, 4 streams on each of 2 connections: all answered; the
/// client's bytes written are the server's read (and the other way); a request is at least
/// its body and a frame header per 16,384 octets of it (more frames when a grant splits one).
#[test]
fn mebibyte_bodies_go_out_as_the_server_grants_room_on_every_engine() {
    let cpu = client_cpu().to_string();
    for (engine, server_engine) in ENGINES.iter().zip(SERVER_ENGINES.iter().cycle().skip(1)) {
        for (scheme, path, n, body) in [("h2c", "/", 64, MIB), ("grpc", "/x.Echo/Call", 32, MIB + 5)] {
            let method: &[&str] = if scheme == "h2c" { &["-m", "POST"] } else { &[] };
            let server = start_builtin_on(server_engine, "h2");
            let url = format!("{scheme}://{}{path}", server.addr());
            let size = MIB.to_string();
            let n_text = n.to_string();
            // `--report-every`: the cores copy their figures as they go, and the connections give
            // them their layers then too, not only when they close.
            let args = [
                url.as_str(),
                "--size",
                &size,
                "-c",
                "2",
                "--depth",
                "4",
                "-n",
                &n_text,
                "--cores",
                &cpu,
                "--report-every",
                "100ms",
            ];
            let r = bench_on(engine, &[&args[..], method].concat());
            assert_clean(&r);
            assert_eq!(r.ops, n, "{engine} {scheme}");
            let served = ServerTally::sum(&server.stop().unwrap());
            assert_eq!(served.requests, n, "{engine} {scheme}");
            assert_eq!(served.rx, r.tx.total(), "{engine} {scheme}: every byte written was read");
            assert_eq!(served.tx, r.rx.total(), "{engine} {scheme}");
            let frames = body.div_ceil(16_384) as f64;
            assert!(r.tx_per_op() >= body as f64 + 9.0 * frames, "{engine} {scheme}: {}", r.tx_per_op());
            if scheme == "grpc" {
                // The echo: the message back, framed.
                assert!(r.rx_per_op() >= body as f64 + 9.0 * frames, "{engine}: {}", r.rx_per_op());
            }
            // The layers: every stream's byte in one, each connection's first stream apart,
            // and the payload (and gRPC's prefixes) exactly what went.
            let l = r.layers.expect("HTTP/2 counts its layers");
            let ops = |s: &wirebench::stats::ByteSplit| s.op + s.warmup_op + s.failed;
            assert_eq!(l.totals(), (ops(&r.tx), ops(&r.rx)), "{engine} {scheme}: {l:?}");
            assert_eq!((l.first.ops, l.steady.ops), (2, n - 2), "{engine} {scheme}");
            let prefix = (body - MIB) as u64;
            assert_eq!(l.first.tx.payload + l.steady.tx.payload, n * MIB as u64, "{engine} {scheme}");
            assert_eq!(l.first.tx.prefix + l.steady.tx.prefix, n * prefix, "{engine} {scheme}");
        }
    }
}

/// A server that takes the preface and never grants room: each client's first 65,535 octets
/// go, the rest waits, and every operation ends as a `timeout` in time.
#[test]
fn a_server_that_never_grants_room_costs_a_timeout_per_operation_on_every_engine() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(100) {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                // Its SETTINGS (none changed) and the ACK of the client's, then it reads and
                // discards until the client leaves.
                let _ = conn.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0]);
                let mut buf = [0u8; 65_536];
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    let cpu = client_cpu().to_string();
    let url = format!("h2c://{addr}/");
    for engine in ENGINES {
        let started = std::time::Instant::now();
        let r = bench_on(
            engine,
            &[
                &url,
                "-m",
                "POST",
                "--size",
                "200000",
                "-c",
                "2",
                "-d",
                "600ms",
                "--timeout",
                "300ms",
                "--cores",
                &cpu,
            ],
        );
        assert_accounted(&r);
        assert_eq!(r.ops, 0, "{engine}");
        assert!(r.failed.get(ErrorClass::Timeout) >= 2, "{engine}: {:?} {:?}", r.failed, r.error_samples);
        assert_eq!(r.failed.total(), r.failed.get(ErrorClass::Timeout), "{engine}: {:?}", r.failed);
        // The first window of each operation went, no more.
        assert!(r.tx.failed >= 2 * 65_535, "{engine}: {}", r.tx.failed);
        assert!(started.elapsed().as_secs() < 5, "{engine}: {:?}", started.elapsed());
    }
}

/// `--window`: 1 MiB echoes take the server's DATA under this side's grants; with a 4 MiB
/// window the client sends a fraction of the WINDOW_UPDATEs the default 65,535 needs (one
/// per half window used), and both runs are clean.
#[test]
fn a_larger_window_takes_fewer_grants_on_every_engine() {
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let server = start_builtin_on(engine, "h2");
        let url = format!("grpc://{}/x.Echo/Call", server.addr());
        let run = |window: &[&str]| {
            let args =
                [&[url.as_str(), "--size", "1048576", "-c", "1", "-n", "16", "--cores", &cpu][..], window];
            let r = bench_on(engine, &args.concat());
            assert_clean(&r);
            r.tx.control as f64 / r.ops as f64
        };
        let (default, large) = (run(&[]), run(&["--window", "4194304"]));
        // 1 MiB back at a grant per 32 KiB: 32 each for the stream and the connection, 13
        // bytes each.
        assert!(default >= 60.0 * 13.0, "{engine}: {default} control bytes per call");
        assert!(large * 8.0 <= default, "{engine}: {large} against {default}");
    }
}
