//! The HTTP/1.1 client: a request encoded once and copied for every operation, and the
//! response decoder (Content-Length, chunked, or close-delimited bodies; informational answers
//! are control messages; a status of 400 or more fails the operation).

use super::Error;
use super::head::{self, ChunkScan};
use super::{Framing, MAX_RESPONSE_BODY, MAX_RESPONSE_HEAD, RequestSpec, encode_request};
use crate::outcome::Answer;
use crate::proto::{ClientCodec, Decoded, Failure, Outcome};
use std::collections::VecDeque;
use std::sync::Arc;

/// A response head already parsed while its body is still arriving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    len: usize,
    status: u16,
    framing: Framing,
}

/// The client side: one value per connection, cloned from a prototype holding the request.
#[derive(Debug, Clone)]
pub struct Http1Client {
    /// The request of each entry (`--requests`; one without), encoded.
    requests: Arc<Vec<Encoded>>,
    /// With several entries, the entry of each request in flight, oldest first: a response's
    /// framing depends on its request's method.
    in_flight: VecDeque<usize>,
    head: Option<Head>,
    closing: bool,
    /// The previous response's head, byte for byte, and what parsing it gave. A server
    /// answering the same request sends the same head (but for a `Date` that changes once a
    /// second): a head that starts the input byte for byte is the same head, parsed the same,
    /// and a memcmp replaces the parse.
    last_head: Vec<u8>,
    last: Option<(Head, bool, bool)>,
    /// The status of the last whole response.
    status: u16,
}

/// One request, encoded.
#[derive(Debug, Clone)]
struct Encoded {
    bytes: Box<[u8]>,
    /// Responses to HEAD carry no body whatever their headers say.
    head_method: bool,
}

/// Heads longer than this are parsed every time rather than remembered.
const MAX_CACHED_HEAD: usize = 1024;

impl Http1Client {
    pub fn new(spec: &RequestSpec) -> Self {
        let request = Encoded {
            bytes: encode_request(spec).into(),
            head_method: spec.method.eq_ignore_ascii_case("HEAD"),
        };
        Http1Client {
            requests: Arc::new(vec![request]),
            in_flight: VecDeque::new(),
            head: None,
            closing: false,
            last_head: Vec::new(),
            last: None,
            status: 0,
        }
    }

    /// The head at the start of `input`, from the cache when it is byte-identical.
    /// Whether the oldest request in flight is a HEAD.
    fn head_method(&self) -> bool {
        match self.requests.len() {
            1 => self.requests[0].head_method,
            _ => self.in_flight.front().is_some_and(|&e| self.requests[e].head_method),
        }
    }

    fn head_of(&mut self, input: &[u8]) -> Result<Option<Head>, Error> {
        if let Some((head, closing, head_method)) = self.last
            && head_method == self.head_method()
            && input.starts_with(&self.last_head)
        {
            self.closing = closing;
            return Ok(Some(head));
        }
        let head = self.parse_head(input)?;
        if let Some(h) = head
            && h.len <= MAX_CACHED_HEAD
        {
            self.last_head.clear();
            self.last_head.extend_from_slice(&input[..h.len]);
            self.last = Some((h, self.closing, self.head_method()));
        }
        Ok(head)
    }

    /// The encoded request (the first entry's): the exact bytes of one operation.
    pub fn request(&self) -> &[u8] {
        &self.requests[0].bytes
    }

    fn parse_head(&mut self, input: &[u8]) -> Result<Option<Head>, Error> {
        let head_method = self.head_method();
        let parsed = head::response_head(input, MAX_RESPONSE_HEAD, |h| {
            let no_body = head_method || h.status == 204 || h.status == 304 || h.status < 200;
            let (framing, close) = head::body_framing(&h.fields, 0, h.minor_version, true)?;
            Ok((h.status, if no_body { Framing::Length(0) } else { framing }, close))
        })?;
        let Some(((status, framing, close), len)) = parsed else { return Ok(None) };
        self.closing = close;
        let framing = match framing {
            Framing::Length(n) if n > MAX_RESPONSE_BODY => return Err(Error::BodyTooLarge),
            Framing::Chunked { .. } => Framing::Chunked { resume: len },
            other => other,
        };
        Ok(Some(Head { len, status, framing }))
    }
}

impl ClientCodec for Http1Client {
    type Error = Error;

    fn handshake(&mut self, _out: &mut Vec<u8>) {}

    fn decode_handshake(&mut self, _input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control })
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        if self.requests.len() > 1 {
            self.in_flight.push_back(entry);
        }
        out.extend_from_slice(&self.requests[entry].bytes);
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.requests).extend(other.requests.iter().cloned());
    }

    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if input.is_empty() && self.head.is_none() {
            // The usual call after the last whole response of a read: nothing to parse.
            return Ok(Decoded::Partial);
        }
        let head = match self.head {
            Some(head) => head,
            None => match self.head_of(input)? {
                Some(head) => head,
                None => return Ok(Decoded::Partial),
            },
        };
        let end = match head.framing {
            Framing::Length(n) => (input.len() >= head.len + n).then_some(head.len + n),
            Framing::Chunked { resume } => {
                match head::scan_chunked(input, head.len, resume, MAX_RESPONSE_BODY)? {
                    ChunkScan::End(end) => Some(end),
                    ChunkScan::Need(resume) => {
                        self.head = Some(Head { framing: Framing::Chunked { resume }, ..head });
                        return Ok(Decoded::Partial);
                    }
                }
            }
            Framing::UntilEof => {
                if input.len() - head.len > MAX_RESPONSE_BODY {
                    return Err(Error::BodyTooLarge);
                }
                None
            }
        };
        match end {
            None => {
                self.head = Some(head);
                Ok(Decoded::Partial)
            }
            Some(consumed) => {
                self.head = None;
                self.status = head.status;
                if head.status >= 200 {
                    self.in_flight.pop_front();
                }
                Ok(Decoded::Done { consumed, outcome: outcome_of(head.status) })
            }
        }
    }

    fn decode_eof(&mut self, input: &[u8]) -> Result<Decoded, Error> {
        if input.is_empty() {
            return Ok(Decoded::Partial);
        }
        let head = match self.head {
            Some(head) => head,
            None => self.parse_head(input)?.ok_or(Error::TruncatedResponse)?,
        };
        match head.framing {
            Framing::UntilEof => {
                self.head = None;
                self.closing = true;
                self.status = head.status;
                Ok(Decoded::Done { consumed: input.len(), outcome: outcome_of(head.status) })
            }
            _ => Err(Error::TruncatedResponse),
        }
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }

    fn answer(&self) -> Option<Answer> {
        Some(Answer::status(self.status))
    }
}

fn outcome_of(status: u16) -> Outcome {
    match status {
        100..=199 => Outcome::Control,
        400.. => Outcome::OpFailed(Failure::status(status)),
        _ => Outcome::Op,
    }
}

#[cfg(test)]
mod tests {
    use super::super::head::MAX_TRAILERS;
    use super::*;

    fn spec(method: &str, body: &[u8]) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            host: "127.0.0.1:8080".into(),
            target: "/a?b=c".into(),
            headers: vec![],
            body: body.to_vec(),
        }
    }

    #[test]
    fn minimal_get_is_exact() {
        let req = encode_request(&spec("GET", b""));
        assert_eq!(req, b"GET /a?b=c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    #[test]
    fn body_adds_content_length_after_host() {
        let req = encode_request(&spec("POST", b"hello"));
        assert_eq!(req, b"POST /a?b=c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 5\r\n\r\nhello");
    }

    #[test]
    fn user_host_replaces_default_and_headers_follow_in_order() {
        let mut s = spec("GET", b"");
        s.headers = vec![("X-A".into(), "1".into()), ("host".into(), "example".into())];
        let req = encode_request(&s);
        assert_eq!(req, b"GET /a?b=c HTTP/1.1\r\nHost: example\r\nX-A: 1\r\n\r\n");
    }

    fn decode_all(client: &mut Http1Client, input: &[u8]) -> Result<Decoded, Error> {
        client.decode_op(input, &mut Vec::new())
    }

    const CL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &[u8] =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n";

    #[test]
    fn content_length_and_chunked_responses() {
        let mut c = Http1Client::new(&spec("GET", b""));
        assert_eq!(decode_all(&mut c, CL), Ok(Decoded::Done { consumed: CL.len(), outcome: Outcome::Op }));
        assert_eq!(
            decode_all(&mut c, CHUNKED),
            Ok(Decoded::Done { consumed: CHUNKED.len(), outcome: Outcome::Op })
        );
    }

    #[test]
    fn every_prefix_is_partial() {
        for whole in [CL, CHUNKED] {
            let mut c = Http1Client::new(&spec("GET", b""));
            for cut in 0..whole.len() {
                assert_eq!(decode_all(&mut c, &whole[..cut]), Ok(Decoded::Partial), "cut {cut}");
            }
            assert!(matches!(decode_all(&mut c, whole), Ok(Decoded::Done { .. })));
        }
    }

    /// Pipelined responses split at every byte: the decoder sees growing prefixes, as the engine
    /// feeds it, and must find each response's exact end.
    #[test]
    fn pipelined_responses_split_at_every_byte() {
        let stream: Vec<u8> =
            [CL, CHUNKED, CL, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"].concat();
        for split in 0..=stream.len() {
            let mut c = Http1Client::new(&spec("GET", b""));
            let mut buf = Vec::new();
            let mut outcomes = Vec::new();
            for piece in [&stream[..split], &stream[split..]] {
                buf.extend_from_slice(piece);
                while let Decoded::Done { consumed, outcome } = decode_all(&mut c, &buf).unwrap() {
                    outcomes.push(outcome);
                    buf.drain(..consumed);
                }
            }
            assert!(buf.is_empty(), "split {split}");
            assert_eq!(
                outcomes,
                [Outcome::Op, Outcome::Op, Outcome::Op, Outcome::OpFailed(Failure::status(404))]
            );
        }
    }

    #[test]
    fn a_remembered_head_gives_the_same_answers() {
        let mut c = Http1Client::new(&spec("GET", b""));
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi";
        for _ in 0..3 {
            assert_eq!(
                decode_all(&mut c, CL),
                Ok(Decoded::Done { consumed: CL.len(), outcome: Outcome::Op })
            );
            assert!(!c.peer_closing());
            assert_eq!(
                decode_all(&mut c, close),
                Ok(Decoded::Done { consumed: close.len(), outcome: Outcome::Op })
            );
            assert!(c.peer_closing());
        }
        // Same head, body still arriving: partial, then whole.
        assert_eq!(decode_all(&mut c, &close[..close.len() - 1]), Ok(Decoded::Partial));
        assert!(matches!(decode_all(&mut c, close), Ok(Decoded::Done { .. })));
    }

    #[test]
    fn close_delimited_body_ends_at_eof() {
        let resp = b"HTTP/1.1 200 OK\r\n\r\nuntil the end";
        let mut c = Http1Client::new(&spec("GET", b""));
        assert_eq!(decode_all(&mut c, resp), Ok(Decoded::Partial));
        assert_eq!(c.decode_eof(resp), Ok(Decoded::Done { consumed: resp.len(), outcome: Outcome::Op }));
        assert!(c.peer_closing());
    }

    #[test]
    fn connection_close_and_http10_are_noticed() {
        let mut c = Http1Client::new(&spec("GET", b""));
        let r = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(decode_all(&mut c, r), Ok(Decoded::Done { .. })));
        assert!(c.peer_closing());
        let r = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(decode_all(&mut c, r), Ok(Decoded::Done { .. })));
        assert!(c.peer_closing());
        assert!(matches!(decode_all(&mut c, CL), Ok(Decoded::Done { .. })));
        assert!(!c.peer_closing());
    }

    #[test]
    fn head_and_204_have_no_body() {
        let mut c = Http1Client::new(&spec("HEAD", b""));
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
        assert_eq!(decode_all(&mut c, r), Ok(Decoded::Done { consumed: r.len(), outcome: Outcome::Op }));
        let mut c = Http1Client::new(&spec("GET", b""));
        let r = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(decode_all(&mut c, r), Ok(Decoded::Done { consumed: r.len(), outcome: Outcome::Op }));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let mut c = Http1Client::new(&spec("GET", b""));
        assert_eq!(decode_all(&mut c, b"SSH-2.0-OpenSSH\r\n\r\n"), Err(Error::BadResponseHead));
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(decode_all(&mut c, r), Err(Error::BadContentLength));
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(decode_all(&mut Http1Client::new(&spec("GET", b"")), r), Err(Error::BadChunk));
        let big = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &vec![b'a'; MAX_RESPONSE_HEAD]].concat();
        assert_eq!(decode_all(&mut c, &big), Err(Error::ResponseHeadTooLarge));
        assert_eq!(
            c.decode_eof(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"),
            Err(Error::TruncatedResponse)
        );
    }

    #[test]
    fn statuses_outside_100_to_599_are_protocol_errors() {
        for status in ["000", "099", "600", "999"] {
            let r = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            let mut c = Http1Client::new(&spec("GET", b""));
            assert_eq!(decode_all(&mut c, r.as_bytes()), Err(Error::BadStatus), "{status}");
        }
    }

    #[test]
    fn endless_trailers_end_as_a_bad_chunk() {
        let mut c = Http1Client::new(&spec("GET", b""));
        let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
        while r.len() < 2 * MAX_TRAILERS {
            r.extend_from_slice(b"X-Trailer: value\r\n");
        }
        assert_eq!(decode_all(&mut c, &r), Err(Error::BadChunk));
    }
}
