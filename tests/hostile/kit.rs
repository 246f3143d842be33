//! The kit every hostile scenario is made of: scripted peers on loopback (a server whose every
//! connection runs a script on its own thread, bounded in count and time), raw frame writers
//! that owe nothing to the codecs under test, and the checks every run against a hostile peer
//! must pass on every engine — it ends on time, every operation is accounted for, the audit
//! holds — before the scenario's own verdict.

use super::common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use wirebench::stats::Report;

/// Connections a scripted server takes before it stops accepting (a run that reconnects
/// without pause would otherwise spawn threads without end).
const MOST_CONNECTIONS: usize = 5_000;
/// How long a script may wait on its socket.
const SOCKET_WAIT: Duration = Duration::from_secs(5);

/// A listener on a free loopback port whose every connection runs `script` on its own thread.
pub fn server<F>(script: F) -> SocketAddr
where
    F: Fn(TcpStream) + Send + Sync + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let script = std::sync::Arc::new(script);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(MOST_CONNECTIONS) {
            let Ok(s) = stream else { continue };
            let _ = s.set_read_timeout(Some(SOCKET_WAIT));
            let _ = s.set_write_timeout(Some(SOCKET_WAIT));
            let _ = s.set_nodelay(true);
            let script = script.clone();
            std::thread::spawn(move || script(s));
        }
    });
    addr
}

/// What a run against a hostile peer is given beyond its own arguments: its window and a
/// short timeout, on the generator's CPU.
pub struct Run {
    pub duration: Duration,
    pub timeout: Duration,
}

pub const SHORT: Run = Run { duration: Duration::from_millis(1500), timeout: Duration::from_millis(500) };

impl Run {
    /// The latest a run may end: its window, the drain limit after it, and a margin for a
    /// busy machine (never a speed: a run that ignores its end overshoots by seconds).
    pub fn latest_end(&self) -> Duration {
        self.duration + wirebench::engine::conn::DRAIN_LIMIT + Duration::from_millis(1500)
    }

    /// `bench URL ARGS… -d … --timeout …` on `engine`: checked to end on time, to account for
    /// every operation and to keep the audit true; the report and how long it took.
    pub fn on(&self, engine: &str, url: &str, args: &[&str]) -> (Report, Duration) {
        let cpu = client_cpu().to_string();
        let d = format!("{}ms", self.duration.as_millis());
        let t = format!("{}ms", self.timeout.as_millis());
        let mut argv = vec![url, "--cores", &cpu, "--timeout", &t];
        if !args.contains(&"-n") {
            argv.extend(["-d", &d]);
        }
        if !args.contains(&"-c") {
            argv.extend(["-c", "2"]);
        }
        argv.extend_from_slice(args);
        let started = Instant::now();
        let r = bench_on(engine, &argv);
        let took = started.elapsed();
        assert!(
            took < self.latest_end(),
            "{engine} {url} {args:?}: took {took:?}, past {:?}",
            self.latest_end()
        );
        assert_accounted(&r);
        assert!(r.audit.matches(), "{engine} {url}: audit {:?}", r.audit);
        (r, took)
    }

    /// The same on every client engine, each report handed to `verdict`.
    pub fn everywhere(&self, url: &str, args: &[&str], verdict: impl Fn(&str, &Report)) {
        for engine in ENGINES {
            let (r, _) = self.on(engine, url, args);
            verdict(engine, &r);
        }
    }
}

/// The error samples of a run, joined: what a user reads under `e.g.`.
pub fn samples(r: &Report) -> String {
    r.error_samples.join(" | ")
}

/// Read whatever arrives (up to 64 KiB); `None` when the peer closed or went silent.
pub fn read_some(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 64 << 10];
    match s.read(&mut buf) {
        Ok(n) if n > 0 => Some(buf[..n].to_vec()),
        _ => None,
    }
}

/// Write `unit` again and again, in bursts of 16 KiB, for at most `limit` — a reader beside,
/// so that the client's replies cannot fill the socket.
pub fn flood_with(s: &mut TcpStream, unit: &[u8], limit: Duration) {
    let burst: Vec<u8> = unit.iter().copied().cycle().take((16 << 10) / unit.len() * unit.len()).collect();
    if let Ok(mut reader) = s.try_clone() {
        std::thread::spawn(move || while read_some(&mut reader).is_some() {});
    }
    send_for(s, &burst, limit);
}

/// Write `bytes` again and again for at most `limit` (or until the peer goes away).
pub fn send_for(s: &mut TcpStream, bytes: &[u8], limit: Duration) {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if s.write_all(bytes).is_err() {
            return;
        }
    }
}

/// HTTP/2's frames by hand (RFC 9113 §4.1: a 24-bit length, type, flags, a 31-bit stream) and
/// a scripted HTTP/2 server's side of the preface.
pub mod h2 {
    use super::*;

    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PRIORITY_FLAG: u8 = 0x20;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    /// One frame.
    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut f = vec![len[1], len[2], len[3], kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    pub fn settings(params: &[(u16, u32)]) -> Vec<u8> {
        let mut p = Vec::new();
        for (id, value) in params {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&value.to_be_bytes());
        }
        frame(SETTINGS, 0, 0, &p)
    }

    pub fn goaway(last: u32, code: u32, debug: &[u8]) -> Vec<u8> {
        frame(GOAWAY, 0, 0, &[&last.to_be_bytes()[..], &code.to_be_bytes(), debug].concat())
    }

    /// A header block of `:status` alone, by RFC 7541 by hand: the static table's 200
    /// (index 8: 0x88), else a literal without indexing of static name 8 (0x08, a length, the
    /// digits).
    pub fn status(code: &str) -> Vec<u8> {
        if code == "200" {
            return vec![0x88];
        }
        [&[0x08, code.len() as u8][..], code.as_bytes()].concat()
    }

    /// A literal field without indexing with a new name (0x00, name, value; both under 127).
    pub fn literal(name: &str, value: &str) -> Vec<u8> {
        [&[0x00, name.len() as u8][..], name.as_bytes(), &[value.len() as u8], value.as_bytes()].concat()
    }

    /// A frame read off the wire.
    #[derive(Debug, Clone)]
    pub struct Frame {
        pub kind: u8,
        pub flags: u8,
        pub stream: u32,
        pub payload: Vec<u8>,
    }

    /// A scripted HTTP/2 peer on one connection: reads frames, writes raw bytes.
    pub struct Peer {
        pub s: TcpStream,
        buf: Vec<u8>,
    }

    impl Peer {
        /// The server's side of the opening: the client's preface and SETTINGS read, `first`
        /// written (normally this side's SETTINGS), the client's SETTINGS acknowledged.
        pub fn accept(s: TcpStream, first: &[u8]) -> Option<Peer> {
            let mut p = Peer { s, buf: Vec::new() };
            while p.buf.len() < PREFACE.len() {
                p.buf.extend(read_some(&mut p.s)?);
            }
            if !p.buf.starts_with(PREFACE) {
                return None;
            }
            p.buf.drain(..PREFACE.len());
            p.s.write_all(first).ok()?;
            loop {
                let f = p.frame()?;
                if f.kind == SETTINGS && f.flags & ACK == 0 {
                    p.s.write_all(&frame(SETTINGS, ACK, 0, &[])).ok()?;
                    return Some(p);
                }
            }
        }

        /// The client's side of the opening, to `addr`: the preface and empty SETTINGS out,
        /// the server's SETTINGS read and acknowledged.
        pub fn connect(addr: SocketAddr) -> Peer {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(SOCKET_WAIT)).unwrap();
            s.write_all(&[PREFACE, &frame(SETTINGS, 0, 0, &[])].concat()).unwrap();
            let mut p = Peer { s, buf: Vec::new() };
            loop {
                let f = p.frame().expect("the server's SETTINGS");
                if f.kind == SETTINGS && f.flags & ACK == 0 {
                    p.send(&frame(SETTINGS, ACK, 0, &[])).unwrap();
                    return p;
                }
            }
        }

        /// Frames until one on `stream` (or on 0, a GOAWAY, or `None` at the close) that is not
        /// a SETTINGS, PING or WINDOW_UPDATE: the server's verdict on what was sent.
        pub fn verdict(&mut self, stream: u32) -> Option<Frame> {
            loop {
                let f = self.frame()?;
                if f.kind == GOAWAY
                    || (f.stream == stream && !matches!(f.kind, WINDOW_UPDATE | PING | SETTINGS))
                {
                    return Some(f);
                }
            }
        }

        /// The next whole frame.
        pub fn frame(&mut self) -> Option<Frame> {
            loop {
                if self.buf.len() >= 9 {
                    let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
                    if self.buf.len() >= 9 + len {
                        let b = &self.buf;
                        let f = Frame {
                            kind: b[3],
                            flags: b[4],
                            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
                            payload: b[9..9 + len].to_vec(),
                        };
                        self.buf.drain(..9 + len);
                        return Some(f);
                    }
                }
                let more = read_some(&mut self.s)?;
                self.buf.extend(more);
            }
        }

        /// The stream of the next request whose HEADERS end its stream or whose body's last
        /// DATA came (every frame before it is read and dropped; PINGs answered, the
        /// connection's room given back for every DATA read).
        pub fn request(&mut self) -> Option<u32> {
            loop {
                let f = self.frame()?;
                if f.kind == PING && f.flags & ACK == 0 {
                    self.send(&frame(PING, ACK, 0, &f.payload))?;
                }
                if f.kind == DATA && !f.payload.is_empty() {
                    self.send(&frame(WINDOW_UPDATE, 0, 0, &(f.payload.len() as u32).to_be_bytes()))?;
                }
                if matches!(f.kind, HEADERS | DATA) && f.flags & END_STREAM != 0 {
                    return Some(f.stream);
                }
            }
        }

        pub fn send(&mut self, bytes: &[u8]) -> Option<()> {
            self.s.write_all(bytes).ok()
        }

        /// Answer `stream` with `status` and a body, ending it.
        pub fn answer(&mut self, stream: u32, status: &str, body: &[u8]) -> Option<()> {
            let flags = END_HEADERS | if body.is_empty() { END_STREAM } else { 0 };
            let mut out = frame(HEADERS, flags, stream, &super::h2::status(status));
            if !body.is_empty() {
                out.extend(frame(DATA, END_STREAM, stream, body));
            }
            self.send(&out)
        }
    }
}
