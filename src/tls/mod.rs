//! TLS as a layer, not a protocol: rustls's sans-IO connection sits between a protocol's
//! plaintext and the socket's bytes, for the client (inside the shared connection machine,
//! [`crate::engine::conn`]) and for the built-in servers ([`TlsServer`], a codec wrapping
//! another). Every engine keeps its one loop; only the bytes it moves are now records.
//!
//! What TLS costs is counted on two layers: the wire (every record, what the kernel carried:
//! the `TCP_INFO` audit still matches to the byte) and the plaintext inside, by the same
//! classes. A record's overhead (its 5-byte header, the AEAD tag, TLS 1.3's inner type) counts
//! with what it carries; records that carry no protocol bytes (the handshake, session
//! tickets, alerts) are a class of their own, `tls`. The client writes one record per
//! operation, as a client calling `SSL_write` per request does.
//!
//! Set-up is in [`options`], below the protocols and plans that name it: the client's
//! configuration from the command line (`--ca`, `--insecure`, `--tls-version`, `--tls-resume`),
//! the servers' from `--cert`/`--key` or a self-signed certificate made at start. The
//! one-line explanations of handshake failures are here.

pub mod options;
use crate::proto::{Ask, Hooks, Served, ServerCodec, Tell};
use options::ClientTls;
use std::io::{Read, Write};
use std::sync::Arc;

/// TLS record header: type, version, length.
pub const RECORD_HEADER: usize = 5;
/// The longest record a peer may send: 2^14 bytes of plaintext plus TLS 1.2's largest
/// expansion (RFC 5246 §6.2.3; TLS 1.3 allows less).
pub const MAX_RECORD: usize = RECORD_HEADER + (1 << 14) + 2048;

/// Why a record stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error(
        "the server answered in plaintext, not TLS (it began {0:?}): is this port a TLS one? Use http:// or ws:// for a plaintext server"
    )]
    NotTls(String),
    #[error("a TLS record of {0} bytes: longer than TLS allows")]
    TooLong(usize),
}

/// Whether `bytes` begin as a TLS record does (RFC 8446 §5.1): an alert (21) or a handshake
/// (22), then a legacy version 3.x — what a TLS server says to a plaintext client.
pub fn looks_like_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [21 | 22, 3, 0..=4, ..])
}

/// The length of the whole record at the start of `wire`, once it has all arrived.
pub fn record_len(wire: &[u8]) -> Result<Option<usize>, RecordError> {
    let Some(head) = wire.get(..RECORD_HEADER) else {
        // Tell plaintext from TLS as soon as the first byte is there.
        return match wire.first() {
            Some(b) if !(20..=24).contains(b) => Err(not_tls(wire)),
            _ => Ok(None),
        };
    };
    if !(20..=24).contains(&head[0]) || head[1] != 3 {
        return Err(not_tls(wire));
    }
    let len = RECORD_HEADER + usize::from(u16::from_be_bytes([head[3], head[4]]));
    if len > MAX_RECORD {
        return Err(RecordError::TooLong(len));
    }
    Ok((wire.len() >= len).then_some(len))
}

fn not_tls(wire: &[u8]) -> RecordError {
    let text: String = String::from_utf8_lossy(&wire[..wire.len().min(16)])
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    RecordError::NotTls(text)
}

/// The length of the whole records at the start of `wire`; all of it if it is not TLS (the
/// session refuses it).
fn whole_records(wire: &[u8]) -> usize {
    let mut at = 0;
    // Bounded: each record is at least a header long.
    loop {
        match record_len(&wire[at..]) {
            Ok(Some(len)) => at += len,
            Ok(None) => return at,
            Err(_) => return wire.len(),
        }
    }
}

/// Encrypt `plain` into records appended to `out` (with anything else rustls had to send);
/// returns the records appended.
pub fn seal<D>(conn: &mut rustls::ConnectionCommon<D>, plain: &[u8], out: &mut Vec<u8>) -> u64 {
    if !plain.is_empty() {
        // Unlimited buffers (set at creation): a write takes everything.
        let _ = conn.writer().write_all(plain);
    }
    flush(conn, out)
}

/// Append what rustls has to send (handshake messages, alerts, records); returns how many
/// records.
pub fn flush<D>(conn: &mut rustls::ConnectionCommon<D>, out: &mut Vec<u8>) -> u64 {
    let before = out.len();
    while conn.wants_write() {
        if conn.write_tls(out).is_err() {
            break;
        }
    }
    count_records(&out[before..])
}

/// How many records `wire` (whole records) holds.
pub fn count_records(mut wire: &[u8]) -> u64 {
    let mut n = 0;
    while let Ok(Some(len)) = record_len(wire) {
        wire = &wire[len..];
        n += 1;
    }
    n
}

/// Feed `bytes` from the wire to rustls (whole records, or any cut of the stream) and process
/// them; plaintext that came whole is then in `conn.reader()`.
pub fn open<D>(conn: &mut rustls::ConnectionCommon<D>, bytes: &[u8]) -> Result<(), rustls::Error> {
    let mut input = bytes;
    while !input.is_empty() {
        match conn.read_tls(&mut input) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        conn.process_new_packets()?;
    }
    Ok(())
}

/// Move the plaintext rustls holds into `dst` (the receive buffer of the protocol above);
/// `Ok(true)` when the peer said `close_notify`.
pub fn drain_plain<D>(
    conn: &mut rustls::ConnectionCommon<D>,
    dst: &mut crate::recv::RecvBuf,
) -> std::io::Result<(usize, bool)> {
    let mut total = 0;
    loop {
        let Some(room) = dst.spare() else {
            return Err(std::io::Error::other("message larger than the receive limit"));
        };
        match conn.reader().read(room) {
            Ok(0) => return Ok((total, true)),
            Ok(n) => {
                dst.filled(n);
                total += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok((total, false)),
            Err(e) => return Err(e),
        }
    }
}

/// The same for a QUIC handshake's TLS failure, which quinn gives as text (its crypto error's
/// reason, `invalid peer certificate: UnknownIssuer`): the advice of [`explain`] where the
/// words say which failure it was.
pub fn explain_quic(reason: &str) -> String {
    use rustls::CertificateError as C;
    let certificate = |e| explain(&rustls::Error::InvalidCertificate(e));
    if reason.contains("UnknownIssuer") || reason.contains("BadSignature") {
        certificate(C::UnknownIssuer)
    } else if reason.contains("NotValidForName") {
        certificate(C::NotValidForName)
    } else if reason.contains("Expired") {
        certificate(C::Expired)
    } else {
        reason.to_string()
    }
}

/// One line saying what a TLS failure means and what to do.
pub fn explain(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            "the server's certificate is not signed by a CA we trust: pass --ca FILE (its certificate or CA), or --insecure".into()
        }
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            "the server's certificate is not valid for the URL's host: use a name it was issued for, or --insecure".into()
        }
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "the server's certificate has expired (or --insecure)".into()
        }
        E::InvalidCertificate(other) => format!("the server's certificate was refused: {other:?}"),
        E::AlertReceived(A::ProtocolVersion) => {
            "the server refused the TLS version offered: try another --tls-version".into()
        }
        E::AlertReceived(A::HandshakeFailure) => {
            "the server refused the handshake (no version, cipher or group in common): check --tls-version".into()
        }
        E::AlertReceived(A::CertificateRequired) => {
            "the server requires a client certificate (mutual TLS): pass --client-cert FILE and --client-key FILE".into()
        }
        E::AlertReceived(
            alert @ (A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::AccessDenied | A::DecryptError),
        ) => {
            format!("the server refused our client certificate (TLS alert {alert:?}): is --client-cert signed by a CA the server trusts?")
        }
        E::AlertReceived(A::NoApplicationProtocol) => {
            "the server agreed to none of the protocols offered by ALPN: it does not speak this URL's protocol over TLS (https:// and wss:// offer http/1.1, h2:// offers h2: use the scheme of what it speaks)".into()
        }
        E::PeerIncompatible(why) => format!("the server offers nothing we speak: {why:?}; check --tls-version"),
        E::AlertReceived(alert) => format!("the server sent TLS alert {alert:?}"),
        other => format!("TLS: {other}"),
    }
}

/// A TLS server connection's plaintext buffer starts this small and grows for large messages.
const SERVER_PLAIN_INITIAL: usize = 4096;

/// One client connection's TLS session, as the connection machine drives it: the ciphertext
/// read so far, and for each record whose plaintext the protocol has not consumed yet, how
/// much of it is left and the record's overhead — so that every plaintext byte the codec
/// consumes is turned back into the wire bytes that carried it.
pub struct ClientSession {
    pub conn: rustls::ClientConnection,
    /// Ciphertext received, not yet a whole record.
    pub wire_in: crate::recv::RecvBuf,
    /// (plaintext left, overhead) of each record not yet consumed whole, oldest first.
    records: std::collections::VecDeque<(u32, u32)>,
    /// The TLS handshake is not over yet (its bytes are counted apart).
    pub in_handshake: bool,
    pub started: crate::clock::Instant,
    /// TLS-class bytes of the handshake, each way.
    pub handshake_tx: u64,
    pub handshake_rx: u64,
    scratch: Vec<u8>,
}

/// What one read's records held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Plaintext bytes appended for the protocol.
    pub plain: usize,
    /// Records that carried no plaintext (handshake, tickets, alerts), and their bytes.
    pub tls_records: u64,
    pub tls_bytes: u64,
}

/// Wire bytes that carried some consumed plaintext, and the records they completed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Carried {
    pub wire: u64,
    pub plain: u64,
    pub records: u64,
}

/// Why a TLS client session failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{}", explain(.0))]
    Tls(rustls::Error),
    #[error(transparent)]
    Record(RecordError),
    #[error("{0}")]
    Plain(std::io::Error),
}

impl ClientSession {
    pub fn new(tls: &ClientTls, now: crate::clock::Instant) -> Result<Self, SessionError> {
        Ok(ClientSession {
            conn: tls.session().map_err(SessionError::Tls)?,
            wire_in: crate::recv::RecvBuf::new(),
            records: std::collections::VecDeque::new(),
            in_handshake: true,
            started: now,
            handshake_tx: 0,
            handshake_rx: 0,
            scratch: Vec::new(),
        })
    }

    /// Bytes arrived in `wire_in`: open every whole record, plaintext into `plain`.
    pub fn received(&mut self, plain: &mut crate::recv::RecvBuf) -> Result<Opened, SessionError> {
        let mut opened = Opened::default();
        while let Some(len) = record_len(self.wire_in.data()).map_err(SessionError::Record)? {
            open(&mut self.conn, &self.wire_in.data()[..len]).map_err(SessionError::Tls)?;
            self.wire_in.consume(len);
            let (got, _closed) = drain_plain(&mut self.conn, plain).map_err(SessionError::Plain)?;
            if got == 0 {
                opened.tls_records += 1;
                opened.tls_bytes += len as u64;
                if self.in_handshake {
                    self.handshake_rx += len as u64;
                }
            } else {
                opened.plain += got;
                self.records.push_back((got as u32, (len - got) as u32));
            }
        }
        Ok(opened)
    }

    /// The protocol consumed `plain` bytes: the wire bytes that carried them (the overhead of
    /// a record counts with the bytes that complete it).
    pub fn carried(&mut self, plain: usize) -> Carried {
        let mut c = Carried { wire: plain as u64, plain: plain as u64, records: 0 };
        let mut left = plain as u32;
        while left > 0
            && let Some((plain_left, overhead)) = self.records.front_mut()
        {
            let take = left.min(*plain_left);
            *plain_left -= take;
            left -= take;
            if *plain_left == 0 {
                c.wire += u64::from(*overhead);
                c.records += 1;
                self.records.pop_front();
            }
        }
        c
    }

    /// Wire bytes received and not consumed (the connection ends): what is left of the
    /// records, and what never made a whole one.
    pub fn leftover(&mut self) -> u64 {
        let queued: u64 = self.records.drain(..).map(|(p, o)| u64::from(p) + u64::from(o)).sum();
        queued + self.wire_in.reset() as u64
    }

    /// Seal `out[from..]` (plaintext) into records in its place; returns the records.
    pub fn seal_tail(&mut self, out: &mut Vec<u8>, from: usize) -> u64 {
        self.scratch.clear();
        self.scratch.extend_from_slice(&out[from..]);
        out.truncate(from);
        seal(&mut self.conn, &self.scratch, out)
    }
}

/// A built-in server with TLS: wraps the protocol's codec, which sees only plaintext. TLS starts
/// at the first byte, or when the codec says so ([`Served::start_tls`]: the nsq sink after
/// `IDENTIFY` with `tls_v1`).
pub struct TlsServer<S> {
    inner: S,
    config: Arc<rustls::ServerConfig>,
    at_accept: bool,
    /// An upgrade's handshake is over (the codec was told).
    upgraded: bool,
    session: Option<Box<rustls::ServerConnection>>,
    plain_in: crate::recv::RecvBuf,
    plain_out: Vec<u8>,
}

impl<S: Clone> Clone for TlsServer<S> {
    fn clone(&self) -> Self {
        // A fresh connection: no session yet.
        TlsServer::new(self.inner.clone(), self.config.clone(), self.at_accept)
    }
}

impl<S> TlsServer<S> {
    pub fn new(inner: S, config: Arc<rustls::ServerConfig>, at_accept: bool) -> Self {
        TlsServer {
            inner,
            config,
            at_accept,
            upgraded: false,
            session: None,
            plain_in: crate::recv::RecvBuf::bounded(SERVER_PLAIN_INITIAL, 80 << 20),
            plain_out: Vec::new(),
        }
    }

    fn start(&mut self) -> Result<(), rustls::Error> {
        let mut conn = rustls::ServerConnection::new(self.config.clone())?;
        conn.set_buffer_limit(None);
        self.session = Some(Box::new(conn));
        Ok(())
    }
}

impl<S: ServerCodec> ServerCodec for TlsServer<S> {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        if self.session.is_none() && !self.at_accept {
            // Plaintext until the protocol upgrades (its reply to the upgrade goes out plain).
            let served = self.inner.serve(input, out);
            if served.start_tls && self.start().is_err() {
                return Served { close: true, ..served };
            }
            return served;
        }
        if self.session.is_none() && self.start().is_err() {
            return Served { consumed: input.len(), close: true, ..Served::default() };
        }
        let conn = self.session.as_mut().expect("started");
        // Whole records only: a record still arriving stays with the connection, which then
        // waits for a head (its first byte on the wire starts the head timeout: a request
        // trickling in a byte of ciphertext at a time is cut off like a plaintext one).
        // Bytes that are not TLS go to rustls as they are, which refuses them.
        let whole = whole_records(input);
        let mut rest = &input[..whole];
        let mut peer_done = false;
        let mut failed = false;
        while !rest.is_empty() && !failed {
            match conn.read_tls(&mut rest) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => failed = true,
            }
            if conn.process_new_packets().is_err() {
                failed = true; // rustls queued the alert to send
            }
            match drain_plain(conn, &mut self.plain_in) {
                Ok((_, closed)) => peer_done |= closed,
                Err(_) => failed = true,
            }
        }
        let handshaking = conn.is_handshaking();
        if !handshaking && !self.at_accept && !self.upgraded {
            self.upgraded = true;
            self.inner.tls_established(&mut self.plain_out);
        }
        let mut served = Served { consumed: whole, ..Served::default() };
        if !self.plain_in.data().is_empty() {
            let inner = self.inner.serve(self.plain_in.data(), &mut self.plain_out);
            self.plain_in.consume(inner.consumed);
            served = Served { consumed: whole, ..inner };
        }
        if handshaking || (whole < input.len() && served.awaiting == crate::proto::Awaiting::Request) {
            served.awaiting = crate::proto::Awaiting::Head;
        }
        served.close |= failed || peer_done;
        seal(conn, &self.plain_out, out);
        self.plain_out.clear();
        if served.close && !failed {
            // After the last answer: TLS's goodbye.
            conn.send_close_notify();
            flush(conn, out);
        }
        served
    }

    fn ask(&self, question: Ask<'_>) {
        match question {
            // A refused client is told nothing: a plaintext refusal would not be TLS.
            Ask::Busy(_) => {}
            question => self.inner.ask(question),
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        match (news, self.session.as_mut()) {
            (Tell::Heartbeat(out), Some(conn)) if !conn.is_handshaking() => {
                self.inner.heartbeat(&mut self.plain_out);
                seal(conn, &self.plain_out, out);
                self.plain_out.clear();
            }
            // Mid-handshake, a heartbeat would be plaintext in a TLS stream: it waits.
            (Tell::Heartbeat(_), Some(_)) => {}
            (news, _) => self.inner.tell(news),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::options::*;
    use super::*;

    /// A server with a certificate made here, and a client session that trusts it.
    fn server_and_client() -> (ServerTls, rustls::ClientConnection) {
        let server = ServeTlsArgs { tls: true, ..Default::default() }.server().unwrap().unwrap();
        let args = TlsArgs { trust: vec![server.cert_der.clone()], ..Default::default() };
        let client = ClientTls {
            config: client_config(&args, Some(b"http/1.1")).unwrap(),
            name: server_name("localhost").unwrap(),
            start: TlsStart::AtConnect,
            alpn: None,
        };
        let session = client.session().unwrap();
        (server, session)
    }

    #[test]
    fn record_lengths_and_plaintext_told_apart() {
        assert_eq!(record_len(&[]), Ok(None));
        assert_eq!(record_len(&[23, 3, 3, 0]), Ok(None));
        assert_eq!(record_len(&[23, 3, 3, 0, 2, 9]), Ok(None));
        assert_eq!(record_len(&[23, 3, 3, 0, 2, 9, 9, 1]), Ok(Some(7)));
        assert!(
            matches!(record_len(b"HTTP/1.1 400 Bad"), Err(RecordError::NotTls(t)) if t.starts_with("HTTP/1.1"))
        );
        assert!(matches!(record_len(b"H"), Err(RecordError::NotTls(_))));
        assert_eq!(record_len(&[23, 3, 3, 0xff, 0xff]), Err(RecordError::TooLong(5 + 0xffff)));
        assert_eq!(count_records(&[22, 3, 1, 0, 1, 0, 23, 3, 3, 0, 0]), 2);
    }

    /// A client and a server session in memory: every handshake byte and record, counted.
    #[test]
    fn sealed_records_cost_22_bytes_each_in_tls_1_3() {
        let (server, mut c) = server_and_client();
        let mut s = rustls::ServerConnection::new(server.config.clone()).unwrap();
        let mut wire = Vec::new();
        for _ in 0..4 {
            flush(&mut c, &mut wire);
            let mut w = &wire[..];
            while !w.is_empty() {
                s.read_tls(&mut w).unwrap();
                s.process_new_packets().unwrap();
            }
            wire.clear();
            flush(&mut s, &mut wire);
            while let Ok(Some(len)) = record_len(&wire) {
                open(&mut c, &wire[..len]).unwrap();
                wire.drain(..len);
            }
        }
        assert!(!c.is_handshaking() && !s.is_handshaking());
        assert_eq!(c.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
        wire.clear();
        assert_eq!(seal(&mut c, &[b'x'; 400], &mut wire), 1);
        assert_eq!(wire.len(), 400 + 22, "header 5 + inner type 1 + AES-GCM/ChaCha tag 16");
        wire.clear();
        assert_eq!(seal(&mut c, &vec![b'x'; 20_000], &mut wire), 2, "16 KiB of plaintext per record");
    }

    /// A request trickling in over TLS a byte of ciphertext at a time is cut off at the head
    /// timeout counted from its first byte on the wire (it counted from the first plaintext
    /// byte, which a record completes only at its end: the idle timeout, reset by every
    /// byte, applied instead, and a byte a minute held the connection for ever).
    #[test]
    fn a_request_trickling_in_one_byte_of_a_record_at_a_time_meets_the_head_timeout() {
        use crate::engine::serve_conn::{ServerConn, ServerLimits};
        use crate::stats::ServerTally;
        use std::time::Duration;
        let (server, mut c) = server_and_client();
        let codec = TlsServer::new(crate::proto::http1::Http1Server::default(), server.config.clone(), true);
        let t0 = crate::clock::Instant::now();
        let limits = ServerLimits::default();
        let mut conn = ServerConn::new(codec, limits, t0);
        let mut tally = ServerTally::default();
        let mut feed = |conn: &mut ServerConn<_>, bytes: &[u8], at| {
            conn.read_buf().unwrap()[..bytes.len()].copy_from_slice(bytes);
            conn.received(bytes.len(), at, 0, &mut tally);
            let answer = conn.to_write().to_vec();
            conn.written(at, &mut tally);
            answer
        };
        // The handshake, whole records at once.
        let mut wire = Vec::new();
        for _ in 0..4 {
            flush(&mut c, &mut wire);
            let answer = if wire.is_empty() { Vec::new() } else { feed(&mut conn, &wire, t0) };
            wire.clear();
            let mut a = &answer[..];
            while let Ok(Some(len)) = record_len(a) {
                open(&mut c, &a[..len]).unwrap();
                a = &a[len..];
            }
        }
        assert!(!c.is_handshaking());
        assert_eq!(conn.deadline(), t0 + limits.idle_timeout, "idle between requests");
        seal(&mut c, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &mut wire);
        let first = t0 + Duration::from_secs(1);
        for (i, byte) in wire[..wire.len() - 1].iter().enumerate() {
            let at = first + Duration::from_millis(500 * i as u64);
            if at >= conn.deadline() {
                break;
            }
            assert!(feed(&mut conn, &[*byte], at).is_empty(), "no answer to part of a record");
        }
        assert_eq!(conn.deadline(), first + limits.head_timeout, "from the record's first byte");
        conn.deadline_passed(first + limits.head_timeout, &mut tally);
        assert!(conn.closing() && conn.timed_out());
    }

    #[test]
    fn failures_explained_in_one_line_with_advice() {
        let e = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        assert!(explain(&e).contains("--ca FILE"));
        let e = rustls::Error::AlertReceived(rustls::AlertDescription::ProtocolVersion);
        assert!(explain(&e).contains("--tls-version"));
    }

    /// The hooks reach a codec through every wrapper (a box, TLS, the WebSocket session under
    /// Socket.IO) without each wrapper naming them; TLS keeps only the refusal to itself.
    #[test]
    fn hooks_pass_through_the_wrappers() {
        use crate::codec::BoxedServer;
        use crate::proto::Hooks;
        use std::time::Duration;
        let server = ServeTlsArgs { tls: true, ..Default::default() }.server().unwrap().unwrap();
        let tls = |codec: BoxedServer| -> BoxedServer {
            Box::new(TlsServer::new(codec, server.config.clone(), true))
        };
        let nsq: BoxedServer = Box::new(crate::proto::nsq::NsqServer::new(Default::default()));
        let handler =
            crate::proto::sio::SioHandler::new(4, Duration::from_secs(25), Duration::from_secs(20), None);
        let sio: BoxedServer = Box::new(crate::proto::sio::SioServer::with(handler, 1 << 20));
        let http: BoxedServer = Box::<crate::proto::http1::Http1Server>::default();
        for codec in [nsq.clone(), tls(nsq)] {
            assert_eq!(codec.heartbeat_interval(), Some(Duration::from_secs(30)));
            assert_eq!(codec.silence_limit(), Some(Duration::from_secs(60)));
        }
        // The session answers for Socket.IO's timing only once upgraded.
        for codec in [sio.clone(), tls(sio)] {
            assert_eq!(codec.heartbeat_interval(), None);
        }
        let busy = |codec: &BoxedServer| {
            let mut out = Vec::new();
            codec.busy(&mut out);
            out
        };
        assert_eq!(busy(&http), crate::proto::http1::RESPONSE_BUSY);
        assert_eq!(busy(&tls(http.clone())), b"", "a plaintext refusal is not TLS");
    }
}
