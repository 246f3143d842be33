//! The floor for an HTTP/2 (h2c) client on io_uring, beside `minimal_loop.rs` (HTTP/1.1's): no
//! state machine, no HPACK, no statistics — N connections (direct descriptors), each keeping
//! STREAMS requests in flight: a pre-encoded HEADERS frame (`GET /`, END_STREAM) whose stream id
//! is the only thing written per request; answers read by their frame heads alone (a HEADERS
//! or DATA frame with END_STREAM ends a stream; the payloads are skipped unread), the server's
//! SETTINGS acknowledged, the connection's window given back as DATA uses it. Each round's
//! requests go out in one send per connection. `tools/vs-peers.sh` (part h2) runs it beside
//! h2load and wirebench's h2c client: the least an HTTP/2 client can do per request.
//!
//! With `hpack` after the seconds, the floor of a client that keeps the server's HPACK table
//! in step, as RFC 7541 obliges every real one: each header block is gathered and decoded by
//! wirebench's own decoder (`proto::h2::hpack`), its fields dropped unread — nginx adds four
//! literal fields to the table with every answer.
//!
//! With `tls`, the same over TLS 1.3 (rustls, as wirebench's own client; ALPN `h2`, the
//! server's certificate not checked): the frames are sealed into one record per send and the
//! records opened as they come — the floor under an HTTP/2-over-TLS client. Handshakes are
//! inside the timed window (once per connection, as for every client vs-peers runs).
//!
//! Usage: cargo bench --bench minimal_h2 -- HOST:PORT [CONNECTIONS 64] [STREAMS 10] [SECONDS 5] [hpack] [tls]
//! Prints `requests N in S s = R/s` (the line vs-peers reads).

use io_uring::{cqueue, opcode, types};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

mod common;
use common::arm;

/// The connection preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// HPACK: `:method GET`, `:scheme http`, `:path /` (static indexes 2, 6, 4), `:authority
/// localhost` as a literal never indexed (the same bytes every time).
const BLOCK: &[u8] = b"\x82\x86\x84\x01\x09localhost";
/// The same over TLS: `:scheme https` (static index 7).
const BLOCK_TLS: &[u8] = b"\x82\x87\x84\x01\x09localhost";
const SETTINGS_ACK: [u8; 9] = [0, 0, 0, 4, 1, 0, 0, 0, 0];
/// Give the connection's window back once this much DATA has used it.
const WINDOW_BACK: u32 = 1 << 15;

/// One connection's reading state: the frame head being gathered, the payload left to skip.
#[derive(Default)]
struct Conn {
    head: [u8; 9],
    head_len: usize,
    skip: usize,
    next_id: u32,
    unacked_data: u32,
    out: Vec<u8>,
    sending: Vec<u8>,
    in_flight: usize,
    /// With `hpack`: the decoder, and the header block being gathered (its octets still to come).
    hpack: Option<wirebench::proto::h2::hpack::Decoder>,
    block: Vec<u8>,
    block_left: usize,
    /// With `tls`: the session, the plaintext opened from one receive, and the room rustls
    /// reads it into (made once).
    tls: Option<rustls::ClientConnection>,
    plain: Vec<u8>,
    room: Vec<u8>,
}

impl Conn {
    /// Queue a request on the next stream.
    fn request(&mut self) {
        let id = self.next_id;
        self.next_id += 2;
        let block = if self.tls.is_some() { BLOCK_TLS } else { BLOCK };
        let len = block.len() as u32;
        self.out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, 1, 0x5]);
        self.out.extend_from_slice(&id.to_be_bytes());
        self.out.extend_from_slice(block);
        self.in_flight += 1;
    }

    /// What to send next, into the empty `sending`: the queued frames, sealed with TLS.
    fn take_out(&mut self) {
        match &mut self.tls {
            None => std::mem::swap(&mut self.sending, &mut self.out),
            Some(tls) => {
                if !self.out.is_empty() {
                    tls.writer().write_all(&self.out).expect("rustls takes plaintext");
                    self.out.clear();
                }
                while tls.wants_write() {
                    tls.write_tls(&mut self.sending).expect("rustls writes to a vector");
                }
            }
        }
    }

    /// Bytes from the socket: the streams they end (with TLS, once opened).
    fn received(&mut self, data: &[u8]) -> usize {
        let Some(tls) = &mut self.tls else { return self.read(data) };
        let handshaking = tls.is_handshaking();
        wirebench::tls::open(tls, data).expect("valid TLS records");
        if handshaking && !tls.is_handshaking() {
            assert_eq!(tls.alpn_protocol(), Some(&b"h2"[..]), "the server agreed to HTTP/2 by ALPN");
        }
        let mut plain = std::mem::take(&mut self.plain);
        loop {
            match tls.reader().read(&mut self.room) {
                Ok(0) => panic!("the server closed"),
                Ok(n) => plain.extend_from_slice(&self.room[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("TLS: {e}"),
            }
        }
        let ended = self.read(&plain);
        plain.clear();
        self.plain = plain;
        ended
    }

    /// Read `data` (plaintext): the streams it ends.
    fn read(&mut self, mut data: &[u8]) -> usize {
        let mut ended = 0;
        while !data.is_empty() {
            if self.block_left > 0 {
                let n = self.block_left.min(data.len());
                self.block.extend_from_slice(&data[..n]);
                self.block_left -= n;
                data = &data[n..];
                if self.block_left == 0
                    && let Some(decoder) = &mut self.hpack
                {
                    decoder.decode(&self.block, |_, _| {}).expect("a valid header block");
                    self.block.clear();
                }
                continue;
            }
            if self.skip > 0 {
                let n = self.skip.min(data.len());
                self.skip -= n;
                data = &data[n..];
                continue;
            }
            let n = (9 - self.head_len).min(data.len());
            self.head[self.head_len..self.head_len + n].copy_from_slice(&data[..n]);
            self.head_len += n;
            data = &data[n..];
            if self.head_len < 9 {
                break;
            }
            self.head_len = 0;
            let h = self.head;
            let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
            let (kind, flags) = (h[3], h[4]);
            // (Padded or prioritized HEADERS, or CONTINUATION, are not what nginx sends.)
            if kind == 1 && self.hpack.is_some() {
                assert!(flags & 0x4 != 0 && flags & 0x28 == 0, "a whole, plain header block");
                self.block_left = len;
            } else {
                self.skip = len;
            }
            match kind {
                0 | 1 if flags & 1 == 1 => ended += 1,
                4 if flags & 1 == 0 => self.out.extend_from_slice(&SETTINGS_ACK),
                7 => panic!("GOAWAY"),
                _ => {}
            }
            if kind == 0 {
                self.unacked_data += len as u32;
                if self.unacked_data >= WINDOW_BACK {
                    let n = std::mem::take(&mut self.unacked_data);
                    self.out.extend_from_slice(&[0, 0, 4, 8, 0, 0, 0, 0, 0]);
                    self.out.extend_from_slice(&n.to_be_bytes());
                }
            }
        }
        self.in_flight -= ended;
        ended
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let addr = args.first().expect("HOST:PORT").clone();
    let conns: usize = args.get(1).map_or(64, |a| a.parse().expect("connections"));
    let streams: usize = args.get(2).map_or(10, |a| a.parse().expect("streams"));
    let secs: f64 = args.get(3).map_or(5.0, |a| a.parse().expect("seconds"));
    let hpack = args.iter().skip(4).any(|a| a == "hpack");
    let tls = args.iter().skip(4).any(|a| a == "tls");
    let common::Sockets { streams: _sockets, mut ring, mut bufs } = common::connect(&addr, conns);
    let decoder = || wirebench::proto::h2::hpack::Decoder::new(4096, 64 << 10);
    let session = tls.then(|| {
        use wirebench::tls::options::{TlsArgs, TlsVersion, client_config, server_name};
        let args = TlsArgs { insecure: true, tls_version: Some(TlsVersion::V13), ..TlsArgs::default() };
        let config = client_config(&args, Some(b"h2")).expect("a TLS configuration");
        let name = server_name(addr.rsplit_once(':').expect("HOST:PORT").0).expect("a server name");
        move || {
            let mut session = rustls::ClientConnection::new(config.clone(), name.clone()).expect("a session");
            session.set_buffer_limit(None);
            session
        }
    });
    let mut c: Vec<Conn> = (0..conns)
        .map(|_| Conn {
            next_id: 1,
            hpack: hpack.then(decoder),
            tls: session.as_ref().map(|s| s()),
            room: if tls { vec![0; 16 << 10] } else { Vec::new() },
            ..Conn::default()
        })
        .collect();
    for (i, conn) in c.iter_mut().enumerate() {
        arm(&mut ring, i);
        conn.out.extend_from_slice(PREFACE);
        for _ in 0..streams {
            conn.request();
        }
    }
    let (mut done, mut sending, mut completions) = (0u64, true, Vec::new());
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    loop {
        // Each connection's queued frames in one send, once its last one is done.
        for (i, conn) in c.iter_mut().enumerate() {
            if !conn.sending.is_empty() {
                continue; // (its send is with the kernel)
            }
            conn.take_out();
            if !conn.sending.is_empty() {
                let sqe = opcode::Send::new(
                    types::Fixed(i as u32),
                    conn.sending.as_ptr(),
                    conn.sending.len() as u32,
                )
                .build()
                .user_data((i as u64) << 1);
                // SAFETY: `sending` is not touched until its completion.
                unsafe { ring.submission().push(&sqe).expect("room") };
            }
        }
        if c.iter().all(|conn| conn.in_flight == 0 && conn.sending.is_empty()) {
            break;
        }
        ring.submit_and_wait(1).expect("enter");
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        if sending && Instant::now() >= end {
            sending = false;
        }
        for &(data, result, flags) in &completions {
            let (i, recv) = ((data >> 1) as usize, data & 1 == 1);
            let conn = &mut c[i];
            if !recv {
                assert!(result == conn.sending.len() as i32, "send: {result} of {}", conn.sending.len());
                conn.sending.clear();
                continue;
            }
            assert!(result > 0 || result == -libc::ENOBUFS, "receive: {result}");
            if let Some(bid) = cqueue::buffer_select(flags) {
                let ended = conn.received(bufs.data(bid, result.max(0) as usize));
                bufs.give_back(bid);
                done += ended as u64;
                if sending {
                    for _ in 0..ended {
                        conn.request();
                    }
                }
            }
            if !cqueue::more(flags) {
                arm(&mut ring, i);
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("requests {done} in {elapsed:.2} s = {:.0}/s", done as f64 / elapsed);
}
