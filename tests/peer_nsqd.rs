//! The same NSQ runs against a real nsqd and against the built-in sink: equal bytes per
//! operation both ways, zero errors, and nsqd's own `/stats` counts the messages.
//! Needs nsqd (`tools/install-peers.sh`); run by `.ci/run` with `--include-ignored`.

mod common;
use common::*;

fn message_count(http: std::net::SocketAddr, topic: &str) -> u64 {
    let response = http_get(http, "/stats?format=json");
    let body = response.split("\r\n\r\n").nth(1).expect("a body");
    let stats: serde_json::Value = serde_json::from_str(body).expect("JSON stats");
    stats["topics"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["topic_name"] == topic))
        .and_then(|t| t["message_count"].as_u64())
        .unwrap_or(0)
}

#[test]
#[ignore = "needs nsqd: run by .ci/run"]
fn nsqd_and_sink_cost_the_same_bytes_per_message() {
    let (_nsqd, tcp, http) = start_nsqd();
    let sink = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    // The same Host header on both sides, so the request bytes cannot differ by a port's digits.
    let host = "Host: 127.0.0.1:4151";
    let runs: [(&str, &[&str], u64); 4] = [
        ("nsq", &["-n", "20000"], 1),
        ("nsq", &["-n", "2000", "--batch", "10"], 10),
        ("nsq+http", &["-n", "5000", "-H", host], 1),
        ("nsq+http", &["-n", "1000", "--batch", "10", "-H", host], 10),
    ];
    let n_of = |extra: &[&str]| extra[1].parse::<u64>().unwrap();
    for (i, (scheme, extra, per_op)) in runs.iter().enumerate() {
        let topic = format!("wb{i}");
        let (real_addr, sink_addr) = if *scheme == "nsq" {
            (tcp, sink.addrs[0].ip().unwrap())
        } else {
            (http, sink.addrs[1].ip().unwrap())
        };
        let mut reports = Vec::new();
        for addr in [real_addr, sink_addr] {
            let url = format!("{scheme}://{addr}/{topic}");
            let mut args = vec![url.as_str(), "-c", "1", "--size", "400", "--cores", &cpu];
            args.extend_from_slice(extra);
            let r = bench(&args);
            assert_clean(&r);
            assert_eq!(r.ops, n_of(extra), "{scheme} {extra:?} against {addr}: every operation completed");
            reports.push(r);
        }
        let (real, ours) = (&reports[0], &reports[1]);
        assert_eq!(real.tx_per_op(), ours.tx_per_op(), "{scheme} {extra:?}: tx per op");
        assert_eq!(real.rx_per_op(), ours.rx_per_op(), "{scheme} {extra:?}: rx per op");
        assert_eq!(real.tx.handshake, ours.tx.handshake);
        assert_eq!(real.rx.handshake, ours.rx.handshake);
        assert_eq!(message_count(http, &topic), real.ops * per_op, "nsqd counted every message");
    }
    // The study's figures for a 400-byte message over TCP.
    let r = bench(&[&format!("nsq://{tcp}/test"), "-c", "1", "-n", "1000", "--cores", &cpu]);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (wire::nsq_pub("test", 400), wire::nsq_frame("OK")));
}

#[test]
#[ignore = "needs nsqd: run by .ci/run"]
fn nsqd_heartbeats_and_refusals_match_the_sink() {
    let (_nsqd, tcp, _http) = start_nsqd();
    let sink = start_builtin("nsq");
    let cpu = client_cpu().to_string();
    let identify = r#"{"client_id":"hb","heartbeat_interval":1000}"#;
    let mut seen = Vec::new();
    for addr in [tcp, sink.addrs[0].ip().unwrap()] {
        let r = bench(&[
            &format!("nsq://{addr}/hb"),
            "-c",
            "1",
            "-d",
            "2500ms",
            "--identify",
            identify,
            "--cores",
            &cpu,
        ]);
        assert_clean(&r);
        let heartbeat = wire::nsq_frame("_heartbeat_") as u64;
        assert!(
            r.rx.control >= 2 * heartbeat && r.rx.control.is_multiple_of(heartbeat),
            "{addr}: {}",
            r.rx.control
        );
        let beats = r.rx.control / heartbeat;
        assert_eq!(r.tx.control, beats * "NOP\n".len() as u64, "{addr}: each answered with NOP");
        let refused = bench(&[&format!("nsq://{addr}/bad!"), "-c", "1", "-d", "300ms", "--cores", &cpu]);
        assert_eq!(refused.ops, 0);
        assert_accounted(&refused);
        let codes: Vec<String> = refused.failures.keys().map(|f| f.to_string()).collect();
        seen.push((beats, codes, refused.rx.failed / refused.failed.total().max(1)));
    }
    let (real, ours) = (&seen[0], &seen[1]);
    assert!(real.0.abs_diff(ours.0) <= 1, "heartbeats in 2.5 s: nsqd {} sink {}", real.0, ours.0);
    assert_eq!(real.1, ours.1, "the same refusal codes");
    assert_eq!(real.1, ["E_BAD_TOPIC"]);
    assert_eq!(real.2, ours.2, "the same refusal frame, byte for byte in length");
}
