//! `bench nsq://` and `bench nsq+http://` against the built-in nsqd-compatible sink.

mod common;
use common::*;
use wirebench::outcome::ErrorClass;

fn tcp_url(server: &wirebench::engine::ServerHandle, topic: &str) -> String {
    format!("nsq://{}/{topic}", server.addrs[0])
}
fn http_url(server: &wirebench::engine::ServerHandle, topic: &str) -> String {
    format!("nsq+http://{}/{topic}", server.addrs[1])
}

#[test]
fn pub_100000_by_400_bytes_is_413_written_10_read() {
    for engine in ENGINES {
        pub_100000_by_400_bytes_is_413_written_10_read_on(engine);
    }
}

fn pub_100000_by_400_bytes_is_413_written_10_read_on(engine: &str) {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-n", "100000", "--size", "400", "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!(r.ops, 100_000);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (wire::nsq_pub("test", 400), wire::nsq_frame("OK")));
    assert_eq!((wire::nsq_pub("test", 400), wire::nsq_frame("OK")), (413.0, 10.0), "the study's figures");
    // Magic + IDENTIFY out, its OK frame back: handshake, apart from the operations.
    assert!(r.tx.handshake > 4 + 9 + 4);
    assert_eq!(r.rx.handshake, 10);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.messages, 100_000);
}

#[test]
fn mpub_of_10_by_400_is_4058_and_counts_messages() {
    for engine in ENGINES {
        mpub_of_10_by_400_is_4058_and_counts_messages_on(engine);
    }
}

fn mpub_of_10_by_400_is_4058_and_counts_messages_on(engine: &str) {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "2", "-n", "1000", "--batch", "10", "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (wire::nsq_mpub("test", 10, 400), wire::nsq_frame("OK")));
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 10_000);
}

#[test]
fn http_pub_and_mpub_bytes() {
    for engine in ENGINES {
        http_pub_and_mpub_bytes_on(engine);
    }
}

fn http_pub_and_mpub_bytes_on(engine: &str) {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let host = "Host: 127.0.0.1:4151";
    let r =
        bench_on(engine, &[&http_url(&server, "test"), "-c", "1", "-n", "2000", "-H", host, "--cores", &cpu]);
    assert_clean(&r);
    let request = wire::http_request("POST", "/pub?topic=test", "127.0.0.1:4151", &[], 400);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (request, wire::nsqd_pub_ok()));
    assert_eq!((request, wire::nsqd_pub_ok()), (476.0, 156.0), "the study's /pub (Host aside)");
    let r = bench_on(
        engine,
        &[&http_url(&server, "test"), "-c", "1", "-n", "500", "--batch", "10", "-H", host, "--cores", &cpu],
    );
    assert_clean(&r);
    // /mpub's text form: the messages newline-separated.
    let request = wire::http_request("POST", "/mpub?topic=test", "127.0.0.1:4151", &[], 10 * 401);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (request, wire::nsqd_pub_ok()));
    let r = bench_on(
        engine,
        &[&http_url(&server, "test"), "-n", "500", "--batch", "10", "--binary", "-H", host, "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 2000 + 5000 + 5000);
}

#[test]
fn heartbeats_are_answered_with_nop_as_control_bytes() {
    for engine in ENGINES {
        heartbeats_are_answered_with_nop_as_control_bytes_on(engine);
    }
}

fn heartbeats_are_answered_with_nop_as_control_bytes_on(engine: &str) {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let identify = r#"{"client_id":"hb","heartbeat_interval":1000}"#;
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-d", "2500ms", "--identify", identify, "--cores", &cpu],
    );
    assert_clean(&r);
    let beats = r.rx.control / 19;
    assert!(beats >= 2, "heartbeats: {beats}");
    assert_eq!(r.rx.control, 19 * beats, "each heartbeat frame is 19 bytes");
    assert_eq!(r.tx.control, 4 * beats, "each answered with NOP\\n");
}

/// A paced connection idle for longer than nsqd allows silence (two heartbeat intervals) keeps
/// its connection: it looks at its socket between operations and answers the heartbeats.
#[test]
fn paced_connections_idle_past_the_heartbeat_keep_their_connection() {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let identify = r#"{"client_id":"hb","heartbeat_interval":1000}"#; // nsqd's least
    for engine in ENGINES {
        // Two connections, one publish every 2.5 s each: longer than the 2 s of silence allowed.
        let url = tcp_url(&server, "test");
        let args =
            [url.as_str(), "-c", "2", "--rate", "0.8", "-d", "3s", "--identify", identify, "--cores", &cpu];
        let r = bench_on(engine, &args);
        assert_clean(&r);
        assert_eq!(
            (r.ops, r.connects),
            (3, 2),
            "{engine}: publishes at 0, 1.25 and 2.5 s on the first connections"
        );
        assert!(r.tx.control >= 4 * 4, "{engine}: NOPs: {:?}", r.tx);
    }
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).timeouts, 0, "no client closed for silence");
}

#[test]
fn refused_publishes_are_counted_by_code_and_the_run_goes_on() {
    for engine in ENGINES {
        refused_publishes_are_counted_by_code_and_the_run_goes_on_on(engine);
    }
}

fn refused_publishes_are_counted_by_code_and_the_run_goes_on_on(engine: &str) {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&tcp_url(&server, "bad!"), "-c", "2", "-d", "500ms", "--cores", &cpu]);
    assert_eq!(r.ops, 0);
    assert!(r.failed.get(ErrorClass::Protocol) > 2);
    assert!(r.accounted());
    assert!(r.failures.keys().any(|f| f.to_string() == "E_BAD_TOPIC"));
    assert!(r.reconnects > 2, "nsqd closes after an error; the client reconnects");
    assert!(r.elapsed.as_millis() < 2500);
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-d", "300ms", "--size", "2000000", "--cores", &cpu],
    );
    assert!(r.failures.keys().any(|f| f.to_string() == "E_BAD_MESSAGE"));
}

#[test]
fn deferred_publishes_cost_their_delay_field_over_tcp_and_http() {
    let server = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let r = bench_on(
            engine,
            &[&tcp_url(&server, "test"), "-c", "1", "-n", "500", "--defer-ms", "250", "--cores", &cpu],
        );
        assert_clean(&r);
        assert_eq!(r.ops, 500);
        assert_eq!((r.tx_per_op(), r.rx_per_op()), (wire::nsq_dpub("test", 250, 400), wire::nsq_frame("OK")));
        let host = "Host: 127.0.0.1:4151";
        let r = bench_on(
            engine,
            &[
                &http_url(&server, "test"),
                "-c",
                "1",
                "-n",
                "500",
                "--defer-ms",
                "250",
                "-H",
                host,
                "--cores",
                &cpu,
            ],
        );
        assert_clean(&r);
        let request = wire::http_request("POST", "/pub?topic=test&defer=250", "127.0.0.1:4151", &[], 400);
        assert_eq!((r.tx_per_op(), r.rx_per_op()), (request, wire::nsqd_pub_ok()));
    }
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 2 * 500 * ENGINES.len() as u64);
}

#[test]
fn the_sinks_size_flags_refuse_as_nsqd_does() {
    let server =
        start_builtin_with("tokio-uring", "nsq", &["--max-msg-size", "100", "--max-body-size", "1000"]);
    let cpu = client_cpu().to_string();
    let r = bench(&[&tcp_url(&server, "test"), "-c", "1", "-n", "20", "--size", "101", "--cores", &cpu]);
    assert_eq!(r.ops, 0);
    assert_accounted(&r);
    assert_eq!(r.failures.keys().map(|f| f.to_string()).collect::<Vec<_>>(), ["E_BAD_MESSAGE"]);
    let r = bench(&[&tcp_url(&server, "test"), "-c", "1", "-n", "20", "--size", "100", "--cores", &cpu]);
    assert_clean(&r);
    // An MPUB of 10 × 100: a body of 4 + 10 × 104 bytes, over the 1000-byte limit.
    let r = bench(&[
        &tcp_url(&server, "test"),
        "-c",
        "1",
        "-n",
        "20",
        "--size",
        "100",
        "--batch",
        "10",
        "--cores",
        &cpu,
    ]);
    assert_eq!(r.ops, 0);
    assert_eq!(r.failures.keys().map(|f| f.to_string()).collect::<Vec<_>>(), ["E_BAD_BODY"]);
    let r = bench(&[&http_url(&server, "test"), "-c", "1", "-n", "20", "--size", "101", "--cores", &cpu]);
    assert_eq!(r.failures.keys().map(|f| f.to_string()).collect::<Vec<_>>(), ["HTTP 413"]);
}
