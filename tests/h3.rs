//! `h3://`: HTTP/3 over QUIC against a real HTTP/3 server no one here wrote — Python's aioquic
//! (`tools/h3-server.py`, installed by `tools/install-peers.sh`) — on the QUIC engine: every
//! request answered, the server's own count equal to ours, the HTTP/3 bytes per request as RFC
//! 9114 and 9204 say by hand, and the UDP bytes set apart from the kernel audit (no per-socket
//! counts) but equal to a packet capture's; and the refusals that need no peer.

mod common;
use common::*;
use std::io::BufRead;
use std::process::Command;

/// GETs and 400-byte POSTs, 4 streams on each of 2 connections: every one answered 200, the
/// server's count ours; the request's HTTP/3 bytes by hand: a HEADERS frame (type and length:
/// 2 octets) of the field section — its 2-octet prefix, `:method` (GET static 17: 0xd1; POST
/// 20: 0xd4) and `:scheme https` (23: 0xd7) indexed, `:authority` a literal of static name 0
/// (0x50, a length octet, the host's Huffman code), `:path /` indexed (1: 0xc1), and for the
/// POST `content-length: 400` (0x54, 0x82, 2 octets) — then a DATA frame (0x00, 0x41 0x90)
/// of the body. The same on the first request of a connection as on the others: no dynamic
/// table. The UDP bytes are set apart in the audit (2 sockets, not checkable).
#[test]
#[ignore = "needs Python's aioquic: run by .ci/run"]
fn requests_against_aioquic_cost_what_rfc_9114_says() {
    let (server, mut out, port, ca) = start_aioquic();
    let cpu = client_cpu().to_string();
    let url = format!("h3://127.0.0.1:{port}/");
    let authority = format!("127.0.0.1:{port}");
    let host = wirebench::proto::h2::huffman::encoded_len(authority.as_bytes()) as u64;
    for (extra, section, data) in
        [(&[][..], 7 + host, 0), (&["-m", "POST", "--size", "400"][..], 11 + host, 403)]
    {
        let args = [
            &[url.as_str(), "--ca", &ca, "-c", "2", "--depth", "4", "-n", "2000", "--cores", &cpu][..],
            extra,
        ]
        .concat();
        let r = bench(&args);
        assert_accounted(&r);
        assert_eq!(r.errors_total(), 0, "{:?} {:?}", r.failed, r.error_samples);
        assert_eq!((r.ops, r.connects), (2000, 2));
        assert_eq!(r.answers.sorted(), [(wirebench::outcome::Answer::status(200), 2000)]);
        let l = r.layers.expect("HTTP/3 counts its layers");
        assert_eq!((l.first.ops, l.steady.ops), (2, 1998));
        for kind in [l.first, l.steady] {
            assert_eq!(kind.tx.headers, kind.ops * section, "{extra:?}");
            assert_eq!(kind.tx.framing + kind.tx.payload, kind.ops * (2 + data), "{extra:?}");
            assert_eq!(kind.rx.payload, kind.ops * if extra.is_empty() { 11 } else { 2 }, "{extra:?}");
        }
        assert_eq!(r.audit.inexact.get(&wirebench::stats::Inexact::Udp), Some(&2));
        assert_eq!((r.audit.inexact_tx, r.audit.inexact_rx), (r.tx.total(), r.rx.total()));
    }
    drop(server); // SIGTERM: it prints its count
    let mut count = String::new();
    out.read_line(&mut count).unwrap();
    assert_eq!(count.trim(), "requests 4000", "the server's own count");
}

/// quic-go's HTTP/3 server (`tools/h3-go`, built by `tools/install-peers.sh` from the Go
/// module proxy): GETs and 1 MiB POSTs (past its flow-control windows) answered, its own count
/// ours; the request bytes the same as against aioquic (they depend on the request alone).
#[test]
#[ignore = "needs tools/bin/h3-go: run by .ci/run"]
fn requests_against_quic_go_are_answered_and_counted() {
    let (cert, key) = h3_cert_files("quic-go");
    let port = free_port();
    let binary = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/bin/h3-go");
    let mut child = Command::new(&binary)
        .args([&port.to_string(), cert.to_str().unwrap(), key.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tools/bin/h3-go is built (tools/install-peers.sh)");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let server = Peer(child);
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), format!("listening {port}"));
    let cpu = client_cpu().to_string();
    let url = format!("h3://127.0.0.1:{port}/");
    let ca = cert.display().to_string();
    let authority = format!("127.0.0.1:{port}");
    let host = wirebench::proto::h2::huffman::encoded_len(authority.as_bytes()) as u64;
    for (extra, n) in [(&[][..], 5000u64), (&["-m", "POST", "--size", "1048576"][..], 32)] {
        let n_text = n.to_string();
        let args = [
            &[url.as_str(), "--ca", &ca, "-c", "2", "--depth", "4", "-n", &n_text, "--cores", &cpu][..],
            extra,
        ]
        .concat();
        let r = bench(&args);
        assert_accounted(&r);
        assert_eq!(r.errors_total(), 0, "{extra:?}: {:?} {:?}", r.failed, r.error_samples);
        assert_eq!(r.answers.sorted(), [(wirebench::outcome::Answer::status(200), n)]);
        if extra.is_empty() {
            let l = r.layers.unwrap();
            assert_eq!(l.steady.tx.headers, l.steady.ops * (7 + host));
        }
    }
    drop(server);
    let mut count = String::new();
    out.read_line(&mut count).unwrap();
    assert_eq!(count.trim(), "requests 5032", "the server's own count");
}

/// Nothing listening on the UDP port: one line, exit status 2, at once (the ICMP "port
/// unreachable" comes back on the pre-flight's connected socket); and what the QUIC engine
/// does not do yet is refused before the run, one line each.
#[test]
fn h3_refusals_are_one_line_and_exit_status_2() {
    let port = free_port();
    let url = format!("h3://127.0.0.1:{port}/");
    let started = std::time::Instant::now();
    for (args, says) in [
        (vec![url.as_str(), "-d", "1s"], "UDP port unreachable"),
        (vec![url.as_str(), "--tls-version", "1.2", "-d", "1s"], "h3:// is TLS 1.3 only"),
        (vec![&url.replace("h3://", "https://"), "--http3", "-d", "1s"], "UDP port unreachable"),
        (
            vec![&url.replace("h3://", "http://"), "--http3", "-d", "1s"],
            "--http3 speaks HTTP/3 to https:// URLs",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_wirebench")).arg("bench").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(started.elapsed().as_secs() < 4, "{:?}", started.elapsed());
}

/// `serve h3` in this process (its self-signed certificate written for `--ca`): the server,
/// its `h3://` URL and the certificate's path.
fn serve_h3() -> (wirebench::cmd::serve::Started, String, String) {
    let started = serve_started("uring", "h3", &[]);
    let ca = std::env::temp_dir().join(format!("wirebench-h3-serve-{}.pem", started.handle.addr().port()));
    std::fs::write(&ca, &started.tls.as_ref().unwrap().cert_pem).unwrap();
    let url = started.urls.concat()[0].clone();
    (started, url, ca.display().to_string())
}

/// Datagrams the machine's UDP receive buffers dropped so far (`/proc/net/snmp`).
fn udp_receive_drops() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let at = names.split_whitespace().position(|n| n == "RcvbufErrors").unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

/// `serve h3` under `bench h3://`, in one process: GETs, 400-byte POSTs and 1 MiB POSTs (past
/// QUIC's flow-control windows) all answered; the server's own count and bytes against the
/// client's: every byte the client sent (its pre-flight's too) the server received, and the
/// server sent at least what the client read (after a connection's close, what the server
/// still sends is never read); a run of the default shape ends on time.
#[test]
fn serve_h3_answers_every_request_and_reads_every_byte() {
    let cpu = client_cpu().to_string();
    for (extra, n) in [
        (&[][..], 20_000u64),
        (&["-m", "POST", "--size", "400"][..], 20_000),
        (&["-m", "POST", "--size", "1048576"][..], 32),
    ] {
        let (started, url, ca) = serve_h3();
        let n_text = n.to_string();
        let args = [
            &[url.as_str(), "--ca", &ca, "-c", "4", "--depth", "8", "-n", &n_text, "--cores", &cpu][..],
            extra,
        ]
        .concat();
        let drops_before = udp_receive_drops();
        let r = bench(&args);
        assert_accounted(&r);
        assert_eq!(r.errors_total(), 0, "{extra:?}: {:?} {:?}", r.failed, r.error_samples);
        assert_eq!(r.ops, n, "{extra:?}");
        let served = ServerTally::sum(&started.handle.stop().unwrap());
        assert_eq!(served.requests, n, "{extra:?}: the server's count");
        assert_eq!(served.connections, 4 + 1, "{extra:?}: and the pre-flight's");
        // Every byte sent was received, but for datagrams a full receive buffer dropped (the
        // kernel counts them: UDP RcvbufErrors; QUIC sent them again, counted again).
        let sent = r.tx.total() + r.preflight.tx;
        match udp_receive_drops() - drops_before {
            0 => assert_eq!(served.rx, sent, "{extra:?}: every byte sent was received"),
            drops => {
                assert!(served.rx < sent && sent - served.rx <= drops * 1500, "{extra:?}: {drops} drops")
            }
        }
        assert!(served.tx >= r.rx.total() + r.preflight.rx, "{extra:?}: {} < {}", served.tx, r.rx.total());
        assert!(
            served.tx - (r.rx.total() + r.preflight.rx) <= 5 * 1500,
            "{extra:?}: {} vs {}",
            served.tx,
            r.rx.total()
        );
        // The machine's UDP counts over the run: every datagram either side sent was delivered
        // or dropped at a full buffer; InDatagrams counts a receive once, and a GRO receive
        // holds at most 64 datagrams (the kernel's UDP_MAX_SEGMENTS).
        let net = r.net.expect("/proc/net/snmp is readable");
        assert!(
            64 * (net.udp_in + net.udp_drops) >= r.datagrams.tx + r.datagrams.rx,
            "{net:?} {:?}",
            r.datagrams
        );
    }
    // `--requests`: two kinds, one twice as often, in order: counted per kind, the server's
    // count the sum.
    let (started, url, ca) = serve_h3();
    let file = std::env::temp_dir().join(format!("wirebench-h3-requests-{}.jsonl", std::process::id()));
    std::fs::write(
        &file,
        "{\"path\":\"/a\"}\n{\"method\":\"POST\",\"path\":\"/b\",\"body\":\"xyz\",\"weight\":2}\n",
    )
    .unwrap();
    let args = [&url, "--ca", &ca, "-c", "2", "--depth", "4", "-n", "3000", "--cores", &cpu];
    let r = bench(&[&args[..], &["--requests", file.to_str().unwrap()]].concat());
    assert_accounted(&r);
    assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
    assert_eq!(r.kinds.iter().map(|k| k.ops).collect::<Vec<_>>(), [1000, 2000]);
    assert_eq!(ServerTally::sum(&started.handle.stop().unwrap()).requests, 3000);
    // `--no-keepalive`: a QUIC connection per request, each with its handshake, none counted
    // as a reconnect; the server accepted each.
    let (started, url, ca) = serve_h3();
    let r = bench(&[&url, "--ca", &ca, "-c", "2", "-n", "200", "--no-keepalive", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
    assert_eq!((r.ops, r.connects, r.reconnects), (200, 200, 0));
    // Each connection's handshake: the client's Initial datagrams padded to 1,200 bytes.
    assert!(r.tx.handshake >= 200 * 1200, "{}", r.tx.handshake);
    let served = ServerTally::sum(&started.handle.stop().unwrap());
    assert_eq!((served.requests, served.connections), (200, 201));
    // `--rate 2000` over 4 connections for 1 s: about 2,000 requests, each on its schedule
    // (the lag recorded), none lost.
    let (started, url, ca) = serve_h3();
    let r = bench(&[&url, "--ca", &ca, "-c", "4", "--rate", "2000", "-d", "1s", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
    assert!((1800..=2100).contains(&r.ops), "{} requests at 2,000/s for 1 s", r.ops);
    assert!(!r.schedule_lag.is_empty(), "the lag is recorded");
    started.handle.stop().unwrap();
    // The default duration (no -n): ends on time. (Aimed as oha is: `https://` and `--http3`.)
    let (started, url, ca) = serve_h3();
    let wall = std::time::Instant::now();
    let https = url.replace("h3://", "https://");
    let r = bench(&[&https, "--http3", "--ca", &ca, "-c", "2", "-d", "1s", "--cores", &cpu]);
    assert_accounted(&r);
    assert!(r.ops > 0 && r.errors_total() == 0, "{:?}", r.error_samples);
    assert!(wall.elapsed().as_secs_f64() < 4.0, "{:?}", wall.elapsed());
    assert!((r.elapsed.as_secs_f64() - 1.0).abs() < 0.2, "{:?}", r.elapsed);
    let served = ServerTally::sum(&started.handle.stop().unwrap());
    assert_eq!(served.requests, r.ops + r.tx.warmup_op, "every request the server answered was counted");
}

/// `--connect-rate` paces QUIC's handshakes as it does TCP's connects (the QUIC engine
/// ignored it: 2,000 handshakes offered at once to a debug server that answers ~280 a second
/// timed out and were tried again, 24,630 of them in a minute). At 20 a second, 10
/// connections: the last opens 450 ms after the start and the window waits for it. With
/// `auto:100`, the core's opener takes them in turn at its rate.
#[test]
fn connect_rate_paces_quic_handshakes() {
    let cpu = client_cpu().to_string();
    let (started, url, ca) = serve_h3();
    let r = bench(&[&url, "--ca", &ca, "-c", "10", "--connect-rate", "20", "-d", "300ms", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!((r.errors_total(), r.connects), (0, 10), "{:?}", r.error_samples);
    let set_up = r.set_up_in.expect("the window waited for the connections");
    assert!(set_up >= std::time::Duration::from_millis(450), "all set up after {set_up:?}");
    assert!(set_up < std::time::Duration::from_secs(3), "{set_up:?}");
    assert_eq!(r.tx.warmup_op, 0, "the first connections waited for the last");
    let r =
        bench(&[&url, "--ca", &ca, "-c", "50", "--connect-rate", "auto:100", "-d", "300ms", "--cores", &cpu]);
    assert_accounted(&r);
    assert_eq!((r.errors_total(), r.connects), (0, 50), "{:?}", r.error_samples);
    // 50 at the opener's rate, capped at 100 a second: the last opens at 490 ms.
    let set_up = r.set_up_in.expect("the window waited for the connections");
    assert!(set_up >= std::time::Duration::from_millis(450), "all set up after {set_up:?}");
    let o = r.openers.expect("the opener's figures");
    assert_eq!(o.peak, 100.0, "{o:?}");
    let _ = started.handle.stop();
}
