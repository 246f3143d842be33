//! A real gRPC server that no one here wrote under `bench grpc://`: Python's grpcio with a
//! generic handler (`tools/grpc-echo-server.py`, no protoc), its count of calls against ours,
//! and a method it fails, counted by its status's name. Needs `pip install grpcio`; run by
//! `.ci/run`.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// The grpcio echo server on a free port, and its stdout (its count of calls, once stopped).
fn start_grpcio() -> (Peer, BufReader<std::process::ChildStdout>, String) {
    let port = free_port();
    let mut child = Command::new("python3")
        .arg(format!("{}/tools/grpc-echo-server.py", env!("CARGO_MANIFEST_DIR")))
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), format!("listening {port}"), "grpcio is installed (tools/install-peers.sh)");
    (Peer(child), out, format!("grpc://127.0.0.1:{port}"))
}

#[test]
#[ignore = "needs Python's grpcio: run by .ci/run"]
fn bench_against_grpcio() {
    let (server, mut out, base) = start_grpcio();
    let cpu = client_cpu().to_string();
    let url = format!("{base}/wirebench.Echo/Unary");
    let r = bench(&[&url, "-c", "4", "--depth", "4", "-n", "4000", "--size", "100", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 4000);
    assert_eq!(r.answers.sorted(), [(wirebench::proto::h2::grpc::answer("OK"), 4000)]);
    // Each call at least: HEADERS and DATA heads (9 + 9), the prefix (5) and the message out;
    // the answer's HEADERS, DATA and trailers heads (27), prefix and message back.
    assert!(r.tx_per_op() >= 123.0 && r.rx_per_op() >= 132.0, "{} {}", r.tx_per_op(), r.rx_per_op());
    // A 1 MiB message: past grpc's 64 KiB windows both ways, sent as the server grants room
    // and echoed whole.
    let r = bench(&[&url, "-c", "2", "--depth", "2", "-n", "40", "--size", "1048576", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.answers.sorted(), [(wirebench::proto::h2::grpc::answer("OK"), 40)]);
    assert!(
        r.tx_per_op() > 1_048_590.0 && r.rx_per_op() > 1_048_590.0,
        "{} {}",
        r.tx_per_op(),
        r.rx_per_op()
    );
    // A method the server fails: every call fails as `status`, named.
    let r = bench(&[&format!("{base}/wirebench.Echo/Fail"), "-c", "1", "-n", "50", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!((r.ops, r.failed.get(wirebench::outcome::ErrorClass::Status)), (0, 50));
    assert_eq!(r.answers.sorted(), [(wirebench::proto::h2::grpc::answer("UNAVAILABLE"), 50)]);
    drop(server); // SIGTERM: it prints its count
    let mut calls = String::new();
    out.read_line(&mut calls).unwrap();
    assert_eq!(calls.trim(), "calls 4090", "the server's own count");
}
