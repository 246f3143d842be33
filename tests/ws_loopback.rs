//! `bench ws://` against the built-in echo server, and against scripted servers that break
//! the protocol in one way each.

mod common;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;
use wirebench::outcome::ErrorClass;

#[test]
fn echo_of_500_bytes_is_508_out_504_back() {
    for engine in ENGINES {
        echo_of_500_bytes_is_508_out_504_back_on(engine);
    }
}

fn echo_of_500_bytes_is_508_out_504_back_on(engine: &str) {
    let server = start_builtin("ws");
    let cpu = client_cpu().to_string();
    let url = format!("ws://{}/", server.addr());
    let r = bench_on(engine, &[&url, "-c", "8", "-n", "20000", "--size", "500", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 20000);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (wire::ws_client_frame(500), wire::ws_server_frame(500)));
    // The upgrade is handshake traffic; each connection's Close 1000 (2 + 4 + 2 masked) and the
    // server's answer (2 + 2) are control traffic.
    assert!(r.tx.handshake > 0 && r.rx.handshake > 0);
    assert_eq!((r.tx.control, r.rx.control), (8 * 8, 8 * 4));
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 20000);
}

#[test]
fn lengths_at_the_boundaries_text_and_pipelined() {
    for engine in ENGINES {
        lengths_at_the_boundaries_text_and_pipelined_on(engine);
    }
}

fn lengths_at_the_boundaries_text_and_pipelined_on(engine: &str) {
    let server = start_builtin("ws");
    let cpu = client_cpu().to_string();
    let url = format!("ws://{}/", server.addr());
    for n in [125, 126, 65535, 65536] {
        let (tx, rx) = (wire::ws_client_frame(n), wire::ws_server_frame(n));
        let size = n.to_string();
        let r = bench_on(
            engine,
            &[&url, "-c", "2", "-n", "200", "--depth", "4", "--text", "--size", &size, "--cores", &cpu],
        );
        assert_clean(&r);
        assert_eq!((r.tx_per_op(), r.rx_per_op()), (tx, rx), "size {size}");
    }
}

#[test]
fn two_thousand_connections() {
    for engine in ENGINES {
        two_thousand_connections_on(engine);
    }
}

fn two_thousand_connections_on(engine: &str) {
    let server = start_builtin("ws");
    let url = format!("ws://{}/", server.addr());
    let r = bench_on(
        engine,
        &[&url, "-c", "2000", "-n", "4000", "--size", "100", "--cores", &client_cpu().to_string()],
    );
    assert_clean(&r);
    assert_eq!(r.connects, 2000, "every connection upgraded once");
    assert_eq!(r.ops, 4000, "and completed its two operations");
}

#[test]
fn http_server_answering_200_is_a_protocol_error() {
    for engine in ENGINES {
        http_server_answering_200_is_a_protocol_error_on(engine);
    }
}

fn http_server_answering_200_is_a_protocol_error_on(engine: &str) {
    let server = start_builtin("http");
    let r = bench_on(
        engine,
        &[
            &format!("ws://{}/", server.addr()),
            "-c",
            "2",
            "-d",
            "300ms",
            "--cores",
            &client_cpu().to_string(),
        ],
    );
    assert_eq!(r.ops, 0);
    assert!(r.conn_errors.get(ErrorClass::Protocol) > 0);
    assert_eq!(r.sent, 0, "no operation before the upgrade");
    assert!(r.error_samples.iter().any(|s| s.contains("HTTP 200 instead of 101")), "{:?}", r.error_samples);
    assert!(r.elapsed < Duration::from_secs(3));
}

/// A server that completes the upgrade (with a right or wrong accept key), reads the first
/// message, sends `after`, and closes.
fn scripted(right_key: bool, after: &'static [u8]) -> std::net::SocketAddr {
    scripted_ws(right_key, move |s| {
        let _ = s.read(&mut [0u8; 4096]); // the first message
        let _ = s.write_all(after);
        std::thread::sleep(Duration::from_millis(50));
    })
}

fn run_against(engine: &str, addr: std::net::SocketAddr) -> wirebench::stats::Report {
    bench_on(
        engine,
        &[
            &format!("ws://{addr}/"),
            "-c",
            "2",
            "-d",
            "400ms",
            "--size",
            "10",
            "--cores",
            &client_cpu().to_string(),
        ],
    )
}

#[test]
fn broken_servers_are_counted_by_class_and_the_run_ends_on_time() {
    for engine in ENGINES {
        broken_servers_are_counted_by_class_and_the_run_ends_on_time_on(engine);
    }
}

fn broken_servers_are_counted_by_class_and_the_run_ends_on_time_on(engine: &str) {
    let cases: [(bool, &'static [u8], &str); 4] = [
        (false, b"", "wrong Sec-WebSocket-Accept"),
        (true, &[0xC2, 0x0A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "reserved bits"),
        (true, &[0x82, 0x7F, 0, 0, 0x01, 0, 0, 0, 0, 0], "larger than the limit"),
        (true, b"\x8fgarbage after the upgrade", "unknown WebSocket opcode"),
    ];
    for (right_key, after, expected) in cases {
        let r = run_against(engine, scripted(right_key, after));
        assert_eq!(r.ops, 0);
        assert!(r.conn_errors.get(ErrorClass::Protocol) > 0, "{expected}: {:?}", r.conn_errors);
        assert!(r.accounted());
        assert!(r.error_samples.iter().any(|s| s.contains(expected)), "{expected}: {:?}", r.error_samples);
        assert!(r.elapsed < Duration::from_secs(3));
    }
}

#[test]
fn the_echo_servers_message_limit_closes_with_1009() {
    let server = start_builtin_with("tokio-uring", "ws", &["--max-message", "100"]);
    let cpu = client_cpu().to_string();
    let url = format!("ws://{}/", server.addr());
    let r = bench(&[&url, "-c", "1", "-n", "20", "--size", "101", "--cores", &cpu]);
    assert_eq!(r.ops, 0);
    assert_accounted(&r);
    assert!(r.failed.get(ErrorClass::Closed) > 0, "{:?} {:?}", r.failed, r.error_samples);
    let r = bench(&[&url, "-c", "1", "-n", "20", "--size", "100", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 20);
}
