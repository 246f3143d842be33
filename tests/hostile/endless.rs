//! Answers that never end, for every protocol over TCP, on every client engine: a server that
//! keeps a connection busy with small, well-formed pieces that complete nothing — an HTTP/1.1
//! body in one-octet chunks, WebSocket fragments, Engine.IO pings, nsqd heartbeats — as fast
//! as it can for 15 s. Each piece is decoded and dropped, so no buffer fills; the wait for the
//! answer must still end `--timeout` after the request, and the run in its window
//! (docs/measurement.md promises it; every read that brought bytes used to restart the wait).

use super::kit::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;
use wirebench::outcome::ErrorClass;

/// How long each server keeps at it: far past the run's end.
const FOR: Duration = Duration::from_secs(15);

/// `unit` in 16 KiB bursts for [`FOR`].
fn flood_with(s: &mut TcpStream, unit: &[u8]) {
    super::kit::flood_with(s, unit, FOR);
}

/// The WebSocket upgrade's answer to the request in `s` (`None`: not one).
fn upgrade(s: &mut TcpStream) -> Option<()> {
    let request = String::from_utf8_lossy(&read_some(s)?).to_string();
    let key = request.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))?;
    let accept = wirebench::proto::ws::accept_key(key.trim().as_bytes());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).ok()
}

/// An unmasked WebSocket frame (RFC 6455 §5.2), payload under 126 octets.
fn ws_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    [&[first, payload.len() as u8][..], payload].concat()
}

/// Every engine: the run ends on time, nothing completes, the operations fail as one of
/// `classes` (and as nothing else).
fn never_ends(url: &str, classes: &[ErrorClass]) {
    SHORT.everywhere(url, &["-c", "1"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine} {url}");
        let named: u64 = classes.iter().map(|&c| r.failed.get(c)).sum();
        assert!(named > 0 && named == r.failed.total(), "{engine} {url}: {:?} {}", r.failed, samples(r));
    });
}

/// HTTP/1.1: a chunked body of one-octet chunks for ever — the body's limit (a protocol
/// failure: 64 Mi one-octet chunks, 384 MB) or the timeout, whichever comes first — in a
/// release build the limit, in a debug build, as CI's, the timeout on glommio.
#[test]
fn an_http_body_of_endless_small_chunks_times_out_on_time() {
    let addr = server(|mut s: TcpStream| {
        if read_some(&mut s).is_some()
            && s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_ok()
        {
            flood_with(&mut s, b"1\r\nx\r\n");
        }
    });
    never_ends(&format!("http://{addr}/"), &[ErrorClass::Protocol, ErrorClass::Timeout]);
}

/// WebSocket: the echo's first fragment, then continuation fragments of 8 octets for ever.
#[test]
fn endless_small_websocket_fragments_time_out_on_time() {
    let addr = server(|mut s: TcpStream| {
        if upgrade(&mut s).is_some() && read_some(&mut s).is_some() {
            let _ = s.write_all(&ws_frame(0x02, b"first"));
            // A fragment a write (bursts would reach the message's limit first: a failure
            // too, but not the one this scenario is about).
            send_for(&mut s, &ws_frame(0x00, b"fragment"), FOR);
        }
    });
    never_ends(&format!("ws://{addr}/"), &[ErrorClass::Timeout]);
}

/// Socket.IO (Engine.IO 4): the session and the namespace join, then at the first event no
/// acknowledgement — only pings (`2`), each answered with a pong, for ever.
#[test]
fn endless_engine_io_pings_instead_of_an_ack_time_out_on_time() {
    let addr = server(|mut s: TcpStream| {
        if upgrade(&mut s).is_none() {
            return;
        }
        let open =
            br#"0{"sid":"s","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#;
        let _ = s.write_all(&ws_frame(0x81, open));
        // The client's namespace join (`40`), answered; then its first event.
        if read_some(&mut s).is_none() || s.write_all(&ws_frame(0x81, br#"40{"sid":"n"}"#)).is_err() {
            return;
        }
        if read_some(&mut s).is_some() {
            flood_with(&mut s, &ws_frame(0x81, b"2"));
        }
    });
    never_ends(&format!("sio://{addr}/"), &[ErrorClass::Timeout]);
}

/// NSQ: IDENTIFY answered `OK`, then at the first PUB no answer — only heartbeats
/// (`_heartbeat_`, each answered with a NOP), for ever.
#[test]
fn endless_nsq_heartbeats_instead_of_an_answer_time_out_on_time() {
    let addr = server(|mut s: TcpStream| {
        // The magic and IDENTIFY, answered with OK (a response frame: size 6, type 0).
        if read_some(&mut s).is_none() || s.write_all(b"\0\0\0\x06\0\0\0\0OK").is_err() {
            return;
        }
        if read_some(&mut s).is_some() {
            flood_with(&mut s, b"\0\0\0\x0f\0\0\0\0_heartbeat_");
        }
    });
    never_ends(&format!("nsq://{addr}/test"), &[ErrorClass::Timeout]);
}
