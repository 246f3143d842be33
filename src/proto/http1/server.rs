//! The built-in HTTP/1.1 server's codec, and the request reading every HTTP server here shares
//! (the hello-world server and nsqd's HTTP sink): keep-alive and pipelining, requests read
//! incrementally as they arrive, refusals answered with 400/413/431 and a close.

use super::Error;
use super::head::{self, ChunkScan, HeadError};
use super::{Framing, MAX_REQUEST_BODY, MAX_REQUEST_HEAD};
use crate::proto::{Ask, Awaiting, Served, ServerCodec};

/// The built-in server's answers, encoded once. `Hello World` is 11 bytes, as in the classic
/// hello-world benchmarks; a request with a body (POST and the like) is answered `OK`.
pub const RESPONSE_HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nHello World";
pub const RESPONSE_HELLO_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
pub const RESPONSE_OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
const RESPONSE_400: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const RESPONSE_413: &[u8] =
    b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const RESPONSE_431: &[u8] =
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// What a client over the server's connection limit reads before the close.
pub const RESPONSE_BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The built-in hello-world server: keep-alive, pipelining, 400/413/431 with a close. One
/// value per connection (it remembers how far the request now arriving has been read).
#[derive(Debug, Clone, Default)]
pub struct Http1Server {
    reader: RequestReader,
}

impl ServerCodec for Http1Server {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        serve_requests(input, out, HELLO_LIMITS, &mut self.reader, |request, out| {
            let response = match request {
                Err(Refusal::BadRequest) => RESPONSE_400,
                Err(Refusal::HeadTooLarge) => RESPONSE_431,
                Err(Refusal::BodyTooLarge) => RESPONSE_413,
                Ok(r) if r.method == "GET" => RESPONSE_HELLO,
                Ok(r) if r.method == "HEAD" => RESPONSE_HELLO_HEAD,
                Ok(_) => RESPONSE_OK,
            };
            match request.ok().and_then(Request::connection_header) {
                // The same answer with the `Connection` header before the blank line.
                Some(connection) => {
                    let head_end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 2;
                    out.extend_from_slice(&response[..head_end]);
                    out.extend_from_slice(connection.as_bytes());
                    out.extend_from_slice(&response[head_end..]);
                }
                None => out.extend_from_slice(response),
            }
        })
    }

    fn ask(&self, question: Ask<'_>) {
        if let Ask::Busy(out) = question {
            out.extend_from_slice(RESPONSE_BUSY);
        }
    }
}

/// Size limits a server applies to requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    pub max_head: usize,
    pub max_body: usize,
}

const HELLO_LIMITS: RequestLimits = RequestLimits { max_head: MAX_REQUEST_HEAD, max_body: MAX_REQUEST_BODY };

/// Why a request was refused; the server answers and closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    BadRequest,
    HeadTooLarge,
    BodyTooLarge,
}

/// One whole request, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    /// Path and query as sent.
    pub target: &'a str,
    /// The body as sent (still chunk-framed for a chunked request; see `chunked`).
    pub body: &'a [u8],
    pub chunked: bool,
    /// The client asked to close (or spoke HTTP/1.0 without keep-alive).
    pub close: bool,
    /// The minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub minor_version: u8,
}

impl Request<'_> {
    /// The `Connection` header the answer must carry: `close` when the connection closes
    /// after it, `keep-alive` to an HTTP/1.0 client that asked to keep it (RFC 9112 §9.3:
    /// without it, such a client waits for a close), none otherwise.
    pub fn connection_header(&self) -> Option<&'static str> {
        if self.close {
            Some("Connection: close\r\n")
        } else if self.minor_version == 0 {
            Some("Connection: keep-alive\r\n")
        } else {
            None
        }
    }
}

/// How far a server connection has read the request now arriving, so that each read looks at
/// the new bytes only: a head trickling in is searched from where the last search stopped, a
/// chunked body is walked from its last whole chunk (no quadratic re-parse).
#[derive(Debug, Clone, Default)]
pub struct RequestReader {
    /// Bytes of the pending head already searched for its end, and of them the empty lines
    /// known to lead it (each parse starts past them: a client sending thousands of empty
    /// lines before each request line cost the server a parse of all of them for each one,
    /// quadratic in the head limit, found by the fuzzer in CI).
    head_scanned: usize,
    head_blank: usize,
    /// The head is whole and its body is arriving.
    body: Option<PendingBody>,
    /// The last head parsed from the start of the pending bytes (empty lines the parser
    /// skipped included; not one found past a separate search for them), when at most
    /// `MAX_CACHED_HEAD` long: its bytes and what its parse found. A load generator sends the
    /// same head again and again, and bytes equal to these parse to the same request, so a
    /// head that begins the pending bytes as these did is compared, not parsed again (the
    /// client remembers answers' heads the same way, `Http1Client::head_of`). Kept for the
    /// connection's life: ~140 bytes here, the head's own (40-100 for a load generator's) and
    /// its request line's text.
    last: Option<PendingBody>,
    last_head: Vec<u8>,
    /// The remembered head's method and target, checked as text once when it was parsed
    /// (`last_line[..last_method]`, then the target): a request that matches the head is
    /// handed these, its bytes not checked as UTF-8 again (two calls that were ~90
    /// instructions of `serve http`'s ~1,100 a request).
    last_line: String,
    last_method: usize,
}

/// Request heads longer than this are parsed every time rather than remembered.
const MAX_CACHED_HEAD: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct PendingBody {
    head_len: usize,
    framing: Framing,
    /// Close after answering (asked, or HTTP/1.0 without keep-alive), and the minor version.
    close: bool,
    minor: u8,
    /// Where the method and the target lie in the pending bytes (kept as places, not
    /// borrowed: the bytes may grow, and move, before the body is whole; the head is parsed
    /// once).
    method: Span,
    target: Span,
}

/// Where a part of the head lies in the bytes it was parsed from: start and length (`None`:
/// not in them, the parser's default).
type Span = Option<(usize, usize)>;

/// Where `part` lies in `within`, if it is a slice of it.
fn span(within: &[u8], part: &str) -> Span {
    let at = (part.as_ptr() as usize).checked_sub(within.as_ptr() as usize)?;
    (at + part.len() <= within.len()).then_some((at, part.len()))
}

impl RequestReader {
    /// What the connection waits for, given the bytes still pending.
    pub fn awaiting(&self, pending: &[u8]) -> Awaiting {
        if self.body.is_some() {
            Awaiting::Body
        } else if pending.is_empty() {
            Awaiting::Request
        } else {
            Awaiting::Head
        }
    }
}

/// Answer every whole request at the start of `input` with `respond`, which appends one
/// response per call; a refusal closes the connection after its answer.
pub fn serve_requests(
    input: &[u8],
    out: &mut Vec<u8>,
    limits: RequestLimits,
    reader: &mut RequestReader,
    mut respond: impl FnMut(Result<&Request<'_>, Refusal>, &mut Vec<u8>),
) -> Served {
    let mut served = Served::default();
    while served.consumed < input.len() && !served.close {
        match parse_request(&input[served.consumed..], limits, reader) {
            Ok(None) => break,
            Ok(Some((request, consumed))) => {
                respond(Ok(&request), out);
                served.consumed += consumed;
                served.requests += 1;
                served.close = request.close;
            }
            Err(refusal) => {
                respond(Err(refusal), out);
                served.consumed = input.len();
                served.close = true;
                *reader = RequestReader::default();
            }
        }
    }
    served.awaiting = reader.awaiting(&input[served.consumed..]);
    served
}

/// Parse the request at the start of `input` (the same pending bytes, grown, on every call
/// until it is whole): `Ok(None)` if incomplete, else the request and the bytes it occupies.
/// Its method and target borrow from `input`, or from `reader` where the head is the one
/// remembered.
pub fn parse_request<'a>(
    input: &'a [u8],
    limits: RequestLimits,
    reader: &'a mut RequestReader,
) -> Result<Option<(Request<'a>, usize)>, Refusal> {
    let (pending, remembered) = match reader.body {
        Some(pending) => (pending, false),
        None => {
            let (pending, remembered) = match reader.last {
                // The head the last request had, byte for byte, under this call's limit.
                Some(last)
                    if reader.head_blank == 0
                        && last.head_len <= limits.max_head
                        && input.starts_with(&reader.last_head) =>
                {
                    (last, true)
                }
                _ => match read_head(input, limits, reader)? {
                    Some(pending) => (pending, false),
                    None => return Ok(None),
                },
            };
            reader.head_scanned = 0;
            reader.head_blank = 0;
            match pending.framing {
                Framing::Length(n) if n > limits.max_body => return Err(Refusal::BodyTooLarge),
                Framing::Chunked { .. } => (
                    PendingBody { framing: Framing::Chunked { resume: pending.head_len }, ..pending },
                    remembered,
                ),
                _ => (pending, remembered),
            }
        }
    };
    // Where the body ends; one not whole yet is waited for (`reader.body`).
    let end = match pending.framing {
        Framing::Length(n) if input.len() >= pending.head_len + n => pending.head_len + n,
        Framing::Length(_) => {
            reader.body = Some(pending);
            return Ok(None);
        }
        Framing::Chunked { resume } => {
            match head::scan_chunked(input, pending.head_len, resume, limits.max_body) {
                Ok(ChunkScan::End(end)) => end,
                Ok(ChunkScan::Need(resume)) => {
                    reader.body = Some(PendingBody { framing: Framing::Chunked { resume }, ..pending });
                    return Ok(None);
                }
                Err(Error::BodyTooLarge) => return Err(Refusal::BodyTooLarge),
                Err(_) => return Err(Refusal::BadRequest),
            }
        }
        Framing::UntilEof => return Err(Refusal::BadRequest),
    };
    reader.body = None;
    // Whole: its method and target are the remembered head's text, or borrowed from where
    // the head's parse found them (the parser's defaults where it had none).
    let (method, target) = if remembered {
        let reader: &'a RequestReader = reader;
        reader.last_line.split_at(reader.last_method)
    } else {
        line_text(input, pending.method, pending.target).ok_or(Refusal::BadRequest)?
    };
    let request = Request {
        method,
        target,
        body: &input[pending.head_len..end],
        chunked: matches!(pending.framing, Framing::Chunked { .. }),
        close: pending.close,
        minor_version: pending.minor,
    };
    Ok(Some((request, end)))
}

/// The method and target a head's parse found in `input` (the parser's defaults, `""` and
/// `/`, where it had none), as text; `None` if either is not UTF-8.
fn line_text(input: &[u8], method: Span, target: Span) -> Option<(&str, &str)> {
    let text = |span: Span, default: &'static str| match span {
        Some((at, len)) => std::str::from_utf8(&input[at..at + len]).ok(),
        None => Some(default),
    };
    Some((text(method, "")?, text(target, "/")?))
}

/// Find the end of the head at the start of `input` before parsing it, and parse it once:
/// `Ok(None)` while it is incomplete. A head with nothing before it is remembered (`last`).
fn read_head<'a>(
    input: &'a [u8],
    limits: RequestLimits,
    reader: &mut RequestReader,
) -> Result<Option<PendingBody>, Refusal> {
    loop {
        let Some(end) = head::find_head_end(input, reader.head_scanned) else {
            if input.len() > limits.max_head {
                return Err(Refusal::HeadTooLarge);
            }
            reader.head_scanned = input.len();
            return Ok(None);
        };
        // A head that ends past the limit is too large, whatever it holds: arriving in
        // pieces, it would have been refused as such before its end came (an 8 KiB
        // head with a malformed line was `400` whole and `431` in pieces).
        if end > limits.max_head {
            return Err(Refusal::HeadTooLarge);
        }
        let framing = |h: &head::RequestHead<'_, 'a>| {
            let line = (span(input, h.method), span(input, h.target));
            head::body_framing(&h.fields, 0, h.minor_version, false)
                .map(|(framing, close)| (framing, close, h.minor_version, line))
        };
        let blank = reader.head_blank;
        match head::request_head(&input[blank..end], limits.max_head, framing) {
            Ok(Some((Ok((framing, close, minor, (method, target))), head_len))) => {
                let pending =
                    PendingBody { head_len: blank + head_len, framing, close, minor, method, target };
                if blank == 0
                    && head_len <= MAX_CACHED_HEAD
                    && let Some((method, target)) = line_text(input, method, target)
                {
                    reader.last = Some(pending);
                    reader.last_head.clear();
                    reader.last_head.extend_from_slice(&input[..head_len]);
                    reader.last_line.clear();
                    reader.last_line.push_str(method);
                    reader.last_line.push_str(target);
                    reader.last_method = method.len();
                }
                return Ok(Some(pending));
            }
            Ok(Some((Err(_), _))) | Err(HeadError::Malformed) => return Err(Refusal::BadRequest),
            Err(HeadError::TooLarge) => return Err(Refusal::HeadTooLarge),
            // Empty lines before the request line (all of them, to `end`): keep looking,
            // from past them.
            Ok(None) => {
                reader.head_scanned = end;
                reader.head_blank = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Hooks as _;

    fn serve(input: &[u8]) -> (Served, Vec<u8>) {
        let mut out = Vec::new();
        (Http1Server::default().serve(input, &mut out), out)
    }

    #[test]
    fn server_answers_pipelined_get_and_post() {
        let input =
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET";
        let (served, out) = serve(input);
        assert_eq!(
            served,
            Served {
                consumed: input.len() - 3,
                requests: 2,
                messages: 0,
                close: false,
                awaiting: Awaiting::Head,
                start_tls: false,
            }
        );
        assert_eq!(out, [RESPONSE_HELLO, RESPONSE_OK].concat());
        assert_eq!(RESPONSE_HELLO.len(), 50);
    }

    #[test]
    fn a_remembered_head_hands_out_its_own_method_and_target() {
        // Each head twice: the second is the remembered one, answered with the text kept
        // from the first parse, which must be this head's and not the one before it.
        let mut reader = RequestReader::default();
        for head in
            [&b"GET /a HTTP/1.1\r\n\r\n"[..], b"POST /bb?q=\xc3\xa9 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"]
        {
            let text = std::str::from_utf8(head).unwrap();
            let (method, target) = text
                .split(' ')
                .take(2)
                .fold(("", ""), |(m, _), w| if m.is_empty() { (w, "") } else { (m, w) });
            for round in 0..2 {
                let (request, used) = parse_request(head, HELLO_LIMITS, &mut reader).unwrap().unwrap();
                assert_eq!(
                    (request.method, request.target, used),
                    (method, target, head.len()),
                    "round {round}"
                );
            }
            assert_eq!(reader.last_head, head);
        }
    }

    #[test]
    fn a_repeated_head_is_remembered_and_a_different_one_parsed() {
        // One server value across calls, as a connection keeps it: the second GET and the
        // POST's second copy are the remembered heads; a head that shares all but its last
        // line with them (`Connection: close`), one trickling in, and one after empty lines
        // are parsed for what they are.
        let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let post = b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n";
        let mut server = Http1Server::default();
        let mut out = Vec::new();
        let input = [&get[..], get, post, b"abc", post, b"xyz", b"\r\n", get].concat();
        let served = server.serve(&input, &mut out);
        assert_eq!((served.consumed, served.requests, served.close), (input.len(), 5, false));
        assert_eq!(out, [RESPONSE_HELLO, RESPONSE_HELLO, RESPONSE_OK, RESPONSE_OK, RESPONSE_HELLO].concat());
        // The remembered head is the last parsed: the GET with the empty line before it
        // (the parser skips it; the bytes remembered are those parsed).
        assert_eq!(server.reader.last_head, [&b"\r\n"[..], get].concat());
        let (half, rest) = get.split_at(10);
        out.clear();
        assert_eq!(server.serve(half, &mut out).requests, 0);
        assert_eq!(server.serve(&[half, rest].concat(), &mut out).requests, 1);
        assert_eq!(server.reader.last_head, get);
        let close = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let served = server.serve(&[&close[..], get].concat(), &mut out);
        assert_eq!((served.requests, served.close), (1, true));
        assert!(out.ends_with(b"Connection: close\r\n\r\nHello World"), "{}", String::from_utf8_lossy(&out));
        // A head remembered under one limit is not taken under a smaller one.
        let mut reader = server.reader.clone();
        let small = RequestLimits { max_head: 20, max_body: 100 };
        assert!(matches!(parse_request(close, small, &mut reader), Err(Refusal::HeadTooLarge)));
    }

    #[test]
    fn server_waits_for_whole_body_and_chunked_body() {
        let (served, out) = serve(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab");
        assert_eq!((served.requests, out.len()), (0, 0));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let (served, out) = serve(chunked);
        assert_eq!(served, Served { consumed: chunked.len(), requests: 1, ..Served::default() });
        assert_eq!(out, RESPONSE_OK);
    }

    #[test]
    fn server_refuses_bad_and_huge_requests_and_closes() {
        let (served, out) = serve(b"NOT HTTP\r\n\r\n");
        assert!(served.close);
        assert!(out.starts_with(b"HTTP/1.1 400 "));
        let huge = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &vec![b'a'; MAX_REQUEST_HEAD]].concat();
        let (served, out) = serve(&huge);
        assert!(served.close);
        assert!(out.starts_with(b"HTTP/1.1 431 "));
    }

    #[test]
    fn server_honours_connection_close() {
        let (served, out) = serve(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        assert_eq!(served.requests, 1);
        assert!(served.close);
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nHello World");
    }

    #[test]
    fn http10_keep_alive_is_answered_as_kept_and_plain_http10_is_closed() {
        let (served, out) = serve(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(!served.close);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nHello World"
        );
        let (served, out) = serve(b"GET / HTTP/1.0\r\n\r\n");
        assert!(served.close);
        assert!(out.windows(17).any(|w| w == b"Connection: close"));
    }

    /// The server reads a request growing byte by byte (as a trickling client sends it) and
    /// answers exactly as it answers the whole request at once.
    #[test]
    fn a_request_trickling_in_is_read_incrementally_and_answered_once() {
        let whole: &[u8] =
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let mut server = Http1Server::default();
        let mut out = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut requests = 0;
        let mut awaited = Vec::new();
        for &b in whole {
            pending.push(b);
            let served = server.serve(&pending, &mut out);
            pending.drain(..served.consumed);
            requests += served.requests;
            awaited.push(served.awaiting);
        }
        assert_eq!(requests, 2);
        assert_eq!(out, [RESPONSE_OK, RESPONSE_HELLO].concat());
        assert!(awaited.contains(&Awaiting::Head) && awaited.contains(&Awaiting::Body));
        assert_eq!(awaited.last(), Some(&Awaiting::Request));
    }

    /// A body that spans reads, each read's bytes in a new buffer (moved, as a growing one
    /// may be): the request's method and target are those of its head, read where its one
    /// parse found them, past the empty line that leads it.
    #[test]
    fn a_body_spanning_reads_keeps_its_heads_method_and_target() {
        let whole: &[u8] =
            b"\r\nPUT /a/b?c=d HTTP/1.1\r\nContent-Length: 4\r\n\r\nwxyzDELETE * HTTP/1.1\r\n\r\n";
        let mut reader = RequestReader::default();
        let mut seen = Vec::new();
        let mut consumed = 0;
        for cut in [30, 47, 49, whole.len()] {
            let pending = whole[consumed..cut].to_vec();
            let served = serve_requests(&pending, &mut Vec::new(), HELLO_LIMITS, &mut reader, |r, _| {
                let r = r.expect("a request");
                seen.push((r.method.to_string(), r.target.to_string(), r.body.to_vec()));
            });
            consumed += served.consumed;
        }
        assert_eq!(
            seen,
            [("PUT".into(), "/a/b?c=d".into(), b"wxyz".to_vec()), ("DELETE".into(), "*".into(), Vec::new())]
        );
    }

    /// Found by fuzzing with inputs past 8 KiB: a head just over the limit with a malformed
    /// line was answered `400` whole and `431` when it came in pieces.
    #[test]
    fn a_head_over_the_limit_gets_the_same_answer_whole_or_in_pieces() {
        let head =
            [&b"GET / HTTP/1.1\r\nX: "[..], &vec![b'a'; MAX_REQUEST_HEAD], b"\r\nbad line\r\n\r\n"].concat();
        let (whole, out) = serve(&head);
        assert!(whole.close);
        assert!(out.starts_with(b"HTTP/1.1 431 "), "{}", String::from_utf8_lossy(&out));
        let mut server = Http1Server::default();
        let mut out = Vec::new();
        let mut pending = Vec::new();
        for piece in head.chunks(1000) {
            pending.extend_from_slice(piece);
            let served = server.serve(&pending, &mut out);
            pending.drain(..served.consumed);
            if served.close {
                break;
            }
        }
        assert!(out.starts_with(b"HTTP/1.1 431 "), "{}", String::from_utf8_lossy(&out));
    }

    #[test]
    fn the_server_says_busy_with_a_503() {
        let mut out = Vec::new();
        Http1Server::default().busy(&mut out);
        assert!(out.starts_with(b"HTTP/1.1 503 "));
    }

    /// Found by fuzzing (`server_http1`): empty lines before a request line made the reader
    /// find the same candidate head end for ever.
    #[test]
    fn empty_lines_alone_wait_for_a_request_instead_of_spinning() {
        for input in [&b"\n\n"[..], b"\r\n\r\n", b"\n\n\n\nGET / HTTP/1.1\r\n\r\n"] {
            let (served, out) = serve(input);
            assert!(served.consumed <= input.len());
            assert_eq!(
                served.requests,
                u64::from(input.ends_with(b"\r\n\r\n") && input.len() > 4),
                "{input:?}"
            );
            assert_eq!(out.is_empty(), served.requests == 0);
        }
    }

    /// Found by fuzzing in CI (`server_nsq_http`, minutes on one input): each empty line before
    /// a request line made the reader parse all those before it again. The parse now starts
    /// past the empty lines already seen, and what it finds is the same.
    #[test]
    fn empty_lines_before_a_request_are_parsed_once() {
        let limits = HELLO_LIMITS;
        let mut input = b"\r\n".repeat(3000);
        let mut reader = RequestReader::default();
        assert!(matches!(parse_request(&input, limits, &mut reader), Ok(None)));
        assert_eq!(reader.head_blank, 6000, "every empty line is known as such, once");
        input.extend_from_slice(b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
        let (request, used) = parse_request(&input, limits, &mut reader).unwrap().unwrap();
        assert_eq!((request.target, used), ("/x", input.len()));
        assert_eq!(reader.head_blank, 0, "and forgotten for the next request");
        // The same whole, without the reader's memory.
        let mut fresh = RequestReader::default();
        let (again, used) = parse_request(&input, limits, &mut fresh).unwrap().unwrap();
        assert_eq!((again.target, used), ("/x", input.len()));
    }
}
