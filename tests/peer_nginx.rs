//! `bench` against a real nginx (installed and found by `.ci/run`; `cargo test -- --ignored`).

mod common;
use common::*;
use std::io::{Read, Write};
use wirebench::proto::http1::{Http1Client, RequestSpec};
use wirebench::proto::{ClientCodec, Decoded};

/// One request over a plain socket; the exact length of nginx's response to it.
fn response_len(addr: std::net::SocketAddr, method: &str, body: usize) -> usize {
    let spec = RequestSpec {
        method: method.into(),
        host: addr.to_string(),
        target: "/".into(),
        headers: vec![],
        body: vec![b'x'; body],
    };
    let mut codec = Http1Client::new(&spec);
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(codec.request()).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    for _ in 0..100 {
        let n = s.read(&mut chunk).unwrap();
        buf.extend_from_slice(&chunk[..n]);
        if let Decoded::Done { consumed, .. } = codec.decode_op(&buf, &mut Vec::new()).unwrap() {
            assert_eq!(consumed, buf.len());
            return consumed;
        }
        assert!(n > 0, "nginx closed early");
    }
    panic!("no whole response from nginx");
}

#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_get_and_post_bytes_per_op_match_its_responses() {
    let (_nginx, addr) = start_nginx();
    let url = format!("http://{addr}/");
    let cpu = client_cpu().to_string();
    for (method, size) in [("GET", 0usize), ("POST", 400)] {
        let expected_rx = response_len(addr, method, size);
        let size_arg = size.to_string();
        let mut args = vec![url.as_str(), "-c", "16", "-n", "20000", "--cores", &cpu, "-m", method];
        if size > 0 {
            args.extend(["--size", &size_arg]);
        }
        let r = bench(&args);
        assert_clean(&r);
        assert_eq!(r.ops, 20000);
        assert_eq!(r.rx_per_op(), expected_rx as f64, "{method}: nginx's response is {expected_rx} bytes");
        let request = Http1Client::new(&RequestSpec {
            method: method.into(),
            host: addr.to_string(),
            target: "/".into(),
            headers: vec![],
            body: vec![b'x'; size],
        });
        assert_eq!(r.tx_per_op(), request.request().len() as f64);
    }
}

#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_pipelined_requests() {
    let (_nginx, addr) = start_nginx();
    let expected_rx = response_len(addr, "GET", 0);
    let r = bench(&[
        &format!("http://{addr}/"),
        "-c",
        "8",
        "--depth",
        "16",
        "-n",
        "50000",
        "--cores",
        &client_cpu().to_string(),
    ]);
    assert_clean(&r);
    assert_eq!(r.ops, 50000);
    assert_eq!(r.rx_per_op(), expected_rx as f64);
}

/// `--requests`: nginx's access log shows every request as the file gives it, in the
/// proportion it gives, each of the length the report says it wrote (nginx's
/// `$request_length` leaves out a body it discards: its head, plus its `Content-Length`).
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn requests_from_a_file_arrive_as_written_in_their_proportion() {
    let dir = std::env::temp_dir().join(format!("wirebench-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("access.log");
    let _ = std::fs::remove_file(&log);
    std::fs::write(dir.join("up.bin"), vec![b'u'; 1000]).unwrap();
    let file = dir.join("requests.jsonl");
    std::fs::write(
        &file,
        "# four kinds, one twice as often\n\
         {\"path\":\"/a?x=1\"}\n\
         {\"method\":\"POST\",\"path\":\"/b\",\"headers\":{\"Content-Type\":\"application/json\"},\"body\":\"{\\\"k\\\":1}\",\"weight\":2}\n\
         {\"method\":\"HEAD\",\"path\":\"/c\"}\n\
         {\"method\":\"PUT\",\"path\":\"/up\",\"body_file\":\"up.bin\",\"label\":\"upload\"}\n",
    )
    .unwrap();
    let (nginx, addr) = start_nginx_conf(
        "log_format wb '$request|$status|$request_length|$http_content_type|$http_content_length';",
        "",
        &format!("access_log {} wb;", log.display()),
    );
    let url = format!("http://{addr}/");
    let cpu = client_cpu().to_string();
    let file_arg = file.to_string_lossy().to_string();
    // In order, 6,000 operations over 4 connections are 300 cycles of 5 each: exactly 1:2:1:1.
    let r = bench(&[&url, "-c", "4", "-n", "6000", "--cores", &cpu, "--requests", &file_arg]);
    assert_clean(&r);
    assert_eq!(r.kinds.iter().map(|k| k.ops).collect::<Vec<_>>(), [1200, 2400, 1200, 1200]);
    let first = r.kinds.iter().map(|k| k.tx / k.ops).collect::<Vec<_>>();
    // At random: the proportion within a few per cent, and nginx counts what the report does.
    let r2 = bench(&[
        &url,
        "-c",
        "4",
        "-n",
        "20000",
        "--cores",
        &cpu,
        "--requests",
        &file_arg,
        "--order",
        "random",
    ]);
    assert_clean(&r2);
    for (k, share) in r2.kinds.iter().zip([0.2, 0.4, 0.2, 0.2]) {
        assert!((k.ops as f64 / 20000.0 - share).abs() < 0.1 * share, "{:?}", r2.kinds);
    }
    drop(nginx); // its log is written whole once it has stopped
    let text = std::fs::read_to_string(&log).unwrap();
    let mut seen: std::collections::BTreeMap<(String, String, u64, String), u64> = Default::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 5, "{line}");
        let length = f[2].parse::<u64>().unwrap() + f[4].parse::<u64>().unwrap_or(0);
        *seen.entry((f[0].into(), f[1].into(), length, f[3].into())).or_default() += 1;
    }
    let want = [
        ("GET /a?x=1 HTTP/1.1", "-", 1200 + r2.kinds[0].ops),
        ("POST /b HTTP/1.1", "application/json", 2400 + r2.kinds[1].ops),
        ("HEAD /c HTTP/1.1", "-", 1200 + r2.kinds[2].ops),
        ("PUT /up HTTP/1.1", "-", 1200 + r2.kinds[3].ops),
    ];
    assert_eq!(seen.len(), 4, "{seen:?}");
    for ((request, content_type, n), tx) in want.into_iter().zip(first) {
        let key = (request.to_string(), "200".to_string(), tx, content_type.to_string());
        assert_eq!(seen.get(&key), Some(&n), "{key:?} in {seen:?}");
    }
}

/// `h2c://` against nginx's HTTP/2 (cleartext, prior knowledge) on every engine: streams are
/// operations, 8 in flight per connection, every one answered; each connection's first
/// request carries its headers into HPACK's dynamic table and the others index them, so the
/// request bytes are 4 first ones and 19,996 steady ones, exactly, as the codec encodes them.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_http2_streams_on_every_engine_cost_the_first_request_then_the_steady_state() {
    use wirebench::proto::h2::client::{H2Client, RequestSpec};
    let (_nginx, addr) = start_nginx_with("http2", "");
    let spec = RequestSpec {
        grpc: false,
        method: "GET".into(),
        scheme: "http",
        authority: addr.to_string(),
        path: "/".into(),
        headers: vec![],
        body: vec![],
    };
    let mut codec = H2Client::new(&spec, true);
    let (mut first, mut steady) = (Vec::new(), Vec::new());
    codec.encode_op(0, &mut first);
    codec.encode_op(0, &mut steady);
    assert!(first.len() > steady.len(), "{} then {}", first.len(), steady.len());
    let url = format!("h2c://{addr}/");
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "-c", "4", "--depth", "8", "-n", "20000", "--cores", &cpu]);
        assert_clean(&r);
        assert_eq!((r.ops, r.connects), (20000, 4), "{engine}");
        assert_eq!(r.tx.op, (4 * first.len() + 19_996 * steady.len()) as u64, "{engine}");
        assert_eq!(r.answers.sorted(), vec![(wirebench::outcome::Answer::status(200), 20000)], "{engine}");
    }
}

/// 1 MiB POSTs over h2c to nginx, whose stream windows start at 65,535 (its
/// `http2_body_preread_size` is 64k), proxied to the built-in `serve http` (so nginx reads
/// each body whole before it answers): each body goes out as nginx grants room, on every
/// engine; every one answered, the kernel's counts equal to the report's, each request more
/// than its body and a frame header (nginx takes frames up to 2^24-1 octets: its
/// SETTINGS_MAX_FRAME_SIZE), and the backend got every body.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_http2_takes_mebibyte_posts_under_its_flow_control_on_every_engine() {
    let backend = start_builtin("http");
    let server = format!("client_max_body_size 2m; location /up {{ proxy_pass http://{}; }}", backend.addr());
    let (_nginx, addr) = start_nginx_with("http2", &server);
    let url = format!("h2c://{addr}/up");
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let r = bench_on(
            engine,
            &[
                &url, "-m", "POST", "--size", "1048576", "-c", "2", "--depth", "4", "-n", "64", "--cores",
                &cpu,
            ],
        );
        assert_clean(&r);
        assert_eq!(r.ops, 64, "{engine}");
        assert_eq!(r.answers.sorted(), vec![(wirebench::outcome::Answer::status(200), 64)], "{engine}");
        assert!(r.tx_per_op() > (1_048_576 + 9) as f64, "{engine}: {}", r.tx_per_op());
    }
    let served = ServerTally::sum(&backend.stop().unwrap());
    assert_eq!(served.requests, 3 * 64);
    assert!(served.rx >= 3 * 64 * 1_048_576, "{}", served.rx);
}

/// `--proxy-protocol` against nginx `listen … proxy_protocol`, which reads the header and
/// answers `/who` with the client it claims: each version taken (a longer claimed address, a
/// longer answer), its bytes set-up (the header's exact length per connection), the
/// operations' bytes as without it; without a header nginx refuses every connection.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_behind_a_proxy_takes_our_proxy_header() {
    let (_nginx, addr) =
        start_nginx_with("proxy_protocol", "location /who { return 200 \"$proxy_protocol_addr\"; }");
    let url = format!("http://{addr}/who");
    let cpu = client_cpu().to_string();
    for version in ["v1", "v2"] {
        let run = |source: &str| {
            let r = bench(&[
                &url,
                "-c",
                "2",
                "-n",
                "200",
                "--proxy-protocol",
                version,
                "--proxy-source",
                source,
                "--cores",
                &cpu,
            ]);
            assert_clean(&r);
            assert_eq!(r.ops, 200, "{version}");
            r
        };
        // Three more characters of address, and a Content-Length of two digits (11) for one (8).
        let (short, long) = (run("10.1.2.3"), run("10.20.30.40"));
        assert_eq!(
            long.rx_per_op() - short.rx_per_op(),
            4.0,
            "{version}: nginx answered the address claimed"
        );
        let v = if version == "v1" {
            wirebench::proxy_header::ProxyVersion::V1
        } else {
            wirebench::proxy_header::ProxyVersion::V2
        };
        let header =
            wirebench::proxy_header::header(v, Some("10.1.2.3".parse().unwrap()), addr, 0).len() as u64;
        // v1's length varies with the claimed port's digits (1024, 1025: the same here).
        assert_eq!(short.tx.handshake, header * short.connects, "{version}: the header is set-up");
    }
    let r = bench(&[&url, "-c", "1", "-n", "10", "--timeout", "1s", "--cores", &cpu]);
    assert_eq!(r.ops, 0, "without a header nginx takes nothing");
}

/// The same over TLS (`listen … ssl proxy_protocol`): the header goes before the ClientHello,
/// the pre-flight's handshake included, and stays out of the TLS records.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_behind_a_proxy_over_tls_takes_the_header_before_the_handshake() {
    let (cert, key) = h3_cert_files("nginx-proxy");
    let server = format!(
        "ssl_certificate {}; ssl_certificate_key {}; location /who {{ return 200 \"$proxy_protocol_addr\"; }}",
        cert.display(),
        key.display()
    );
    let (_nginx, addr) = start_nginx_with("ssl proxy_protocol", &server);
    let url = format!("https://{addr}/who");
    let cpu = client_cpu().to_string();
    let ca = cert.display().to_string();
    for version in ["v1", "v2"] {
        let r =
            bench(&[&url, "-c", "2", "-n", "100", "--ca", &ca, "--proxy-protocol", version, "--cores", &cpu]);
        assert_clean(&r);
        assert_eq!(r.ops, 100, "{version}");
        assert!(r.tls.used(), "{version}: TLS after the header");
    }
}
