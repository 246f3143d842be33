//! Real Socket.IO servers no one here wrote: Node's `socket.io` 4 (Engine.IO 4), `socket.io@2`
//! (Engine.IO 3, what the socket.io study ran) and Python's `python-socketio` on aiohttp. On each:
//! zero errors, the same bytes per operation as the built-in `serve sio`, heartbeats kept in a run
//! longer than the peer's 1 s ping interval, namespaces and the ask/answer pattern.
//! Needs `tools/install-peers.sh` (npm and pip packages); run by `.ci/run`.

mod common;
use common::*;
use std::process::{Command, Stdio};
use wirebench::stats::Report;

fn tool(name: &str) -> String {
    format!("{}/tools/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A real server on a free port, pinging every second.
fn start_peer(which: &str) -> (Peer, String) {
    let port = free_port();
    let (program, args) = match which {
        "node4" => ("node", vec![tool("sio_peer.js"), port.to_string(), "4".into(), "1000".into()]),
        "node2" => ("node", vec![tool("sio_peer.js"), port.to_string(), "2".into(), "1000".into()]),
        _ => ("python3", vec![tool("sio_peer.py"), port.to_string(), "1".into()]),
    };
    let peer = Peer(
        Command::new(program).args(args).stdout(Stdio::null()).spawn().expect("the peer's interpreter runs"),
    );
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_listening(addr);
    (peer, format!("sio://{addr}"))
}

/// The runs every server gets, as `(tx per op, rx per op)`: events with acks on `/` and `/chat`,
/// deep pipelines, and ask/answer.
fn suite(base: &str, eio: &str) -> Vec<(f64, f64)> {
    let cpu = client_cpu().to_string();
    let runs: [(&str, &[&str]); 4] = [
        ("/", &["-c", "4", "-n", "4000"]),
        ("/chat", &["-c", "4", "-n", "2000", "--size", "64"]),
        ("/", &["-c", "2", "-n", "4000", "--depth", "8"]),
        ("/chat?event=ask", &["-c", "2", "-n", "2000", "--reply-event", "answer"]),
    ];
    runs.iter()
        .map(|(path, args)| {
            let url = format!("{base}{path}");
            let mut argv = vec![url.as_str(), "--eio", eio, "--cores", &cpu];
            argv.extend_from_slice(args);
            let r = bench(&argv);
            assert_clean(&r);
            (r.tx_per_op(), r.rx_per_op())
        })
        .collect()
}

/// A paced run for 2.5 pingIntervals: the connection sits quiet between events, so only answered
/// heartbeats keep it.
fn heartbeats(base: &str, eio: &str) -> Report {
    let cpu = client_cpu().to_string();
    let r = bench(&[
        &format!("{base}/"),
        "--eio",
        eio,
        "-c",
        "2",
        "-d",
        "2500ms",
        "--rate",
        "10",
        "--cores",
        &cpu,
    ]);
    assert_clean(&r);
    assert!(r.ops >= 15, "{}", r.ops);
    // Two pings per connection at least: `2` and `3` are 3 bytes unmasked, 7 masked.
    if eio == "4" {
        assert!(
            r.rx.control >= 2 * 2 * 3 && r.tx.control >= 2 * 2 * 7,
            "server pings answered: {:?} {:?}",
            r.rx,
            r.tx
        );
    } else {
        assert!(
            r.tx.control >= 2 * 2 * 7 && r.rx.control >= 2 * 2 * 3,
            "client pings answered: {:?} {:?}",
            r.tx,
            r.rx
        );
    }
    r
}

fn against(which: &str, eio: &str) {
    let builtin = start_builtin_with("tokio-uring", "sio", &["--eio", eio, "--reply-event", "answer"]);
    let expected = suite(&format!("sio://{}", builtin.addr()), eio);
    assert_eq!(expected[0], (sio_wire::event("/", Some(0), "message", 400), sio_wire::ack("/", 0, 400)));
    let (_peer, base) = start_peer(which);
    assert_eq!(suite(&base, eio), expected, "{which}: bytes per operation equal to the built-in server's");
    heartbeats(&base, eio);
}

#[test]
#[ignore = "needs Node's socket.io 4: tools/install-peers.sh, run by .ci/run"]
fn node_socket_io_4() {
    against("node4", "4");
}

#[test]
#[ignore = "needs Node's socket.io 2: tools/install-peers.sh, run by .ci/run"]
fn node_socket_io_2_speaks_engine_io_3() {
    against("node2", "3");
}

#[test]
#[ignore = "needs Python's python-socketio and aiohttp: tools/install-peers.sh, run by .ci/run"]
fn python_socketio_on_aiohttp() {
    against("python", "4");
}

#[test]
#[ignore = "needs Node's socket.io 4: tools/install-peers.sh, run by .ci/run"]
fn the_wrong_engine_io_version_is_one_clear_error() {
    let (_peer, base) = start_peer("node4");
    let r = bench(&[
        &format!("{base}/"),
        "--eio",
        "3",
        "-c",
        "1",
        "-d",
        "500ms",
        "--cores",
        &client_cpu().to_string(),
    ]);
    assert_eq!(r.ops, 0);
    assert_accounted(&r);
    assert!(r.errors_total() > 0, "socket.io 4 refuses EIO=3");
    let said = |s: &String| {
        s.contains("HTTP 400") && s.contains("Unsupported protocol version") && s.contains("--eio")
    };
    assert!(r.error_samples.iter().any(said), "{:?}", r.error_samples);
}
