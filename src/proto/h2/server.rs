//! The built-in HTTP/2 server's codec (`serve h2`): cleartext with prior knowledge (h2c), or
//! over TLS agreed by ALPN `h2` with `--tls`. It answers as `serve http` does — `Hello World`
//! for GET, `OK` for a request with a body — and a request whose content-type is
//! `application/grpc…` as a gRPC echo on any path: the response's HEADERS at once, the
//! request's DATA back as it arrives, `grpc-status: 0` in the trailers once the request ends
//! with whole messages.
//!
//! What one connection may cost it is bounded, besides the engine's head, idle and write
//! timeouts and `--max-conns`:
//! - streams: at most [`MAX_STREAMS`] open at once (more are refused, `REFUSED_STREAM`);
//! - headers: a header list of at most [`MAX_HEADER_LIST`] octets, encoded or decoded (HPACK
//!   bombs, CONTINUATION floods): past it the connection ends with `ENHANCE_YOUR_CALM`;
//! - memory: no request body is kept; answers waiting for the client's flow-control window
//!   (the gRPC echo) are, up to [`HOLD`] octets — past it this side grants the client no more
//!   receive window until they drain, so the client cannot make it hold more;
//! - frames that do no work (RST_STREAM, PING, SETTINGS after the first, PRIORITY,
//!   CONTINUATION, empty DATA, unknown types, and WINDOW_UPDATEs that give more room than
//!   this side's DATA used while nothing waits for it) count against a budget of
//!   [`FREE_OVERHEAD`] plus one per two streams opened: past it, GOAWAY `ENHANCE_YOUR_CALM`.
//!   One rule for Rapid Reset (HEADERS then RST_STREAM, CVE-2023-44487), PING, SETTINGS and
//!   WINDOW_UPDATE floods and empty frames. A WINDOW_UPDATE that gives back room this side's
//!   answers used is work, however many come — on the stream, after the stream ended too (a
//!   gRPC client granting as it reads), or on the connection.
//!
//! Every other break of RFC 9113 ends the connection with a GOAWAY naming its error code, or,
//! where the RFC makes it a stream error, resets that stream alone.

use super::frame::{self, Frame};
use super::hpack;
use crate::proto::http1::MAX_REQUEST_BODY;
use crate::proto::{Ask, Awaiting, Served, ServerCodec};
use request::{GrpcScan, Head, Method};

mod request;

/// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
pub const MAX_STREAMS: u32 = 100;
/// The largest header list accepted (SETTINGS_MAX_HEADER_LIST_SIZE), and the most octets a
/// header block may take before its END_HEADERS.
pub const MAX_HEADER_LIST: usize = 16 << 10;
/// The receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE) and of the connection
/// (raised from 65,535 by a WINDOW_UPDATE after the SETTINGS), given back as it is used.
pub const WINDOW: u32 = 1 << 20;
/// Answer octets a connection may hold waiting for the client's window before this side stops
/// granting it room to send more.
pub const HOLD: usize = 4 << 20;
/// Frames that do no work a connection may send beyond one per two streams it opened.
pub const FREE_OVERHEAD: u64 = 1000;
/// The largest gRPC message echoed (gRPC's own default limit for a received message).
pub const MAX_GRPC_MESSAGE: usize = 4 << 20;
/// The initial window of RFC 9113 §6.9.2, before SETTINGS change it.
const DEFAULT_WINDOW: i64 = 65_535;

const HELLO: &[u8] = b"Hello World";
const OK: &[u8] = b"OK";

/// Where the connection is in its opening: the client's preface, then its SETTINGS first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Preface,
    Settings,
    Frames,
}

/// What a request is, from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `serve http`'s answers: `Hello World` for GET, its headers alone for HEAD, `OK` else.
    Hello { get: bool, head: bool },
    /// A gRPC call: its messages echoed as they arrive.
    Grpc(GrpcScan),
}

/// What a stream's answer still has to send once its queued DATA is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fin {
    /// The request is not whole: more may be queued.
    Open,
    /// END_STREAM on the last DATA.
    End,
    /// gRPC trailers (encoded when they go: HPACK blocks must be encoded in the order sent).
    Trailers(GrpcScan),
    /// All sent.
    Done,
}

/// A request still arriving.
#[derive(Debug, Clone, Copy)]
struct Recv {
    kind: Kind,
    body: u64,
    content_length: Option<u64>,
    /// This side's window for the stream's DATA, and DATA read since it last granted room.
    open: i64,
    unacked: u32,
}

/// An open stream: its request while it arrives, its answer while it goes.
#[derive(Debug, Clone)]
struct Stream {
    id: u32,
    recv: Option<Recv>,
    /// Room the client grants this stream's answer.
    window: i64,
    /// Answer octets waiting for room, from `from` on.
    queue: Vec<u8>,
    from: usize,
    fin: Fin,
    /// DATA octets sent on it that the client has not given back by a WINDOW_UPDATE yet.
    unreturned: i64,
}

/// A header block's break: past the limit, `ENHANCE_YOUR_CALM` (a CONTINUATION flood, an
/// HPACK bomb's block); else `PROTOCOL_ERROR` (§6.10).
fn block_code(e: frame::BlockError) -> Code {
    match e {
        frame::BlockError::TooLarge => frame::ENHANCE_YOUR_CALM,
        frame::BlockError::Interleaved(_) | frame::BlockError::Stray => frame::PROTOCOL_ERROR,
    }
}

/// The server: one value per connection.
#[derive(Debug, Clone)]
pub struct H2Server {
    phase: Phase,
    encoder: hpack::Encoder,
    /// The last answer's header block, sent again for the same fields.
    last_block: hpack::LastBlock,
    decoder: hpack::Decoder,
    /// The client's SETTINGS_MAX_FRAME_SIZE and SETTINGS_INITIAL_WINDOW_SIZE.
    peer_max_frame: u32,
    peer_window: i64,
    /// Room the client grants on the connection.
    send_window: i64,
    /// This side's window for the connection's DATA, and DATA read since it last granted room.
    recv_open: i64,
    recv_unacked: u32,
    streams: Vec<Stream>,
    /// The highest stream the client opened.
    last_stream: u32,
    blocks: frame::Blocks,
    /// Frames that did no work, and streams opened (the budget grows with them).
    overhead: u64,
    opened: u64,
    /// The client sent GOAWAY: the connection ends once its streams are answered.
    peer_gone: bool,
    /// A HEADERS or DATA that did work came since the last PING: that PING is free (a client
    /// may ping once per round of answers, as grpc-go's bandwidth probe does).
    worked_since_ping: bool,
    /// SETTINGS acknowledgements seen (this side sends one SETTINGS: one is expected).
    acks: u64,
    /// The latest streams this side reset or refused: frames the client sent on them before it
    /// knew are ignored (§5.1), not taken for a stream id going back.
    reset: std::collections::VecDeque<u32>,
    /// DATA octets sent that the client has not given back yet: on the connection, and on
    /// streams since ended (their WINDOW_UPDATEs may come after the stream's end).
    unreturned: i64,
    unreturned_closed: i64,
    /// A HEADERS whose priority names its own stream (§5.3.1): that stream is reset once its
    /// header block is decoded (the table kept in step).
    self_dependent: Option<u32>,
}

/// How many of the streams this side reset it remembers.
const RESETS_KEPT: usize = 128;

impl Default for H2Server {
    fn default() -> Self {
        H2Server {
            phase: Phase::Preface,
            encoder: hpack::Encoder::new(true),
            last_block: hpack::LastBlock::default(),
            decoder: hpack::Decoder::new(hpack::DEFAULT_TABLE_SIZE, MAX_HEADER_LIST),
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_window: DEFAULT_WINDOW,
            send_window: DEFAULT_WINDOW,
            recv_open: DEFAULT_WINDOW,
            recv_unacked: 0,
            streams: Vec::new(),
            last_stream: 0,
            blocks: frame::Blocks::default(),
            overhead: 0,
            opened: 0,
            peer_gone: false,
            worked_since_ping: false,
            acks: 0,
            reset: std::collections::VecDeque::new(),
            unreturned: 0,
            unreturned_closed: 0,
            self_dependent: None,
        }
    }
}

/// A connection error: the GOAWAY's code.
type Code = u32;

impl ServerCodec for H2Server {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let mut served = Served::default();
        let mut at = 0;
        if self.phase == Phase::Preface {
            let n = input.len().min(frame::PREFACE.len());
            if input[..n] != frame::PREFACE[..n] {
                // Not HTTP/2 with prior knowledge (an HTTP/1.1 request, say).
                frame::write_goaway(out, 0, frame::PROTOCOL_ERROR);
                return Served { consumed: input.len(), close: true, ..served };
            }
            if n < frame::PREFACE.len() {
                served.awaiting = if n > 0 { Awaiting::Head } else { Awaiting::Request };
                return served;
            }
            at = n;
            self.phase = Phase::Settings;
            frame::write_settings(
                out,
                &[
                    (frame::MAX_CONCURRENT_STREAMS, MAX_STREAMS),
                    (frame::INITIAL_WINDOW_SIZE, WINDOW),
                    (frame::MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST as u32),
                ],
            );
            frame::write_window_update(out, 0, WINDOW - DEFAULT_WINDOW as u32);
            self.recv_open = i64::from(WINDOW);
        }
        while at < input.len() && !served.close {
            let step = match frame::parse(&input[at..], frame::DEFAULT_MAX_FRAME) {
                Ok(None) => break,
                Ok(Some((f, n))) => {
                    at += n;
                    // Room is given back frame by frame, so that where reads cut the stream
                    // changes nothing that is sent.
                    self.frame(f, out, &mut served).map(|()| self.grant(out))
                }
                Err(e) => Err(e.code),
            };
            if let Err(code) = step {
                frame::write_goaway(out, self.last_stream, code);
                served.close = true;
                at = input.len();
            }
            // The client said GOAWAY and all it asked is answered: nothing after is read (frame
            // by frame, so that where reads cut the stream changes nothing).
            served.close |= self.peer_gone && self.streams.is_empty();
        }
        served.consumed = at;
        served.awaiting = if self.phase != Phase::Frames || self.blocks.is_open() {
            Awaiting::Head
        } else if self.streams.iter().any(|s| s.recv.is_some()) {
            Awaiting::Body
        } else {
            Awaiting::Request
        };
        served
    }

    fn ask(&self, question: Ask<'_>) {
        if let Ask::Busy(out) = question {
            // At the connection limit: no stream will be served.
            frame::write_settings(out, &[]);
            frame::write_goaway(out, 0, frame::REFUSED_STREAM);
        }
    }
}

impl H2Server {
    fn frame(&mut self, f: Frame<'_>, out: &mut Vec<u8>, served: &mut Served) -> Result<(), Code> {
        if self.phase == Phase::Settings && !matches!(f, Frame::Settings { ack: false, .. }) {
            return Err(frame::PROTOCOL_ERROR); // the preface's SETTINGS come first (§3.4)
        }
        self.blocks.check(&f).map_err(block_code)?;
        match f {
            Frame::Settings { ack: false, params } => {
                if self.phase == Phase::Settings {
                    self.phase = Phase::Frames;
                } else {
                    self.overhead()?;
                }
                self.settings(params)?;
                // The acknowledgement at once (§6.5.3), before answers the new values let go.
                frame::write_settings_ack(out);
                self.flush_all(out);
            }
            Frame::Settings { ack: true, .. } => {
                self.acks += 1;
                if self.acks > 1 {
                    self.overhead()?;
                }
            }
            Frame::Ping { ack, data } => {
                if !std::mem::take(&mut self.worked_since_ping) {
                    self.overhead()?;
                }
                if !ack {
                    frame::write_ping(out, true, data);
                }
            }
            Frame::GoAway { .. } => self.peer_gone = true,
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment, out)?,
            Frame::RstStream { stream, .. } => {
                self.idle(stream)?;
                self.overhead()?;
                if let Some(at) = self.find(stream) {
                    self.forget(at);
                }
            }
            Frame::Priority { stream, dependency } => {
                self.overhead()?;
                if dependency == stream {
                    // §5.3.1: a stream error, whatever state the stream is in.
                    match self.find(stream) {
                        Some(at) => self.reset(at, frame::PROTOCOL_ERROR, out),
                        None => self.reset_id(stream, frame::PROTOCOL_ERROR, out),
                    }
                }
            }
            Frame::Unknown { .. } => self.overhead()?,
            Frame::PushPromise { .. } => return Err(frame::PROTOCOL_ERROR),
            Frame::Headers { .. } | Frame::Continuation { .. } => {
                if matches!(f, Frame::Continuation { .. }) {
                    self.overhead()?;
                }
                if let Frame::Headers { stream, dependency: Some(d), .. } = f
                    && d == stream
                {
                    self.self_dependent = Some(stream);
                }
                if let Some(b) = self.blocks.add(&f, MAX_HEADER_LIST).map_err(block_code)? {
                    self.headers(b, out, served)?;
                }
            }
            Frame::Data { stream, end_stream, data, padding } => {
                self.data(stream, end_stream, data, padding, out, served)?;
            }
        }
        Ok(())
    }

    /// Room the client grants, on the connection (stream 0) or a stream: what it lets go
    /// goes. More room than this side's DATA used, for nothing waiting, is overhead; room
    /// given back for what was sent is work, even after the stream ended.
    fn window_update(&mut self, stream: u32, increment: u32, out: &mut Vec<u8>) -> Result<(), Code> {
        if stream == 0 {
            if !give_back(&mut self.unreturned, increment) && self.held() == 0 {
                self.overhead()?;
            }
            self.send_window += i64::from(increment);
            if self.send_window > i64::from(frame::MAX_WINDOW) {
                return Err(frame::FLOW_CONTROL_ERROR);
            }
            self.flush_all(out);
            return Ok(());
        }
        self.idle(stream)?;
        let worked = match self.find(stream) {
            Some(at) => {
                let s = &mut self.streams[at];
                give_back(&mut s.unreturned, increment) || s.from < s.queue.len()
            }
            None => give_back(&mut self.unreturned_closed, increment),
        };
        if !worked {
            self.overhead()?;
        }
        if let Some(at) = self.find(stream) {
            let s = &mut self.streams[at];
            s.window += i64::from(increment);
            if s.window > i64::from(frame::MAX_WINDOW) {
                self.reset(at, frame::FLOW_CONTROL_ERROR, out);
            } else {
                self.flush(at, out);
            }
        }
        Ok(())
    }

    /// One more frame that did no work: within the budget, or the connection ends.
    fn overhead(&mut self) -> Result<(), Code> {
        self.overhead += 1;
        if self.overhead > FREE_OVERHEAD + self.opened / 2 {
            return Err(frame::ENHANCE_YOUR_CALM);
        }
        Ok(())
    }

    /// A frame on a stream the client never opened (§5.1: idle) is a connection error.
    fn idle(&self, stream: u32) -> Result<(), Code> {
        if stream > self.last_stream { Err(frame::PROTOCOL_ERROR) } else { Ok(()) }
    }

    fn find(&self, stream: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == stream)
    }

    fn settings(&mut self, params: &[u8]) -> Result<(), Code> {
        for setting in frame::settings(params) {
            let (max_frame, initial, streams) =
                (&mut self.peer_max_frame, &mut self.peer_window, &mut self.streams);
            frame::common_setting(setting, max_frame, &mut self.encoder, initial, streams, |s| &mut s.window)
                .map_err(|frame::WindowOverflow| frame::FLOW_CONTROL_ERROR)?;
        }
        Ok(())
    }

    /// A whole header block on `stream`: a new request, or the trailers of one arriving.
    fn headers(&mut self, b: frame::Block<'_>, out: &mut Vec<u8>, served: &mut Served) -> Result<(), Code> {
        let (stream, end_stream, block) = (b.stream, b.end_stream, &b.bytes[..]);
        let mut head = Head::default();
        self.decoder.decode(block, |name, value| head.field(name, value)).map_err(|e| match e {
            hpack::Error::TooLarge => frame::ENHANCE_YOUR_CALM,
            _ => frame::COMPRESSION_ERROR,
        })?;
        if let Some(at) = self.find(stream)
            && self.streams[at].recv.is_some()
        {
            // Trailers: they end the request.
            if !end_stream || head.pseudo {
                self.reset(at, frame::PROTOCOL_ERROR, out);
                return Ok(());
            }
            return self.finish(at, out, served);
        }
        if self.reset.contains(&stream) {
            return self.overhead(); // sent before the client knew (decoded: the table is in step)
        }
        if stream.is_multiple_of(2) || stream <= self.last_stream {
            return Err(frame::PROTOCOL_ERROR); // §5.1.1: new streams' ids are odd and grow
        }
        self.worked_since_ping = true;
        self.last_stream = stream;
        self.opened += 1;
        if self.streams.len() >= MAX_STREAMS as usize {
            self.reset_id(stream, frame::REFUSED_STREAM, out);
            return self.overhead();
        }
        if self.self_dependent.take() == Some(stream) {
            self.reset_id(stream, frame::PROTOCOL_ERROR, out);
            return Ok(());
        }
        // §8.3.1: :method, :scheme and :path, each once (CONNECT is not served: it has no
        // :scheme, and is reset as malformed here).
        let (Some(method), true, true, false) = (head.method, head.path, head.scheme, head.malformed) else {
            self.reset_id(stream, frame::PROTOCOL_ERROR, out);
            return Ok(());
        };
        let kind = if head.grpc {
            Kind::Grpc(GrpcScan::default())
        } else {
            Kind::Hello { get: method == Method::Get, head: method == Method::Head }
        };
        let recv =
            Recv { kind, body: 0, content_length: head.content_length, open: i64::from(WINDOW), unacked: 0 };
        self.streams.push(Stream {
            id: stream,
            recv: Some(recv),
            window: self.peer_window,
            queue: Vec::new(),
            from: 0,
            fin: Fin::Open,
            unreturned: 0,
        });
        if head.grpc {
            self.write_headers(
                stream,
                &[(b":status", b"200"), (b"content-type", b"application/grpc")],
                false,
                out,
            );
        }
        if end_stream {
            self.finish(self.streams.len() - 1, out, served)?;
        }
        Ok(())
    }

    fn data(
        &mut self,
        stream: u32,
        end_stream: bool,
        data: &[u8],
        padding: usize,
        out: &mut Vec<u8>,
        served: &mut Served,
    ) -> Result<(), Code> {
        let len = (data.len() + padding) as u32;
        self.recv_open -= i64::from(len);
        if self.recv_open < 0 {
            return Err(frame::FLOW_CONTROL_ERROR);
        }
        self.recv_unacked += len;
        if data.is_empty() && !end_stream {
            self.overhead()?;
        }
        self.idle(stream)?;
        let Some(at) = self.find(stream) else {
            if !self.reset.contains(&stream) {
                // Closed after the client's END_STREAM: DATA after it breaks §5.1.
                self.reset_id(stream, frame::STREAM_CLOSED, out);
            }
            return self.overhead(); // reset by this side: sent before the client knew
        };
        if !data.is_empty() {
            self.worked_since_ping = true;
        }
        let Some(r) = &mut self.streams[at].recv else {
            // The request had ended (§5.1: half-closed remote).
            self.reset(at, frame::STREAM_CLOSED, out);
            return Ok(());
        };
        r.open -= i64::from(len);
        if r.open < 0 {
            self.reset(at, frame::FLOW_CONTROL_ERROR, out);
            return Ok(());
        }
        r.unacked += len;
        r.body += data.len() as u64;
        match &mut r.kind {
            Kind::Hello { .. } if r.body > MAX_REQUEST_BODY as u64 => {
                // Answered before the request ends, then the rest refused (§8.1).
                self.write_headers(stream, &[(b":status", b"413"), (b"content-length", b"0")], true, out);
                self.reset(at, frame::NO_ERROR, out);
                served.requests += 1;
                return Ok(());
            }
            Kind::Hello { .. } => {}
            Kind::Grpc(scan) => {
                let mut scan = *scan;
                let s = &mut self.streams[at];
                scan.feed(data, &mut s.queue);
                if let Some(Recv { kind: Kind::Grpc(kept), .. }) = &mut s.recv {
                    *kept = scan;
                }
            }
        }
        if end_stream {
            self.finish(at, out, served)?;
        } else {
            self.flush(at, out);
        }
        Ok(())
    }

    /// Stream `at`'s request is whole: its answer goes (as far as the client's window lets).
    fn finish(&mut self, at: usize, out: &mut Vec<u8>, served: &mut Served) -> Result<(), Code> {
        let Some(r) = self.streams[at].recv.take() else { return Ok(()) };
        let stream = self.streams[at].id;
        if r.content_length.is_some_and(|n| n != r.body) {
            self.reset(at, frame::PROTOCOL_ERROR, out); // §8.1.1: malformed
            return Ok(());
        }
        served.requests += 1;
        match r.kind {
            Kind::Hello { head: true, .. } => {
                self.write_headers(stream, &[(b":status", b"200"), (b"content-length", b"11")], true, out);
                self.streams[at].fin = Fin::Done;
            }
            Kind::Hello { get, .. } => {
                let (body, len): (&[u8], &[u8]) = if get { (HELLO, b"11") } else { (OK, b"2") };
                self.write_headers(stream, &[(b":status", b"200"), (b"content-length", len)], false, out);
                let s = &mut self.streams[at];
                s.queue.extend_from_slice(body);
                s.fin = Fin::End;
            }
            Kind::Grpc(scan) => self.streams[at].fin = Fin::Trailers(scan),
        }
        self.flush(at, out);
        Ok(())
    }

    fn write_headers(&mut self, stream: u32, fields: &[(&[u8], &[u8])], end_stream: bool, out: &mut Vec<u8>) {
        let before = self.encoder.state();
        if let Some(block) = self.last_block.get(before, fields) {
            frame::write_headers(out, stream, block, end_stream, self.peer_max_frame);
            return;
        }
        let mut block = Vec::with_capacity(32);
        self.encoder.encode(fields.iter().copied(), &mut block);
        frame::write_headers(out, stream, &block, end_stream, self.peer_max_frame);
        self.last_block.keep(before, self.encoder.state(), fields, &block);
    }

    /// Send what stream `at` has queued, as far as both windows let; then its end. A stream
    /// whose request and answer are both done is gone.
    fn flush(&mut self, at: usize, out: &mut Vec<u8>) {
        let max = self.peer_max_frame as usize;
        let s = &mut self.streams[at];
        while s.from < s.queue.len() {
            let room = s.window.min(self.send_window);
            if room <= 0 {
                break;
            }
            let n = (s.queue.len() - s.from).min(room as usize).min(max);
            let last = s.from + n == s.queue.len() && s.fin == Fin::End;
            frame::write_data(out, s.id, &s.queue[s.from..s.from + n], last, self.peer_max_frame);
            s.from += n;
            s.window -= n as i64;
            s.unreturned += n as i64;
            self.send_window -= n as i64;
            self.unreturned += n as i64;
            if last {
                s.fin = Fin::Done;
            }
        }
        if s.from > 0 && s.from >= s.queue.len() / 2 {
            // What went is dropped once it is half the queue: the queue never outgrows twice
            // what waits in it (a stream whose window lags by a byte would grow it for ever).
            s.queue.drain(..s.from);
            s.from = 0;
        }
        if s.from == s.queue.len()
            && let Fin::Trailers(scan) = s.fin
        {
            s.fin = Fin::Done;
            let (status, message) = scan.status();
            let id = s.id;
            match message {
                None => self.write_headers(id, &[(b"grpc-status", status.as_bytes())], true, out),
                Some(m) => self.write_headers(
                    id,
                    &[(b"grpc-status", status.as_bytes()), (b"grpc-message", m.as_bytes())],
                    true,
                    out,
                ),
            }
        }
        let s = &self.streams[at];
        if s.fin == Fin::Done && s.recv.is_none() {
            self.forget(at);
        }
    }

    /// Stream `at` is over: what it was sent and not given back may still be, late.
    fn forget(&mut self, at: usize) {
        let s = self.streams.remove(at);
        self.unreturned_closed += s.unreturned;
    }

    /// Every stream's queue, in order, as far as the windows let.
    fn flush_all(&mut self, out: &mut Vec<u8>) {
        let mut at = 0;
        while at < self.streams.len() {
            let before = self.streams.len();
            self.flush(at, out);
            if self.streams.len() == before {
                at += 1;
            }
        }
    }

    /// Reset stream `at` (a stream error) and forget it.
    fn reset(&mut self, at: usize, code: u32, out: &mut Vec<u8>) {
        self.reset_id(self.streams[at].id, code, out);
        self.forget(at);
    }

    /// Reset `stream`, remembering it among the latest reset.
    fn reset_id(&mut self, stream: u32, code: u32, out: &mut Vec<u8>) {
        frame::write_rst_stream(out, stream, code);
        if self.reset.len() == RESETS_KEPT {
            self.reset.pop_front();
        }
        self.reset.push_back(stream);
    }

    /// Answer octets queued for the client's window, on every stream.
    fn held(&self) -> usize {
        self.streams.iter().map(|s| s.queue.len() - s.from).sum()
    }

    /// Room given back for what was read, unless answers wait past [`HOLD`] for the client.
    fn grant(&mut self, out: &mut Vec<u8>) {
        if self.held() >= HOLD {
            return;
        }
        if self.recv_unacked >= WINDOW / 2 {
            frame::write_window_update(out, 0, self.recv_unacked);
            self.recv_open += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        for s in &mut self.streams {
            if let Some(r) = &mut s.recv
                && r.unacked >= WINDOW / 2
            {
                frame::write_window_update(out, s.id, r.unacked);
                r.open += i64::from(r.unacked);
                r.unacked = 0;
            }
        }
    }
}

/// A WINDOW_UPDATE's `increment` against the octets sent and not given back yet: whether it
/// gives back no more than those (then they are taken off).
fn give_back(unreturned: &mut i64, increment: u32) -> bool {
    let increment = i64::from(increment);
    let within = increment <= *unreturned;
    *unreturned = if within { *unreturned - increment } else { 0 };
    within
}

#[cfg(test)]
mod tests;
