//! The HTTP/3 client's protocol half, sans-IO: what goes on each QUIC stream and what the
//! server's streams mean. The QUIC connection (quinn-proto) is the caller's: it opens a
//! bidirectional stream per request, writes [`H3Client::request`]'s bytes and finishes it, hands
//! every byte read from a request stream to [`H3Client::request_data`] (which completes the
//! operation once the stream ends after a whole response) and every byte of a stream the
//! server opened to [`H3Client::uni_data`].
//!
//! This side's control stream carries its SETTINGS: a QPACK dynamic table of capacity 0 and no
//! blocked streams, so neither side needs QPACK's encoder or decoder stream and every field
//! section is the static table's indexes and literals ([`qpack`]); a server's field section
//! that refers to a dynamic table anyway is a `QPACK_DECOMPRESSION_FAILED` error. Push is never
//! allowed (no MAX_PUSH_ID), so a push stream is an `H3_ID_ERROR`.
//!
//! Each request stream's bytes are counted by layer as HTTP/2's are ([`Layers`]): QPACK field
//! sections (the response's trailers apart), frame heads (a type and a length, a varint each:
//! 2 octets for a small frame), payload; the connection's first request (stream 0) apart.

use super::stream::{self, Piece};
use super::{frame, qpack};
use crate::outcome::{Answer, Failure};
use crate::proto::h2::client::{Request, RequestSpec};
use crate::proto::{CodecError, Outcome};
use crate::stats::Layers;
use bytes::Bytes;
use std::sync::Arc;

/// What can break an HTTP/3 connection or request stream from this side's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Frame(#[from] frame::Error),
    #[error(transparent)]
    Qpack(#[from] qpack::Error),
    #[error("HTTP/3 H3_FRAME_UNEXPECTED: {0} on a request stream")]
    OnRequestStream(&'static str),
    #[error("HTTP/3 H3_MESSAGE_ERROR: a response without a valid :status")]
    NoStatus,
    #[error("HTTP/3 H3_FRAME_UNEXPECTED: DATA before the response's HEADERS")]
    DataBeforeHeaders,
    #[error("HTTP/3 H3_MESSAGE_ERROR: HEADERS after the response's trailers")]
    AfterTrailers,
    #[error("HTTP/3 H3_REQUEST_INCOMPLETE: the response stream ended inside a frame")]
    Incomplete,
    #[error("HTTP/3 H3_ID_ERROR: a PUSH_PROMISE, with push never allowed")]
    Push,
    #[error(transparent)]
    Uni(#[from] stream::UniError),
}

impl CodecError for Error {}

impl From<stream::Broken> for Error {
    fn from(e: stream::Broken) -> Error {
        match e {
            stream::Broken::Frame(e) => Error::Frame(e),
            stream::Broken::Unexpected("PUSH_PROMISE") => Error::Push,
            stream::Broken::Unexpected(kind) => Error::OnRequestStream(kind),
        }
    }
}

/// The largest frame this side holds whole (a HEADERS, a SETTINGS); DATA is taken as it comes.
const MAX_FRAME: u64 = 64 << 10;
/// The largest field section this side accepts (SETTINGS_MAX_FIELD_SECTION_SIZE).
pub const MAX_FIELD_SECTION: u64 = 64 << 10;

/// A request stream in flight: what of its response came, and the octets of a frame not yet
/// whole.
#[derive(Debug, Clone)]
struct ReqStream {
    id: u64,
    status: u16,
    trailers: bool,
    /// Its frames as they arrive.
    reader: stream::Reader,
}

/// A request's stream bytes, encoded once: without a dynamic table, QPACK encodes the same
/// fields to the same octets every time, so each entry's HEADERS and DATA frames are made when
/// the client is, and a request is a reference to them (quinn keeps the shared buffer until
/// the server acknowledges it: no copy).
#[derive(Debug, Clone)]
struct Encoded {
    bytes: Bytes,
    /// Its bytes by layer: the field section, frame heads, the body.
    headers: u64,
    framing: u64,
    payload: u64,
}

impl Encoded {
    fn new(request: &Request, huffman: bool) -> Encoded {
        let mut section = Vec::with_capacity(64);
        qpack::encode(request.fields.iter().map(|(n, v)| (&n[..], &v[..])), huffman, &mut section);
        let mut out = Vec::with_capacity(section.len() + request.body.len() + 16);
        frame::write_frame(&mut out, frame::HEADERS, &section);
        if !request.body.is_empty() {
            frame::write_frame(&mut out, frame::DATA, &request.body);
        }
        let (headers, payload) = (section.len() as u64, request.body.len() as u64);
        Encoded { framing: out.len() as u64 - headers - payload, bytes: out.into(), headers, payload }
    }
}

/// The client: one value per QUIC connection, cloned from a prototype holding the requests.
#[derive(Debug, Clone)]
pub struct H3Client {
    requests: Arc<Vec<Encoded>>,
    streams: Vec<ReqStream>,
    /// The server's unidirectional streams (its control stream's GOAWAY: the last request
    /// stream it takes, none above it goes).
    peer: stream::PeerStreams,
    /// The last whole answer in the protocol's words.
    status: Option<Answer>,
    /// The last field section decoded, and its `:status`: without a dynamic table a section's
    /// octets mean the same every time, and a server answers alike, so the same octets again
    /// are not decoded again.
    known: qpack::LastSection<Option<u16>>,
    layers: Layers,
}

impl H3Client {
    pub fn new(spec: &RequestSpec, huffman: bool) -> H3Client {
        H3Client {
            requests: Arc::new(vec![Encoded::new(&Request::new(spec), huffman)]),
            streams: Vec::new(),
            peer: stream::PeerStreams::of_server(true),
            status: None,
            known: qpack::LastSection::default(),
            layers: Layers::default(),
        }
    }

    /// Take `other`'s requests as further entries (`--requests`).
    pub fn add_entries(&mut self, other: H3Client) {
        Arc::make_mut(&mut self.requests).extend(other.requests.iter().cloned());
    }

    /// This side's control stream: its type, then its SETTINGS (no dynamic table, no blocked
    /// streams, the field section size it accepts).
    pub fn control_stream(&self, out: &mut Vec<u8>) {
        frame::write_control_stream(out, MAX_FIELD_SECTION);
    }

    /// Whether a new request may go: not after a GOAWAY (the server takes none above its id).
    pub fn accepts(&self, stream: u64) -> bool {
        self.peer.goaway().is_none_or(|last| stream < last)
    }

    /// Request `entry` on the bidirectional stream `stream`: the bytes to write and then
    /// finish it with, its HEADERS (the field section, QPACK-encoded) and its body as one DATA
    /// frame.
    pub fn request(&mut self, stream: u64, entry: usize) -> Bytes {
        let request = &self.requests[entry];
        let layers = self.layers.of(stream == 0);
        layers.ops += 1;
        layers.tx.headers += request.headers;
        layers.tx.framing += request.framing;
        layers.tx.payload += request.payload;
        self.streams.push(ReqStream {
            id: stream,
            status: 0,
            trailers: false,
            reader: stream::Reader::default(),
        });
        request.bytes.clone()
    }

    /// `data` arrived on request stream `stream`, `fin`: the stream ended after it. `Some`: the
    /// response is whole (the operation completes, successfully or as `status`); `None`: more
    /// to come, or a stream this side no longer waits for.
    pub fn request_data(
        &mut self,
        stream: u64,
        mut data: &[u8],
        fin: bool,
    ) -> Result<Option<Outcome>, Error> {
        let Some(at) = self.streams.iter().position(|s| s.id == stream) else { return Ok(None) };
        let first = stream == 0;
        while let Some(piece) = self.streams[at].reader.next(&mut data, MAX_FRAME)? {
            let s = &self.streams[at];
            let rx = &mut self.layers.of(first).rx;
            match piece {
                Piece::Head(n) | Piece::Skipped(n) => rx.framing += n as u64,
                Piece::Data(_) if s.status == 0 || s.trailers => return Err(Error::DataBeforeHeaders),
                Piece::Data(d) => rx.payload += d.len() as u64,
                Piece::Headers(head, section) => {
                    rx.framing += head as u64;
                    self.headers(at, &section, first)?;
                }
            }
        }
        if !fin {
            return Ok(None);
        }
        let s = self.streams.swap_remove(at);
        if !s.reader.at_frame_boundary() {
            return Err(Error::Incomplete);
        }
        if s.status == 0 {
            return Err(Error::NoStatus);
        }
        self.status = Some(Answer::status(s.status));
        Ok(Some(if s.status >= 400 { Outcome::OpFailed(Failure::status(s.status)) } else { Outcome::Op }))
    }

    /// A whole field section on the stream at `at`: the response's (its `:status`), an
    /// informational one (1xx, another follows), or its trailers.
    fn headers(&mut self, at: usize, section: &[u8], first: bool) -> Result<(), Error> {
        let status = self.known.read(section, |section| {
            let mut status = None;
            qpack::decode(section, MAX_FIELD_SECTION as usize, |name, value| {
                if name == b":status" {
                    status = Some(crate::proto::h2::client::status_code(value).unwrap_or(0));
                }
            })?;
            Ok::<_, Error>(status)
        })?;
        let s = &mut self.streams[at];
        let rx = &mut self.layers.of(first).rx;
        if s.trailers {
            return Err(Error::AfterTrailers);
        }
        if s.status != 0 {
            s.trailers = true;
            rx.trailers += section.len() as u64;
            return Ok(());
        }
        rx.headers += section.len() as u64;
        match status {
            Some(100..=199) => Ok(()), // informational: the final response follows
            Some(code @ 200..=599) => {
                s.status = code;
                Ok(())
            }
            _ => Err(Error::NoStatus),
        }
    }

    /// The server reset request stream `stream` (RESET_STREAM with `code`): its operation
    /// fails, named; `None` if this side no longer waited for it.
    pub fn reset(&mut self, stream: u64, code: u64) -> Option<Outcome> {
        let at = self.streams.iter().position(|s| s.id == stream)?;
        self.streams.swap_remove(at);
        self.status = None;
        Some(Outcome::OpFailed(Failure::protocol("RESET_STREAM", frame::code_name(code))))
    }

    /// `data` arrived on the server's unidirectional stream `stream` (`fin`: it ended).
    pub fn uni_data(&mut self, stream: u64, data: &[u8], fin: bool) -> Result<(), Error> {
        Ok(self.peer.data(stream, data, fin)?)
    }

    /// This side gave up on request `stream` (its timeout): forgotten; whether it was in flight.
    pub fn forget(&mut self, stream: u64) -> bool {
        let at = self.streams.iter().position(|s| s.id == stream);
        at.map(|at| self.streams.swap_remove(at)).is_some()
    }

    /// The server reset its unidirectional stream `stream`: an error if it was its control
    /// stream (critical); forgotten otherwise.
    pub fn uni_reset(&mut self, stream: u64) -> Result<(), Error> {
        Ok(self.peer.reset(stream)?)
    }

    /// The last request stream a GOAWAY said the server takes, if it sent one.
    pub fn goaway(&self) -> Option<u64> {
        self.peer.goaway()
    }

    /// The requests in flight on the streams above a GOAWAY's last id: never answered.
    pub fn refused(&self) -> impl Iterator<Item = u64> + '_ {
        let last = self.peer.goaway().unwrap_or(u64::MAX);
        self.streams.iter().map(|s| s.id).filter(move |&id| id >= last)
    }

    /// The last whole answer's status.
    pub fn answer(&self) -> Option<Answer> {
        self.status
    }

    /// The server stopped request `stream` before all its bytes went (STOP_SENDING, or an
    /// answer before the whole body), `n` of them still held by this side: those are taken
    /// off its layers (from the body's end backwards); what the transport had taken may not
    /// have gone either, so the layers say how many requests this befell.
    pub fn unsent(&mut self, stream: u64, n: u64) {
        self.layers.stopped += 1;
        let tx = &mut self.layers.of(stream == 0).tx;
        let mut left = n;
        for layer in [&mut tx.payload, &mut tx.framing, &mut tx.headers] {
            let take = left.min(*layer);
            *layer -= take;
            left -= take;
        }
    }

    /// The request streams' bytes by layer.
    pub fn layers(&self) -> &Layers {
        &self.layers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: &str, body: &[u8]) -> RequestSpec {
        RequestSpec::plain(method, "https", "example.com", body.to_vec())
    }

    /// A response as a server writes it: HEADERS of `:status` (static index 25 for 200: one
    /// octet 0xd9 after the 2-octet prefix) and DATA.
    fn response(status: &[u8], body: &[u8]) -> Vec<u8> {
        let mut section = Vec::new();
        qpack::encode([(&b":status"[..], status)], false, &mut section);
        let mut out = Vec::new();
        frame::write_frame(&mut out, frame::HEADERS, &section);
        if !body.is_empty() {
            frame::write_frame(&mut out, frame::DATA, body);
        }
        out
    }

    /// By hand (RFC 9114, RFC 9204 with the static table): a POST of 400 octets to
    /// https://example.com/ is a HEADERS frame (01, a length) of the section prefix 00 00,
    /// `:method POST` static 20 (0xd4), `:scheme https` 23 (0xd7), `:authority` a literal of
    /// static name 0 (0x50, 0x88 and 8 Huffman octets), `:path /` 1 (0xc1), `content-length:
    /// 400` a literal of static name 4 (0x54, 0x82 and "400" in 16 bits of Huffman code: '4' is
    /// 011010 and '0' 00000, so 0x68 0x00): 19 octets;
    /// then DATA (00, 0x41 0x90: 400 as a 2-octet varint) and the body.
    #[test]
    fn a_request_by_hand() {
        let mut c = H3Client::new(&spec("POST", &[b'b'; 400]), true);
        let out = c.request(0, 0);
        let section = &out[2..2 + 19];
        assert_eq!(out[..2], [0x01, 19]);
        assert_eq!(section[..4], [0x00, 0x00, 0xd4, 0xd7]);
        assert_eq!(section[4..6], [0x50, 0x88]);
        assert_eq!(section[14..19], [0xc1, 0x54, 0x82, 0x68, 0x00]);
        assert_eq!(out[21..24], [0x00, 0x41, 0x90]);
        assert_eq!(out.len(), 2 + 19 + 3 + 400);
        let l = c.layers();
        assert_eq!(
            (l.first.ops, l.first.tx.headers, l.first.tx.framing, l.first.tx.payload),
            (1, 19, 5, 400)
        );
    }

    /// A response whole or a byte at a time is the same answer with the same layers; a status
    /// of 400 or more fails the operation as `status`; a stream ending inside a frame, or with
    /// no HEADERS, is an error.
    #[test]
    fn responses_in_any_pieces() {
        let bytes = [response(b"200", b"Hello World"), {
            let mut t = Vec::new();
            qpack::encode([(&b"x-t"[..], &b"1"[..])], false, &mut t);
            let mut f = Vec::new();
            frame::write_frame(&mut f, frame::HEADERS, &t);
            f
        }]
        .concat();
        let mut whole = H3Client::new(&spec("GET", b""), false);
        whole.request(0, 0);
        assert_eq!(whole.request_data(0, &bytes, true), Ok(Some(Outcome::Op)));
        let mut split = H3Client::new(&spec("GET", b""), false);
        split.request(0, 0);
        for (i, b) in bytes.iter().enumerate() {
            let last = i + 1 == bytes.len();
            let got = split.request_data(0, &[*b], last).unwrap();
            assert_eq!(got, last.then_some(Outcome::Op), "at {i}");
        }
        assert_eq!(whole.layers(), split.layers());
        let rx = whole.layers().first.rx;
        // HEADERS 01 03 (00 00 d9), DATA 00 0b + 11, trailers 01 08 (00 00 23 x-t 01 1).
        assert_eq!((rx.headers, rx.trailers, rx.framing, rx.payload), (3, 8, 6, 11));
        assert_eq!(whole.answer(), Some(Answer::status(200)));
        let mut c = H3Client::new(&spec("GET", b""), false);
        for stream in [0, 4, 8, 12] {
            c.request(stream, 0);
        }
        let failed = c.request_data(4, &response(b"503", b""), true);
        assert_eq!(failed, Ok(Some(Outcome::OpFailed(Failure::status(503)))));
        assert_eq!(c.request_data(0, &response(b"200", b"abc")[..6], true), Err(Error::Incomplete));
        assert_eq!(c.request_data(8, &[], true), Err(Error::NoStatus));
        let mut data_first = Vec::new();
        frame::write_frame(&mut data_first, frame::DATA, b"x");
        assert_eq!(c.request_data(12, &data_first, false), Err(Error::DataBeforeHeaders));
        assert_eq!(
            c.reset(12, frame::H3_REQUEST_REJECTED),
            Some(Outcome::OpFailed(Failure::protocol("RESET_STREAM", "H3_REQUEST_REJECTED")))
        );
    }

    /// The server's control stream: its type (00) and SETTINGS first, then GOAWAY; QPACK's
    /// streams are read and dropped; a second control stream, a push stream, a frame before
    /// SETTINGS, a GOAWAY that raises its id, and the control stream ending are errors
    /// (`stream::PeerStreams`, the server's too).
    #[test]
    fn the_servers_streams() {
        let mut control = vec![0x00];
        frame::write_settings(&mut control, &[(frame::QPACK_MAX_TABLE_CAPACITY, 0)]);
        frame::write_frame(&mut control, frame::GOAWAY, &[8]);
        let mut c = H3Client::new(&spec("GET", b""), false);
        for stream in [0, 4, 8, 12] {
            c.request(stream, 0);
        }
        for b in &control {
            c.uni_data(3, &[*b], false).unwrap();
        }
        assert!(c.accepts(4) && !c.accepts(8));
        assert_eq!(c.refused().collect::<Vec<_>>(), [8, 12]);
        c.uni_data(7, &[0x02, 0x3f, 0xe1, 0x1f], false).unwrap(); // an encoder stream: dropped
        assert_eq!(c.uni_data(11, &[0x00], false), Err(stream::UniError::SecondControl.into()));
        assert_eq!(c.uni_data(15, &[0x01], false), Err(stream::UniError::Push.into()));
        let mut raised = Vec::new();
        frame::write_frame(&mut raised, frame::GOAWAY, &[12]);
        assert_eq!(c.clone().uni_data(3, &raised, false), Err(stream::UniError::GoAwayRaised(8, 12).into()));
        assert_eq!(c.uni_data(3, &[], true), Err(stream::UniError::CriticalClosed("control stream").into()));
        let mut early = vec![0x00];
        frame::write_frame(&mut early, frame::GOAWAY, &[0]);
        let mut c = H3Client::new(&spec("GET", b""), false);
        assert_eq!(c.uni_data(3, &early, false), Err(stream::UniError::MissingSettings("GOAWAY").into()));
    }

    /// This side's control stream, by hand: type 00, SETTINGS (04) of 01 00, 07 00 and
    /// 06 = 65,536 (a four-octet varint 80 01 00 00).
    #[test]
    fn the_control_stream_by_hand() {
        let mut out = Vec::new();
        H3Client::new(&spec("GET", b""), false).control_stream(&mut out);
        assert_eq!(out, [0x00, 0x04, 0x09, 0x01, 0x00, 0x07, 0x00, 0x06, 0x80, 0x01, 0x00, 0x00]);
    }
}
