//! Truth under faults. Every client engine against a misbehaving server, every server engine
//! against a misbehaving client. Each run must end on time (its duration plus two seconds),
//! account for every operation (sent = completed + failed), keep the kernel audit true on every
//! socket whose count could be read, and never panic; each server must still serve a normal
//! client afterwards.

use super::common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use wirebench::outcome::ErrorClass;
use wirebench::stats::Report;

// ---------------------------------------------------------------------------------------------
// Misbehaving servers (one thread per connection, bounded in count and time).

/// A listener whose every connection is handed to `behave` on its own thread.
fn fault_server(behave: fn(TcpStream)) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(5_000) {
            let Ok(s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
            std::thread::spawn(move || behave(s));
        }
    });
    addr
}

/// Read one request (whatever arrives first); `false` if the client closed.
fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64 * 1024];
    matches!(s.read(&mut buf), Ok(n) if n > 0)
}

const HALF: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly half of it";

fn reset_mid_response(mut s: TcpStream) {
    if read_request(&mut s) {
        let _ = s.write_all(HALF);
        std::thread::sleep(Duration::from_millis(20));
        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    }
}

fn half_then_stall(mut s: TcpStream) {
    if read_request(&mut s) {
        let _ = s.write_all(HALF);
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn half_then_close(mut s: TcpStream) {
    if read_request(&mut s) {
        let _ = s.write_all(HALF);
        let _ = s.shutdown(std::net::Shutdown::Write);
        while read_request(&mut s) {}
    }
}

fn always_503(mut s: TcpStream) {
    while read_request(&mut s) {
        if s.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy").is_err() {
            return;
        }
    }
}

fn never_reads(s: TcpStream) {
    std::thread::sleep(Duration::from_secs(4));
    drop(s);
}

/// Stream `chunk` after `head` until the client goes away (bounded: 2 GiB).
fn stream_forever(mut s: TcpStream, head: &[u8], chunk: &[u8]) {
    let _ = s.write_all(head);
    for _ in 0..(2usize << 30) / chunk.len() {
        if s.write_all(chunk).is_err() {
            return;
        }
    }
}

fn endless_body(mut s: TcpStream) {
    if read_request(&mut s) {
        stream_forever(s, b"HTTP/1.1 200 OK\r\n\r\n", &[b'x'; 64 * 1024]);
    }
}

fn endless_chunks(mut s: TcpStream) {
    if read_request(&mut s) {
        let chunk = [b"1000\r\n".as_slice(), &[b'x'; 4096], b"\r\n"].concat();
        stream_forever(s, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &chunk);
    }
}

/// Read a WebSocket upgrade request: the 101 that accepts it (`None`: not one).
fn upgrade_answer(s: &mut TcpStream) -> Option<String> {
    let mut buf = vec![0u8; 64 * 1024];
    let n = s.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    let key = text.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))?;
    let accept = wirebench::proto::ws::accept_key(key.trim().as_bytes());
    Some(format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    ))
}

/// Upgrade, then answer the first message with non-final fragments for ever.
fn endless_fragments(mut s: TcpStream) {
    let Some(head) = upgrade_answer(&mut s) else { return };
    if s.write_all(head.as_bytes()).is_err() || !read_request(&mut s) {
        return;
    }
    let first = [&[0x02u8, 126, 0xff, 0xff][..], &[b'x'; 65535]].concat();
    let more = [&[0x00u8, 126, 0xff, 0xff][..], &[b'x'; 65535]].concat();
    stream_forever(s, &first, &more);
}

/// Answer every request a byte every 100 ms: a whole answer takes 5 s.
fn trickle_answers(mut s: TcpStream) {
    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nHello World";
    while read_request(&mut s) {
        for b in answer {
            std::thread::sleep(Duration::from_millis(100));
            if s.write_all(&[*b]).is_err() {
                return;
            }
        }
    }
}

/// Upgrade, then announce an Engine.IO session whose pings are due every 0 ms, then say
/// nothing (socket.io clients would ping or poll without end).
fn sio_zero_ping(mut s: TcpStream) {
    let Some(head) = upgrade_answer(&mut s) else { return };
    let mut open = Vec::new();
    let packet = br#"0{"sid":"z","upgrades":[],"pingInterval":0,"pingTimeout":0,"maxPayload":1000000}"#;
    wirebench::proto::ws::write_frame(&mut open, wirebench::proto::ws::OP_TEXT, packet, None);
    let _ = s.write_all(&[head.as_bytes(), &open].concat());
    while read_request(&mut s) {}
}

// ---------------------------------------------------------------------------------------------
// Checks every faulty run must pass.

const RUN: Duration = Duration::from_millis(600);

/// Run `bench` with a short timeout; check it ended on time, accounted for every operation
/// and kept the audit true; return its report.
fn faulty_run(engine: &str, url: &str, extra: &[&str]) -> Report {
    let cpu = client_cpu().to_string();
    let run = format!("{}ms", RUN.as_millis());
    let mut args = vec![url, "-d", &run, "--timeout", "400ms", "--cores", &cpu];
    if !extra.contains(&"-c") {
        args.extend(["-c", "2"]);
    }
    args.extend_from_slice(extra);
    let started = Instant::now();
    let r = bench_on(engine, &args);
    let took = started.elapsed();
    assert!(took < RUN + Duration::from_secs(2), "{engine} {url}: took {took:?}");
    assert_accounted(&r);
    assert!(r.audit.matches(), "{engine} {url}: audit {:?}", r.audit);
    assert!(r.bytes_on_closed_sockets(), "{engine} {url}: bytes on no socket: {:?}", r.audit);
    r
}

fn each_client_engine(check: impl Fn(&str)) {
    for engine in ENGINES {
        check(engine);
    }
}

#[test]
fn a_reset_mid_response_fails_the_operations_as_read_errors() {
    let url = format!("http://{}/", fault_server(reset_mid_response));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &[]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.get(ErrorClass::Read) > 0, "{engine}: {:?} {:?}", r.failed, r.error_samples);
    });
}

#[test]
fn half_a_response_then_silence_times_out() {
    let url = format!("http://{}/", fault_server(half_then_stall));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &[]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.get(ErrorClass::Timeout) > 0, "{engine}: {:?}", r.failed);
        assert_eq!(r.failed.total(), r.sent);
    });
}

#[test]
fn half_a_response_then_a_close_fails_as_closed() {
    let url = format!("http://{}/", fault_server(half_then_close));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &[]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.get(ErrorClass::Closed) > 0, "{engine}: {:?} {:?}", r.failed, r.error_samples);
        assert!(r.rx.failed > 0, "{engine}: the half answer is a failed operation's bytes");
    });
}

#[test]
fn every_503_is_a_status_failure_and_the_run_goes_on() {
    let url = format!("http://{}/", fault_server(always_503));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &[]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.get(ErrorClass::Status) > 10, "{engine}: {:?}", r.failed);
        assert_eq!(r.failures.values().sum::<u64>(), r.failed.get(ErrorClass::Status));
        assert_eq!((r.tx.op, r.rx.op), (0, 0), "{engine}: refused operations' bytes are set apart");
    });
}

/// The issue's first reproduction: depth 4, and a server that closes after each answer.
/// `-n 100` means 100 completed; the operations lost with each connection are counted.
#[test]
fn a_close_with_pipelined_operations_in_flight_loses_none_silently() {
    for server_engine in SERVER_ENGINES {
        let server = start_builtin_on(server_engine, "http");
        let url = format!("http://{}/", server.addr());
        each_client_engine(|engine| {
            let cpu = client_cpu().to_string();
            let r = bench_on(
                engine,
                &[&url, "-c", "1", "-n", "100", "--depth", "4", "-H", "Connection: close", "--cores", &cpu],
            );
            assert_eq!(r.ops, 100, "{engine}");
            assert!(r.failed.get(ErrorClass::Closed) > 0, "{engine}: {:?}", r.failed);
            assert_eq!(r.failed.total(), r.failed.get(ErrorClass::Closed));
            assert_accounted(&r);
            let request = format!("GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.addr());
            assert_eq!(r.tx_per_op(), request.len() as f64, "{engine}: one request per completed op");
            assert!(r.audit_matches(), "{engine}: {:?}", r.audit);
        });
    }
}

#[test]
fn a_server_that_stops_reading_times_the_writes_out_and_the_audit_holds() {
    let url = format!("http://{}/", fault_server(never_reads));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &["-m", "POST", "--size", "1000000", "--depth", "4"]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.get(ErrorClass::Timeout) > 0, "{engine}: {:?} {:?}", r.failed, r.error_samples);
        assert!(r.audit.kernel.unacked > 0, "{engine}: bytes written and never taken: {:?}", r.audit);
    });
}

/// A server that never finishes its answer: every engine fails the operation (at the
/// receive limit or the timeout), completes none, and goes on to the end of the run.
fn an_endless_answer_ends(scheme: &str, server: fn(TcpStream)) {
    let url = format!("{scheme}://{}/", fault_server(server));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &["-c", "1"]);
        assert_eq!(r.ops, 0);
        assert!(r.failed.total() > 0, "{engine}: {:?}", r.failed);
    });
}

#[test]
fn an_endless_body_ends_at_the_limit_or_the_timeout() {
    an_endless_answer_ends("http", endless_body);
}

#[test]
fn endless_chunks_end_at_the_limit_or_the_timeout() {
    an_endless_answer_ends("http", endless_chunks);
}

#[test]
fn endless_websocket_fragments_end_at_the_limit_or_the_timeout() {
    an_endless_answer_ends("ws", endless_fragments);
}

// ---------------------------------------------------------------------------------------------
// Misbehaving clients against the built-in servers.

/// A normal client still gets clean service.
fn still_serves(url: &str) {
    let r = bench(&[url, "-c", "4", "-n", "400", "--cores", &client_cpu().to_string()]);
    assert_clean(&r);
    assert_eq!(r.ops, 400);
}

#[test]
fn a_slowloris_head_is_cut_off_at_the_head_timeout() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_with(engine, "http", &["--head-timeout", "1s"]);
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
        let started = Instant::now();
        // One byte of a header every 100 ms: progress, but never a whole head.
        s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        while started.elapsed() < Duration::from_secs(4) {
            if s.write_all(b"X").is_err() {
                break;
            }
            match s.read(&mut [0u8; 1]) {
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                _ => break, // closed (or reset)
            }
        }
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_millis(3000),
            "{engine}: {took:?}"
        );
        still_serves(&format!("http://{}/", server.addr()));
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert!(tally.timeouts >= 1, "{engine}: {tally:?}");
    }
}

#[test]
fn a_client_that_never_reads_is_cut_off_at_the_write_timeout() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_with(engine, "http", &["--write-timeout", "1s"]);
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        socket.connect(&server.addr().into()).unwrap();
        let mut s: TcpStream = socket.into();
        s.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
        // Pipelined requests, never a read: the answers pile up until the server gives up.
        let requests = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(4096);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(6) {
            match s.write(&requests) {
                Ok(_) => {}
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break, // reset: the server closed with our requests unread
            }
        }
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{engine}: the server held a non-reading client {took:?}");
        still_serves(&format!("http://{}/", server.addr()));
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert!(tally.timeouts >= 1, "{engine}: {tally:?}");
    }
}

/// Upgrade a raw connection to WebSocket; the server's 101 is read whole.
fn upgrade(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the upgrade answer");
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101 "), "{}", String::from_utf8_lossy(&head));
    s
}

/// Everything the server sends until it closes (bounded).
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    all
}

/// The issue's second reproduction, and a frame over the message limit: close 1009, and the
/// server goes on serving.
#[test]
fn overflowing_and_oversized_frames_close_with_1009_and_the_server_goes_on() {
    const CLOSE_1009: [u8; 4] = [0x88, 0x02, 0x03, 0xf1];
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "ws");
        let mut s = upgrade(server.addr());
        let mut attack = vec![0x02, 0x81, 1, 2, 3, 4, b'a' ^ 1];
        attack.extend_from_slice(&[0x80, 0xFF]);
        attack.extend_from_slice(&[0xFF; 8]);
        attack.extend_from_slice(&[1, 2, 3, 4]);
        s.write_all(&attack).unwrap();
        assert_eq!(read_to_close(&mut s), CLOSE_1009, "{engine}: overflowing continuation");
        let mut s = upgrade(server.addr());
        let mut big = vec![0x82, 0xFF];
        big.extend_from_slice(&(17u64 << 20).to_be_bytes());
        big.extend_from_slice(&[1, 2, 3, 4]);
        s.write_all(&big).unwrap();
        assert_eq!(read_to_close(&mut s), CLOSE_1009, "{engine}: a 17 MiB frame over the 16 MiB limit");
        still_serves(&format!("ws://{}/", server.addr()));
        server.stop().unwrap();
    }
}

#[test]
fn connections_over_the_limit_are_refused_with_503_and_the_rest_served() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_with(engine, "http", &["--max-conns", "2"]);
        let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(server.addr()).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let mut third = TcpStream::connect(server.addr()).unwrap();
        let answer = read_to_close(&mut third);
        assert!(answer.starts_with(b"HTTP/1.1 503 "), "{engine}: {}", String::from_utf8_lossy(&answer));
        drop(held);
        std::thread::sleep(Duration::from_millis(100));
        let r = bench(&[
            &format!("http://{}/", server.addr()),
            "-c",
            "2",
            "-n",
            "200",
            "--cores",
            &client_cpu().to_string(),
        ]);
        assert_clean(&r);
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert!(tally.refused >= 1, "{engine}: {tally:?}");
    }
}

/// The issue's third reproduction: the NSQ sink's heartbeat deadline must not lose bytes that
/// arrive after it (tokio-uring cannot cancel a read: a dropped one swallowed them). After each
/// idle gap with a heartbeat, a PUB in its own write must still be answered.
#[test]
fn publishes_after_heartbeat_gaps_are_all_answered() {
    let publish = wirebench::proto::nsq::encode_publish(&wirebench::proto::nsq::PublishSpec {
        topic: "hb".into(),
        message: vec![b'x'; 400],
        batch: 1,
        defer_ms: None,
    });
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "nsq");
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let identify = br#"{"heartbeat_interval":1000}"#;
        let mut hello = b"  V2IDENTIFY\n".to_vec();
        hello.extend_from_slice(&(identify.len() as u32).to_be_bytes());
        hello.extend_from_slice(identify);
        s.write_all(&hello).unwrap();
        let mut frame = [0u8; 10];
        s.read_exact(&mut frame).unwrap();
        assert_eq!(&frame[8..], b"OK");
        for gap in 0..3 {
            std::thread::sleep(Duration::from_millis(1500));
            s.write_all(b"NOP\n").unwrap_or_else(|e| panic!("{engine}, gap {gap}: {e}"));
            std::thread::sleep(Duration::from_millis(20));
            s.write_all(&publish).unwrap_or_else(|e| panic!("{engine}, gap {gap}: {e}"));
            // Heartbeats (19 bytes) may come first; then the OK (10 bytes).
            loop {
                let mut size = [0u8; 4];
                s.read_exact(&mut size).unwrap_or_else(|e| panic!("{engine}, gap {gap}: no answer: {e}"));
                let mut rest = vec![0u8; u32::from_be_bytes(size) as usize];
                s.read_exact(&mut rest).unwrap();
                if rest[4..] == *b"OK" {
                    break;
                }
                assert_eq!(&rest[4..], b"_heartbeat_", "{engine}");
            }
        }
        drop(s);
        std::thread::sleep(Duration::from_millis(50));
        let tally = ServerTally::sum(&server.stop().unwrap());
        assert_eq!(tally.messages, 3, "{engine}");
        assert_eq!(tally.rx, (hello.len() + 3 * (4 + publish.len())) as u64, "{engine}: every byte read");
    }
}

/// Ten thousand idle WebSocket connections against a server in its own process (each side of
/// them counts against one process's file limit): the server's memory grows by a bounded
/// amount per connection, and a normal client is served beside them.
#[test]
fn ten_thousand_idle_connections_cost_bounded_server_memory() {
    const IDLE: usize = 10_000;
    /// What an idle upgraded connection may cost the server's resident memory (measured 6 KiB
    /// on glommio, 10.4 KiB on tokio-uring, 0.97 KiB on uring; see docs/scale.md). Kernel socket
    /// buffers are not in a process's RSS.
    const MAX_PER_CONNECTION: u64 = 32 * 1024;
    /// The uring server answers from its provided buffers and gives its own back when idle.
    const MAX_PER_CONNECTION_URING: u64 = 2 * 1024;
    let _ = wirebench::engine::sys::ensure_file_limit(IDLE as u64 + 512);
    for engine in SERVER_ENGINES {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wirebench"))
            .args(["serve", "ws", "--listen", "127.0.0.1:0", "--cores", &server_cpu().to_string()])
            .args(["--engine", engine, "--max-conns", "12000", "-d", "120s"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line)
            .unwrap();
        let addr: SocketAddr = line
            .split("listening on ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        let pid = child.id();
        let _server = Peer(child);
        let rss = || wirebench::watch::rss_kib(pid).unwrap() * 1024;
        let before = rss();
        let conns: Vec<TcpStream> = (0..IDLE).map(|_| upgrade(addr)).collect();
        // Past the time after which an idle connection gives its buffers back (uring).
        std::thread::sleep(
            wirebench::engine::serve_conn::ServerConn::<wirebench::codec::BoxedServer>::IDLE_RELEASE
                + Duration::from_millis(500),
        );
        let after = rss();
        let per = after.saturating_sub(before) / IDLE as u64;
        eprintln!(
            "{engine}: {IDLE} idle WebSocket connections: server RSS {before} -> {after} B, {per} B each"
        );
        let max = if engine == "uring" { MAX_PER_CONNECTION_URING } else { MAX_PER_CONNECTION };
        assert!(per <= max, "{engine}: {per} B per idle connection");
        still_serves(&format!("ws://{addr}/"));
        drop(conns);
    }
}

/// An answer is due within `--timeout` of its request however it trickles in: each read got
/// the whole timeout afresh, so a server sending a byte every 100 ms was never timed out.
#[test]
fn an_answer_trickling_in_past_the_timeout_times_out() {
    let url = format!("http://{}/", fault_server(trickle_answers));
    let cpu = client_cpu().to_string();
    each_client_engine(|engine| {
        // 2 s with a 400 ms timeout: each operation fails 400 ms after its send, and its
        // connection's next one is sent, 4 or 5 in all per connection; the old way waited for
        // the run's end, one per connection.
        let began = Instant::now();
        let r = bench_on(engine, &[&url, "-c", "2", "-d", "2s", "--timeout", "400ms", "--cores", &cpu]);
        assert!(began.elapsed() < Duration::from_secs(4), "{engine}: took {:?}", began.elapsed());
        assert_accounted(&r);
        assert_eq!(r.ops, 0, "{engine}: an answer taking 5 s completed within a 400 ms timeout");
        assert!(r.failed.get(ErrorClass::Timeout) >= 6, "{engine}: {:?}", r.failed);
    });
}

/// A Socket.IO server announcing pings every 0 ms is a protocol error with its words, and the
/// run ends on time (it polled without end, and the first Ctrl-C did not stop it).
#[test]
fn a_socketio_server_announcing_zero_ping_times_is_refused_and_the_run_ends_on_time() {
    let url = format!("sio://{}/", fault_server(sio_zero_ping));
    each_client_engine(|engine| {
        let r = faulty_run(engine, &url, &[]);
        assert_eq!(r.ops, 0);
        assert!(r.conn_errors.get(ErrorClass::Protocol) > 0, "{engine}: {:?}", r.conn_errors);
        assert!(
            r.error_samples.iter().any(|e| e.contains("pingInterval 0 ms")),
            "{engine}: {:?}",
            r.error_samples
        );
    });
}
