//! The built-in HTTP/3 server's protocol half, sans-IO per QUIC stream (for `serve h3`, whose
//! transport is `engine::quic::server`): it answers as `serve http` and `serve h2` do — `Hello World`
//! for GET, its headers alone for HEAD, `OK` for any other method — once a request stream has
//! ended after a whole request; the caller writes the answer on the stream and finishes it.
//!
//! Bounds: a field section of at most [`MAX_FIELD_SECTION`] octets (past it, at its frame's
//! head: `H3_EXCESSIVE_LOAD`); no request body is kept (DATA is counted as it passes); what one
//! stream holds is at most a field section and a frame head. How many streams a client may
//! open at once is the QUIC transport's limit (its `max_concurrent_bidi_streams`).

use super::stream::{self, Piece};
use super::{frame, qpack};

/// The largest field section accepted (SETTINGS_MAX_FIELD_SECTION_SIZE), as `serve h2`'s.
pub const MAX_FIELD_SECTION: u64 = 16 << 10;

const HELLO: &[u8] = b"Hello World";
const OK: &[u8] = b"OK";

/// What a request is, from its field section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    Head,
    Other,
}

/// A request stream being read.
#[derive(Debug, Clone)]
struct Request {
    id: u64,
    reader: stream::Reader,
    kind: Option<Kind>,
    trailers: bool,
}

/// The server: one value per QUIC connection.
#[derive(Debug, Clone, Default)]
pub struct H3Server {
    requests: Vec<Request>,
    peer: stream::PeerStreams,
    /// The last field section decoded, and its method: without a dynamic table the same
    /// octets mean the same request, and a client mostly sends one request again and again.
    known: qpack::LastSection<Option<Kind>>,
    /// Requests answered.
    pub answered: u64,
}

/// How a request stream broke RFC 9114: the error code its stream (or the connection) is
/// closed with.
pub type Code = u64;

impl H3Server {
    /// This side's control stream: its type, then its SETTINGS (no dynamic table, no blocked
    /// streams, the field section size it accepts).
    pub fn control_stream(out: &mut Vec<u8>) {
        frame::write_control_stream(out, MAX_FIELD_SECTION);
    }

    /// `data` arrived on request stream `stream` (`fin`: the client finished it). `Ok(true)`:
    /// the request was whole; its answer is appended to `out`, to write and finish.
    pub fn request_data(
        &mut self,
        stream: u64,
        mut data: &[u8],
        fin: bool,
        out: &mut Vec<u8>,
    ) -> Result<bool, Code> {
        let at = match self.requests.iter().position(|r| r.id == stream) {
            Some(at) => at,
            None => {
                self.requests.push(Request {
                    id: stream,
                    reader: stream::Reader::default(),
                    kind: None,
                    trailers: false,
                });
                self.requests.len() - 1
            }
        };
        let result = self.read(at, &mut data);
        if result.is_err() || fin {
            let r = self.requests.swap_remove(at);
            result?;
            if !r.reader.at_frame_boundary() {
                return Err(frame::H3_REQUEST_INCOMPLETE);
            }
            let kind = r.kind.ok_or(frame::H3_REQUEST_INCOMPLETE)?;
            self.answer(kind, out);
            return Ok(true);
        }
        Ok(false)
    }

    fn read(&mut self, at: usize, data: &mut &[u8]) -> Result<(), Code> {
        let r = &mut self.requests[at];
        let known = &mut self.known;
        while let Some(piece) = r.reader.next(data, MAX_FIELD_SECTION).map_err(|e| match e {
            stream::Broken::Frame(e) => e.code(),
            stream::Broken::Unexpected(_) => frame::H3_FRAME_UNEXPECTED,
        })? {
            match piece {
                Piece::Head(_) | Piece::Skipped(_) => {}
                Piece::Data(_) if r.kind.is_none() || r.trailers => return Err(frame::H3_FRAME_UNEXPECTED),
                Piece::Data(_) => {}
                Piece::Headers(..) if r.trailers => return Err(frame::H3_FRAME_UNEXPECTED),
                Piece::Headers(_, section) => {
                    let method = known.read(&section, |section| {
                        let mut method = None;
                        qpack::decode(section, MAX_FIELD_SECTION as usize, |name, value| {
                            if name == b":method" {
                                method = Some(match value {
                                    b"GET" => Kind::Get,
                                    b"HEAD" => Kind::Head,
                                    _ => Kind::Other,
                                });
                            }
                        })
                        .map_err(|_| frame::QPACK_DECOMPRESSION_FAILED)?;
                        Ok::<_, Code>(method)
                    })?;
                    if r.kind.is_some() {
                        r.trailers = true;
                    } else {
                        r.kind = Some(method.ok_or(frame::H3_MESSAGE_ERROR)?);
                    }
                }
            }
        }
        Ok(())
    }

    /// The answer to a request of `kind`: HEADERS (`:status 200` and `content-length`) and,
    /// but for HEAD, DATA.
    fn answer(&mut self, kind: Kind, out: &mut Vec<u8>) {
        // Encoded once (QPACK without a dynamic table: the same octets every time).
        static ANSWERS: std::sync::OnceLock<[Vec<u8>; 3]> = std::sync::OnceLock::new();
        let answers = ANSWERS.get_or_init(|| [Kind::Get, Kind::Head, Kind::Other].map(encode_answer));
        out.extend_from_slice(&answers[kind as usize]);
        self.answered += 1;
    }

    /// The client reset request stream `stream`: forgotten.
    pub fn reset(&mut self, stream: u64) {
        if let Some(at) = self.requests.iter().position(|r| r.id == stream) {
            self.requests.swap_remove(at);
        }
    }

    /// `data` arrived on the client's unidirectional stream `stream` (`fin`: it ended; its
    /// control or QPACK stream ending is an error).
    pub fn uni_data(&mut self, stream: u64, data: &[u8], fin: bool) -> Result<(), stream::UniError> {
        self.peer.data(stream, data, fin)
    }

    /// The client reset its unidirectional stream `stream`: an error if it was a critical one.
    pub fn uni_reset(&mut self, stream: u64) -> Result<(), stream::UniError> {
        self.peer.reset(stream)
    }

    /// Octets of field sections not yet whole, over every request stream (the caller bounds
    /// them per connection).
    pub fn unfinished_headers(&self) -> usize {
        self.requests.iter().map(|r| r.reader.held()).sum()
    }

    /// Whether request stream `stream` is open and its headers are not whole yet.
    pub fn awaits_headers(&self, stream: u64) -> bool {
        self.requests.iter().any(|r| r.id == stream && r.kind.is_none())
    }
}

/// The answer to a request of `kind`, encoded.
fn encode_answer(kind: Kind) -> Vec<u8> {
    let body = if kind == Kind::Other { OK } else { HELLO };
    let length = body.len().to_string();
    let mut section = Vec::with_capacity(16);
    qpack::encode(
        [(&b":status"[..], &b"200"[..]), (b"content-length", length.as_bytes())],
        true,
        &mut section,
    );
    let mut out = Vec::new();
    frame::write_frame(&mut out, frame::HEADERS, &section);
    if kind != Kind::Head {
        frame::write_frame(&mut out, frame::DATA, body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Outcome;
    use crate::proto::h2::client::RequestSpec;
    use crate::proto::h3::client::H3Client;

    fn spec(method: &str, body: &[u8]) -> RequestSpec {
        RequestSpec::plain(method, "https", "127.0.0.1:8443", body.to_vec())
    }

    /// The client's requests, whole or an octet at a time, answered as `serve http` answers;
    /// the client reads the answers back: `:status 200` (static 25, 0xd9) and `content-length`
    /// (a literal of static name 4: 0x54, then 11 or 2 coded), then the body.
    #[test]
    fn requests_answered_as_serve_http_answers() {
        for (method, body, want) in
            [("GET", &b""[..], HELLO), ("POST", &[b'p'; 400][..], OK), ("HEAD", &b""[..], &b""[..])]
        {
            let mut client = H3Client::new(&spec(method, body), true);
            let request = client.request(0, 0);
            for octets in [request.len(), 1] {
                let mut server = H3Server::default();
                let mut answer = Vec::new();
                let pieces: Vec<&[u8]> = request.chunks(octets).collect();
                for (i, piece) in pieces.iter().enumerate() {
                    let last = i + 1 == pieces.len();
                    assert_eq!(server.request_data(0, piece, last, &mut answer), Ok(last), "{method} at {i}");
                }
                let mut c = H3Client::new(&spec(method, body), true);
                c.request(0, 0);
                assert_eq!(c.request_data(0, &answer, true), Ok(Some(Outcome::Op)), "{method}");
                assert_eq!(c.layers().first.rx.payload as usize, want.len(), "{method}");
                assert_eq!(answer[2..5], [0x00, 0x00, 0xd9]);
            }
        }
    }

    /// A stream ending inside a frame or before its HEADERS, DATA first, a HEADERS over the
    /// limit, a field section referring to a dynamic table, no `:method`: each its code.
    #[test]
    fn broken_requests_and_their_codes() {
        let mut out = Vec::new();
        let mut s = H3Server::default();
        assert_eq!(s.request_data(0, &[0x01, 0x03, 0x00], true, &mut out), Err(frame::H3_REQUEST_INCOMPLETE));
        assert_eq!(s.request_data(4, &[], true, &mut out), Err(frame::H3_REQUEST_INCOMPLETE));
        assert_eq!(s.request_data(8, &[0x00, 0x01, b'x'], false, &mut out), Err(frame::H3_FRAME_UNEXPECTED));
        assert_eq!(
            s.request_data(12, &[0x01, 0x80, 0x01, 0x00, 0x00], false, &mut out),
            Err(frame::H3_EXCESSIVE_LOAD)
        );
        assert_eq!(
            s.request_data(16, &[0x01, 0x02, 0x01, 0x00], true, &mut out),
            Err(frame::QPACK_DECOMPRESSION_FAILED)
        );
        assert_eq!(
            s.request_data(20, &[0x01, 0x03, 0x00, 0x00, 0xd9], true, &mut out),
            Err(frame::H3_MESSAGE_ERROR)
        );
        assert!(out.is_empty() && s.requests.is_empty(), "nothing answered, nothing held");
    }
}
