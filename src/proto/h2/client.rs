//! The HTTP/2 client (`h2c://`: cleartext, with prior knowledge): each operation is a stream —
//! its HEADERS (and DATA when it has a body) out, the server's HEADERS and DATA on that stream
//! back — completed by its own answer in whatever order the streams end (the connection
//! machine finds it by [`op_id`](ClientCodec::op_id)). An answer's frames that are here
//! together (HEADERS and DATA, as servers send them) are one message: one step of the
//! connection machine per answer, as HTTP/1.1 takes, not one per frame. The preface and the
//! first SETTINGS exchange are the handshake; SETTINGS, PING, WINDOW_UPDATE and GOAWAY later
//! are control.
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
pub(crate) use super::request::Request;
pub use super::request::RequestSpec;
use crate::outcome::{Answer, Failure};
use crate::proto::{ClientCodec, Decoded, Outcome};
use crate::stats::Layers;
use std::sync::Arc;

mod error;
pub use error::Error;

/// The most of a GOAWAY's debug data kept for the error sample.
const DEBUG_KEPT: usize = 200;

/// The largest frame this side accepts (its SETTINGS_MAX_FRAME_SIZE: the default).
const MAX_FRAME: u32 = frame::DEFAULT_MAX_FRAME;
/// The largest header list this side accepts.
const MAX_HEADER_LIST: usize = 64 << 10;
/// The initial windows, both ways, until SETTINGS say otherwise (RFC 9113 §6.9.2).
const INITIAL_WINDOW: u32 = 65_535;
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
    /// Per entry, its last HEADERS frame (on stream 0, its id written in when it goes) and the
    /// encoder's state its block was encoded in, when encoding it changed nothing and it fits
    /// one frame of the least size a server may set: the steady state's frame, sent again
    /// without encoding or framing.
    blocks: Vec<Option<(u64, Vec<u8>)>>,
    decoder: hpack::Decoder,
    /// What the last header block the decoder keeps a record of said (the record's number,
    /// `:status`, `grpc-status`): the same block again gives no fields, these instead.
    kept: (u64, Option<u16>, Option<&'static str>),
    next_stream: u32,
    /// The stream of the request just written, and of the answer just decoded.
    sent: u32,
    answered: Option<u32>,
    streams: Vec<Stream>,
    /// Where [`at`](Self::at) last found a stream: a frame's handlers ask for its stream
    /// several times, and an answer's DATA follows its HEADERS.
    found: usize,
    /// How many of them have more body to send: [`ClientCodec::op_more`] looks no further when
    /// none has (the common case), not through every stream each time.
    uploading: usize,
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
    /// An error met in a frame after others of the same answer: [`ClientCodec::decode_op`]
    /// hands those on first and gives it at the next call.
    deferred: Option<Error>,
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
            kept: (0, None, None),
            next_stream: 1,
            sent: 0,
            answered: None,
            streams: Vec::new(),
            found: 0,
            uploading: 0,
            incoming: frame::Blocks::default(),
            max_frame: frame::DEFAULT_MAX_FRAME,
            unacked: 0,
            recv_window: INITIAL_WINDOW,
            status: None,
            grpc: spec.grpc,
            goaway: None,
            closing: false,
            goaway_debug: None,
            deferred: None,
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
            let (max_frame, initial, streams) =
                (&mut self.max_frame, &mut self.stream_window, &mut self.streams);
            let common =
                frame::common_setting((id, value), max_frame, &mut self.encoder, initial, streams, |s| {
                    &mut s.window
                });
            match id {
                _ if common.map_err(|frame::WindowOverflow| Error::WindowOverflow)? => {}
                frame::MAX_CONCURRENT_STREAMS => self.max_streams = value,
                frame::ENABLE_PUSH if value == 1 => return Err(Error::PushEnabled),
                _ => {}
            }
        }
        Ok(())
    }

    /// A whole header block for `stream`: its `:status`, and the answer's end if it ends it.
    /// (Its parts as arguments, not a `Block`: built in the caller and passed through the
    /// stack, its narrow fields' stores stalled the wide read.)
    fn headers(
        &mut self,
        stream: u32,
        end_stream: bool,
        block: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        let (mut status, mut grpc_status) = (None, None);
        match block {
            // One octet indexing a static `:status` (RFC 7541 Appendix A, 8 to 14): no table to touch.
            &[b @ 0x88..=0x8e] => status = Some([200, 204, 206, 304, 400, 404, 500][usize::from(b - 0x88)]),
            _ => {
                let (known, kept_status, kept_grpc) = self.kept;
                let record = self.decoder.decode_known(block, known, |name, value| match name {
                    b":status" => status = Some(status_code(value).unwrap_or(0)),
                    b"grpc-status" => grpc_status = Some(grpc_code_name(value)),
                    _ => {}
                })?;
                match record {
                    Some(n) if n == known => (status, grpc_status) = (kept_status, kept_grpc),
                    Some(n) => self.kept = (n, status, grpc_status),
                    None => {}
                }
            }
        }
        if self.idle(stream) {
            return Err(Error::IdleStream("HEADERS", stream));
        }
        let Some(at) = self.at(stream) else {
            return Ok(Outcome::Control); // a stream already ended (reset): its table was kept in step
        };
        let s = &mut self.streams[at];
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

    /// Where stream `id` is among those in flight: where the last one was found, or else
    /// the first with that id.
    #[inline]
    fn at(&mut self, id: u32) -> Option<usize> {
        if self.streams.get(self.found).is_some_and(|s| s.id == id) {
            return Some(self.found);
        }
        let at = self.streams.iter().position(|s| s.id == id)?;
        self.found = at;
        Some(at)
    }

    /// Take the stream at `at` out of those in flight.
    fn remove(&mut self, at: usize) -> Stream {
        let s = self.streams.swap_remove(at);
        self.uploading -= usize::from(s.uploading());
        s
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
        let Some(at) = self.at(stream) else { return Outcome::Control };
        let s = self.remove(at);
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
        let Some(at) = self.at(stream) else { return Outcome::Control };
        let s = self.remove(at);
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
        if let Some(at) = self.at(stream) {
            let s = &mut self.streams[at];
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

    #[inline(always)]
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
            Frame::RstStream { stream, code } => match self.at(stream) {
                Some(at) => {
                    self.remove(at);
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
                    _ => self.at(stream).map(|at| &mut self.streams[at].window),
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
        self.uploading -= usize::from(last);
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
                // Where a gRPC message's prefix ends (nothing else asks).
                if self.grpc
                    && let Some(at) = self.at(stream)
                {
                    self.streams[at].rx_data += n;
                }
            }
            Part::Block(n) => {
                *(if trailers { &mut rx.trailers } else { &mut rx.headers }) += n as u64;
                rx.framing += (consumed - n) as u64;
            }
            Part::Framing => rx.framing += consumed as u64,
        }
    }

    /// One whole frame at the start of `input`: the octets it took and what it meant
    /// (`None`: not whole yet).
    #[inline(always)]
    fn decode_frame(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Option<(usize, Outcome)>, Error> {
        let Some((f, consumed)) = frame::parse(input, MAX_FRAME)? else { return Ok(None) };
        // What the frame may hold of a stream's answer, counted once it proves to be one's.
        let part = match &f {
            Frame::Data { stream, data, .. } => Some((*stream, Part::Data(data.len()))),
            Frame::Headers { stream, block, .. } | Frame::Continuation { stream, block, .. } => {
                Some((*stream, Part::Block(block.len())))
            }
            Frame::RstStream { stream, .. } => Some((*stream, Part::Framing)),
            _ => None,
        };
        let before = part
            .and_then(|(id, _)| self.at(id))
            .map(|at| (self.streams[at].status, self.streams[at].rx_data));
        let outcome = self.frame(f, out)?;
        if let (Some((id, part)), Some((status, rx_data))) = (part, before)
            && outcome != Outcome::Control
        {
            self.count_rx(id, part, consumed, status != 0, rx_data);
        }
        Ok(Some((consumed, outcome)))
    }

    /// A piece of `stream`'s answer: the operation's bytes if it is in flight.
    fn part_of(&mut self, stream: u32) -> Outcome {
        if self.at(stream).is_some() {
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
        let request = &self.requests[entry];
        let body = !request.body.is_empty();
        if self.blocks.len() <= entry {
            self.blocks.resize(entry + 1, None);
        }
        let state = self.encoder.state();
        let from = out.len();
        let block_len = match &self.blocks[entry] {
            Some((at, headers)) if state == Some(*at) => {
                out.extend_from_slice(headers);
                out[from + 5..from + frame::HEAD_LEN].copy_from_slice(&stream.to_be_bytes());
                headers.len() - frame::HEAD_LEN
            }
            _ => {
                let mut block = Vec::with_capacity(64);
                self.encoder.encode(request.fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
                frame::write_headers(out, stream, &block, !body, self.max_frame);
                let len = block.len();
                // Encoded without a change to the table: the same octets next time too (one
                // frame whatever SETTINGS_MAX_FRAME_SIZE the server sets: never below 16,384).
                let same = state.filter(|&s| self.encoder.state() == Some(s));
                self.blocks[entry] = same.filter(|_| len <= frame::DEFAULT_MAX_FRAME as usize).map(|s| {
                    let mut headers = Vec::with_capacity(frame::HEAD_LEN + len);
                    frame::write_headers(&mut headers, 0, &block, !body, frame::DEFAULT_MAX_FRAME);
                    (s, headers)
                });
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
        self.uploading += usize::from(body);
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
        debug_assert_eq!(self.uploading, self.streams.iter().filter(|s| s.uploading()).count());
        if self.send_window <= 0 || self.uploading == 0 {
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

    /// One message: a frame, or the frames of one stream's answer that follow each other
    /// whole in `input` (HEADERS and DATA, gRPC's trailers), decoded as one — the answer's
    /// bytes are its operation's either way, and the engine then takes it in one step, not
    /// one per frame. A frame that fails after others of the answer went is kept for the next
    /// call: those are handed on (and counted) first.
    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        self.answered = None;
        let (mut consumed, mut outcome) = (0, None);
        // Bounded: each turn takes a whole frame (at least its 9-octet head) of `input`.
        loop {
            let rest = &input[consumed..];
            let answer = match (outcome, self.answered) {
                (None, _) => None,
                (Some(Outcome::OpPart), Some(stream)) if frame::answer_on(rest, stream, MAX_FRAME) => {
                    Some(stream)
                }
                _ => break,
            };
            match self.decode_frame(rest, out) {
                Ok(Some((n, next))) => {
                    // A frame of an answer in flight is never control (its stream was found);
                    // were one, the message would be counted as the frame's outcome says.
                    debug_assert!(answer.is_none() || next != Outcome::Control);
                    consumed += n;
                    outcome = Some(next);
                }
                Ok(None) => break,
                Err(e) => match answer {
                    None => return Err(e),
                    Some(stream) => {
                        self.deferred = Some(e);
                        self.answered = Some(stream);
                        break;
                    }
                },
            }
        }
        Ok(match outcome {
            Some(outcome) => Decoded::Done { consumed, outcome },
            None => Decoded::Partial,
        })
    }

    fn take_layers(&mut self) -> Option<Layers> {
        Some(std::mem::take(&mut self.layers))
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
mod tests;
