//! The bytes the tool says it wrote and read, against a packet capture: `tcpdump` records
//! loopback while `bench` runs HTTP/2 (h2c, and over TLS), gRPC and HTTP/1.1 against the
//! built-in servers, and HTTP/3 against aioquic, and the TCP (UDP) payload it captured each way
//! (parsed here from the pcap file: link, IPv4 and TCP or UDP headers by their own length
//! fields) equals the report's totals.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

/// TCP payload octets in a pcap file (loopback: Ethernet link type) each way for `port`: (to
/// it, from it), by the flows' own sequence numbers — each
/// flow's highest octet past its SYN, less the SYN and FIN each take — so a segment sent twice
/// (loopback retransmits too, when a receiver's window shuts under 1 MiB bodies) counts once,
/// as the sender's byte counts do. The captured segments' lengths must cover at least that.
/// Only the headers need be captured (`-s`): lengths come from IPv4's own field.
fn tcp_payload(pcap: &Path, port: u16) -> (u64, u64) {
    let bytes = std::fs::read(pcap).unwrap();
    assert!(bytes.len() >= 24, "a pcap file's header");
    let magic = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
    assert!(magic == 0xa1b2c3d4 || magic == 0xa1b23c4d, "little-endian pcap: {magic:x}");
    assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 1, "Ethernet link type");
    /// A flow's initial sequence number, the highest end seen past it, a FIN seen, and the
    /// lengths of its segments summed.
    #[derive(Default)]
    struct Flow {
        isn: Option<u32>,
        end: u32,
        fin: bool,
        segments: u64,
    }
    let mut flows: std::collections::HashMap<(u16, u16), Flow> = std::collections::HashMap::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let captured = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &bytes[at + 16..(at + 16 + captured).min(bytes.len())];
        at += 16 + captured;
        // Ethernet (14), IPv4 only (loopback here is 127.0.0.1).
        if frame.len() < 14 + 20 || frame[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ip[9] != 6 || ip.len() < ihl + 20 {
            continue; // not TCP
        }
        let tcp = &ip[ihl..];
        let (src, dst) = (u16::from_be_bytes([tcp[0], tcp[1]]), u16::from_be_bytes([tcp[2], tcp[3]]));
        let len = (total - ihl - usize::from(tcp[12] >> 4) * 4) as u32;
        let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
        let (syn, fin) = (tcp[13] & 0x02 != 0, tcp[13] & 0x01 != 0);
        let flow = flows.entry((src, dst)).or_default();
        if syn {
            flow.isn = Some(seq);
        }
        let Some(isn) = flow.isn else { panic!("a segment of {src} > {dst} before its SYN") };
        // Offsets from the SYN, modulo 2^32 (a flow here carries far less than 2 GiB).
        let end = seq.wrapping_sub(isn) + u32::from(syn) + len + u32::from(fin);
        flow.end = flow.end.max(end);
        flow.fin |= fin;
        flow.segments += u64::from(len);
    }
    let (mut to, mut from) = (0u64, 0u64);
    for ((src, dst), f) in &flows {
        let payload = u64::from(f.end.saturating_sub(1 + u32::from(f.fin)));
        assert!(f.segments >= payload, "{src} > {dst}: segments {} short of {payload}", f.segments);
        if *dst == port {
            to += payload;
        } else if *src == port {
            from += payload;
        }
    }
    (to, from)
}

/// UDP payload octets in a pcap file for `port`: to it, from it before the client's last
/// datagram on that flow (its CONNECTION_CLOSE), and from it after (what the client, gone,
/// never read); and datagrams each way.
fn udp_payload(pcap: &Path, port: u16) -> ((u64, u64, u64), (u64, u64)) {
    let bytes = std::fs::read(pcap).unwrap();
    // Every datagram of the port's flows, in order: (client port, to the server, payload).
    let mut seen: Vec<(u16, bool, u64)> = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let captured = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &bytes[at + 16..(at + 16 + captured).min(bytes.len())];
        at += 16 + captured;
        if frame.len() < 14 + 20 + 8 || frame[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = u64::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ip[9] != 17 {
            continue; // not UDP
        }
        let udp = &ip[ihl..];
        let (src, dst) = (u16::from_be_bytes([udp[0], udp[1]]), u16::from_be_bytes([udp[2], udp[3]]));
        let payload = total - ihl as u64 - 8;
        if dst == port {
            seen.push((src, true, payload));
        } else if src == port {
            seen.push((dst, false, payload));
        }
    }
    let last_out = |client: u16| seen.iter().rposition(|&(c, out, _)| c == client && out);
    let (mut to, mut from, mut after, mut out, mut back) = (0, 0, 0, 0, 0);
    for (i, &(client, outgoing, n)) in seen.iter().enumerate() {
        if outgoing {
            (to, out) = (to + n, out + 1);
        } else if last_out(client).is_some_and(|last| i > last) {
            after += n;
        } else {
            (from, back) = (from + n, back + 1);
        }
    }
    ((to, from, after), (out, back))
}

/// `tcpdump` on loopback for `port`, writing `pcap`, until dropped (SIGTERM: it flushes).
/// `--immediate-mode`: each packet handed over as it comes, not when a buffer block fills
/// (what a block held at SIGTERM would be lost).
fn capture(pcap: &Path, port: u16) -> Peer {
    let tcpdump = which("tcpdump").expect("tcpdump is installed (tools/install-peers.sh)");
    let log = pcap.with_extension("log");
    let child = Command::new(tcpdump)
        .args(["-i", "lo", "-s", "128", "-B", "65536", "--immediate-mode", "-U", "-n", "-w"])
        .arg(pcap)
        .args(["port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let peer = Peer(child);
    // It says "listening on lo" once it captures.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("listening on") {
        assert!(std::time::Instant::now() < deadline, "tcpdump did not start: {log:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    peer
}

/// Stop the capture once what it saw is written (the last packets first reach its file), and
/// make sure it dropped none.
fn stop(tcpdump: Peer, pcap: &Path) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(tcpdump);
    let log = std::fs::read_to_string(pcap.with_extension("log")).unwrap();
    assert!(
        log.lines().any(|l| l.trim() == "0 packets dropped by kernel"),
        "the capture lost packets: {log}"
    );
}

#[test]
#[ignore = "needs tcpdump: run by .ci/run"]
fn the_reported_bytes_are_the_captured_tcp_payload() {
    let cpu = client_cpu().to_string();
    let dir = std::env::temp_dir().join(format!("wirebench-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain_h2 = serve_started("uring", "h2", &[]);
    let tls_h2 = serve_started("uring", "h2", &["--tls"]);
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &tls_h2.tls.as_ref().unwrap().cert_pem).unwrap();
    let ca = ca.display().to_string();
    let http = start_builtin("http");
    let cases = [
        (
            "h2c",
            format!("h2c://{}/", plain_h2.handle.addr()),
            vec!["-m", "POST", "--size", "400", "-n", "400"],
        ),
        // 1 MiB bodies, each sent as the server grants room: fewer, so the capture keeps up.
        (
            "h2c 1 MiB",
            format!("h2c://{}/", plain_h2.handle.addr()),
            vec!["-m", "POST", "--size", "1048576", "-n", "24"],
        ),
        (
            "grpc",
            format!("grpc://{}/x.Echo/Call", plain_h2.handle.addr()),
            vec!["--size", "400", "-n", "400"],
        ),
        (
            "h2 TLS",
            format!("h2://localhost:{}/", tls_h2.handle.addr().port()),
            vec!["--ca", &ca, "-n", "400"],
        ),
        ("http1", format!("http://{}/", http.addr()), vec!["-m", "POST", "--size", "400", "-n", "400"]),
    ];
    for (name, url, extra) in cases {
        let port: u16 = url.split(':').nth(2).unwrap().split('/').next().unwrap().parse().unwrap();
        let pcap = dir.join(format!("{}.pcap", name.replace(' ', "-")));
        let tcpdump = capture(&pcap, port);
        let args = [&[url.as_str(), "-c", "2", "--depth", "4", "--cores", &cpu][..], &extra].concat();
        let r = bench_on("uring", &args);
        assert_clean(&r);
        stop(tcpdump, &pcap);
        let (to, from) = tcp_payload(&pcap, port);
        // The pre-flight's bytes are on the wire too (a TLS handshake), counted apart.
        let (tx, rx) = (r.tx.total() + r.preflight.tx, r.rx.total() + r.preflight.rx);
        assert_eq!(to, tx, "{name}: the capture's TCP payload to the server and the report's");
        // Over TLS the server answers the client's close_notify with its own (24 bytes: a
        // 5-byte header, 2 of alert, 17 of AEAD), which the client, closing without waiting
        // for it, never reads (its kernel resets the connection when it comes): on the wire,
        // not in the figures.
        let unread = from.checked_sub(rx).expect("the capture has every byte the client read");
        let tls = name.contains("TLS");
        let conns = r.connects + r.preflight.connections;
        assert!(
            if tls { unread % 24 == 0 && unread <= 24 * conns } else { unread == 0 },
            "{name}: the capture's TCP payload from the server {from}, the report's {rx}"
        );
        eprintln!("{name}: captured {to} bytes out and {from} in; the report: {tx} and {rx}");
    }
}

/// HTTP/3 against aioquic: the UDP payload each way in the capture equals the report's totals
/// (the pre-flight's QUIC handshake included); from the server, up to each connection's
/// CONNECTION_CLOSE (after it the client reads no more).
#[test]
#[ignore = "needs tcpdump and Python's aioquic: run by .ci/run"]
fn the_reported_quic_bytes_are_the_captured_udp_payload() {
    let (_server, _out, port, ca) = start_aioquic();
    let dir = std::env::temp_dir().join(format!("wirebench-capture-h3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpu = client_cpu().to_string();
    let url = format!("h3://127.0.0.1:{port}/");
    for (name, extra) in [("h3-get", vec![]), ("h3-post", vec!["-m", "POST", "--size", "400"])] {
        let pcap = dir.join(format!("{name}.pcap"));
        let tcpdump = capture(&pcap, port);
        let args = [
            &[url.as_str(), "--ca", &ca, "-c", "2", "--depth", "4", "-n", "1000", "--cores", &cpu][..],
            &extra,
        ]
        .concat();
        let r = bench_on("uring", &args);
        assert_accounted(&r);
        assert_eq!(r.errors_total(), 0, "{:?}", r.error_samples);
        stop(tcpdump, &pcap);
        let ((to, from, after), (out, back)) = udp_payload(&pcap, port);
        let (tx, rx) = (r.tx.total() + r.preflight.tx, r.rx.total() + r.preflight.rx);
        assert_eq!(
            (to, from),
            (tx, rx),
            "{name}: the capture's UDP payload (to, from the server) and the report's"
        );
        // After a connection's CONNECTION_CLOSE the server may still send (its own close, an
        // ACK): on the wire, never read by a client that is gone. A few datagrams' worth.
        assert!(after <= 3 * 1500, "{name}: {after} bytes from the server after the client closed");
        eprintln!(
            "{name}: captured {to} bytes in {out} datagrams out, {from} in {back} in (and {after} after the close); the report: {tx} and {rx}"
        );
    }
}
