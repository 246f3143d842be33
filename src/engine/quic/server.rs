//! The built-in HTTP/3 server's side of one UDP socket (`serve h3`), sans-IO: quinn-proto's
//! endpoint and its connections, each answering requests with [`H3Server`] — fed datagrams
//! and time, asked for datagrams.
//!
//! **A connection is driven when something happened to it**: a datagram came, one of its
//! timers fell due (quinn's — loss detection, ACK delay, idle — or this side's deadlines and
//! delayed answers), or it has datagrams to send. Its timers sit in one heap, so thousands of
//! idle connections cost nothing per turn of the loop (they cost a walk of every connection
//! on every turn, 50 times a second and more, before).
//!
//! **Bounded as the TCP servers are** ([`ServerBounds`], `serve`'s flags): at most
//! `max_conns` connections a core (more are refused: CONNECTION_REFUSED), a handshake and each
//! request's headers whole within `head_timeout`, answers taken by the client within
//! `write_timeout`, quinn's idle timeout at `idle_timeout` (its transport configuration), at
//! most [`MAX_UNFINISHED_HEADERS`] octets of unfinished field sections a connection, and the
//! transport's stream limit; past [`RETRY_ABOVE`] handshakes in progress a new client proves
//! its address first (a stateless Retry). A client's STOP_SENDING is answered with RESET_STREAM (RFC 9000
//! §3.5) and its critical streams' end closes the connection (`H3_CLOSED_CRITICAL_STREAM`).
//! No QUIC DATAGRAM frames are accepted (the transport does not advertise them).

use super::Piece;
use super::write_or_hold;
use crate::proto::h3::frame as h3frame;
use crate::proto::h3::server::H3Server;
use bytes::{Bytes, BytesMut};
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig,
    StreamEvent, StreamId, Transmit, VarInt,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The unfinished field sections one connection may hold, over all its request streams: a
/// section may be up to 16 KiB (`MAX_FIELD_SECTION`), so a client sending 100 streams' worth
/// and never finishing them would make the server hold 1.6 MB. Past it the connection closes
/// (`H3_EXCESSIVE_LOAD`). A bound on what is held, so it depends on how the sections arrive:
/// one that comes whole in a packet is decoded in place and never held, and the same sections
/// in interleaved pieces may pass it — deliberately, as a memory bound, not a protocol rule.
pub const MAX_UNFINISHED_HEADERS: usize = 64 << 10;

/// Handshakes in progress on a core past which a client must prove its address first (a
/// Retry, RFC 9000 §8.1: stateless, so a flood of first flights that never go on costs no
/// memory — each handshake holds about 32 KB; 3,000 of them took the server from 10 to
/// 105 MB). Below it, connections open in one round trip.
pub const RETRY_ABOVE: usize = 256;

/// What `serve h3` allows each core's connections (the flags every built-in server has).
#[derive(Debug, Clone, Copy)]
pub struct ServerBounds {
    /// Connections at once on this core (handshakes included); more are refused.
    pub max_conns: usize,
    /// A handshake, and each request's headers from its stream's first byte, whole within it.
    pub head_timeout: Duration,
    /// Answers waiting for the client's flow-control room longer than this close it.
    pub write_timeout: Duration,
    /// Think time: each answer held this long after its request was whole.
    pub delay: Duration,
}

/// A server connection: quinn-proto's, its HTTP/3 state, answers quinn did not take yet, and
/// its deadlines.
struct ServerConn {
    conn: Connection,
    h3: H3Server,
    unsent: HashMap<StreamId, (Bytes, bool)>,
    /// When it began (its handshake must end within the head timeout), and whether it has.
    started: Instant,
    connected: bool,
    /// Since when answers have waited for the client's room (the write timeout's start).
    held_since: Option<Instant>,
    /// Request streams whose headers are not whole yet, by when their first byte came.
    heads: Vec<(u64, Instant)>,
    /// Answers held for `--delay`: when each may go, its stream, its bytes.
    delayed: VecDeque<(Instant, StreamId, Bytes)>,
    /// Requests answered already added to the endpoint's count.
    counted: u64,
    /// In this turn's list; in the list of those that may have datagrams to send; the time of
    /// its live entry in the timer heap.
    queued: bool,
    sending: bool,
    armed: Option<Instant>,
}

impl ServerConn {
    /// The earliest of its deadlines: quinn's timers, the handshake's, the oldest unfinished
    /// head's, the write timeout's, the next delayed answer's.
    fn wake(&mut self, bounds: &ServerBounds) -> Option<Instant> {
        let handshake = (!self.connected).then(|| self.started + bounds.head_timeout);
        let head = self.heads.iter().map(|(_, at)| *at + bounds.head_timeout).min();
        let held = self.held_since.map(|at| at + bounds.write_timeout);
        let delayed = self.delayed.front().map(|(at, ..)| *at);
        [self.conn.poll_timeout(), handshake, head, held, delayed].into_iter().flatten().min()
    }

    /// Close the connection with an HTTP/3 error code and its reason.
    fn close(&mut self, now: Instant, code: u64, reason: &'static str) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(0x101));
        self.conn.close(now, code, Bytes::from_static(reason.as_bytes()));
    }
}

/// The built-in server's side of one UDP socket: its endpoint and connections.
pub struct ServerEndpoint {
    endpoint: Endpoint,
    config: Arc<ServerConfig>,
    bounds: ServerBounds,
    conns: HashMap<ConnectionHandle, ServerConn>,
    /// Datagrams the endpoint answered by itself (a version negotiation, a stateless reset, a
    /// refusal).
    responses: Vec<(Transmit, Vec<u8>)>,
    /// The connections to drive this turn, those that may have datagrams to send, and their
    /// timers: (when, connection), an entry stale unless it is the connection's `armed` one.
    dirty: Vec<ConnectionHandle>,
    sendable: Vec<ConnectionHandle>,
    timers: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// Connections whose handshake is not done.
    handshaking: usize,
    /// Requests answered, over every connection, connections accepted and refused.
    pub answered: u64,
    pub accepted: u64,
    pub refused: u64,
}

impl ServerEndpoint {
    pub fn new(config: ServerConfig, bounds: ServerBounds) -> ServerEndpoint {
        let config = Arc::new(config);
        ServerEndpoint {
            endpoint: Endpoint::new(Arc::new(EndpointConfig::default()), Some(config.clone()), false, None),
            config,
            bounds,
            conns: HashMap::new(),
            responses: Vec::new(),
            dirty: Vec::new(),
            sendable: Vec::new(),
            timers: BinaryHeap::new(),
            handshaking: 0,
            answered: 0,
            accepted: 0,
            refused: 0,
        }
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Give connection `handle` a turn (once).
    fn touch(&mut self, handle: ConnectionHandle) {
        if let Some(c) = self.conns.get_mut(&handle)
            && !std::mem::replace(&mut c.queued, true)
        {
            self.dirty.push(handle);
        }
    }

    /// A datagram from `remote`.
    pub fn datagram(&mut self, now: Instant, remote: SocketAddr, data: BytesMut) {
        let mut buf = Vec::new();
        let event = self.endpoint.handle(now, remote, None, None, data, &mut buf);
        match event {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(c) = self.conns.get_mut(&handle) {
                    c.conn.handle_event(event);
                    self.touch(handle);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) if self.conns.len() >= self.bounds.max_conns => {
                // At the limit: refused at once (the client learns it, and retries later).
                self.refused += 1;
                let t = self.endpoint.refuse(incoming, &mut buf);
                self.responses.push((t, buf));
            }
            Some(DatagramEvent::NewConnection(incoming))
                if self.handshaking >= RETRY_ABOVE && !incoming.remote_address_validated() =>
            {
                // Many handshakes at once: this one proves its address first (no state kept).
                match self.endpoint.retry(incoming, &mut buf) {
                    Ok(t) => self.responses.push((t, buf)),
                    Err(e) => self.endpoint.ignore(e.into_incoming()),
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let mut buf = Vec::new();
                match self.endpoint.accept(incoming, now, &mut buf, Some(self.config.clone())) {
                    Ok((handle, conn)) => {
                        self.accepted += 1;
                        self.handshaking += 1;
                        self.conns.insert(
                            handle,
                            ServerConn {
                                conn,
                                h3: H3Server::default(),
                                unsent: HashMap::new(),
                                started: now,
                                connected: false,
                                held_since: None,
                                heads: Vec::new(),
                                delayed: VecDeque::new(),
                                counted: 0,
                                queued: false,
                                sending: false,
                                armed: None,
                            },
                        );
                        self.touch(handle);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            self.responses.push((t, buf));
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => self.responses.push((t, buf)),
            None => {}
        }
    }

    /// The connections whose timers fell due by `now`: quinn's handled, and each given a turn.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&Reverse((at, handle))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(c) = self.conns.get_mut(&handle) else { continue };
            if c.armed != Some(at) {
                continue; // superseded by an earlier entry
            }
            c.armed = None;
            if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                c.conn.handle_timeout(now);
            }
            self.touch(handle);
        }
    }

    /// Let every connection something happened to act on it: requests read and answered,
    /// deadlines kept; gone ones forgotten.
    pub fn drive(&mut self, now: Instant) {
        let bounds = self.bounds;
        for handle in std::mem::take(&mut self.dirty) {
            let Some(c) = self.conns.get_mut(&handle) else { continue };
            c.queued = false;
            while let Some(event) = c.conn.poll_endpoint_events() {
                if let Some(back) = self.endpoint.handle_event(handle, event) {
                    c.conn.handle_event(back);
                }
            }
            let connecting = !c.connected;
            turn(c, now, &bounds);
            self.answered += c.h3.answered - c.counted;
            c.counted = c.h3.answered;
            let drained = c.conn.is_drained();
            if connecting && (c.connected || drained) {
                self.handshaking -= 1;
            }
            if drained {
                self.conns.remove(&handle);
            } else if !std::mem::replace(&mut c.sending, true) {
                self.sendable.push(handle);
            }
        }
    }

    /// The next datagram(s) to send, into `buf` (up to `max_datagrams` of one size: GSO): the
    /// endpoint's own answers first, then those of the connections that may have some; a
    /// connection with nothing more has its next timer set.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        if let Some((t, bytes)) = self.responses.pop() {
            buf.clear();
            buf.extend_from_slice(&bytes);
            return Some(t);
        }
        while let Some(&handle) = self.sendable.last() {
            let Some(c) = self.conns.get_mut(&handle) else {
                self.sendable.pop();
                continue;
            };
            buf.clear();
            if let Some(t) = c.conn.poll_transmit(now, max_datagrams, buf) {
                return Some(t);
            }
            self.sendable.pop();
            c.sending = false;
            if let Some(at) = c.wake(&self.bounds)
                && c.armed.is_none_or(|armed| at < armed)
            {
                c.armed = Some(at);
                self.timers.push(Reverse((at, handle)));
            }
        }
        // Entries superseded by earlier ones wait for their time: past a bound, the heap is
        // built again from the live ones.
        if self.timers.len() > 4 * self.conns.len() + 64 {
            self.timers = self.conns.iter().filter_map(|(h, c)| Some(Reverse((c.armed?, *h)))).collect();
        }
        None
    }

    /// When the earliest timer falls due (a connection with datagrams still to send: now).
    pub fn poll_timeout(&mut self, now: Instant) -> Option<Instant> {
        if !self.sendable.is_empty() || !self.responses.is_empty() || !self.dirty.is_empty() {
            return Some(now);
        }
        while let Some(&Reverse((at, handle))) = self.timers.peek() {
            if self.conns.get(&handle).is_some_and(|c| c.armed == Some(at)) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    /// The server stops: every connection closed with H3_NO_ERROR (their CONNECTION_CLOSE
    /// goes with the next transmits), so clients learn it at once, not at their idle timeout.
    pub fn close_all(&mut self, now: Instant) {
        let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
        for handle in handles {
            if let Some(c) = self.conns.get_mut(&handle) {
                c.close(now, h3frame::H3_NO_ERROR, "");
            }
            self.touch(handle);
        }
    }
}

/// One connection's turn: quinn's events (the handshake's end, streams opened, readable,
/// writable, stopped), then its deadlines and held answers.
fn turn(c: &mut ServerConn, now: Instant, bounds: &ServerBounds) {
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected => {
                c.connected = true;
                super::open_control(&mut c.conn, &mut c.unsent, H3Server::control_stream);
            }
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = c.conn.streams().accept(dir) {
                    serve_stream(now, c, id, bounds);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => serve_stream(now, c, id, bounds),
            Event::Stream(StreamEvent::Writable { id }) => {
                if let Some((bytes, finish)) = c.unsent.remove(&id) {
                    write_or_hold(&mut c.conn, &mut c.unsent, id, bytes, finish);
                }
            }
            Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                // The client wants no more of it: what waits is dropped, and the stream reset
                // with its code (RFC 9000 §3.5), which frees it on both sides.
                c.unsent.remove(&id);
                c.delayed.retain(|(_, s, _)| *s != id);
                let _ = c.conn.send_stream(id).reset(error_code);
            }
            _ => {}
        }
    }
    // Answers held for `--delay` whose time came.
    while c.delayed.front().is_some_and(|(at, ..)| *at <= now) {
        if let Some((_, stream, bytes)) = c.delayed.pop_front() {
            write_or_hold(&mut c.conn, &mut c.unsent, stream, bytes, true);
        }
    }
    if !c.connected && now >= c.started + bounds.head_timeout {
        c.close(now, h3frame::H3_EXCESSIVE_LOAD, "handshake not done within the head timeout");
        return;
    }
    // A request whose headers are not whole a head timeout after its first byte: reset
    // (the slowloris of QUIC); the connection goes on.
    let late: Vec<u64> =
        (c.heads.iter()).filter(|(_, at)| now >= *at + bounds.head_timeout).map(|(id, _)| *id).collect();
    for id in late {
        let code = VarInt::from_u64(h3frame::H3_REQUEST_INCOMPLETE).unwrap_or(VarInt::from_u32(0x10d));
        let sid = StreamId::from(VarInt::from_u64(id).unwrap_or(VarInt::from_u32(0)));
        let _ = c.conn.send_stream(sid).reset(code);
        let _ = c.conn.recv_stream(sid).stop(code);
        c.h3.reset(id);
        c.heads.retain(|(s, _)| *s != id);
    }
    c.held_since = match (c.unsent.is_empty(), c.held_since) {
        (true, _) => None,
        (false, None) => Some(now),
        (false, since) => since,
    };
    if c.held_since.is_some_and(|since| now >= since + bounds.write_timeout) {
        c.close(now, h3frame::H3_EXCESSIVE_LOAD, "answers not taken within the write timeout");
    }
}

/// Read what a client's stream has: a request stream's bytes to the HTTP/3 server (its answer
/// written once the request is whole, or held for the delay), a unidirectional stream's to
/// its reader; an HTTP/3 error closes the connection with its code, and so does the end of a
/// critical stream or too many unfinished field sections.
fn serve_stream(now: Instant, c: &mut ServerConn, stream: StreamId, bounds: &ServerBounds) {
    let id = u64::from(stream);
    let request = stream.dir() == Dir::Bi;
    let mut answer = Vec::new();
    let h3 = &mut c.h3;
    let read = super::read_stream(&mut c.conn, stream, |piece| match (piece, request) {
        (Piece::Data(bytes, fin), true) => h3.request_data(id, bytes, fin, &mut answer).map(|_| ()),
        (Piece::Reset(_), true) => {
            h3.reset(id);
            Ok(())
        }
        (Piece::Data(bytes, fin), false) => h3.uni_data(id, bytes, fin).map_err(|e| e.code()),
        (Piece::Reset(_), false) => h3.uni_reset(id).map_err(|e| e.code()),
    });
    let mut error = read.err();
    if error.is_none() && c.h3.unfinished_headers() > MAX_UNFINISHED_HEADERS {
        error = Some(h3frame::H3_EXCESSIVE_LOAD);
    }
    if let Some(code) = error {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(0x101));
        c.conn.close(now, code, Bytes::new());
        return;
    }
    if request {
        let waiting = c.h3.awaits_headers(id);
        match c.heads.iter().position(|(s, _)| *s == id) {
            Some(at) if !waiting => {
                c.heads.swap_remove(at);
            }
            None if waiting => c.heads.push((id, now)),
            _ => {}
        }
    }
    if answer.is_empty() {
        return;
    }
    if bounds.delay.is_zero() {
        write_or_hold(&mut c.conn, &mut c.unsent, stream, answer.into(), true);
    } else {
        c.delayed.push_back((now + bounds.delay, stream, answer.into()));
    }
}
