//! HTTP/3 over QUIC, sans-IO: quinn-proto's connections carrying the HTTP/3 codecs of
//! `proto::h3`, fed datagrams and time and asked for datagrams — no socket, no clock read, no
//! runtime, so the UDP engine that carries them (`engine::quic_io`) only moves datagrams, and the
//! tests drive a client and a server against each other in memory.
//!
//! - [`ClientConn`]: one client connection. Each request is a bidirectional stream: its bytes
//!   written (as far as QUIC's flow control takes them; the rest when the stream is writable
//!   again) and the stream finished; its response read as it comes and handed to
//!   [`H3Client`], which says when the operation is complete. This side's control stream (its
//!   SETTINGS) opens once the handshake is done; the server's unidirectional streams are read.
//! - [`ServerEndpoint`]: the built-in server's side of one UDP socket: an endpoint whose
//!   connections each answer requests with [`H3Server`](crate::proto::h3::server::H3Server).
//!
//! Time is quinn-proto's `std::time::Instant` here; the engine converts.

mod server;

pub use server::{ServerBounds, ServerEndpoint};

use crate::proto::Outcome;
use crate::proto::h3::client::{self, H3Client};
use bytes::Bytes;
use quinn_proto::{
    ClientConfig, Connection, ConnectionEvent, ConnectionHandle, Dir, Endpoint, Event, ServerConfig,
    StreamEvent, StreamId, Transmit, VarInt,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// ALPN's name for HTTP/3 (RFC 9114 §3.1).
pub const ALPN: &[u8] = b"h3";

/// The client's QUIC configuration over `tls` (its roots, verifier and ALPN: `h3`); TLS 1.3
/// only, as QUIC is.
pub fn client_config(tls: Arc<rustls::ClientConfig>) -> anyhow::Result<ClientConfig> {
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|_| anyhow::anyhow!("QUIC needs TLS 1.3 (and its TLS_AES_128_GCM_SHA256)"))?;
    let mut config = ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn_proto::TransportConfig::default();
    // A server opens no bidirectional stream in HTTP/3 (RFC 9114 §6.1), and its unidirectional
    // ones are its control stream and QPACK's two.
    transport.max_concurrent_bidi_streams(VarInt::from_u32(0));
    transport.max_concurrent_uni_streams(VarInt::from_u32(3));
    // What the server may have in flight to this side on a connection (quinn's default is
    // unbounded: a server could make each connection hold its whole answer stream): a few
    // streams' windows.
    transport.receive_window(VarInt::from_u32(CLIENT_RECEIVE_WINDOW));
    // No QUIC DATAGRAM frames: nothing here reads them, so none is advertised (quinn's default
    // takes 1.25 MB of them a connection).
    transport.datagram_receive_buffer_size(None);
    // A connection the run holds open stays open while it idles, as a TCP one does: quinn's
    // idle timeout (30 s here, the lower of both sides' is the one that holds) closed every
    // connection of a slowly paced run (`--rate 1 -c 2000`: one request every 2,000 s each)
    // and counted it as a timeout. A PING after 10 s of silence, which a connection that is
    // loaded never sends; the engine counts the datagrams that carry one with nothing in
    // flight as `control` (the server's ACK of it is counted as the connection's state
    // says: a few dozen bytes each way every 10 s of idling).
    transport.keep_alive_interval(Some(KEEP_ALIVE));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// How long a client connection is silent before it sends a PING to keep itself open.
pub const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(10);

/// The receive window of a client connection: 16 MiB, the stream windows of a dozen answers
/// at quinn's default (1.25 MB each).
const CLIENT_RECEIVE_WINDOW: u32 = 16 << 20;

/// Requests a client may have open at once on one `serve h3` connection (its
/// `max_concurrent_bidi_streams`), as `serve h2`'s MAX_CONCURRENT_STREAMS.
pub const MAX_STREAMS: u32 = 100;

/// The server's QUIC configuration over `tls` (its certificate), agreeing to `h3` by ALPN, at
/// most `streams` requests at once per connection, a connection silent for `idle` closed.
pub fn server_config(
    mut tls: rustls::ServerConfig,
    streams: u32,
    idle: std::time::Duration,
) -> anyhow::Result<ServerConfig> {
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn_proto::TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(streams));
    // The client's control stream and QPACK's two: no more.
    transport.max_concurrent_uni_streams(VarInt::from_u32(3));
    // What one connection may have in flight to this side: a burst the socket's receive
    // buffer (4 MiB asked) holds for a few connections, so uploads are paced by QUIC's flow
    // control rather than by the kernel dropping datagrams.
    transport.receive_window(VarInt::from_u32(1 << 20));
    transport.stream_receive_window(VarInt::from_u32(1 << 20));
    transport.max_idle_timeout(quinn_proto::IdleTimeout::try_from(idle).ok());
    // No QUIC DATAGRAM frames (RFC 9221): nothing here reads them, so none is advertised.
    transport.datagram_receive_buffer_size(None);
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// What happened to a request: its stream, how it ended, and its answer in the protocol's
/// words (its status; none for a reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    pub stream: u64,
    pub outcome: Outcome,
    pub answer: Option<crate::outcome::Answer>,
}

/// How a client connection ended: the class its requests in flight fail with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub class: crate::outcome::ErrorClass,
    pub reason: String,
}

impl Lost {
    /// quinn's reason, classed: its idle timeout is `timeout`; a handshake refused (a
    /// certificate, ALPN) `tls`; this side's own HTTP/3 error `protocol`; the peer closing
    /// or resetting `closed`.
    fn of(reason: &quinn_proto::ConnectionError, connected: bool) -> Lost {
        use crate::outcome::ErrorClass;
        use quinn_proto::ConnectionError as E;
        let class = match reason {
            E::TimedOut => ErrorClass::Timeout,
            E::TransportError(_) if !connected => ErrorClass::Tls,
            E::LocallyClosed | E::VersionMismatch | E::TransportError(_) | E::CidsExhausted => {
                ErrorClass::Protocol
            }
            E::ConnectionClosed(_) | E::ApplicationClosed(_) | E::Reset => ErrorClass::Closed,
        };
        Lost { class, reason: reason.to_string() }
    }
}

/// One client connection: quinn-proto's, with the HTTP/3 client's state.
pub struct ClientConn {
    handle: ConnectionHandle,
    conn: Connection,
    h3: H3Client,
    connected: bool,
    control: Option<StreamId>,
    /// Bytes quinn did not take yet, per stream (flow control), and whether to finish it after.
    unsent: HashMap<StreamId, (Bytes, bool)>,
    /// Requests in flight, and how many request streams were opened (the next one's id is
    /// 4 × that: client-initiated bidirectional streams are 0, 4, 8, …).
    requests: usize,
    opened: u64,
    lost: Option<Lost>,
}

impl ClientConn {
    /// Begin a connection from `endpoint` to `remote` (`server_name`: for TLS).
    pub fn connect(
        endpoint: &mut Endpoint,
        now: Instant,
        config: ClientConfig,
        remote: SocketAddr,
        server_name: &str,
        h3: H3Client,
    ) -> anyhow::Result<ClientConn> {
        let (handle, conn) = endpoint.connect(now, config, remote, server_name)?;
        Ok(ClientConn {
            handle,
            conn,
            h3,
            connected: false,
            control: None,
            unsent: HashMap::new(),
            requests: 0,
            opened: 0,
            lost: None,
        })
    }

    pub fn handle(&self) -> ConnectionHandle {
        self.handle
    }

    /// The handshake is done (requests may go).
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// How the connection ended, if it has.
    pub fn lost(&self) -> Option<&Lost> {
        self.lost.as_ref()
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.requests
    }

    pub fn h3(&self) -> &H3Client {
        &self.h3
    }

    /// A datagram's event for this connection (from [`Endpoint::handle`]).
    pub fn handle_event(&mut self, event: ConnectionEvent) {
        self.conn.handle_event(event);
    }

    /// Send request `entry` on a new stream; its id, or `None` when no stream may open now (the
    /// server's stream limit, its GOAWAY, the handshake not done, the connection lost).
    pub fn request(&mut self, entry: usize) -> Option<u64> {
        // None above a GOAWAY's last id: the server would not take it.
        if !self.connected || self.lost.is_some() || !self.h3.accepts(4 * self.opened) {
            return None;
        }
        let next = self.conn.streams().open(Dir::Bi)?;
        self.opened += 1;
        let id = u64::from(next);
        let bytes = self.h3.request(id, entry);
        self.write(next, bytes, true);
        self.requests += 1;
        Some(id)
    }

    /// The server said GOAWAY and nothing it promised to answer is in flight: the connection
    /// is done (close it and open another: a reconnect, not an error).
    pub fn going_away(&self) -> bool {
        self.h3.goaway().is_some() && self.requests == 0
    }

    /// The requests in flight above a GOAWAY's last id: the server will not answer them.
    pub fn refused(&self) -> Vec<u64> {
        self.h3.refused().collect()
    }

    /// Give up on request `stream` (its timeout): reset it both ways and forget it.
    pub fn cancel(&mut self, stream: u64) {
        let Ok(code) = VarInt::from_u64(crate::proto::h3::frame::H3_REQUEST_CANCELLED) else { return };
        let sid = self.stream_id(stream);
        let _ = self.conn.send_stream(sid).reset(code);
        let _ = self.conn.recv_stream(sid).stop(code);
        self.unsent.remove(&sid);
        if self.h3.forget(stream) {
            self.requests -= 1;
        }
    }

    /// No more of `stream` goes: the bytes held for it are dropped (and taken off its layers:
    /// they never went), and its send half reset with `code`.
    fn stop_sending(&mut self, stream: StreamId, code: VarInt) {
        let held = self.unsent.remove(&stream).map_or(0, |(bytes, _)| bytes.len() as u64);
        self.h3.unsent(u64::from(stream), held);
        let _ = self.conn.send_stream(stream).reset(code);
    }

    /// quinn's id of the client's bidirectional stream `stream`.
    fn stream_id(&self, stream: u64) -> StreamId {
        StreamId::from(VarInt::from_u64(stream).unwrap_or(VarInt::from_u32(0)))
    }

    /// Write `bytes` on `stream` as far as quinn takes them (then finish it if `finish`); the
    /// rest waits for the stream to be writable.
    fn write(&mut self, stream: StreamId, bytes: Bytes, finish: bool) {
        write_or_hold(&mut self.conn, &mut self.unsent, stream, bytes, finish);
    }

    /// Everything quinn has to say, in order: the handshake done (the control stream opens),
    /// streams readable (responses decoded: completed requests appended to `done`), streams
    /// writable again, the connection lost. Its endpoint events go to `endpoint`.
    pub fn drive(&mut self, now: Instant, endpoint: &mut Endpoint, done: &mut Vec<Completed>) {
        while let Some(event) = self.conn.poll_endpoint_events() {
            if let Some(back) = endpoint.handle_event(self.handle, event) {
                self.conn.handle_event(back);
            }
        }
        while let Some(event) = self.conn.poll() {
            match event {
                Event::Connected => {
                    self.connected = true;
                    let h3 = &mut self.h3;
                    self.control = open_control(&mut self.conn, &mut self.unsent, |b| h3.control_stream(b));
                }
                Event::ConnectionLost { reason } => {
                    let connected = self.connected;
                    self.lost.get_or_insert_with(|| Lost::of(&reason, connected));
                }
                Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    // The server wants no more of it (an answer before the whole body): what
                    // waits is dropped, and the stream reset with the server's code (RFC 9000
                    // §3.5 — else it stays open on both sides, and the server's stream credit
                    // never comes back).
                    self.stop_sending(id, error_code);
                }
                Event::Stream(StreamEvent::Readable { id }) => self.read(now, id, done),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.conn.streams().accept(Dir::Uni) {
                        self.read(now, id, done);
                    }
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some((bytes, finish)) = self.unsent.remove(&id) {
                        self.write(id, bytes, finish);
                    }
                }
                _ => {}
            }
        }
    }

    /// Read what `stream` has; a request stream's response decoded (completed into `done`),
    /// a server's unidirectional stream's bytes handed to the HTTP/3 client.
    fn read(&mut self, now: Instant, stream: StreamId, done: &mut Vec<Completed>) {
        let id = u64::from(stream);
        let request = stream.dir() == Dir::Bi;
        let (h3, requests, unsent) = (&mut self.h3, &mut self.requests, &self.unsent);
        let mut answered_early = false;
        let read = read_stream(&mut self.conn, stream, |piece| {
            let outcome = match (piece, request) {
                (Piece::Data(bytes, fin), true) => {
                    let outcome = h3.request_data(id, bytes, fin)?;
                    answered_early = fin && outcome.is_some() && unsent.contains_key(&stream);
                    outcome
                }
                (Piece::Reset(code), true) => h3.reset(id, code),
                (Piece::Data(bytes, fin), false) => h3.uni_data(id, bytes, fin).map(|()| None)?,
                // A critical stream (its control stream) reset is the connection's end.
                (Piece::Reset(_), false) => h3.uni_reset(id).map(|()| None)?,
            };
            if let Some(outcome) = outcome {
                *requests -= 1;
                let answer = if matches!(piece, Piece::Reset(_)) { None } else { h3.answer() };
                done.push(Completed { stream: id, outcome, answer });
            }
            Ok(())
        });
        if answered_early {
            // Answered before its body went whole: the rest does not go, and the send half is
            // reset (RFC 9114 §4.1: H3_NO_ERROR).
            self.stop_sending(stream, VarInt::from_u32(0x100));
        }
        if let Err(e) = read {
            self.close_with(now, e);
        }
    }

    /// An HTTP/3 error: the connection closes with its code, and it is lost with its text.
    fn close_with(&mut self, now: Instant, e: client::Error) {
        self.lost.get_or_insert(Lost { class: crate::outcome::ErrorClass::Protocol, reason: e.to_string() });
        let code = VarInt::from_u64(frame_code(e)).unwrap_or(VarInt::from_u32(0x101));
        self.conn.close(now, code, bytes::Bytes::from(e.to_string()));
    }

    /// The next datagram(s) to send, written into `buf` (several of one size with
    /// `segment_size` when `most` allows: GSO).
    pub fn poll_transmit(&mut self, now: Instant, most: usize, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.conn.poll_transmit(now, most, buf)
    }

    /// When quinn wants [`handle_timeout`](Self::handle_timeout) called next.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
    }

    /// Close the connection (the run is over): `H3_NO_ERROR`.
    pub fn close(&mut self, now: Instant) {
        self.conn.close(now, VarInt::from_u32(0x100), bytes::Bytes::new());
    }

    /// quinn-proto's own figures: datagrams and UDP payload bytes each way, lost packets.
    pub fn stats(&self) -> quinn_proto::ConnectionStats {
        self.conn.stats()
    }

    /// Whether the connection is gone (drained): the engine may forget it.
    pub fn is_drained(&self) -> bool {
        self.conn.is_drained()
    }
}

/// The HTTP/3 error code an error calls for.
fn frame_code(e: client::Error) -> u64 {
    use crate::proto::h3::frame;
    match e {
        client::Error::Frame(e) => e.code(),
        client::Error::Qpack(_) => frame::QPACK_DECOMPRESSION_FAILED,
        client::Error::Uni(e) => e.code(),
        client::Error::NoStatus | client::Error::AfterTrailers => frame::H3_MESSAGE_ERROR,
        client::Error::Incomplete => frame::H3_REQUEST_INCOMPLETE,
        client::Error::Push => frame::H3_ID_ERROR,
        client::Error::OnRequestStream(_) | client::Error::DataBeforeHeaders => frame::H3_FRAME_UNEXPECTED,
    }
}

/// The handshake is done: this side's HTTP/3 control stream opens, its first bytes (the
/// SETTINGS) from `control`. `None`: quinn would open no stream.
pub(crate) fn open_control(
    conn: &mut Connection,
    unsent: &mut HashMap<StreamId, (Bytes, bool)>,
    control: impl FnOnce(&mut Vec<u8>),
) -> Option<StreamId> {
    let stream = conn.streams().open(Dir::Uni)?;
    let mut bytes = Vec::new();
    control(&mut bytes);
    write_or_hold(conn, unsent, stream, bytes.into(), false);
    Some(stream)
}

/// Write `bytes` on `stream` as far as quinn takes them, then finish it if `finish`; the rest
/// (and the finish) is held in `unsent` until the stream is writable again. Both roles'.
pub(crate) fn write_or_hold(
    conn: &mut Connection,
    unsent: &mut HashMap<StreamId, (Bytes, bool)>,
    stream: StreamId,
    mut bytes: Bytes,
    finish: bool,
) {
    write_all(conn, stream, &mut bytes);
    if bytes.is_empty() {
        if finish {
            let _ = conn.send_stream(stream).finish();
        }
    } else {
        unsent.insert(stream, (bytes, finish));
    }
}

/// Write as much of `bytes` on `stream` as quinn takes, leaving the rest in `bytes` (quinn
/// keeps what it took by reference: no copy): again after a partial write, until it says
/// `Blocked` (only then does it tell the stream `Writable` when room comes: a partial write
/// alone registers nothing). Bounded: each write takes at least an octet or ends the loop.
fn write_all(conn: &mut Connection, stream: StreamId, bytes: &mut Bytes) {
    while !bytes.is_empty() {
        match conn.send_stream(stream).write_chunks(std::slice::from_mut(bytes)) {
            Ok(written) if written.bytes > 0 => {}
            _ => break,
        }
    }
}

/// A piece of what a peer's stream gave: bytes and whether the stream ended after them (its
/// end alone is empty bytes), or its reset's code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Piece<'a> {
    Data(&'a [u8], bool),
    Reset(u64),
}

/// Read what `stream` has, each piece to `take` until it fails, the stream is blocked, or it
/// ends. A chunk is handed on once the next one says whether the stream ended after it, so an
/// answer's last bytes and its end are one piece, not two. Both roles read their peer's
/// streams this way. Bounded: each chunk is bytes the peer sent within its flow-control window.
pub(crate) fn read_stream<E>(
    conn: &mut quinn_proto::Connection,
    stream: StreamId,
    mut take: impl FnMut(Piece<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut recv = conn.recv_stream(stream);
    let Ok(mut chunks) = recv.read(true) else { return Ok(()) };
    let (mut held, mut read, mut ended, mut reset) = (None::<Bytes>, Ok(()), false, None);
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                if let Some(before) = held.replace(chunk.bytes) {
                    read = take(Piece::Data(&before, false));
                    if read.is_err() {
                        break;
                    }
                }
            }
            Ok(None) => {
                ended = true;
                break;
            }
            Err(quinn_proto::ReadError::Blocked) => break,
            Err(quinn_proto::ReadError::Reset(code)) => {
                reset = Some(code.into_inner());
                break;
            }
        }
    }
    let _ = chunks.finalize();
    read?;
    match held {
        Some(last) => take(Piece::Data(&last, ended))?,
        None if ended => take(Piece::Data(&[], true))?,
        None => {}
    }
    reset.map_or(Ok(()), |code| take(Piece::Reset(code)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::h2::client::RequestSpec;
    use bytes::BytesMut;
    use quinn_proto::{DatagramEvent, EndpointConfig};
    use std::time::Duration;

    /// A client and a server TLS 1.3 configuration over a fresh self-signed certificate.
    fn tls() -> (rustls::ClientConfig, rustls::ServerConfig) {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = made.cert.der().clone();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key.into())
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (client, server)
    }

    /// What a run in memory saw: answers, and datagrams and UDP payload bytes each way, in
    /// the handshake and after it.
    #[derive(Debug, Default)]
    struct Seen {
        done: Vec<Completed>,
        handshake: [u64; 4],
        after: [u64; 4],
    }

    /// `n` requests of `body` bytes, `depth` at a time, over one connection in memory: the
    /// datagrams passed between a client and a server endpoint as they are produced, the
    /// clock moved to the next timer when nothing is left to pass. Bounded in rounds.
    fn run(n: usize, depth: usize, body: &[u8]) -> (Seen, ClientConn) {
        let (client_tls, server_tls) = tls();
        let bounds = ServerBounds {
            max_conns: 10,
            head_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            delay: Duration::ZERO,
        };
        let config = server_config(server_tls, MAX_STREAMS, Duration::from_secs(30)).unwrap();
        let mut server = ServerEndpoint::new(config, bounds);
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
        let (client_addr, server_addr): (SocketAddr, SocketAddr) =
            ("127.0.0.1:40000".parse().unwrap(), "127.0.0.1:8443".parse().unwrap());
        let spec = RequestSpec {
            method: "POST".into(),
            scheme: "https",
            authority: "localhost:8443".into(),
            path: "/".into(),
            headers: vec![],
            body: body.to_vec(),
            grpc: false,
        };
        let mut now = Instant::now();
        let mut client_tls = client_tls;
        client_tls.alpn_protocols = vec![ALPN.to_vec()];
        let config = client_config(Arc::new(client_tls)).unwrap();
        let h3 = H3Client::new(&spec, true);
        let mut c = ClientConn::connect(&mut endpoint, now, config, server_addr, "localhost", h3).unwrap();
        let mut seen = Seen::default();
        let (mut sent, mut buf) = (0, Vec::new());
        for _ in 0..100_000 {
            c.drive(now, &mut endpoint, &mut seen.done);
            while sent < n && c.in_flight() < depth && c.request(0).is_some() {
                sent += 1;
            }
            let count = if c.connected() { &mut seen.after } else { &mut seen.handshake };
            let mut moved = false;
            while let Some(t) = c.poll_transmit(now, 1, &mut buf) {
                (count[0], count[1]) = (count[0] + 1, count[1] + t.size as u64);
                server.datagram(now, client_addr, BytesMut::from(&buf[..t.size]));
                buf.clear();
                moved = true;
            }
            server.drive(now);
            while let Some(t) = server.poll_transmit(now, 1, &mut buf) {
                (count[2], count[3]) = (count[2] + 1, count[3] + t.size as u64);
                let data = BytesMut::from(&buf[..t.size]);
                if let Some(DatagramEvent::ConnectionEvent(_, event)) =
                    endpoint.handle(now, server_addr, None, None, data, &mut Vec::new())
                {
                    c.handle_event(event);
                }
                buf.clear();
                moved = true;
            }
            if seen.done.len() == n {
                break;
            }
            if !moved {
                // Nothing to pass: the next timer.
                let next = [c.poll_timeout(), server.poll_timeout(now)].into_iter().flatten().min();
                now = next.unwrap_or(now + Duration::from_millis(1)).max(now);
                c.handle_timeout(now);
                server.handle_timeout(now);
            }
        }
        (seen, c)
    }

    /// 200 POSTs of 400 bytes, 8 streams at a time, over QUIC in memory: every one answered
    /// 200 by the built-in server's HTTP/3 half; the HTTP/3 layers as by hand (a HEADERS
    /// frame of the section, a DATA frame of the body); the handshake's first datagram padded to 1,200 bytes (RFC 9000
    /// §14.1); after it, the UDP payload at least the HTTP/3 bytes and a header and an AEAD
    /// tag (17) per datagram each way, and quinn's own counts equal to what passed.
    #[test]
    fn posts_over_quic_in_memory() {
        let (seen, c) = run(200, 8, &[b'p'; 400]);
        assert_eq!(seen.done.len(), 200);
        assert!(seen.done.iter().all(|d| d.outcome == Outcome::Op), "{:?}", &seen.done[..3]);
        let l = c.h3().layers();
        // The section: its prefix (2), `:method POST` and `:scheme https` indexed (1 + 1),
        // `:authority` a literal of static name (2 and the host's Huffman code), `:path /`
        // (1), `content-length: 400` (0x54, 0x82 and 2 octets).
        let section = 2 + 1 + 1 + 2 + crate::proto::h2::huffman::encoded_len(b"localhost:8443") + 1 + 4;
        assert_eq!(
            (l.first.ops + l.steady.ops, (l.steady.tx.headers / l.steady.ops) as usize),
            (200, section)
        );
        let h3_tx = (l.first.tx.total() + l.steady.tx.total()) as f64 / 200.0;
        let h3_rx = (l.first.rx.total() + l.steady.rx.total()) as f64 / 200.0;
        assert_eq!(h3_tx, (2 + section + 3 + 400) as f64);
        assert!(seen.handshake[1] >= 1200, "the client's Initial is padded: {:?}", seen.handshake);
        let udp_tx = seen.after[1] as f64 / 200.0;
        let udp_rx = seen.after[3] as f64 / 200.0;
        // Each datagram: at least a one-octet header and a 16-octet AEAD tag around what it
        // carries (several streams' frames in one, when they go together).
        let (dgrams_tx, dgrams_rx) = (seen.after[0] as f64, seen.after[2] as f64);
        assert!(seen.after[1] as f64 >= 200.0 * h3_tx + 17.0 * dgrams_tx, "{seen:?} {h3_tx}");
        assert!(seen.after[3] as f64 >= 200.0 * h3_rx + 17.0 * dgrams_rx, "{seen:?} {h3_rx}");
        let stats = c.stats();
        assert_eq!(stats.udp_tx.datagrams, seen.handshake[0] + seen.after[0]);
        assert_eq!(stats.udp_tx.bytes, seen.handshake[1] + seen.after[1]);
        assert_eq!(stats.udp_rx.bytes, seen.handshake[3] + seen.after[3]);
        eprintln!(
            "HTTP/3 POST 400 B in memory: h3 {h3_tx} / {h3_rx} B, UDP {udp_tx:.1} / {udp_rx:.1} B and {:.2} / {:.2} datagrams per request; handshake {:?}",
            seen.after[0] as f64 / 200.0,
            seen.after[2] as f64 / 200.0,
            seen.handshake
        );
    }

    /// A 1 MiB body goes under QUIC's flow control (the server's stream and connection windows
    /// are 1 MiB, less than the request): the rest is written as the stream becomes writable
    /// (a partial write is retried until quinn says blocked, or it would never say writable),
    /// and it is answered.
    #[test]
    fn a_mebibyte_body_goes_under_quics_flow_control() {
        let (seen, _) = run(3, 2, &vec![b'b'; 1 << 20]);
        assert_eq!(seen.done.iter().filter(|d| d.outcome == Outcome::Op).count(), 3, "{:?}", seen.done);
        assert!(seen.after[1] > 3 << 20, "{:?}", seen.after);
    }
}
