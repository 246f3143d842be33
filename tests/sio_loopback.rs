//! `bench sio://` against the built-in `serve sio`, Engine.IO 4 and 3, every engine pair:
//! exact bytes per operation from the packet format, heartbeats kept in runs longer than the
//! ping interval, namespaces and reply events; and servers that misbehave in Socket.IO's words.

mod common;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;
use wirebench::outcome::ErrorClass;

#[test]
fn events_and_acks_cost_their_packets_on_every_engine_pair_and_both_versions() {
    let cpu = client_cpu().to_string();
    for server_engine in SERVER_ENGINES {
        for eio in ["4", "3"] {
            let server = start_builtin_with(server_engine, "sio", &["--eio", eio]);
            let url = format!("sio://{}/", server.addr());
            let mut per_engine = Vec::new();
            for engine in ENGINES {
                let r = bench_on(engine, &[&url, "--eio", eio, "-c", "4", "-n", "4000", "--cores", &cpu]);
                assert_clean(&r);
                assert_eq!(r.ops, 4000, "{server_engine} server, {engine} client, EIO {eio}");
                per_engine.push((r.tx_per_op(), r.rx_per_op()));
            }
            let expected = (sio_wire::event("/", Some(0), "message", 400), sio_wire::ack("/", 0, 400));
            assert_eq!(expected, (425.0, 411.0), "the issue's byte vector");
            assert!(per_engine.iter().all(|p| *p == expected), "EIO {eio}: {per_engine:?}");
            assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 3 * 4000);
        }
    }
}

#[test]
fn namespaces_reply_events_and_depth() {
    let server = start_builtin_with("tokio-uring", "sio", &["--reply-event", "answer"]);
    let cpu = client_cpu().to_string();
    let base = format!("sio://{}", server.addr());
    let r = bench(&[&format!("{base}/chat?event=hello"), "-c", "2", "-n", "1000", "--cores", &cpu]);
    assert_clean(&r);
    // The server also emits `answer` for every event: control bytes, not the operation's.
    assert_eq!(
        (r.tx_per_op(), r.rx_per_op()),
        (sio_wire::event("/chat", Some(0), "hello", 400), sio_wire::ack("/chat", 0, 400))
    );
    assert_eq!(
        r.rx.control,
        1000 * sio_wire::reply("/chat", "answer", 400) as u64 + 2 * 4,
        "replies and the closes"
    );
    let r = bench(&[
        &format!("{base}/?event=ask"),
        "--reply-event",
        "answer",
        "-c",
        "2",
        "-n",
        "1000",
        "--cores",
        &cpu,
    ]);
    assert_clean(&r);
    assert_eq!(
        (r.tx_per_op(), r.rx_per_op()),
        (sio_wire::event("/", None, "ask", 400), sio_wire::reply("/", "answer", 400))
    );
    let r = bench(&[&format!("{base}/"), "--depth", "8", "-c", "2", "-n", "4000", "--cores", &cpu]);
    assert_clean(&r);
    // Ids cycle through the slots in flight: 0 … 7, one digit each.
    assert_eq!(r.tx_per_op(), sio_wire::event("/", Some(7), "message", 400));
}

#[test]
fn heartbeats_are_kept_in_runs_longer_than_the_ping_interval() {
    let cpu = client_cpu().to_string();
    for (eio, server_pings) in [("4", true), ("3", false)] {
        let server = start_builtin_with(
            "tokio-uring",
            "sio",
            &["--eio", eio, "--ping-interval", "300ms", "--ping-timeout", "300ms"],
        );
        let url = format!("sio://{}/", server.addr());
        // A paced run that leaves the connection quiet between events, for five intervals.
        let r = bench(&[&url, "--eio", eio, "-c", "1", "-d", "1500ms", "--rate", "20", "--cores", &cpu]);
        assert_clean(&r);
        assert!(r.ops >= 20, "EIO {eio}: {}", r.ops);
        let (ping, pong_masked) = (3, 7); // `2` unmasked; `2` or `3` masked
        if server_pings {
            assert!(r.rx.control >= 3 * ping, "EIO 4: the server's pings: {:?}", r.rx);
            assert!(r.tx.control >= 3 * pong_masked, "answered: {:?}", r.tx);
        } else {
            assert!(r.tx.control >= 3 * pong_masked, "EIO 3: the client's pings: {:?}", r.tx);
            assert!(r.rx.control >= 3 * ping, "answered: {:?}", r.rx);
        }
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert_eq!(tally.timeouts, 0, "EIO {eio}: no connection dropped for silence");
    }
}

/// Clients paced slower than the server's ping timeout keep their connections on every
/// engine: between events they look at their sockets and answer the pings in time.
#[test]
fn paced_clients_idle_past_the_ping_timeout_stay_connected() {
    let server =
        start_builtin_with("tokio-uring", "sio", &["--ping-interval", "300ms", "--ping-timeout", "300ms"]);
    let url = format!("sio://{}/", server.addr());
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        // One event every 2 s per connection: six ping intervals of silence from the client.
        let r = bench_on(engine, &[&url, "-c", "2", "--rate", "1", "-d", "3s", "--cores", &cpu]);
        assert_clean(&r);
        assert_eq!((r.ops, r.connects), (3, 2), "{engine}: events at 0, 1 and 2 s on the first connections");
        assert!(r.tx.control >= 2 * 5 * 7, "{engine}: pongs: {:?}", r.tx);
    }
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).timeouts, 0, "no client closed for silence");
}

/// A server that upgrades, then says `lines` (Engine.IO packets), then holds the connection.
fn scripted(lines: &'static [&'static str]) -> std::net::SocketAddr {
    scripted_ws(true, move |s| {
        let mut out = Vec::new();
        for line in lines {
            wirebench::proto::ws::write_frame(&mut out, wirebench::proto::ws::OP_TEXT, line.as_bytes(), None);
        }
        let _ = s.write_all(&out);
        let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
        while matches!(s.read(&mut [0u8; 4096]), Ok(n) if n > 0) {}
    })
}

#[test]
fn a_connect_error_is_a_protocol_failure_in_the_servers_words() {
    let addr = scripted(&[
        "0{\"sid\":\"a\",\"upgrades\":[],\"pingInterval\":25000,\"pingTimeout\":20000}",
        "44{\"message\":\"not authorized\"}",
    ]);
    let r =
        bench(&[&format!("sio://{addr}/"), "-c", "1", "-d", "300ms", "--cores", &client_cpu().to_string()]);
    assert_eq!(r.ops, 0);
    assert_accounted(&r);
    assert!(r.conn_errors.get(ErrorClass::Protocol) > 0, "{:?}", r.conn_errors);
    assert!(
        r.error_samples.iter().any(|s| s.contains("CONNECT_ERROR") && s.contains("not authorized")),
        "{:?}",
        r.error_samples
    );
}

#[test]
fn a_server_that_stops_pinging_is_a_timeout() {
    // Joined, then silence: no ping within the interval plus the timeout (200 + 200 ms).
    let addr = scripted(&[
        "0{\"sid\":\"a\",\"upgrades\":[],\"pingInterval\":200,\"pingTimeout\":200}",
        "40{\"sid\":\"b\"}",
    ]);
    let r = bench(&[&format!("sio://{addr}/"), "-c", "1", "-d", "1s", "--cores", &client_cpu().to_string()]);
    assert_eq!(r.ops, 0);
    assert_accounted(&r);
    assert!(r.failed.get(ErrorClass::Timeout) > 0, "{:?}", r.failed);
    assert!(r.error_samples.iter().any(|s| s.contains("silent")), "{:?}", r.error_samples);
}
