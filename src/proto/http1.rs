//! HTTP/1.1: the client's request encoder and response decoder, and the built-in server's codec.
//!
//! Requests are encoded by hand, once, at start-up and copied for every operation; they are
//! minimal unless the user adds headers: `GET /path HTTP/1.1\r\nHost: host:port\r\n\r\n`, with
//! `Content-Length: N` after `Host` when there is a body. Responses and requests are parsed with
//! `httparse`; bodies may be framed by `Content-Length`, by chunked transfer coding, or (responses
//! only) by the end of the connection.

use super::{Awaiting, ClientCodec, Decoded, Failure, Outcome, ProtoError, Served, ServerCodec};
use std::sync::Arc;

/// Most headers a response or request may carry; httparse needs a fixed-size array.
const MAX_HEADERS: usize = 64;
/// A response head larger than this is treated as a broken server rather than buffered forever.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Response bodies are held whole in the connection's read buffer before they are accounted,
/// so they are bounded; 64 MiB is far above what a request/response benchmark returns.
pub const MAX_RESPONSE_BODY: usize = 64 * 1024 * 1024;
/// The built-in server answers 431 to a request head larger than this (nginx's default too).
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;
/// The built-in server answers 413 to a request body larger than this.
pub const MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;
/// Trailer fields after a chunked body are read up to this size; more is a broken peer.
const MAX_TRAILERS: usize = 64 * 1024;

/// What the user asked to send; turned into bytes once by [`encode_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    pub method: String,
    /// The `Host` header's value, normally `host:port` as written in the URL.
    pub host: String,
    /// Path and query, starting with `/`.
    pub target: String,
    /// Extra headers in the order given; a `Host` here replaces the default one.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Encode one request exactly as it goes on the wire.
pub fn encode_request(spec: &RequestSpec) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + spec.target.len() + spec.body.len());
    out.extend_from_slice(spec.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(spec.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let user_host = spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host"));
    let host = user_host.map_or(spec.host.as_str(), |(_, v)| v.as_str());
    push_header(&mut out, "Host", host);
    let user_length = spec.headers.iter().any(|(n, _)| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    });
    if !spec.body.is_empty() && !user_length {
        push_header(&mut out, "Content-Length", &spec.body.len().to_string());
    }
    for (name, value) in spec.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("host")) {
        push_header(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&spec.body);
    out
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// How the body of the message being decoded ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Exactly this many bytes follow the head.
    Length(usize),
    /// Chunked transfer coding; `resume` is where the next chunk-size line starts.
    Chunked { resume: usize },
    /// The body runs to the end of the connection (a response with neither length nor chunking).
    UntilEof,
}

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
    request: Arc<[u8]>,
    /// Responses to HEAD carry no body whatever their headers say.
    head_method: bool,
    head: Option<Head>,
    closing: bool,
    /// The previous response's head, byte for byte, and what parsing it gave. A server
    /// answering the same request sends the same head (but for a `Date` that changes once a
    /// second): a head that starts the input byte for byte is the same head, parsed the same,
    /// and a memcmp replaces the parse.
    last_head: Vec<u8>,
    last: Option<(Head, bool)>,
}

/// Heads longer than this are parsed every time rather than remembered.
const MAX_CACHED_HEAD: usize = 1024;

impl Http1Client {
    pub fn new(spec: &RequestSpec) -> Self {
        Http1Client {
            request: encode_request(spec).into(),
            head_method: spec.method.eq_ignore_ascii_case("HEAD"),
            head: None,
            closing: false,
            last_head: Vec::new(),
            last: None,
        }
    }

    /// The head at the start of `input`, from the cache when it is byte-identical.
    fn head_of(&mut self, input: &[u8]) -> Result<Option<Head>, ProtoError> {
        if let Some((head, closing)) = self.last
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
            self.last = Some((h, self.closing));
        }
        Ok(head)
    }

    /// The encoded request: the exact bytes of one operation.
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    fn parse_head(&mut self, input: &[u8]) -> Result<Option<Head>, ProtoError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        // The limit holds however the head arrived: whole in one read or trickling in.
        let len = match response.parse(input) {
            Ok(httparse::Status::Complete(len)) if len > MAX_RESPONSE_HEAD => {
                return Err(ProtoError::ResponseHeadTooLarge);
            }
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if input.len() > MAX_RESPONSE_HEAD => {
                return Err(ProtoError::ResponseHeadTooLarge);
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(ProtoError::ResponseHeadTooLarge),
            Err(_) => return Err(ProtoError::BadResponseHead),
        };
        let status = response.code.ok_or(ProtoError::BadResponseHead)?;
        if !(100..=599).contains(&status) {
            return Err(ProtoError::BadStatus);
        }
        let keep_alive_default = response.version == Some(1);
        let mut length: Option<usize> = None;
        let mut chunked = false;
        let mut close = !keep_alive_default;
        for h in response.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = parse_content_length(h.value)?;
                if length.is_some_and(|l| l != n) {
                    return Err(ProtoError::BadContentLength);
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = last_token_is(h.value, b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                if has_token(h.value, b"close") {
                    close = true;
                } else if has_token(h.value, b"keep-alive") {
                    close = false;
                }
            }
        }
        self.closing = close;
        let no_body = self.head_method || status == 204 || status == 304 || status < 200;
        let framing = if no_body {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked { resume: len }
        } else if let Some(n) = length {
            if n > MAX_RESPONSE_BODY {
                return Err(ProtoError::BodyTooLarge);
            }
            Framing::Length(n)
        } else {
            Framing::UntilEof
        };
        Ok(Some(Head { len, status, framing }))
    }
}

impl ClientCodec for Http1Client {
    fn handshake(&mut self, _out: &mut Vec<u8>) {}

    fn decode_handshake(&mut self, _input: &[u8]) -> Result<Decoded, ProtoError> {
        Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control })
    }

    fn encode_op(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.request);
    }

    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, ProtoError> {
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
            Framing::Chunked { resume } => match scan_chunked(input, resume)? {
                ChunkScan::End(end) => Some(end),
                ChunkScan::Need(resume) => {
                    if resume - head.len > MAX_RESPONSE_BODY {
                        return Err(ProtoError::BodyTooLarge);
                    }
                    self.head = Some(Head { framing: Framing::Chunked { resume }, ..head });
                    return Ok(Decoded::Partial);
                }
            },
            Framing::UntilEof => {
                if input.len() - head.len > MAX_RESPONSE_BODY {
                    return Err(ProtoError::BodyTooLarge);
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
                Ok(Decoded::Done { consumed, outcome: outcome_of(head.status) })
            }
        }
    }

    fn decode_eof(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        if input.is_empty() {
            return Ok(Decoded::Partial);
        }
        let head = match self.head {
            Some(head) => head,
            None => self.parse_head(input)?.ok_or(ProtoError::TruncatedResponse)?,
        };
        match head.framing {
            Framing::UntilEof => {
                self.head = None;
                self.closing = true;
                Ok(Decoded::Done { consumed: input.len(), outcome: outcome_of(head.status) })
            }
            _ => Err(ProtoError::TruncatedResponse),
        }
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }
}

fn outcome_of(status: u16) -> Outcome {
    match status {
        100..=199 => Outcome::Control,
        400.. => Outcome::OpFailed(Failure::Status(status)),
        _ => Outcome::Op,
    }
}

fn parse_content_length(value: &[u8]) -> Result<usize, ProtoError> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ProtoError::BadContentLength);
    }
    Ok(digits.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')))
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    tokens(value).any(|t| t.eq_ignore_ascii_case(token))
}

fn last_token_is(value: &[u8], token: &[u8]) -> bool {
    tokens(value).last().is_some_and(|t| t.eq_ignore_ascii_case(token))
}

/// Progress through a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkScan {
    /// Incomplete; scanning may resume at this offset (the start of a chunk-size line).
    Need(usize),
    /// The body, trailers included, ends at this offset.
    End(usize),
}

/// Walk chunks from offset `from` of `buf`; bounded by the input's length.
fn scan_chunked(buf: &[u8], mut from: usize) -> Result<ChunkScan, ProtoError> {
    loop {
        let Some(line_end) = find_crlf(&buf[from..]) else {
            // A size line is a few hex digits; a long one without CRLF is garbage.
            return if buf.len() - from > 1024 {
                Err(ProtoError::BadChunk)
            } else {
                Ok(ChunkScan::Need(from))
            };
        };
        let line = &buf[from..from + line_end];
        let hex = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
        if hex.is_empty() || hex.len() > 15 {
            return Err(ProtoError::BadChunk);
        }
        let mut size = 0usize;
        for &d in hex {
            let v = (d as char).to_digit(16).ok_or(ProtoError::BadChunk)?;
            size = size * 16 + v as usize;
        }
        let data = from + line_end + 2;
        if size == 0 {
            // Trailer fields, then an empty line; bounded, so that endless trailers end.
            let mut pos = data;
            loop {
                if pos - data > MAX_TRAILERS {
                    return Err(ProtoError::BadChunk);
                }
                let Some(end) = find_crlf(&buf[pos..]) else {
                    if buf.len() - data > MAX_TRAILERS {
                        return Err(ProtoError::BadChunk);
                    }
                    return Ok(ChunkScan::Need(from));
                };
                if end == 0 {
                    return Ok(ChunkScan::End(pos + 2));
                }
                pos += end + 2;
            }
        }
        if size > MAX_RESPONSE_BODY {
            return Err(ProtoError::BodyTooLarge);
        }
        if buf.len() < data + size + 2 {
            return Ok(ChunkScan::Need(from));
        }
        if &buf[data + size..data + size + 2] != b"\r\n" {
            return Err(ProtoError::BadChunk);
        }
        from = data + size + 2;
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

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

    fn busy(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(RESPONSE_BUSY);
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
    /// Bytes of the pending head already searched for its end.
    head_scanned: usize,
    /// The head is whole and its body is arriving.
    body: Option<PendingBody>,
}

#[derive(Debug, Clone, Copy)]
struct PendingBody {
    head_len: usize,
    framing: Framing,
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

/// The end of a request head (the index after its empty line) in `input`, searching from
/// `from`; httparse accepts bare LF line ends, so `\n\n` ends a head too.
fn find_head_end(input: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(2);
    let mut i = start;
    while let Some(nl) = input[i..].iter().position(|&b| b == b'\n') {
        let at = i + nl;
        match input.get(at + 1..at + 3) {
            Some([b'\r', b'\n']) => return Some(at + 3),
            Some([b'\n', _]) => return Some(at + 2),
            None if input.get(at + 1) == Some(&b'\n') => return Some(at + 2),
            _ => {}
        }
        i = at + 1;
    }
    None
}

/// Parse the request at the start of `input` (the same pending bytes, grown, on every call
/// until it is whole): `Ok(None)` if incomplete, else the request and the bytes it occupies.
pub fn parse_request<'a>(
    input: &'a [u8],
    limits: RequestLimits,
    reader: &mut RequestReader,
) -> Result<Option<(Request<'a>, usize)>, Refusal> {
    let pending = match reader.body {
        Some(pending) => pending,
        None => {
            // Find the head's end before parsing it, and parse it once.
            let (head_len, framing) = loop {
                let Some(end) = find_head_end(input, reader.head_scanned) else {
                    if input.len() > limits.max_head {
                        return Err(Refusal::HeadTooLarge);
                    }
                    reader.head_scanned = input.len();
                    return Ok(None);
                };
                if end > limits.max_head {
                    return Err(Refusal::HeadTooLarge);
                }
                match parse_head_framing(&input[..end], limits)? {
                    Some(found) => break found,
                    // Empty lines before the request line: keep looking.
                    None => reader.head_scanned = end,
                }
            };
            reader.head_scanned = 0;
            let pending = PendingBody { head_len, framing };
            reader.body = Some(pending);
            pending
        }
    };
    let end = match pending.framing {
        Framing::Length(n) if input.len() >= pending.head_len + n => pending.head_len + n,
        Framing::Length(_) => return Ok(None),
        Framing::Chunked { resume } => match scan_chunked(input, resume) {
            Ok(ChunkScan::End(end)) => end,
            Ok(ChunkScan::Need(_)) if input.len() - pending.head_len > limits.max_body => {
                return Err(Refusal::BodyTooLarge);
            }
            Ok(ChunkScan::Need(resume)) => {
                reader.body = Some(PendingBody { framing: Framing::Chunked { resume }, ..pending });
                return Ok(None);
            }
            Err(_) => return Err(Refusal::BadRequest),
        },
        Framing::UntilEof => return Err(Refusal::BadRequest),
    };
    reader.body = None;
    // Whole: parse the head again to borrow its fields (once per request whose body spanned
    // reads; a head is at most a few KiB).
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(&input[..pending.head_len]), Ok(httparse::Status::Complete(_))) {
        return Err(Refusal::BadRequest);
    }
    let (close, chunked) = connection_of(&request)?;
    let request = Request {
        method: request.method.unwrap_or_default(),
        target: request.path.unwrap_or("/"),
        body: &input[pending.head_len..end],
        chunked,
        close,
        minor_version: request.version.unwrap_or(1),
    };
    Ok(Some((request, end)))
}

/// Parse a whole head: its length and how its body ends; `None` if it is only empty lines.
fn parse_head_framing(head: &[u8], limits: RequestLimits) -> Result<Option<(usize, Framing)>, Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(head) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Refusal::HeadTooLarge),
        Err(_) => return Err(Refusal::BadRequest),
    };
    let mut length = 0usize;
    for h in request.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = parse_content_length(h.value).map_err(|_| Refusal::BadRequest)?;
        }
    }
    let (_, chunked) = connection_of(&request)?;
    if length > limits.max_body {
        return Err(Refusal::BodyTooLarge);
    }
    let framing = if chunked { Framing::Chunked { resume: head_len } } else { Framing::Length(length) };
    Ok(Some((head_len, framing)))
}

/// (close after this request, chunked body) from a parsed request head.
fn connection_of(request: &httparse::Request<'_, '_>) -> Result<(bool, bool), Refusal> {
    let mut close = request.version != Some(1);
    let mut chunked = false;
    for h in request.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if !last_token_is(h.value, b"chunked") {
                return Err(Refusal::BadRequest);
            }
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("connection") {
            if has_token(h.value, b"close") {
                close = true;
            } else if has_token(h.value, b"keep-alive") {
                close = false;
            }
        }
    }
    Ok((close, chunked))
}

#[cfg(test)]
mod tests {
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

    fn decode_all(client: &mut Http1Client, input: &[u8]) -> Result<Decoded, ProtoError> {
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
                [Outcome::Op, Outcome::Op, Outcome::Op, Outcome::OpFailed(Failure::Status(404))]
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
        assert_eq!(decode_all(&mut c, b"SSH-2.0-OpenSSH\r\n\r\n"), Err(ProtoError::BadResponseHead));
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(decode_all(&mut c, r), Err(ProtoError::BadContentLength));
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(decode_all(&mut Http1Client::new(&spec("GET", b"")), r), Err(ProtoError::BadChunk));
        let big = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &vec![b'a'; MAX_RESPONSE_HEAD]].concat();
        assert_eq!(decode_all(&mut c, &big), Err(ProtoError::ResponseHeadTooLarge));
        assert_eq!(
            c.decode_eof(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"),
            Err(ProtoError::TruncatedResponse)
        );
    }

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
                awaiting: Awaiting::Head
            }
        );
        assert_eq!(out, [RESPONSE_HELLO, RESPONSE_OK].concat());
        assert_eq!(RESPONSE_HELLO.len(), 50);
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

    #[test]
    fn statuses_outside_100_to_599_are_protocol_errors() {
        for status in ["000", "099", "600", "999"] {
            let r = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            let mut c = Http1Client::new(&spec("GET", b""));
            assert_eq!(decode_all(&mut c, r.as_bytes()), Err(ProtoError::BadStatus), "{status}");
        }
    }

    #[test]
    fn endless_trailers_end_as_a_bad_chunk() {
        let mut c = Http1Client::new(&spec("GET", b""));
        let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
        while r.len() < 2 * MAX_TRAILERS {
            r.extend_from_slice(b"X-Trailer: value\r\n");
        }
        assert_eq!(decode_all(&mut c, &r), Err(ProtoError::BadChunk));
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

    #[test]
    fn the_server_says_busy_with_a_503() {
        let mut out = Vec::new();
        Http1Server::default().busy(&mut out);
        assert!(out.starts_with(b"HTTP/1.1 503 "));
    }
}
