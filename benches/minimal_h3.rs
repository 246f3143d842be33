//! The floor for an HTTP/3 client on quinn-proto and io_uring, beside `minimal_h2.rs`
//! (HTTP/2's over TLS): no engine, no statistics, no HTTP/3 state machine — N QUIC
//! connections (quinn-proto, wirebench's own QUIC configuration), each its own connected UDP
//! socket with one receive (GRO) and one send (GSO) in flight on one ring, as wirebench's
//! engine (one multishot receive a socket on a provided-buffer ring, the ring entered to sleep
//! only past the sends whose completions ask nothing); each connection keeping STREAMS
//! requests in flight: a pre-encoded HEADERS frame
//! (`GET /`, QPACK's static table only) written and finished on a new stream per request;
//! answers read by their frame heads alone (payloads skipped unread), a request done when its
//! stream ends. The server's unidirectional streams (control, QPACK's) are read and dropped;
//! this side's control stream carries an empty SETTINGS. quinn's timers are kept. Handshakes
//! are inside the timed window (once per connection, as for every client `vs-peers.sh` runs).
//! `tools/vs-peers.sh` (part h3) runs it beside wirebench's HTTP/3 and HTTP/2-over-TLS
//! clients: the least an HTTP/3 client built on quinn-proto can do per request.
//!
//! Usage: cargo bench --bench minimal_h3 -- HOST:PORT [CONNECTIONS 64] [STREAMS 10] [SECONDS 5]
//! Prints `requests N in S s = R/s` (the line vs-peers reads).

use bytes::BytesMut;
use io_uring::{cqueue, opcode, types};
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, StreamEvent, StreamId,
};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirebench::engine::bufring::BufRing;
use wirebench::engine::udp::{self, DATAGRAM, GRO_BYTES, GSO_DATAGRAMS, Msg};
use wirebench::proto::h3::frame;

/// The allocator wirebench's binary uses (src/main.rs), so the floor allocates as it does
/// (quinn allocates per stream).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: wirebench::allocator::Mimalloc = wirebench::allocator::Mimalloc;

/// A HEADERS frame (type 1, 16 octets) of a QPACK field section that names only the static
/// table: the section's prefix (no dynamic table), `:method GET`, `:scheme https`, `:path /`
/// (static indexes 17, 23, 1), `:authority localhost` as a literal with the static name 0.
const REQUEST: &[u8] = b"\x01\x10\x00\x00\xd1\xd7\xc1\x50\x09localhost";
/// This side's control stream: its type (0) and an empty SETTINGS frame.
const CONTROL: &[u8] = b"\x00\x04\x00";
/// After the window, how long the requests in flight get to finish.
const DRAIN: Duration = Duration::from_secs(2);

/// One request stream's reading: the frame head being gathered, the payload left to skip,
/// whether a HEADERS frame came.
#[derive(Default, Clone, Copy)]
struct Frames {
    head: [u8; 16],
    head_len: usize,
    skip: u64,
    headers: bool,
}

impl Frames {
    /// Read `data` by its frame heads, skipping each payload.
    fn read(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.skip > 0 {
                let n = (self.skip as usize).min(data.len());
                self.skip -= n as u64;
                data = &data[n..];
                continue;
            }
            let n = (16 - self.head_len).min(data.len());
            self.head[self.head_len..self.head_len + n].copy_from_slice(&data[..n]);
            let gathered = self.head_len + n;
            match frame::parse_head(&self.head[..gathered]).expect("a frame head HTTP/3 allows") {
                Some((kind, len, used)) => {
                    // (Any other type is skipped too, as RFC 9114 §9 has unknown ones.)
                    self.headers |= kind == frame::HEADERS;
                    data = &data[used - self.head_len..];
                    self.head_len = 0;
                    self.skip = len;
                }
                None => {
                    self.head_len = gathered;
                    data = &[];
                }
            }
        }
    }
}

/// One connection: quinn's state, its socket and the message its sends point into.
struct Conn {
    handle: ConnectionHandle,
    quic: Connection,
    sock: OwnedFd,
    send: Box<Msg>,
    send_busy: bool,
    /// The send in flight carries all quinn had (fewer datagrams than a batch): its
    /// completion asks nothing of the loop, which sleeps past it.
    send_last: bool,
    recv_armed: bool,
    connected: bool,
    /// Request streams in flight and how each reads (a handful: searched in place).
    streams: Vec<(StreamId, Frames)>,
    /// quinn's next deadline for this connection.
    timeout: Option<Instant>,
    /// Something happened to it since its last turn.
    dirty: bool,
}

impl Conn {
    /// A request on a new stream, written and finished (quinn takes 18 octets whole); `false`
    /// when the server's stream credit is spent (more comes as answers end).
    fn request(&mut self) -> bool {
        let Some(id) = self.quic.streams().open(Dir::Bi) else { return false };
        let mut send = self.quic.send_stream(id);
        let written = send.write(REQUEST).expect("a new stream takes its request");
        assert_eq!(written, REQUEST.len());
        send.finish().expect("finish");
        self.streams.push((id, Frames::default()));
        true
    }

    /// Everything quinn has to say: its endpoint's events, the handshake's end (the control
    /// stream and the first requests go), streams readable (answers read; the requests
    /// their ends complete). Returns the requests completed.
    fn turn(&mut self, endpoint: &mut Endpoint, depth: usize, sending: bool) -> u64 {
        while let Some(event) = self.quic.poll_endpoint_events() {
            if let Some(back) = endpoint.handle_event(self.handle, event) {
                self.quic.handle_event(back);
            }
        }
        let mut done = 0;
        while let Some(event) = self.quic.poll() {
            match event {
                Event::Connected => {
                    self.connected = true;
                    let id = self.quic.streams().open(Dir::Uni).expect("a control stream");
                    self.quic.send_stream(id).write(CONTROL).expect("the control stream takes SETTINGS");
                }
                Event::ConnectionLost { reason } => panic!("connection lost: {reason}"),
                Event::Stream(StreamEvent::Readable { id }) => done += self.read(id),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.quic.streams().accept(Dir::Uni) {
                        self.read(id);
                    }
                }
                _ => {}
            }
        }
        // Back to `depth` requests in flight, as far as the server's stream credit goes.
        while sending && self.connected && self.streams.len() < depth && self.request() {}
        done
    }

    /// Read what `id` has: a request stream by its frame heads (1 when it ended), a server's
    /// unidirectional stream dropped.
    fn read(&mut self, id: StreamId) -> u64 {
        let at = self.streams.iter().position(|(s, _)| *s == id);
        let mut recv = self.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else { return 0 };
        let mut ended = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if let Some(at) = at {
                        self.streams[at].1.read(&chunk.bytes);
                    }
                }
                Ok(None) => {
                    ended = true;
                    break;
                }
                Err(quinn_proto::ReadError::Blocked) => break,
                Err(quinn_proto::ReadError::Reset(code)) => panic!("stream {id} reset: {code}"),
            }
        }
        let _ = chunks.finalize();
        match at {
            Some(at) if ended => {
                let (_, frames) = self.streams.swap_remove(at);
                assert!(frames.head_len == 0 && frames.skip == 0, "an answer cut inside a frame");
                assert!(frames.headers, "an answer without HEADERS");
                1
            }
            _ => 0,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let addr: SocketAddr = args.first().expect("HOST:PORT").parse().expect("HOST:PORT, an IP address");
    let conns: usize = args.get(1).map_or(64, |a| a.parse().expect("connections"));
    let depth: usize = args.get(2).map_or(10, |a| a.parse().expect("streams"));
    let secs: f64 = args.get(3).map_or(5.0, |a| a.parse().expect("seconds"));
    let config = {
        use wirebench::tls::options::{TlsArgs, TlsVersion, client_config};
        let args = TlsArgs { insecure: true, tls_version: Some(TlsVersion::V13), ..TlsArgs::default() };
        let tls = client_config(&args, Some(b"h3")).expect("a TLS configuration");
        wirebench::engine::quic::client_config(tls).expect("a QUIC configuration")
    };
    let entries = (2 * conns as u32 + 8).next_power_of_two().max(64);
    let mut ring = wirebench::engine::rings::ring(entries, entries).expect("ring");
    let mut bufs =
        BufRing::register(&ring, 0, (2 * conns).next_power_of_two().clamp(16, 256) as u16, GRO_BYTES + 128)
            .expect("a provided-buffer ring");
    // The header every receive is armed with: room for GRO's control message.
    // SAFETY: all-zero is a valid msghdr.
    let mut hdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
    hdr.msg_controllen = 64;
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
    let start = Instant::now();
    let mut c: Vec<Conn> = (0..conns)
        .map(|_| {
            let (handle, quic) = endpoint.connect(start, config.clone(), addr, "localhost").expect("connect");
            Conn {
                handle,
                quic,
                sock: udp::connected(addr, None).expect("a UDP socket"),
                send: Msg::new(GSO_DATAGRAMS * DATAGRAM),
                send_busy: false,
                send_last: false,
                recv_armed: false,
                connected: false,
                streams: Vec::with_capacity(depth),
                timeout: None,
                dirty: true,
            }
        })
        .collect();
    let end = start + Duration::from_secs_f64(secs);
    let (mut done, mut sending, mut completions) = (0u64, true, Vec::new());
    let (mut scratch, mut quiet) = (Vec::new(), 0usize);
    loop {
        let now = Instant::now();
        if sending && now >= end {
            sending = false;
        }
        if !sending && (now >= end + DRAIN || c.iter().all(|conn| conn.connected && conn.streams.is_empty()))
        {
            break;
        }
        let mut wake = end + DRAIN;
        for (i, conn) in c.iter_mut().enumerate() {
            if conn.timeout.is_some_and(|t| t <= now) {
                conn.quic.handle_timeout(now);
                conn.dirty = true;
            }
            if !conn.recv_armed {
                let sqe = opcode::RecvMsgMulti::new(types::Fd(conn.sock.as_raw_fd()), &*hdr, bufs.group)
                    .build()
                    .user_data(((i as u64) << 1) | 1);
                // SAFETY: the header and the buffers outlive the ring's operations (the
                // process ends after the loop).
                unsafe { ring.submission().push(&sqe).expect("room") };
                conn.recv_armed = true;
            }
            if conn.dirty {
                conn.dirty = false;
                done += conn.turn(&mut endpoint, depth, sending);
                if !conn.send_busy {
                    transmit(&mut ring, conn, i, now);
                    quiet += usize::from(conn.send_busy && conn.send_last);
                }
                conn.timeout = conn.quic.poll_timeout();
            }
            if let Some(t) = conn.timeout {
                wake = wake.min(t);
            }
        }
        let wait = wake.saturating_duration_since(now).min(Duration::from_millis(20));
        let ts = types::Timespec::new().sec(wait.as_secs()).nsec(wait.subsec_nanos());
        // A UDP send completes inside the submit: waiting for one completion beyond the quiet
        // sends sleeps until a datagram or a timer, as the engine's loop does.
        match ring.submitter().submit_with_args(quiet + 1, &types::SubmitArgs::new().timespec(&ts)) {
            Ok(_) => {}
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => panic!("enter: {e}"),
        }
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        let now = Instant::now();
        for &(data, result, flags) in &completions {
            let (i, recv) = ((data >> 1) as usize, data & 1 == 1);
            let conn = &mut c[i];
            conn.dirty = true;
            if !recv {
                conn.send_busy = false;
                quiet -= usize::from(std::mem::take(&mut conn.send_last));
                assert!(result > 0, "send: {result}");
                continue;
            }
            if !cqueue::more(flags) {
                conn.recv_armed = false; // (armed again in the next turn)
            }
            // No buffer: none was free (ENOBUFS); the datagram is QUIC's to resend.
            let Some(bid) = cqueue::buffer_select(flags) else { continue };
            let got = types::RecvMsgOut::parse(bufs.data(bid, result.max(0) as usize), &hdr)
                .map(|m| (BytesMut::from(m.payload_data()), udp::gro_size(m.control_data())));
            bufs.give_back(bid);
            let (batch, gro) = got.expect("a receive's header");
            for datagram in udp::datagrams(batch, gro) {
                if let Some(DatagramEvent::ConnectionEvent(_, event)) =
                    endpoint.handle(now, addr, None, None, datagram, &mut scratch)
                {
                    conn.quic.handle_event(event);
                }
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("requests {done} in {elapsed:.2} s = {:.0}/s", done as f64 / elapsed);
}

/// Send what quinn has (up to a GSO batch of datagrams), if anything.
fn transmit(ring: &mut io_uring::IoUring, conn: &mut Conn, i: usize, now: Instant) {
    let send = &mut conn.send;
    send.buf.clear();
    let Some(t) = conn.quic.poll_transmit(now, GSO_DATAGRAMS, &mut send.buf) else { return };
    let datagrams = t.segment_size.map_or(1, |seg| t.size.div_ceil(seg.max(1)));
    conn.send_last = datagrams < GSO_DATAGRAMS;
    send.for_send(t.size, None, t.segment_size.filter(|_| datagrams > 1));
    let sqe =
        opcode::SendMsg::new(types::Fd(conn.sock.as_raw_fd()), &send.hdr).build().user_data((i as u64) << 1);
    // SAFETY: the message lives in the connection, which outlives the ring's operations (the
    // process ends after the loop).
    unsafe { ring.submission().push(&sqe).expect("room") };
    conn.send_busy = true;
}
