//! `wirebench compare` as a user runs it: a row for every protocol of the registry on the built-in
//! servers with exact bytes, JSON and an SVG; the same against a real nsqd; the SVG rendered by
//! headless Chromium.

mod common;
use common::*;
use std::process::Command;

fn compare(args: &[&str]) -> (String, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("wirebench-compare-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("compare.json");
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .arg("compare")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (stdout, serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap())
}

fn row<'a>(v: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no row {label}"))
}

/// RFC 7541 Appendix B's code lengths for the characters of `127.0.0.1:PORT`: the octets of
/// the Huffman-coded string (padded to a whole octet).
fn huffman_len(s: &str) -> f64 {
    let bits: u32 = s
        .bytes()
        .map(|b| match b {
            b'0' | b'1' | b'2' => 5,
            b'3'..=b'9' | b'.' => 6,
            b':' => 7,
            _ => panic!("no code length here for {b}"),
        })
        .sum();
    f64::from(bits.div_ceil(8))
}

/// The protocols the rows ran.
fn protocols_of(rows: &[serde_json::Value]) -> std::collections::BTreeSet<String> {
    rows.iter().map(|r| r["protocol"].as_str().unwrap().to_string()).collect()
}

/// Whether a scheme's connections may be plaintext: no TLS, or TLS only when the handshake
/// upgrades (`nsq://`, upgraded by `?tls=1`).
fn cleartext(tls: Option<wirebench::tls::options::TlsStart>) -> bool {
    matches!(tls, None | Some(wirebench::tls::options::TlsStart::InHandshake))
}

/// The registry's protocols with a scheme whose TLS `keep` says.
fn protocols_where(
    keep: impl Fn(Option<wirebench::tls::options::TlsStart>) -> bool,
) -> std::collections::BTreeSet<String> {
    let protocols = wirebench::protocol::PROTOCOLS.iter();
    protocols.filter(|p| p.schemes.iter().any(|s| keep(s.tls))).map(|p| p.name.to_string()).collect()
}

#[test]
fn every_row_on_the_builtin_servers() {
    let svg = std::env::temp_dir().join(format!("wirebench-compare-{}.svg", free_port()));
    let (stdout, v) = compare(&["-n", "3000", "-d", "5s", "--svg", svg.to_str().unwrap()]);
    let rows = v["rows"].as_array().unwrap();
    // A row (or more) for every protocol of the registry with a cleartext scheme: each runs on
    // its built-in server.
    assert_eq!(protocols_of(rows), protocols_where(cleartext), "{stdout}");
    for r in rows {
        assert_eq!(r["failed"]["total"], 0, "{}", r["label"]);
        assert_eq!(r["connection_errors"]["total"], 0, "{}", r["label"]);
        assert_eq!(r["audit"]["match"], true, "{}", r["label"]);
        assert!(r["derived"]["msgs_per_sec"].as_f64().unwrap() > 0.0);
    }
    let pubrow = row(&v, "NSQ TCP PUB");
    assert_eq!(
        (pubrow["derived"]["tx_per_msg"].as_f64(), pubrow["derived"]["rx_per_msg"].as_f64()),
        (Some(wire::nsq_pub("test", 400)), Some(wire::nsq_frame("OK")))
    );
    let mpub = row(&v, "NSQ TCP MPUB×10");
    assert_eq!(mpub["bytes"]["tx_per_op"].as_f64(), Some(wire::nsq_mpub("test", 10, 400)));
    assert_eq!(mpub["messages"], 3000);
    let ws = row(&v, "WebSocket binary");
    assert_eq!(
        (ws["derived"]["tx_per_msg"].as_f64(), ws["derived"]["rx_per_msg"].as_f64()),
        (Some(wire::ws_client_frame(400)), Some(wire::ws_server_frame(400)))
    );
    // The echo carries the payload both ways; only the framing is overhead.
    assert_eq!(ws["derived"]["payload_bytes"].as_f64(), Some(800.0));
    let framing = wire::ws_client_frame(400) + wire::ws_server_frame(400) - 800.0;
    assert_eq!(ws["derived"]["framing"].as_f64(), Some(framing));
    assert_eq!(ws["derived"]["overhead"].as_f64(), Some(framing / 800.0));
    // Socket.IO beside it: what its packets add to the same echo of the payload.
    let sio = row(&v, "Socket.IO event+ack");
    let (event, ack) = (sio_wire::event("/", Some(0), "message", 400), sio_wire::ack("/", 0, 400));
    assert_eq!(
        (sio["derived"]["tx_per_msg"].as_f64(), sio["derived"]["rx_per_msg"].as_f64()),
        (Some(event), Some(ack))
    );
    assert_eq!(sio["derived"]["overhead"].as_f64(), Some((event + ack - 800.0) / 800.0));
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    let ws_at = labels.iter().position(|l| *l == "WebSocket binary").unwrap();
    assert_eq!(labels[ws_at + 1], "Socket.IO event+ack", "beside WebSocket: {labels:?}");
    // HTTP/2 on one connection, by RFC 9113 and 7541: the first request's header block is
    // `:method POST` (static 3), `:scheme http` (6), `:authority` as a literal of static name 1
    // (0x41, a length octet, the host Huffman-coded), `:path /` (4), `content-length: 400` as
    // a literal of static name 28 (0x5c, 0x82 and "400" coded in 16 bits): 9 octets and the
    // host's; every later one indexes the two literals: 5 octets. HEADERS and DATA heads, 9
    // each. The answers: `:status 200` (8) and `content-length: 2` (0x5c 0x81 and 5 bits),
    // 4 octets, then 2 (0x88 0xbe), with `OK` in DATA.
    let h2 = row(&v, "HTTP/2 POST");
    let host = h2["target"].as_str().unwrap().trim_start_matches("h2c://").trim_end_matches('/');
    let first_tx = 9.0 + 9.0 + huffman_len(host) + 9.0 + 400.0;
    let ops = h2["ops"].as_f64().unwrap();
    assert_eq!(h2["connects"], 1, "one connection: one first request");
    assert_eq!(h2["bytes"]["op_tx"].as_f64(), Some(first_tx + (ops - 1.0) * (9.0 + 5.0 + 9.0 + 400.0)));
    assert_eq!(
        h2["bytes"]["op_rx"].as_f64(),
        Some((9.0 + 4.0 + 9.0 + 2.0) + (ops - 1.0) * (9.0 + 2.0 + 9.0 + 2.0))
    );
    // Once, the set-up: out the preface (24), SETTINGS with two parameters (21) and the
    // acknowledgement of the server's (9); in, its SETTINGS with three (27). (Its
    // acknowledgement and WINDOW_UPDATE after them are control bytes.)
    let set_up = (h2["bytes"]["handshake_tx"].as_f64(), h2["bytes"]["handshake_rx"].as_f64());
    assert_eq!(set_up, (Some(54.0), Some(27.0)));
    // The same bytes by layer, as the codec counted them: [headers, trailers, framing,
    // prefix, payload] for the first request and for the rest (totals).
    let layers = |row: &serde_json::Value, which: &str, dir: &str| -> Vec<f64> {
        let l = &row["layers"][which][dir];
        ["headers", "trailers", "framing", "prefix", "payload"].map(|k| l[k].as_f64().unwrap()).to_vec()
    };
    let n = ops - 1.0;
    assert_eq!(layers(h2, "first", "tx"), [9.0 + huffman_len(host), 0.0, 18.0, 0.0, 400.0]);
    assert_eq!(layers(h2, "steady", "tx"), [5.0 * n, 0.0, 18.0 * n, 0.0, 400.0 * n]);
    assert_eq!(layers(h2, "first", "rx"), [4.0, 0.0, 18.0, 0.0, 2.0]);
    assert_eq!(layers(h2, "steady", "rx"), [2.0 * n, 0.0, 18.0 * n, 0.0, 2.0 * n]);
    assert!(stdout.contains("bytes per request by layer"), "{stdout}");
    assert!(stdout.contains("HTTP/2 vs HTTP/1.1: writes"), "{stdout}");
    // gRPC, steady state by hand: six indexed fields (:method, :scheme, :authority, :path,
    // content-type, te) and the message's 5-octet prefix out; back, `:status 200` and
    // content-type indexed, the message, and trailers of one indexed `grpc-status: 0`.
    let grpc = row(&v, "gRPC unary");
    assert_eq!(grpc["status_counts"]["grpc OK"], grpc["ops"]);
    let ops = grpc["ops"].as_f64().unwrap();
    let steady_tx = 9.0 + 6.0 + 9.0 + 405.0;
    let steady_rx = 9.0 + 2.0 + 9.0 + 405.0 + 9.0 + 1.0;
    let op_tx = grpc["bytes"]["op_tx"].as_f64().unwrap();
    let op_rx = grpc["bytes"]["op_rx"].as_f64().unwrap();
    // The first call costs more (its literals); the other calls cost exactly the steady state.
    assert!(op_tx - (ops - 1.0) * steady_tx > steady_tx, "{op_tx}");
    assert!(op_rx - (ops - 1.0) * steady_rx > steady_rx, "{op_rx}");
    assert!(op_tx - (ops - 1.0) * steady_tx < steady_tx + 200.0, "{op_tx}");
    assert!(op_rx - (ops - 1.0) * steady_rx < steady_rx + 200.0, "{op_rx}");
    let n = ops - 1.0;
    assert_eq!(layers(grpc, "steady", "tx"), [6.0 * n, 0.0, 18.0 * n, 5.0 * n, 400.0 * n]);
    assert_eq!(layers(grpc, "steady", "rx"), [2.0 * n, 1.0 * n, 27.0 * n, 5.0 * n, 400.0 * n]);
    assert_eq!(grpc["layers"]["first"]["ops"], 1);
    let http = row(&v, "NSQ HTTP /pub");
    assert_eq!(http["derived"]["rx_per_msg"].as_f64(), Some(wire::nsqd_pub_ok()));
    assert_eq!(v["http_vs_tcp"]["rx"].as_f64(), Some(wire::nsqd_pub_ok() / wire::nsq_frame("OK")));
    assert!(stdout.contains("HTTP vs TCP (NSQ /pub vs PUB)"), "{stdout}");
    // The floor: bare TCP carrying the payload, its bytes the sizes exactly; every other row
    // a multiple of the floor of its crossings, computed from the two rows' own figures.
    let (floor, echo) = (row(&v, "TCP floor"), row(&v, "TCP floor (echo)"));
    let per_msg = |r: &serde_json::Value, k: &str| r["derived"][k].as_f64().unwrap();
    assert_eq!((per_msg(floor, "tx_per_msg"), per_msg(floor, "rx_per_msg")), (400.0, 1.0));
    assert_eq!((per_msg(echo, "tx_per_msg"), per_msg(echo, "rx_per_msg")), (400.0, 400.0));
    assert!(floor["derived"]["vs_floor"].is_null() && echo["derived"]["vs_floor"].is_null());
    for r in rows.iter().filter(|r| r["protocol"] != "tcp") {
        let m = &r["derived"]["vs_floor"];
        let under = if r["derived"]["payload_bytes"].as_f64() == Some(800.0) { echo } else { floor };
        assert_eq!(m["floor"], under["label"], "{}", r["label"]);
        let bytes = |r: &serde_json::Value| per_msg(r, "tx_per_msg") + per_msg(r, "rx_per_msg");
        assert!((m["bytes"].as_f64().unwrap() - bytes(r) / bytes(under)).abs() < 1e-9, "{}", r["label"]);
        let cpu = per_msg(r, "cpu_us_per_msg") / per_msg(under, "cpu_us_per_msg");
        assert!((m["cpu"].as_f64().unwrap() - cpu).abs() < 1e-9, "{}", r["label"]);
    }
    assert!(stdout.contains("each row as a multiple of the floor under it"), "{stdout}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
    assert!(chart.contains("NSQ TCP PUB") && chart.contains("messages per second"));
}

#[test]
#[ignore = "needs nsqd: run by .ci/run"]
fn the_same_nsq_bytes_against_a_real_nsqd() {
    let (_nsqd, tcp, http) = start_nsqd();
    let (stdout, v) =
        compare(&[&format!("nsq://{tcp}/test"), &format!("nsq+http://{http}/test"), "-n", "3000"]);
    assert_eq!(v["rows"].as_array().unwrap().len(), 3, "{stdout}");
    let pubrow = row(&v, "NSQ TCP PUB");
    assert_eq!(
        (pubrow["derived"]["tx_per_msg"].as_f64(), pubrow["derived"]["rx_per_msg"].as_f64()),
        (Some(wire::nsq_pub("test", 400)), Some(wire::nsq_frame("OK")))
    );
    assert_eq!(
        row(&v, "NSQ TCP MPUB×10")["bytes"]["tx_per_op"].as_f64(),
        Some(wire::nsq_mpub("test", 10, 400))
    );
    assert_eq!(row(&v, "NSQ HTTP /pub")["derived"]["rx_per_msg"].as_f64(), Some(wire::nsqd_pub_ok()));
    assert_eq!(row(&v, "NSQ HTTP /pub")["ops"], 3000, "nsqd answered every message");
}

#[test]
#[ignore = "needs chromium: run by .ci/run"]
fn the_chart_renders_in_a_browser() {
    let dir = std::env::temp_dir().join(format!("wirebench-chart-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let (svg, png) = (dir.join("compare.svg"), dir.join("compare.png"));
    compare(&["-n", "2000", "--svg", svg.to_str().unwrap()]);
    screenshot(&svg, &png);
    let (pixels, size) = pixels(&png);
    assert_eq!(size, (1200, 560));
    // The bars' colours are on screen: payload blue, framing red, speed green.
    for (name, colour) in
        [("payload", [0x4c, 0x78, 0xa8]), ("framing", [0xe4, 0x57, 0x56]), ("speed", [0x54, 0xa2, 0x4b])]
    {
        let count = pixels.iter().filter(|p| near(p, colour)).count();
        assert!(count > 500, "{name} bars: {count} pixels");
    }
    // And text: dark pixels beyond the bars.
    assert!(pixels.iter().filter(|p| p[..3].iter().all(|&v| v < 60)).count() > 1000);
}

#[test]
fn no_keepalive_adds_what_a_new_connection_costs() {
    let (stdout, v) = compare(&["--no-keepalive", "-n", "200", "-c", "2", "--repeat", "2"]);
    assert!(stdout.contains("per new connection"), "{stdout}");
    for r in v["rows"].as_array().unwrap() {
        let label = r["label"].as_str().unwrap();
        assert_eq!(r["connects"], r["ops"], "{label}: one connection per operation");
        assert_eq!(r["repeat"]["runs"].as_array().unwrap().len(), 2, "{label}: --repeat reaches compare");
        let c = &r["derived"]["per_connection"];
        let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{label}: {k} in {c}"));
        // Every byte of the connection is in one of its classes.
        let sum = f("setup_tx") + f("setup_rx") + f("op_tx") + f("op_rx") + f("control_tx") + f("control_rx");
        assert!((f("bytes") - sum).abs() < 1e-6, "{label}: {c}");
        // A TCP connection's life: at least SYN, SYN-ACK, ACK, a request, its answer, FIN, FIN.
        assert!(f("segs") >= 7.0, "{label}: {c}");
        assert!(f("first_op_ms") >= f("connect_ms"), "{label}: the first operation holds its connect");
        // Every protocol here but HTTP/1.1 (and NSQ's HTTP API, which is HTTP/1.1) opens with a
        // set-up of its own: a preface, an upgrade, a CONNECT, an IDENTIFY.
        let none = r["protocol"] == "http1" || r["protocol"] == "nsq-http";
        assert_eq!(f("setup_tx") > 0.0, !none, "{label}: a set-up of its own, or none");
    }
    // HTTP says `Connection: close` both ways, byte for byte.
    let post = row(&v, "HTTP/1.1 POST");
    let host = post["target"].as_str().unwrap().trim_start_matches("http://").trim_end_matches('/');
    let c = &post["derived"]["per_connection"];
    assert_eq!(c["op_tx"].as_f64(), Some(wire::http_request("POST", "/", host, &["Connection: close"], 400)));
    assert_eq!(c["op_rx"].as_f64(), Some(wire::http_response("200 OK", &["Connection: close"], "OK")));
    // The protocols' own set-ups, as counted per connection in the keep-alive table too.
    assert_eq!(row(&v, "WebSocket binary")["derived"]["per_connection"]["setup_tx"], 154.0);
    assert_eq!(row(&v, "NSQ TCP PUB")["derived"]["per_connection"]["setup_rx"], 10.0);
}

#[test]
fn tls_rows_beside_the_plaintext_ones_with_what_tls_costs() {
    let (text, v) = compare(&["--tls", "-n", "600", "--no-keepalive"]);
    assert!(text.contains("what TLS costs"), "{text}");
    assert!(text.contains("per new connection"), "{text}");
    let rows = v["rows"].as_array().unwrap();
    // Every protocol of the registry (HTTP/3 over TLS only), each plaintext row again over TLS.
    assert_eq!(protocols_of(rows), protocols_where(|_| true), "{text}");
    let plain = rows.iter().filter(|r| !r["label"].as_str().unwrap().ends_with(" +TLS")).count();
    let plaintext = protocols_where(cleartext);
    let tls_only = rows.iter().filter(|r| !plaintext.contains(r["protocol"].as_str().unwrap())).count();
    assert_eq!(rows.len(), 2 * plain + tls_only, "{text}");
    // HTTP/3's row: a QUIC connection per request, its datagrams counted.
    let h3 = row(&v, "HTTP/3 POST +TLS");
    assert_eq!(h3["failed"]["total"], 0);
    assert_eq!(h3["connects"], h3["ops"], "a connection per request");
    assert!(h3["datagrams"]["tx"].as_f64().unwrap() >= h3["ops"].as_f64().unwrap() * 2.0, "{h3}");
    assert!(h3["derived"]["per_connection"]["setup_tx"].as_f64().unwrap() >= 1200.0, "the padded Initial");
    for plain in rows.iter().filter(|r| !r["label"].as_str().unwrap().ends_with(" +TLS")) {
        let label = plain["label"].as_str().unwrap();
        let tls = row(&v, &format!("{label} +TLS"));
        assert_eq!(tls["audit"]["match"], true, "{label}");
        assert_eq!(tls["failed"]["total"], 0, "{label}");
        assert_eq!(tls["connection_errors"]["total"], 0, "{label}");
        // Inside TLS the protocol's bytes are the plaintext row's; a record's overhead (22 B in
        // TLS 1.3) is added per record of the operation's — one each way, or more where the
        // operation is several messages (MQTT QoS 2: PUBLISH and PUBREL) — and the handshake
        // per connection.
        let ops = tls["ops"].as_f64().unwrap();
        let msgs = ops * tls["messages_per_op"].as_f64().unwrap_or(1.0);
        let records = tls["tls"]["records_tx"]["op"].as_f64().unwrap();
        assert!(records >= ops, "{label}: {records} records for {ops} operations");
        let plain_tx = tls["tls"]["plain_tx"]["op"].as_f64().unwrap() / msgs;
        assert_eq!(Some(plain_tx), plain["derived"]["tx_per_msg"].as_f64(), "{label}");
        let tx = tls["derived"]["tx_per_msg"].as_f64().unwrap();
        assert!((tx - plain_tx - 22.0 * records / msgs).abs() < 1e-9, "{label}: {tx} − {plain_tx}");
        let full = &tls["tls"]["full"];
        assert_eq!(full["count"], tls["connects"], "{label}: a full handshake per connection");
        assert!(full["rx_each"].as_f64().unwrap() > 500.0, "{label}: the certificate comes in it");
    }
}

#[test]
fn unix_rows_beside_the_tcp_ones_with_what_tcp_ip_costs() {
    let (text, v) = compare(&["--unix", "-n", "400"]);
    assert!(text.contains("what TCP/IP on loopback costs"), "{text}");
    let rows = v["rows"].as_array().unwrap();
    let unix: Vec<serde_json::Value> =
        rows.iter().filter(|r| r["label"].as_str().unwrap().ends_with(" @unix")).cloned().collect();
    // Every built-in server with one listener runs again on a path: all but NSQ's (a TCP and
    // an HTTP port: both its protocols) and QUIC's.
    let mut expected = protocols_where(cleartext);
    expected.remove("nsq");
    expected.remove("nsq-http");
    assert_eq!(protocols_of(&unix), expected, "{text}");
    for u in &unix {
        let label = u["label"].as_str().unwrap();
        let twin = row(&v, label.trim_end_matches(" @unix"));
        assert_eq!(u["ops"], 400, "{label}");
        assert_eq!(twin["ops"], 400, "{label}");
        assert_eq!(u["failed"]["total"], 0, "{label}");
        assert_eq!(u["connection_errors"]["total"], 0, "{label}");
        // No kernel counts for a Unix socket: every byte on sockets said to be Unix ones.
        assert_eq!(u["audit"]["sockets"], 0, "{label}");
        assert_eq!(u["audit"]["match"], false, "{label}");
        assert_eq!(u["audit"]["inexact_tx"], u["bytes"]["tx"], "{label}");
        assert!(u["audit"]["inexact"].as_object().unwrap().keys().all(|k| k.starts_with("Unix")), "{u}");
        assert!(text.lines().any(|l| l.starts_with(label) && l.ends_with("unchecked")), "{label}: {text}");
        // The same bytes per message as over TCP, but for HTTP/1.1's Host header, which names
        // `localhost` there and `127.0.0.1:PORT` here (HTTP/2's HPACK codes it in the first
        // request only, whose bytes the means hold).
        let (tcp, over_unix) =
            (twin["derived"]["tx_per_msg"].as_f64().unwrap(), u["derived"]["tx_per_msg"].as_f64().unwrap());
        if label.starts_with("HTTP/1.1") {
            let port = twin["target"].as_str().unwrap().split(':').nth(2).unwrap().trim_end_matches('/');
            let host = format!("127.0.0.1:{port}");
            assert_eq!(tcp - over_unix, (host.len() - "localhost".len()) as f64, "{label}");
        } else if !label.starts_with("HTTP/2") && !label.starts_with("gRPC") {
            assert_eq!(tcp, over_unix, "{label}");
        }
        assert_eq!(twin["derived"]["rx_per_msg"], u["derived"]["rx_per_msg"], "{label}");
    }
}

#[test]
fn quic_stands_on_the_udp_floor() {
    let (text, v) = compare(&["--tls", "-n", "300"]);
    for label in ["UDP floor", "UDP floor (echo)"] {
        let udp = row(&v, label);
        assert_eq!(udp["ops"], 300, "{label}");
        assert_eq!(udp["failed"]["total"], 0, "{label}");
        // One datagram each way per message, and the set-up's pair.
        let d = &udp["datagrams"];
        assert_eq!(d["tx"].as_u64(), Some(300 + udp["connects"].as_u64().unwrap()), "{label}: {d}");
        assert_eq!(d["rx"], d["tx"], "{label}");
    }
    assert_eq!(row(&v, "UDP floor")["derived"]["rx_per_msg"], 1.0);
    let h3 = row(&v, "HTTP/3 POST +TLS");
    assert_eq!(h3["derived"]["vs_floor"]["floor"], "UDP floor", "{text}");
    assert!(text.contains("QUIC's rows stand on UDP's floor"), "{text}");
}

#[test]
fn your_own_server_on_a_unix_socket() {
    let path = std::env::temp_dir().join(format!("wb-compare-own-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listen = format!("unix:{}", path.display());
    let _server = Peer(
        Command::new(env!("CARGO_BIN_EXE_wirebench"))
            .args(["serve", "http", "--listen", &listen, "-d", "60s", "--cores", &server_cpu().to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&path).is_err() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (_, v) = compare(&["http://localhost/", "--unix-socket", path.to_str().unwrap(), "-n", "200"]);
    let post = row(&v, "HTTP/1.1 POST");
    assert_eq!(post["ops"], 200);
    assert_eq!(post["audit"]["sockets"], 0, "over the Unix socket, not TCP: {post}");
    assert!(post["audit"]["inexact"].as_object().unwrap().keys().all(|k| k.starts_with("Unix")), "{post}");
}
