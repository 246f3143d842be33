//! The HTTP/2 client (`h2c://`: cleartext, with prior knowledge): each operation is a stream —
//! its HEADERS (and DATA when it has a body) out, the server's HEADERS and DATA on that stream
//! back — completed by its own answer in whatever order the streams end (the connection
//! machine finds it by [`op_id`](ClientCodec::op_id)). The preface and the first SETTINGS
//! exchange are the handshake; SETTINGS, PING, WINDOW_UPDATE and GOAWAY later are control.
//!
//! Requests are HPACK-encoded as clients do, on the connection's own dynamic table: the first
//! request inserts its headers, the next ones index them, so the first costs more bytes than
//! the steady state. This side grants the server flow-control room as it reads (a
//! WINDOW_UPDATE for the connection and the stream once half a window is used), and sends its
//! own bodies as far as the server's windows allow: the HEADERS and the first DATA go with
//! the operation, the rest as the server's WINDOW_UPDATEs (or a larger
//! SETTINGS_INITIAL_WINDOW_SIZE) make room ([`ClientCodec::op_more`]), each piece its
//! operation's bytes. A server that never makes room leaves the operation to its timeout.
//! A stream answered whole before its body went out whole is reset (`CANCEL`): the rest of
//! its body does not go.
//!
//! It counts its streams' bytes by layer ([`Layers`]): header blocks (an answer's trailers
//! apart), frame heads (and padding, and a RST_STREAM that ends a stream), gRPC's message
//! prefixes (the first 5 octets of a call's DATA each way: unary, one message) and payload;
//! stream 1, the connection's first, apart from the others. Frames on stream 0 and this side's
//! WINDOW_UPDATEs and resets are the connection's, not a stream's: they are not in it.

use super::frame::{self, Frame};
use super::hpack;
use crate::outcome::{Answer, Failure};
use crate::proto::{ClientCodec, CodecError, Decoded, Outcome};
use crate::stats::Layers;
use std::sync::Arc;

/// What can break an HTTP/2 connection from this side's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Frame(#[from] frame::Error),
    #[error("HTTP/2 COMPRESSION_ERROR: {0}")]
    Hpack(#[from] hpack::Error),
    #[error("HTTP/2 PROTOCOL_ERROR: PUSH_PROMISE, with push disabled")]
    Push,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} while a header block awaited its CONTINUATION")]
    Interleaved(&'static str),
    #[error("HTTP/2 PROTOCOL_ERROR: CONTINUATION without a header block to continue")]
    StrayContinuation,
    #[error("HTTP/2 PROTOCOL_ERROR: a response without a valid :status")]
    NoStatus,
    #[error("HTTP/2 FLOW_CONTROL_ERROR: the server sent more DATA than its window")]
    FlowControl,
    #[error("HTTP/2 PROTOCOL_ERROR: DATA before a response's final HEADERS")]
    DataBeforeHeaders,
    #[error("HTTP/2 FLOW_CONTROL_ERROR: the server's WINDOW_UPDATE or SETTINGS took a window past 2^31-1")]
    WindowOverflow,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} on stream {1}, which this side never opened")]
    IdleStream(&'static str, u32),
    /// A GOAWAY with an error code: the server ends the connection for a reason (its debug
    /// data, if any, is the codec's [`error_detail`](ClientCodec::error_detail)).
    #[error("HTTP/2 GOAWAY {0} from the server")]
    GoAway(&'static str),
    #[error("HTTP/2 PROTOCOL_ERROR: SETTINGS_ENABLE_PUSH 1 from a server (§6.5.2)")]
    PushEnabled,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} before the server's SETTINGS (its preface, §3.4)")]
    NoSettingsFirst(&'static str),
}

impl CodecError for Error {}

impl From<frame::BlockError> for Error {
    fn from(e: frame::BlockError) -> Error {
        match e {
            frame::BlockError::Interleaved(kind) => Error::Interleaved(kind),
            frame::BlockError::Stray => Error::StrayContinuation,
            frame::BlockError::TooLarge => Error::Hpack(hpack::Error::TooLarge),
        }
    }
}

/// The most of a GOAWAY's debug data kept for the error sample.
const DEBUG_KEPT: usize = 200;

/// The largest frame this side accepts (its SETTINGS_MAX_FRAME_SIZE: the default).
const MAX_FRAME: u32 = frame::DEFAULT_MAX_FRAME;
/// The largest header list this side accepts.
const MAX_HEADER_LIST: usize = 64 << 10;
/// The initial windows, both ways, until SETTINGS say otherwise (RFC 9113 §6.9.2).
const INITIAL_WINDOW: u32 = 65_535;
/// Headers HTTP/2 forbids (RFC 9113 §8.2.2); `host` becomes `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// One request as the file or the flags give it.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    /// `:scheme`: `http` for `h2c://`, `https` over TLS.
    pub scheme: &'static str,
    /// `:authority`: the URL's, or a `Host` header's.
    pub authority: String,
    pub path: String,
    /// Extra headers, in order (names lower-cased here; connection-specific ones dropped).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A gRPC call: `body` is its length-prefixed message, `content-type: application/grpc`
    /// and `te: trailers` go with it, no `content-length`, and the answer succeeds on
    /// `grpc-status: 0` in its trailers.
    pub grpc: bool,
}

/// What an answer without `grpc-status` counts as.
const NO_GRPC_STATUS: &str = "no grpc-status";

/// gRPC's name for a status code (grpc/doc/statuscodes.md); one it does not define is
/// `UNKNOWN`, as gRPC's own clients take it.
pub fn grpc_code_name(code: &[u8]) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    let digits = !code.is_empty() && code.len() <= 2 && code.iter().all(u8::is_ascii_digit);
    let code = digits.then(|| code.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')));
    code.and_then(|c| NAMES.get(c).copied()).unwrap_or("UNKNOWN")
}

/// A `:status` value: exactly three digits (RFC 9110 §15; `+200` or ` 200` is none), HTTP/2's
/// and HTTP/3's alike.
pub(crate) fn status_code(value: &[u8]) -> Option<u16> {
    match value {
        [a, b, c] if value.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// A header field: its name and value.
pub(crate) type Field = (Box<[u8]>, Box<[u8]>);

/// A request's header fields, in the order they go, and its body: HTTP/2's and HTTP/3's alike
/// (both forbid the connection-specific headers and carry `:authority` for `Host`).
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) fields: Vec<Field>,
    pub(crate) body: Box<[u8]>,
}

impl Request {
    pub(crate) fn new(spec: &RequestSpec) -> Request {
        let authority = (spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")))
            .map_or(spec.authority.as_str(), |(_, v)| v.as_str());
        let mut fields: Vec<(String, String)> = vec![
            (":method".into(), spec.method.to_ascii_uppercase()),
            (":scheme".into(), spec.scheme.into()),
            (":authority".into(), authority.into()),
            (":path".into(), spec.path.clone()),
        ];
        for (name, value) in &spec.headers {
            let name = name.to_ascii_lowercase();
            // gRPC's own content-type and te go below, once.
            let grpc_own = spec.grpc && (name == "content-type" || name == "te");
            // `te` may only say `trailers` (§8.2.2): any other is dropped as `connection` is.
            let bad_te = name == "te" && !value.trim().eq_ignore_ascii_case("trailers");
            if !CONNECTION_SPECIFIC.contains(&name.as_str())
                && name != "content-length"
                && !grpc_own
                && !bad_te
            {
                fields.push((name, value.clone()));
            }
        }
        if spec.grpc {
            fields.push(("content-type".into(), "application/grpc".into()));
            fields.push(("te".into(), "trailers".into()));
        } else if !spec.body.is_empty() {
            fields.push(("content-length".into(), spec.body.len().to_string()));
        }
        let fields =
            fields.into_iter().map(|(n, v)| (n.into_bytes().into(), v.into_bytes().into())).collect();
        Request { fields, body: spec.body.clone().into() }
    }
}

/// A stream in flight: the status of its answer so far, DATA read since this side last
/// granted it room, and how far its own body went.
#[derive(Debug, Clone, Copy)]
struct Stream {
    id: u32,
    status: u16,
    /// A gRPC call's `grpc-status` once its trailers (or a trailers-only answer) said it.
    grpc_status: Option<&'static str>,
    unacked: u32,
    /// Its request (the entry), the octets of its body sent so far, and the room the server
    /// grants its DATA (the stream's send window; may go below 0 when SETTINGS shrink it).
    entry: usize,
    body_sent: usize,
    body_len: usize,
    window: i64,
    /// DATA octets of its answer so far (for the layers: where a gRPC prefix ends).
    rx_data: usize,
}

impl Stream {
    /// More of its body waits for room.
    fn uploading(&self) -> bool {
        self.body_sent < self.body_len
    }
}

/// What a frame on a stream holds, for the layers: DATA's octets, a header block's, or
/// nothing but framing.
#[derive(Debug, Clone, Copy)]
enum Part {
    Data(usize),
    Block(usize),
    Framing,
}

/// Of `n` message octets from offset `at` of a gRPC call's DATA, those of its 5-octet prefix.
fn grpc_prefix(at: usize, n: usize) -> usize {
    5usize.saturating_sub(at).min(n)
}

/// The client: one value per connection, cloned from a prototype holding the requests.
#[derive(Debug, Clone)]
pub struct H2Client {
    requests: Arc<Vec<Request>>,
    encoder: hpack::Encoder,
    /// Per entry, its last header block and the encoder's state it was encoded in, when
    /// encoding it changed nothing: the steady state's block, sent again without encoding.
    blocks: Vec<Option<(u64, Vec<u8>)>>,
    decoder: hpack::Decoder,
    next_stream: u32,
    /// The stream of the request just written, and of the answer just decoded.
    sent: u32,
    answered: Option<u32>,
    streams: Vec<Stream>,
    /// A header block arriving in pieces.
    incoming: frame::Blocks,
    /// The server's SETTINGS_MAX_FRAME_SIZE, for this side's frames, and its
    /// SETTINGS_MAX_CONCURRENT_STREAMS (this side keeps no more in flight).
    max_frame: u32,
    max_streams: u32,
    /// Room the server grants this side's DATA on the connection (its WINDOW_UPDATEs on stream
    /// 0 add to it), and the room each new stream starts with (its
    /// SETTINGS_INITIAL_WINDOW_SIZE).
    send_window: i64,
    stream_window: i64,
    /// The request just encoded has more body to send ([`ClientCodec::op_open`]).
    open: bool,
    /// The streams' bytes by layer.
    layers: Layers,
    /// Where [`ClientCodec::op_more`] looks first: the stream after the one it served last.
    more_from: usize,
    /// DATA read on the connection since this side last granted room, and the window this
    /// side grants each stream and the connection (`--window`).
    unacked: u32,
    recv_window: u32,
    /// The last whole answer in the protocol's words (`None` after a reset: no status).
    status: Option<Answer>,
    /// Answers are gRPC calls'.
    grpc: bool,
    /// A GOAWAY's last stream: the streams up to it may still be answered, the others will not,
    /// and no new one is sent.
    goaway: Option<u32>,
    /// The server's streams up to its GOAWAY's last are answered (or the stream ids ran out):
    /// the connection ends after this message, its other streams failing as `closed`.
    closing: bool,
    /// The debug data of a GOAWAY with an error code, as text (bounded), for the sample.
    goaway_debug: Option<String>,
}

impl H2Client {
    pub fn new(spec: &RequestSpec, huffman: bool) -> Self {
        H2Client {
            max_streams: u32::MAX,
            send_window: i64::from(INITIAL_WINDOW),
            stream_window: i64::from(INITIAL_WINDOW),
            open: false,
            layers: Layers::default(),
            more_from: 0,
            requests: Arc::new(vec![Request::new(spec)]),
            encoder: hpack::Encoder::new(huffman),
            blocks: Vec::new(),
            decoder: hpack::Decoder::new(hpack::DEFAULT_TABLE_SIZE, MAX_HEADER_LIST),
            next_stream: 1,
            sent: 0,
            answered: None,
            streams: Vec::new(),
            incoming: frame::Blocks::default(),
            max_frame: frame::DEFAULT_MAX_FRAME,
            unacked: 0,
            recv_window: INITIAL_WINDOW,
            status: None,
            grpc: spec.grpc,
            goaway: None,
            closing: false,
            goaway_debug: None,
        }
    }

    /// The receive window this side grants (`--window`; `None`: RFC 9113's 65,535).
    pub fn with_window(mut self, window: Option<u32>) -> Self {
        self.recv_window = window.unwrap_or(INITIAL_WINDOW).clamp(1, frame::MAX_WINDOW);
        self
    }

    /// After a GOAWAY, the connection ends once no stream it promised to answer is in flight.
    fn after_goaway(&mut self) {
        if let Some(last) = self.goaway
            && !self.streams.iter().any(|s| s.id <= last)
        {
            self.closing = true;
        }
    }

    fn apply_settings(&mut self, params: &[u8]) -> Result<(), Error> {
        for (id, value) in frame::settings(params) {
            match id {
                frame::MAX_FRAME_SIZE => self.max_frame = value,
                frame::HEADER_TABLE_SIZE => self.encoder.peer_table_size(value as usize),
                frame::MAX_CONCURRENT_STREAMS => self.max_streams = value,
                frame::ENABLE_PUSH if value == 1 => return Err(Error::PushEnabled),
                frame::INITIAL_WINDOW_SIZE => {
                    let windows = self.streams.iter_mut().map(|s| &mut s.window);
                    if !frame::move_windows(&mut self.stream_window, value, windows) {
                        return Err(Error::WindowOverflow);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A whole header block for `stream`: its `:status`, and the answer's end if it ends it.
    fn headers(
        &mut self,
        stream: u32,
        end_stream: bool,
        block: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        let (mut status, mut grpc_status) = (None, None);
        self.decoder.decode(block, |name, value| match name {
            b":status" => status = Some(status_code(value).unwrap_or(0)),
            b"grpc-status" => grpc_status = Some(grpc_code_name(value)),
            _ => {}
        })?;
        if self.idle(stream) {
            return Err(Error::IdleStream("HEADERS", stream));
        }
        let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) else {
            return Ok(Outcome::Control); // a stream already ended (reset): its table was kept in step
        };
        // Only the block that ends the answer says how the call ended (trailers, or a
        // trailers-only answer).
        if self.grpc && end_stream {
            s.grpc_status = grpc_status;
        }
        self.answered = Some(stream);
        // §8.1: after the final status only trailers may come — one block that ends the
        // stream and carries no pseudo-header.
        if s.status >= 200 {
            if !end_stream {
                return Ok(self.malformed(
                    stream,
                    end_stream,
                    "a second HEADERS after the final status",
                    out,
                ));
            }
            if status.is_some() {
                return Ok(self.malformed(stream, end_stream, "a :status in its trailers", out));
            }
        }
        // Trailers carry no status; an answer's first block must.
        match status {
            Some(code @ 100..=599) => s.status = code,
            Some(_) => return Err(Error::NoStatus),
            None if s.status == 0 => return Err(Error::NoStatus),
            None => {}
        }
        if (100..200).contains(&s.status) {
            if end_stream {
                return Ok(self.malformed(stream, end_stream, "a 1xx status that ends its stream", out));
            }
            // An informational answer: the final one follows on the same stream.
            s.status = 0;
            return Ok(Outcome::OpPart);
        }
        Ok(if end_stream { self.finish(stream, out) } else { Outcome::OpPart })
    }

    /// Whether `stream` is one this side never opened (§5.1 idle: its own ids are odd and below
    /// the next; push is off, so no even one was promised).
    fn idle(&self, stream: u32) -> bool {
        stream.is_multiple_of(2) || stream >= self.next_stream
    }

    /// `stream`'s answer is malformed (§8.1.1): a stream error — the stream is reset with
    /// PROTOCOL_ERROR unless both sides have ended it, and its operation fails; the
    /// connection goes on.
    fn malformed(&mut self, stream: u32, end_stream: bool, why: &'static str, out: &mut Vec<u8>) -> Outcome {
        let Some(at) = self.streams.iter().position(|s| s.id == stream) else { return Outcome::Control };
        let s = self.streams.swap_remove(at);
        if !end_stream || s.uploading() {
            frame::write_rst_stream(out, stream, frame::PROTOCOL_ERROR);
        }
        self.after_goaway();
        self.answered = Some(stream);
        self.status = None;
        Outcome::OpFailed(Failure::malformed(why))
    }

    /// `stream`'s answer is whole (a body still going out stops there: the stream is reset).
    fn finish(&mut self, stream: u32, out: &mut Vec<u8>) -> Outcome {
        let Some(at) = self.streams.iter().position(|s| s.id == stream) else { return Outcome::Control };
        let s = self.streams.swap_remove(at);
        if s.uploading() {
            frame::write_rst_stream(out, stream, frame::CANCEL);
        }
        self.after_goaway();
        self.answered = Some(stream);
        if self.grpc && s.status == 200 {
            // No grpc-status at all is the server's failure too (gRPC's "Protocol" spec).
            let code = s.grpc_status.unwrap_or(NO_GRPC_STATUS);
            self.status = Some(super::grpc::answer(code));
            return if code == "OK" { Outcome::Op } else { Outcome::OpFailed(super::grpc::failure(code)) };
        }
        self.status = Some(Answer::status(s.status));
        match s.status {
            // A gRPC call answered with another HTTP status failed, whatever its grpc-status
            // (gRPC over HTTP/2: only a 200 carries a call's outcome).
            _ if self.grpc => Outcome::OpFailed(Failure::status(s.status)),
            400.. => Outcome::OpFailed(Failure::status(s.status)),
            _ => Outcome::Op,
        }
    }

    /// DATA of `len` octets on `stream`: room granted back once half a window is used.
    /// (Not for the stream when this DATA ends it: a closed stream takes no WINDOW_UPDATE.)
    fn data(&mut self, stream: u32, len: u32, end_stream: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        // The connection's window is never below 65,535 (SETTINGS change the streams' only).
        let conn_window = self.recv_window.max(INITIAL_WINDOW);
        self.unacked += len;
        if self.unacked > conn_window {
            return Err(Error::FlowControl);
        }
        if self.unacked > 0 && self.unacked >= conn_window / 2 {
            frame::write_window_update(out, 0, self.unacked);
            self.unacked = 0;
        }
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
            if s.status == 0 {
                return Err(Error::DataBeforeHeaders);
            }
            s.unacked += len;
            if s.unacked > self.recv_window {
                return Err(Error::FlowControl);
            }
            // Never a WINDOW_UPDATE of 0 (§6.9: the server would take it as an error), even
            // with a window of 1 and an empty DATA.
            if s.unacked > 0 && s.unacked >= self.recv_window / 2 && !end_stream {
                frame::write_window_update(out, stream, s.unacked);
                s.unacked = 0;
            }
        }
        Ok(())
    }

    fn frame(&mut self, f: Frame<'_>, out: &mut Vec<u8>) -> Result<Outcome, Error> {
        self.incoming.check(&f)?;
        Ok(match f {
            Frame::Settings { ack: false, params } => {
                self.apply_settings(params)?;
                frame::write_settings_ack(out);
                Outcome::Control
            }
            Frame::Ping { ack: false, data } => {
                frame::write_ping(out, true, data);
                Outcome::Control
            }
            Frame::GoAway { code, debug, .. } if code != frame::NO_ERROR => {
                // An error: the connection ends now, naming the code and the server's words.
                let text = String::from_utf8_lossy(&debug[..debug.len().min(DEBUG_KEPT)]);
                self.goaway_debug = (!text.trim().is_empty()).then(|| text.into_owned());
                return Err(Error::GoAway(frame::code_name(code)));
            }
            Frame::GoAway { last_stream, .. } => {
                self.goaway = Some(last_stream);
                self.after_goaway();
                Outcome::Control
            }
            Frame::RstStream { stream, .. } if self.idle(stream) => {
                return Err(Error::IdleStream("RST_STREAM", stream));
            }
            Frame::Data { stream, .. } if self.idle(stream) => return Err(Error::IdleStream("DATA", stream)),
            Frame::RstStream { stream, code } => match self.streams.iter().position(|s| s.id == stream) {
                Some(at) => {
                    self.streams.swap_remove(at);
                    self.after_goaway();
                    self.answered = Some(stream);
                    self.status = None;
                    Outcome::OpFailed(Failure::protocol("RST_STREAM", frame::code_name(code)))
                }
                None => Outcome::Control,
            },
            Frame::Headers { stream, .. } | Frame::Continuation { stream, .. } => {
                match self.incoming.add(&f, MAX_HEADER_LIST)? {
                    Some(b) => self.headers(b.stream, b.end_stream, &b.bytes, out)?,
                    None => self.part_of(stream),
                }
            }
            Frame::Data { stream, end_stream, data, padding } => {
                self.data(stream, (data.len() + padding) as u32, end_stream, out)?;
                if end_stream { self.finish(stream, out) } else { self.part_of(stream) }
            }
            Frame::PushPromise { .. } => return Err(Error::Push),
            Frame::WindowUpdate { stream, increment } => {
                // A stream this side never opened (its ids are odd, and below the next) is
                // idle: room for it is an error (§5.1).
                if stream != 0 && (stream % 2 == 0 || stream >= self.next_stream) {
                    return Err(Error::IdleStream("WINDOW_UPDATE", stream));
                }
                let window = match stream {
                    0 => Some(&mut self.send_window),
                    _ => self.streams.iter_mut().find(|s| s.id == stream).map(|s| &mut s.window),
                };
                // A stream already ended: nothing more goes on it.
                if let Some(window) = window {
                    *window += i64::from(increment);
                    if *window > i64::from(frame::MAX_WINDOW) {
                        return Err(Error::WindowOverflow);
                    }
                }
                Outcome::Control
            }
            Frame::Settings { ack: true, .. }
            | Frame::Ping { ack: true, .. }
            | Frame::Priority { .. }
            | Frame::Unknown { .. } => Outcome::Control,
        })
    }

    /// As much of the body of the stream at `at` as the windows allow (at least one octet, or
    /// its whole rest); `true` once its last octet went (with END_STREAM).
    fn send_body(&mut self, at: usize, out: &mut Vec<u8>) -> bool {
        self.send_body_up_to(at, usize::MAX, out)
    }

    /// The same, at most `share` octets of it.
    fn send_body_up_to(&mut self, at: usize, share: usize, out: &mut Vec<u8>) -> bool {
        let s = &mut self.streams[at];
        let room = usize::try_from(self.send_window.min(s.window)).unwrap_or(0).min(share);
        let n = (s.body_len - s.body_sent).min(room);
        if n == 0 {
            return false;
        }
        let last = s.body_sent + n == s.body_len;
        let body = &self.requests[s.entry].body[s.body_sent..s.body_sent + n];
        let from = out.len();
        frame::write_data(out, s.id, body, last, self.max_frame);
        let tx = &mut self.layers.of(s.id == 1).tx;
        let prefix = if self.grpc { grpc_prefix(s.body_sent, n) } else { 0 };
        tx.framing += (out.len() - from - n) as u64;
        tx.prefix += prefix as u64;
        tx.payload += (n - prefix) as u64;
        s.body_sent += n;
        s.window -= n as i64;
        self.send_window -= n as i64;
        last
    }

    /// A frame of `stream`'s answer (`consumed` octets), by layer: a header block after the
    /// status is trailers; a gRPC answer's first 5 DATA octets are its message's prefix.
    fn count_rx(&mut self, stream: u32, part: Part, consumed: usize, trailers: bool, rx_data: usize) {
        let rx = &mut self.layers.of(stream == 1).rx;
        match part {
            Part::Data(n) => {
                let prefix = if self.grpc { grpc_prefix(rx_data, n) } else { 0 };
                rx.prefix += prefix as u64;
                rx.payload += (n - prefix) as u64;
                rx.framing += (consumed - n) as u64;
                if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
                    s.rx_data += n;
                }
            }
            Part::Block(n) => {
                *(if trailers { &mut rx.trailers } else { &mut rx.headers }) += n as u64;
                rx.framing += (consumed - n) as u64;
            }
            Part::Framing => rx.framing += consumed as u64,
        }
    }

    /// A piece of `stream`'s answer: the operation's bytes if it is in flight.
    fn part_of(&mut self, stream: u32) -> Outcome {
        if self.streams.iter().any(|s| s.id == stream) {
            self.answered = Some(stream);
            Outcome::OpPart
        } else {
            Outcome::Control
        }
    }
}

impl ClientCodec for H2Client {
    type Error = Error;

    /// The preface and this side's SETTINGS: no server push, the header list it accepts, its
    /// streams' window if `--window` changed it (and a WINDOW_UPDATE raising the connection's
    /// to the same), the defaults otherwise.
    fn handshake(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(frame::PREFACE);
        let push = (frame::ENABLE_PUSH, 0);
        let list = (frame::MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST as u32);
        if self.recv_window == INITIAL_WINDOW {
            frame::write_settings(out, &[push, list]);
        } else {
            frame::write_settings(out, &[push, list, (frame::INITIAL_WINDOW_SIZE, self.recv_window)]);
        }
        if self.recv_window > INITIAL_WINDOW {
            frame::write_window_update(out, 0, self.recv_window - INITIAL_WINDOW);
        }
    }

    /// Done at the server's first SETTINGS (acknowledged); anything before it is a step.
    fn decode_handshake(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let Some((f, consumed)) = frame::parse(input, MAX_FRAME)? else { return Ok(Decoded::Partial) };
        // The server's preface is its SETTINGS, first (§3.4): a GOAWAY or anything else
        // before it is no HTTP/2 server's opening.
        let Frame::Settings { ack: false, .. } = f else {
            return Err(Error::NoSettingsFirst(frame::type_name(f.kind())));
        };
        self.frame(f, out)?;
        Ok(Decoded::Done { consumed, outcome: Outcome::Control })
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        let stream = self.next_stream;
        self.next_stream += 2;
        if self.next_stream > frame::MAX_WINDOW - 2 {
            self.closing = true; // stream ids run out: a new connection
        }
        let requests = self.requests.clone();
        let request = &requests[entry];
        let body = !request.body.is_empty();
        if self.blocks.len() <= entry {
            self.blocks.resize(entry + 1, None);
        }
        let state = self.encoder.state();
        let from = out.len();
        let block_len = match &self.blocks[entry] {
            Some((at, block)) if state == Some(*at) => {
                frame::write_headers(out, stream, block, !body, self.max_frame);
                block.len()
            }
            _ => {
                let mut block = Vec::with_capacity(64);
                self.encoder.encode(request.fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
                frame::write_headers(out, stream, &block, !body, self.max_frame);
                let len = block.len();
                // Encoded without a change to the table: the same octets next time too.
                self.blocks[entry] = state.filter(|&s| self.encoder.state() == Some(s)).map(|s| (s, block));
                len
            }
        };
        let layers = self.layers.of(stream == 1);
        layers.ops += 1;
        layers.tx.headers += block_len as u64;
        layers.tx.framing += (out.len() - from - block_len) as u64;
        self.sent = stream;
        self.streams.push(Stream {
            id: stream,
            status: 0,
            grpc_status: None,
            unacked: 0,
            entry,
            body_sent: 0,
            body_len: request.body.len(),
            window: self.stream_window,
            rx_data: 0,
        });
        self.open = body && !self.send_body(self.streams.len() - 1, out);
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.requests).extend(other.requests.iter().cloned());
    }

    fn op_id(&self) -> Option<u64> {
        Some(u64::from(self.sent))
    }

    fn answers_op(&self) -> Option<u64> {
        self.answered.map(u64::from)
    }

    fn op_open(&self) -> bool {
        self.open
    }

    /// The next stream (round robin) whose body waits and has room now: its share of what is
    /// left of the connection's window (the window over the streams waiting, at least a
    /// frame), as far as its own window goes. None above a GOAWAY's last stream: the server
    /// will not read them.
    fn op_more(&mut self, out: &mut Vec<u8>) -> Option<(u64, bool)> {
        if self.send_window <= 0 {
            return None;
        }
        let last_taken = self.goaway.unwrap_or(u32::MAX);
        let waits = |s: &Stream| s.uploading() && s.window > 0 && s.id <= last_taken;
        let waiting = self.streams.iter().filter(|s| waits(s)).count();
        let len = self.streams.len();
        let from = self.more_from % len.max(1);
        let at = (0..len).map(|k| (from + k) % len).find(|&at| waits(&self.streams[at]))?;
        self.more_from = at + 1;
        let share = (self.send_window as usize / waiting.max(1)).max(self.max_frame as usize);
        let last = self.send_body_up_to(at, share, out);
        Some((u64::from(self.streams[at].id), last))
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        self.answered = None;
        let Some((f, consumed)) = frame::parse(input, MAX_FRAME)? else { return Ok(Decoded::Partial) };
        // What the frame may hold of a stream's answer, counted once it proves to be one's.
        let part = match &f {
            Frame::Data { stream, data, .. } => Some((*stream, Part::Data(data.len()))),
            Frame::Headers { stream, block, .. } | Frame::Continuation { stream, block, .. } => {
                Some((*stream, Part::Block(block.len())))
            }
            Frame::RstStream { stream, .. } => Some((*stream, Part::Framing)),
            _ => None,
        };
        let before =
            part.and_then(|(id, _)| self.streams.iter().find(|s| s.id == id)).map(|s| (s.status, s.rx_data));
        let outcome = self.frame(f, out)?;
        if let (Some((id, part)), Some((status, rx_data))) = (part, before)
            && outcome != Outcome::Control
        {
            self.count_rx(id, part, consumed, status != 0, rx_data);
        }
        Ok(Decoded::Done { consumed, outcome })
    }

    fn layers(&self) -> Option<&Layers> {
        Some(&self.layers)
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }

    /// No new stream after a GOAWAY (the server would not answer it) or once the stream ids
    /// ran out, and none past the server's MAX_CONCURRENT_STREAMS.
    fn accepts_ops(&self) -> bool {
        self.goaway.is_none() && !self.closing && (self.streams.len() as u64) < u64::from(self.max_streams)
    }

    fn answer(&self) -> Option<Answer> {
        self.status
    }

    fn error_detail(&self) -> Option<String> {
        self.goaway_debug.clone()
    }

    fn idle_reason(&self) -> Option<&'static str> {
        (self.max_streams == 0 && !self.closing && self.goaway.is_none())
            .then_some("the server allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: &str, body: &[u8]) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            scheme: "http",
            authority: "127.0.0.1:8080".into(),
            path: "/a".into(),
            headers: vec![("Connection".into(), "close".into()), ("X-Trace".into(), "1".into())],
            body: body.to_vec(),
            grpc: false,
        }
    }

    /// What a server would say: its SETTINGS, then per stream a HEADERS with `:status` (the
    /// encoder's own table in step with the client's decoder) and DATA.
    fn answer(encoder: &mut hpack::Encoder, stream: u32, status: &str, body: &[u8], out: &mut Vec<u8>) {
        let mut block = Vec::new();
        encoder.encode([(&b":status"[..], status.as_bytes())], &mut block);
        frame::write_headers(out, stream, &block, body.is_empty(), 16_384);
        if !body.is_empty() {
            frame::write_data(out, stream, body, true, 16_384);
        }
    }

    /// Feed `input` to `decode_op` frame by frame: each outcome with the stream it names.
    fn decode_all(c: &mut H2Client, mut input: &[u8], out: &mut Vec<u8>) -> Vec<(Outcome, Option<u64>)> {
        let mut seen = Vec::new();
        while let Decoded::Done { consumed, outcome } = c.decode_op(input, out).unwrap() {
            seen.push((outcome, c.answers_op()));
            input = &input[consumed..];
        }
        assert!(input.is_empty());
        seen
    }

    /// The first request's header block, by RFC 7541 by hand: `:method GET` (0x82), `:scheme
    /// http` (0x86), `:authority` as a literal of static name 1 (0x41, a length, the value),
    /// `:path /a` of static name 4 (0x44, …), `x-trace: 1` with a new name (0x40, …); raw: 33
    /// octets. Huffman-coded (Appendix B): the authority's 78 bits in 10 octets instead of 14,
    /// `x-trace`'s 39 bits in 5 instead of 7, `/a` and `1` no shorter: 27 octets.
    #[test]
    fn huffman_off_sends_the_strings_as_they_are() {
        for (huffman, block) in [(false, 33), (true, 27)] {
            let mut c = H2Client::new(&spec("get", b""), huffman);
            let mut out = Vec::new();
            c.encode_op(0, &mut out);
            assert_eq!(out.len(), frame::HEAD_LEN + block, "huffman {huffman}");
            if !huffman {
                assert!(out.windows(14).any(|w| w == b"127.0.0.1:8080"));
            }
        }
    }

    /// A block kept for the steady state is sent only while it is what encoding would give:
    /// alternating entries (each inserting nothing after the first of each) and a table size
    /// the server changes midway, against an encoder that encodes every block.
    #[test]
    fn kept_blocks_are_the_octets_encoding_gives() {
        let mut c = H2Client::new(&spec("get", b""), true);
        let mut other = spec("post", b"x");
        other.path = "/b".into();
        c.add_entries(H2Client::new(&other, true));
        let fields = |r: &Request| r.fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect::<Vec<_>>();
        let (first, second) = (fields(&c.requests[0]), fields(&c.requests[1]));
        let mut reference = hpack::Encoder::new(true);
        for i in 0..40 {
            if i == 20 {
                let mut settings = Vec::new();
                frame::write_settings(&mut settings, &[(frame::HEADER_TABLE_SIZE, 100)]);
                decode_all(&mut c, &settings, &mut Vec::new());
                reference.peer_table_size(100);
            }
            let entry = (i * 7 / 5) % 2;
            let mut out = Vec::new();
            c.encode_op(entry, &mut out);
            let mut block = Vec::new();
            let f = if entry == 0 { &first } else { &second };
            reference.encode(f.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
            let Some((Frame::Headers { block: sent, .. }, _)) = frame::parse(&out, MAX_FRAME).unwrap() else {
                panic!("no HEADERS")
            };
            assert_eq!(sent, &block[..], "op {i}, entry {entry}");
        }
    }

    #[test]
    fn a_status_is_three_digits() {
        assert_eq!(status_code(b"200"), Some(200));
        for odd in [&b"+200"[..], b" 200", b"20", b"2000", b"2a0", b""] {
            assert_eq!(status_code(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn grpc_status_names_only_plain_codes() {
        assert_eq!(grpc_code_name(b"0"), "OK");
        assert_eq!(grpc_code_name(b"14"), "UNAVAILABLE");
        for odd in [&b"+0"[..], b"", b"017", b"17", b" 0"] {
            assert_eq!(grpc_code_name(odd), "UNKNOWN", "{odd:?}");
        }
    }

    /// A call's status is the one its last block says: a `grpc-status` in the leading
    /// HEADERS does not make trailers without one a success.
    #[test]
    fn a_grpc_status_counts_only_in_the_block_that_ends_the_answer() {
        let mut c = H2Client::new(&RequestSpec { grpc: true, ..spec("post", b"\0\0\0\0\0") }, true);
        c.encode_op(0, &mut Vec::new());
        let mut enc = hpack::Encoder::new(true);
        let mut input = Vec::new();
        let mut block = Vec::new();
        enc.encode([(&b":status"[..], &b"200"[..]), (b"grpc-status", b"0")], &mut block);
        frame::write_headers(&mut input, 1, &block, false, 16_384);
        frame::write_data(&mut input, 1, b"\0\0\0\0\0", false, 16_384);
        let mut block = Vec::new();
        enc.encode([(&b"x-other"[..], &b"1"[..])], &mut block);
        frame::write_headers(&mut input, 1, &block, true, 16_384);
        let seen = decode_all(&mut c, &input, &mut Vec::new());
        assert_eq!(
            seen.last().map(|s| s.0),
            Some(Outcome::OpFailed(crate::proto::h2::grpc::failure("no grpc-status")))
        );
    }

    #[test]
    fn handshake_then_streams_answered_out_of_order() {
        let mut c = H2Client::new(&spec("get", b""), true);
        let mut hello = Vec::new();
        c.handshake(&mut hello);
        assert!(hello.starts_with(frame::PREFACE));
        let mut server = Vec::new();
        frame::write_settings(&mut server, &[(frame::MAX_CONCURRENT_STREAMS, 100)]);
        let mut out = Vec::new();
        assert_eq!(
            c.decode_handshake(&server, &mut out).unwrap(),
            Decoded::Done { consumed: server.len(), outcome: Outcome::Control }
        );
        assert_eq!(out.len(), 9, "the SETTINGS acknowledged");
        // Three requests: the first inserts its headers in the table, the others index them.
        let mut lens = Vec::new();
        for _ in 0..3 {
            let mut req = Vec::new();
            c.encode_op(0, &mut req);
            lens.push(req.len());
        }
        assert!(lens[0] > lens[1] && lens[1] == lens[2], "{lens:?}");
        assert_eq!(c.op_id(), Some(5));
        // Answered 3, 5, then 1 (failed with 503).
        let mut enc = hpack::Encoder::new(true);
        let mut input = Vec::new();
        answer(&mut enc, 3, "200", b"Hello World", &mut input);
        answer(&mut enc, 5, "204", b"", &mut input);
        answer(&mut enc, 1, "503", b"busy", &mut input);
        let seen = decode_all(&mut c, &input, &mut out);
        assert_eq!(
            seen,
            [
                (Outcome::OpPart, Some(3)),
                (Outcome::Op, Some(3)),
                (Outcome::Op, Some(5)),
                (Outcome::OpPart, Some(1)),
                (Outcome::OpFailed(Failure::status(503)), Some(1)),
            ]
        );
    }

    #[test]
    fn a_goaway_lets_the_streams_it_names_finish_then_ends_the_connection() {
        let mut c = H2Client::new(&spec("GET", b""), false);
        for _ in 0..3 {
            c.encode_op(0, &mut Vec::new());
        }
        let mut enc = hpack::Encoder::new(false);
        let mut input = Vec::new();
        frame::write_goaway(&mut input, 3, 0);
        answer(&mut enc, 1, "204", b"", &mut input);
        let mut out = Vec::new();
        decode_all(&mut c, &input, &mut out);
        assert!(!c.peer_closing(), "stream 3 may still be answered");
        let mut input = Vec::new();
        answer(&mut enc, 3, "204", b"", &mut input);
        decode_all(&mut c, &input, &mut out);
        assert!(c.peer_closing(), "stream 5 will not be: the connection ends, 5 fails as closed");
    }

    #[test]
    fn what_a_server_may_not_do_and_what_it_limits() {
        let mut out = Vec::new();
        // DATA before the answer's HEADERS.
        let mut c = H2Client::new(&spec("GET", b""), false);
        c.encode_op(0, &mut Vec::new());
        let mut input = Vec::new();
        frame::write_data(&mut input, 1, b"x", true, 16_384);
        assert_eq!(c.decode_op(&input, &mut out), Err(Error::DataBeforeHeaders));
        // A reset leaves no status behind for the answers' tally.
        let mut c = H2Client::new(&spec("GET", b""), false);
        c.encode_op(0, &mut Vec::new());
        c.encode_op(0, &mut Vec::new());
        let mut enc = hpack::Encoder::new(false);
        let mut input = Vec::new();
        answer(&mut enc, 1, "200", b"", &mut input);
        frame::write_rst_stream(&mut input, 3, 7);
        let seen = decode_all(&mut c, &input, &mut out);
        assert_eq!(seen[1], (Outcome::OpFailed(Failure::protocol("RST_STREAM", "REFUSED_STREAM")), Some(3)));
        assert_eq!(c.answer(), None);
        // MAX_CONCURRENT_STREAMS caps the streams in flight.
        let mut c = H2Client::new(&spec("GET", b""), false);
        let mut settings = Vec::new();
        frame::write_settings(&mut settings, &[(frame::MAX_CONCURRENT_STREAMS, 1)]);
        c.decode_op(&settings, &mut out).unwrap();
        assert!(c.accepts_ops());
        c.encode_op(0, &mut Vec::new());
        assert!(!c.accepts_ops(), "one stream in flight is the server's limit");
        // A stream's last DATA takes no WINDOW_UPDATE for the stream (it is closed).
        let mut c = H2Client::new(&spec("GET", b""), false);
        c.encode_op(0, &mut Vec::new());
        let mut input = Vec::new();
        let mut block = Vec::new();
        hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
        frame::write_headers(&mut input, 1, &block, false, 16_384);
        // 16,384 + 10,000 open, then the last 10,000 cross half the window and end the stream.
        frame::write_data(&mut input, 1, &[b'x'; 16_384], false, 16_384);
        frame::write_data(&mut input, 1, &[b'x'; 10_000], false, 16_384);
        frame::write_data(&mut input, 1, &[b'x'; 10_000], true, 16_384);
        let mut replies = Vec::new();
        decode_all(&mut c, &input, &mut replies);
        let mut updates = Vec::new();
        let mut rest = &replies[..];
        while let Some((f, used)) = frame::parse(rest, 16_384).unwrap() {
            updates.push(f);
            rest = &rest[used..];
        }
        assert_eq!(updates, [Frame::WindowUpdate { stream: 0, increment: 36_384 }], "{updates:?}");
    }

    /// The frames in `bytes`: (type, flags, stream, payload length) each.
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, usize)> {
        let mut seen = Vec::new();
        while bytes.len() >= frame::HEAD_LEN {
            let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
            let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap());
            seen.push((bytes[3], bytes[4], stream, len));
            bytes = &bytes[frame::HEAD_LEN + len..];
        }
        assert!(bytes.is_empty());
        seen
    }

    /// A body past the windows (RFC 9113 §6.9: 65,535 octets for the connection and each
    /// stream until the server says more) goes as far as they allow, in DATA frames of at
    /// most 16,384 octets, and the rest as the server's WINDOW_UPDATEs make room — on the
    /// connection and on the stream both; END_STREAM on the very last frame only.
    #[test]
    fn a_body_past_the_windows_goes_as_the_server_grants_room() {
        const DATA: u8 = 0x0;
        const END: u8 = 0x1;
        let mut c = H2Client::new(&spec("POST", &vec![b'b'; 100_000]), false);
        let mut first = Vec::new();
        c.encode_op(0, &mut first);
        assert!(c.op_open());
        let data: Vec<_> = frames(&first).into_iter().skip(1).collect();
        // 65,535 = 3 × 16,384 + 16,383, none the last.
        assert_eq!(
            data,
            [(DATA, 0, 1, 16_384), (DATA, 0, 1, 16_384), (DATA, 0, 1, 16_384), (DATA, 0, 1, 16_383)]
        );
        let mut out = Vec::new();
        assert_eq!(c.op_more(&mut out), None, "both windows spent");
        let mut grant = Vec::new();
        frame::write_window_update(&mut grant, 1, 40_000);
        c.decode_op(&grant, &mut Vec::new()).unwrap();
        assert_eq!(c.op_more(&mut out), None, "the connection's window is still spent");
        grant.clear();
        frame::write_window_update(&mut grant, 0, 20_000);
        c.decode_op(&grant, &mut Vec::new()).unwrap();
        assert_eq!(c.op_more(&mut out), Some((1, false)));
        assert_eq!(frames(&out), [(DATA, 0, 1, 16_384), (DATA, 0, 1, 3_616)]);
        assert_eq!(out.len(), 20_000 + 2 * 9);
        assert_eq!(c.op_more(&mut Vec::new()), None);
        grant.clear();
        frame::write_window_update(&mut grant, 0, 100_000);
        c.decode_op(&grant, &mut Vec::new()).unwrap();
        out.clear();
        // The stream's own window has 20,000 left; the body's last 14,465 fit.
        assert_eq!(c.op_more(&mut out), Some((1, true)));
        assert_eq!(frames(&out), [(DATA, END, 1, 14_465)]);
        assert_eq!(c.op_more(&mut Vec::new()), None);
        // A WINDOW_UPDATE past 2^31-1 breaks flow control.
        grant.clear();
        frame::write_window_update(&mut grant, 0, frame::MAX_WINDOW);
        assert_eq!(c.decode_op(&grant, &mut Vec::new()), Err(Error::WindowOverflow));
    }

    /// Streams waiting for room share the connection's window in turn, each its share of what
    /// is left (the window over the streams waiting, at least a frame): of 40,000, stream 1
    /// 20,000, stream 3 16,384 (a frame: 10,000 would be less), stream 1 the last 3,616. None
    /// above a GOAWAY's last stream goes on; room for a stream never opened is an error.
    #[test]
    fn waiting_bodies_share_the_window_in_turn() {
        let feed = |c: &mut H2Client, frames: &[(u32, u32)]| {
            let mut grant = Vec::new();
            for &(stream, n) in frames {
                frame::write_window_update(&mut grant, stream, n);
            }
            decode_all(c, &grant, &mut Vec::new());
        };
        let mut c = H2Client::new(&spec("POST", &vec![b'b'; 100_000]), false);
        c.encode_op(0, &mut Vec::new()); // stream 1: 65,535 of it, the connection's all
        c.encode_op(0, &mut Vec::new()); // stream 3: none yet
        feed(&mut c, &[(1, 50_000), (0, 40_000)]);
        let mut pieces = Vec::new();
        while let Some((id, _)) = c.op_more(&mut Vec::new()) {
            pieces.push((id, c.streams.iter().find(|s| u64::from(s.id) == id).unwrap().body_sent));
        }
        assert_eq!(pieces, [(1, 85_535), (3, 16_384), (1, 89_151)]);
        // After GOAWAY(1), stream 3's body stops; stream 1's goes on.
        let mut goaway = Vec::new();
        frame::write_goaway(&mut goaway, 1, 0);
        decode_all(&mut c, &goaway, &mut Vec::new());
        feed(&mut c, &[(0, 30_000), (3, 10_000)]);
        let mut served = Vec::new();
        while let Some((id, _)) = c.op_more(&mut Vec::new()) {
            served.push(id);
        }
        assert_eq!(served, [1]);
        let mut idle = Vec::new();
        frame::write_window_update(&mut idle, 5, 1);
        assert_eq!(c.decode_op(&idle, &mut Vec::new()), Err(Error::IdleStream("WINDOW_UPDATE", 5)));
        // A window of 1 never grants 0: an empty DATA takes no WINDOW_UPDATE.
        let mut c = H2Client::new(&spec("GET", b""), false).with_window(Some(1));
        c.encode_op(0, &mut Vec::new());
        let mut input = Vec::new();
        let mut block = Vec::new();
        hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
        frame::write_headers(&mut input, 1, &block, false, 16_384);
        frame::write_data(&mut input, 1, b"", false, 16_384);
        let mut replies = Vec::new();
        decode_all(&mut c, &input, &mut replies);
        assert!(replies.is_empty(), "{replies:?}");
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE sets a new stream's room and moves an open stream's by
    /// the change (§6.9.2), below zero too; a stream answered before its body went whole is
    /// reset (CANCEL) and sends no more.
    #[test]
    fn settings_move_the_stream_windows_and_an_early_answer_stops_the_body() {
        let mut c = H2Client::new(&spec("POST", &vec![b'b'; 5_000]), false);
        let mut settings = Vec::new();
        frame::write_settings(&mut settings, &[(frame::INITIAL_WINDOW_SIZE, 1_000)]);
        c.decode_op(&settings, &mut Vec::new()).unwrap();
        let mut first = Vec::new();
        c.encode_op(0, &mut first);
        assert_eq!(frames(&first)[1..], [(0x0, 0, 1, 1_000)]);
        // 1,000 → 0: the stream's window goes to -1,000; 2,000 more makes 1,000 of room.
        settings.clear();
        frame::write_settings(&mut settings, &[(frame::INITIAL_WINDOW_SIZE, 0)]);
        frame::write_window_update(&mut settings, 1, 2_000);
        let mut input = &settings[..];
        while let Decoded::Done { consumed, .. } = c.decode_op(input, &mut Vec::new()).unwrap() {
            input = &input[consumed..];
        }
        let mut out = Vec::new();
        assert_eq!(c.op_more(&mut out), Some((1, false)));
        assert_eq!(frames(&out), [(0x0, 0, 1, 1_000)]);
        // The answer, whole, before the body: the stream is reset and goes no further.
        let mut answer_bytes = Vec::new();
        answer(&mut hpack::Encoder::new(false), 1, "413", b"", &mut answer_bytes);
        let mut replies = Vec::new();
        let seen = decode_all(&mut c, &answer_bytes, &mut replies);
        assert_eq!(seen, [(Outcome::OpFailed(Failure::status(413)), Some(1))]);
        assert_eq!(frames(&replies), [(frame::RST_STREAM, 0, 1, 4)]);
        assert_eq!(replies[frame::HEAD_LEN..], frame::CANCEL.to_be_bytes());
        let mut grant = Vec::new();
        frame::write_window_update(&mut grant, 1, 50_000);
        assert_eq!(decode_all(&mut c, &grant, &mut Vec::new()), [(Outcome::Control, None)]);
        assert_eq!(c.op_more(&mut Vec::new()), None, "the stream ended");
    }

    /// The layers of a gRPC call, by RFC 9113 and gRPC's framing by hand: out, a HEADERS
    /// frame (9 + its block) and one DATA frame (9) of a 5-octet prefix and the message; back,
    /// `:status 200` (one octet, 0x88, static index 8), a DATA frame of prefix and message, and
    /// trailers `grpc-status: 0` (a literal with a new name: 0x40, 11 + "grpc-status", 1 + "0":
    /// 15 octets). Stream 1 is the connection's first; stream 3 counts apart. A frame on stream
    /// 0 is in none.
    #[test]
    fn each_streams_bytes_are_counted_by_layer_first_apart() {
        let mut request = spec("POST", &crate::proto::h2::grpc::framed(&[b'm'; 400]));
        request.grpc = true;
        let mut c = H2Client::new(&request, false);
        let mut out = Vec::new();
        c.encode_op(0, &mut out);
        let first_block = out.len() - 9 - 9 - 405;
        c.encode_op(0, &mut out);
        let mut server = hpack::Encoder::new(false);
        let mut input = Vec::new();
        for stream in [1, 3] {
            let mut block = Vec::new();
            server.encode([(&b":status"[..], &b"200"[..])], &mut block);
            assert_eq!(block, [0x88]);
            frame::write_headers(&mut input, stream, &block, false, 16_384);
            frame::write_data(
                &mut input,
                stream,
                &crate::proto::h2::grpc::framed(&[b'e'; 300]),
                false,
                16_384,
            );
            block.clear();
            server.encode([(&b"grpc-status"[..], &b"0"[..])], &mut block);
            assert_eq!(block.len(), if stream == 1 { 15 } else { 1 }, "a literal inserted, then its index");
            frame::write_headers(&mut input, stream, &block, true, 16_384);
            frame::write_ping(&mut input, false, [0; 8]);
        }
        let seen = decode_all(&mut c, &input, &mut Vec::new());
        assert_eq!(seen.iter().filter(|(o, _)| *o == Outcome::Op).count(), 2);
        let l = c.layers().unwrap();
        let bytes = |headers, trailers, framing, prefix, payload| crate::stats::LayerBytes {
            headers,
            trailers,
            framing,
            prefix,
            payload,
        };
        assert_eq!((l.first.ops, l.steady.ops), (1, 1));
        assert_eq!(l.first.tx, bytes(first_block as u64, 0, 18, 5, 400));
        assert_eq!(l.first.rx, bytes(1, 15, 27, 5, 300));
        // The second call's headers all indexed, one octet each: :method, :scheme, :authority,
        // :path, x-trace, content-type and te (`connection` is dropped); its trailers too.
        assert_eq!(l.steady.tx, bytes(7, 0, 18, 5, 400));
        assert_eq!(l.steady.rx, bytes(1, 1, 27, 5, 300));
        let (tx, rx) = l.totals();
        assert_eq!(tx as usize, out.len());
        assert_eq!(rx as usize, input.len() - 2 * 17, "all but the PINGs");
    }

    /// `--window 1 MiB`: SETTINGS_INITIAL_WINDOW_SIZE in this side's SETTINGS (a third
    /// parameter: 9 + 18 octets) and a WINDOW_UPDATE raising the connection's by 1,048,576 −
    /// 65,535 (13 octets); then 600,000 octets of DATA on a stream take one grant each for the
    /// stream and the connection (at half a window), where 65,535 would have taken 18.
    #[test]
    fn a_larger_window_is_announced_and_granted_at_its_half() {
        let mut c = H2Client::new(&spec("GET", b""), false).with_window(Some(1 << 20));
        let mut hello = Vec::new();
        c.handshake(&mut hello);
        assert_eq!(hello.len(), 24 + 27 + 13);
        let settings = &hello[24..24 + 27];
        assert_eq!(&settings[21..27], &[0, 4, 0, 0x10, 0, 0][..], "INITIAL_WINDOW_SIZE 1,048,576");
        assert_eq!(&hello[24 + 27 + 9..], &(1_048_576u32 - 65_535).to_be_bytes()[..]);
        c.encode_op(0, &mut Vec::new());
        let mut input = Vec::new();
        let mut block = Vec::new();
        hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
        frame::write_headers(&mut input, 1, &block, false, 16_384);
        frame::write_data(&mut input, 1, &vec![b'x'; 600_000], false, 16_384);
        let mut replies = Vec::new();
        decode_all(&mut c, &input, &mut replies);
        let updates: Vec<_> =
            frames(&replies).into_iter().map(|(kind, _, stream, _)| (kind, stream)).collect();
        assert_eq!(updates, [(frame::WINDOW_UPDATE, 0), (frame::WINDOW_UPDATE, 1)]);
    }

    #[test]
    fn the_request_is_what_http2_allows() {
        let c = H2Client::new(&spec("post", b"xyz"), false);
        let fields: Vec<(String, String)> = c.requests[0]
            .fields
            .iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
            .collect();
        let want = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "127.0.0.1:8080"),
            (":path", "/a"),
            ("x-trace", "1"),
            ("content-length", "3"),
        ];
        assert_eq!(fields, want.map(|(n, v)| (n.to_string(), v.to_string())));
        let mut c = c;
        let mut req = Vec::new();
        c.encode_op(0, &mut req);
        let (f, used) = frame::parse(&req, 16_384).unwrap().unwrap();
        assert!(matches!(f, Frame::Headers { stream: 1, end_stream: false, end_headers: true, .. }));
        let (f, _) = frame::parse(&req[used..], 16_384).unwrap().unwrap();
        assert_eq!(f, Frame::Data { stream: 1, end_stream: true, data: b"xyz", padding: 0 });
    }

    #[test]
    fn control_frames_resets_continuations_and_window_updates() {
        let mut c = H2Client::new(&spec("GET", b""), true);
        let mut req = Vec::new();
        c.encode_op(0, &mut req);
        c.encode_op(0, &mut req);
        let mut input = Vec::new();
        frame::write_ping(&mut input, false, [1; 8]);
        frame::write_rst_stream(&mut input, 1, 8);
        // Stream 3's answer in a HEADERS and a CONTINUATION, then 40,000 bytes of DATA.
        let mut block = Vec::new();
        hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
        frame::write_headers(&mut input, 3, &block, false, 2);
        frame::write_data(&mut input, 3, &[b'x'; 40_000], true, 16_384);
        let mut out = Vec::new();
        let seen = decode_all(&mut c, &input, &mut out);
        assert_eq!(seen[0], (Outcome::Control, None));
        assert_eq!(seen[1], (Outcome::OpFailed(Failure::protocol("RST_STREAM", "CANCEL")), Some(1)));
        assert_eq!(seen.last(), Some(&(Outcome::Op, Some(3))));
        assert!(seen[2..seen.len() - 1].iter().all(|s| *s == (Outcome::OpPart, Some(3))), "{seen:?}");
        // The PING answered, and room granted back for the connection and the stream.
        let mut replies = &out[..];
        let mut kinds = Vec::new();
        while let Some((f, used)) = frame::parse(replies, 16_384).unwrap() {
            kinds.push(f);
            replies = &replies[used..];
        }
        assert_eq!(kinds[0], Frame::Ping { ack: true, data: [1; 8] });
        assert!(kinds.contains(&Frame::WindowUpdate { stream: 0, increment: 32_768 }), "{kinds:?}");
        assert!(kinds.iter().any(|f| matches!(f, Frame::WindowUpdate { stream: 3, .. })), "{kinds:?}");
        // A frame between a HEADERS and its CONTINUATION breaks the connection.
        let mut c = H2Client::new(&spec("GET", b""), true);
        c.encode_op(0, &mut Vec::new());
        let mut input = Vec::new();
        frame::write_head(&mut input, 1, frame::HEADERS, 0, 1);
        input.push(0x88);
        frame::write_ping(&mut input, false, [0; 8]);
        let (Ok(Decoded::Done { consumed, .. }), mut out) =
            (c.decode_op(&input, &mut Vec::new()), Vec::new())
        else {
            panic!()
        };
        assert_eq!(c.decode_op(&input[consumed..], &mut out), Err(Error::Interleaved("PING")));
        assert_eq!(
            H2Client::new(&spec("GET", b""), true)
                .decode_op(&[0, 0, 4, 5, 4, 0, 0, 0, 1, 0, 0, 0, 2], &mut out),
            Err(Error::Push)
        );
    }
}
