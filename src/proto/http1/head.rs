//! The HTTP/1.1 toolkit every protocol that speaks HTTP uses: request and response heads read
//! with httparse under a size limit that holds however the head arrives, their header fields
//! and tokens, and chunked bodies walked incrementally. The WebSocket upgrade and nsqd's HTTP
//! API use these rather than their own.

use super::Error;
use super::Framing;

/// Most headers a head may carry; httparse needs a fixed-size array.
const MAX_HEADERS: usize = 64;
/// Trailer fields after a chunked body are read up to this size; more is a broken peer.
pub const MAX_TRAILERS: usize = 64 * 1024;
/// A chunk-size line is a few hex digits (and extensions); a long one without CRLF is garbage.
const MAX_CHUNK_LINE: usize = 1024;

/// A head's header fields.
#[derive(Clone, Copy)]
pub struct Fields<'h, 'b>(&'h [httparse::Header<'b>]);

impl<'b> Fields<'_, 'b> {
    /// The first field called `name` (any case).
    pub fn get(&self, name: &str) -> Option<&'b [u8]> {
        self.0.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
    /// Every field, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'b str, &'b [u8])> + '_ {
        self.0.iter().map(|h| (h.name, h.value))
    }
    /// Whether the field `name` lists `token` (any case) among its comma-separated values.
    pub fn has_token(&self, name: &str, token: &[u8]) -> bool {
        self.get(name).is_some_and(|v| has_token(v, token))
    }
}

/// A response's status line and fields.
pub struct ResponseHead<'h, 'b> {
    pub status: u16,
    /// 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub minor_version: u8,
    pub fields: Fields<'h, 'b>,
}

/// A request's request line and fields.
pub struct RequestHead<'h, 'b> {
    pub method: &'b str,
    /// Path and query as sent.
    pub target: &'b str,
    pub minor_version: u8,
    pub fields: Fields<'h, 'b>,
}

/// The response head at the start of `input`, given to `read`: what `read` made of it and the
/// head's length, or `None` while it is still arriving. A head over `max` is refused whether it
/// came whole or trickling in; a status outside 100–599 is not HTTP. (`E`: the error of the
/// protocol reading it, which holds HTTP's.)
pub fn response_head<'b, T, E: From<Error>>(
    input: &'b [u8],
    max: usize,
    read: impl for<'h> FnOnce(&ResponseHead<'h, 'b>) -> Result<T, E>,
) -> Result<Option<(T, usize)>, E> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    // Only the first `max` bytes are looked at: whatever lies past the limit cannot change
    // the verdict, so it is the same however the bytes arrive (found by fuzzing: a malformed
    // line past 64 KiB was a bad head whole and a head too large in pieces).
    let len = match response.parse(&input[..input.len().min(max)]) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if input.len() <= max => return Ok(None),
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            return Err(Error::ResponseHeadTooLarge.into());
        }
        Err(_) => return Err(Error::BadResponseHead.into()),
    };
    let status = response.code.ok_or(Error::BadResponseHead)?;
    if !(100..=599).contains(&status) {
        return Err(Error::BadStatus.into());
    }
    let head = ResponseHead {
        status,
        minor_version: response.version.unwrap_or(1),
        fields: Fields(response.headers),
    };
    Ok(Some((read(&head)?, len)))
}

/// Why a server refuses a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    Malformed,
    TooLarge,
}

/// The request head at the start of `input` (see [`response_head`]); empty lines before the
/// request line are allowed, as httparse allows them.
pub fn request_head<'b, T>(
    input: &'b [u8],
    max: usize,
    read: impl for<'h> FnOnce(&RequestHead<'h, 'b>) -> T,
) -> Result<Option<(T, usize)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    // The first `max` bytes only, as for responses.
    let len = match request.parse(&input[..input.len().min(max)]) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if input.len() <= max => return Ok(None),
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::TooLarge);
        }
        Err(_) => return Err(HeadError::Malformed),
    };
    let head = RequestHead {
        method: request.method.unwrap_or_default(),
        target: request.path.unwrap_or("/"),
        minor_version: request.version.unwrap_or(1),
        fields: Fields(request.headers),
    };
    Ok(Some((read(&head), len)))
}

/// How a message's body ends, from its fields: `(framing, close after it)`, given the head's
/// length and whether the message may have no length at all (responses, which then end with
/// the connection). Conflicting lengths and non-chunked transfer codings are refused.
pub fn body_framing(
    fields: &Fields<'_, '_>,
    head_len: usize,
    minor_version: u8,
    until_eof_allowed: bool,
) -> Result<(Framing, bool), Error> {
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut close = minor_version == 0;
    for (name, value) in fields.iter() {
        if name.eq_ignore_ascii_case("content-length") {
            let n = parse_content_length(value)?;
            if length.is_some_and(|l| l != n) {
                return Err(Error::BadContentLength);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = last_token_is(value, b"chunked");
            if !chunked && !until_eof_allowed {
                return Err(Error::BadChunk);
            }
        } else if name.eq_ignore_ascii_case("connection") {
            if has_token(value, b"close") {
                close = true;
            } else if has_token(value, b"keep-alive") {
                close = false;
            }
        }
    }
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked { resume: head_len },
        (false, Some(n)) => Framing::Length(n),
        (false, None) if until_eof_allowed => Framing::UntilEof,
        (false, None) => Framing::Length(0),
    };
    Ok((framing, close))
}

/// A `Content-Length` value: decimal digits only, at most 18 of them (no overflow).
pub fn parse_content_length(value: &[u8]) -> Result<usize, Error> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Error::BadContentLength);
    }
    Ok(digits.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')))
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

pub fn has_token(value: &[u8], token: &[u8]) -> bool {
    tokens(value).any(|t| t.eq_ignore_ascii_case(token))
}

pub fn last_token_is(value: &[u8], token: &[u8]) -> bool {
    tokens(value).last().is_some_and(|t| t.eq_ignore_ascii_case(token))
}

/// Progress through a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkScan {
    /// Incomplete; scanning may resume at this offset (the start of a chunk-size line).
    Need(usize),
    /// The body, trailers included, ends at this offset.
    End(usize),
}

/// Walk the chunked body that starts at offset `start` of `buf`, from offset `from` (its start,
/// or where the last walk stopped: resuming there keeps the walk linear in the body's size).
/// The body as framed (size lines, data, trailers) may be at most `max_body` octets, and is
/// judged on its first `max_body + 1` alone: whole or in pieces, the same verdict (a check of
/// the octets that happened to have arrived would refuse in pieces what it took whole).
pub fn scan_chunked(buf: &[u8], start: usize, from: usize, max_body: usize) -> Result<ChunkScan, Error> {
    let limit = start.saturating_add(max_body).saturating_add(1);
    let view = &buf[..buf.len().min(limit)];
    match walk_chunks(view, from, max_body)? {
        ChunkScan::End(end) if end - start > max_body => Err(Error::BodyTooLarge),
        ChunkScan::Need(_) if view.len() == limit => Err(Error::BodyTooLarge),
        scan => Ok(scan),
    }
}

/// [`scan_chunked`]'s walk of `buf` from `from`, no chunk larger than `max_chunk`.
fn walk_chunks(buf: &[u8], mut from: usize, max_chunk: usize) -> Result<ChunkScan, Error> {
    loop {
        let Some(line_end) = bounded_line(buf, from, from + MAX_CHUNK_LINE)? else {
            return Ok(ChunkScan::Need(from));
        };
        let size = chunk_size(&buf[from..from + line_end]).ok_or(Error::BadChunk)?;
        let data = from + line_end + 2;
        if size == 0 {
            // Trailer fields, then an empty line, all within MAX_TRAILERS: endless trailers end.
            let mut pos = data;
            loop {
                let Some(end) = bounded_line(buf, pos, data + MAX_TRAILERS)? else {
                    return Ok(ChunkScan::Need(from));
                };
                if end == 0 {
                    return Ok(ChunkScan::End(pos + 2));
                }
                pos += end + 2;
            }
        }
        if size > max_chunk {
            return Err(Error::BodyTooLarge);
        }
        if buf.len() < data + size + 2 {
            return Ok(ChunkScan::Need(from));
        }
        if &buf[data + size..data + size + 2] != b"\r\n" {
            return Err(Error::BadChunk);
        }
        from = data + size + 2;
    }
}

/// The length of the line starting at `from` (up to its CRLF), which must end by `limit`: its
/// CRLF starts at `limit` at the latest. `Ok(None)` while the bytes so far could still make
/// such a line; `BadChunk` once they cannot. The verdict depends only on the bytes up to the
/// limit, never on how many arrived past it, so a body is judged alike whole or in pieces
/// (the fuzzer found a 400 KiB chunk-size line accepted whole and refused in 4 KiB reads).
fn bounded_line(buf: &[u8], from: usize, limit: usize) -> Result<Option<usize>, Error> {
    let window = &buf[from.min(buf.len())..buf.len().min(limit + 2)];
    match find_crlf(window) {
        Some(end) => Ok(Some(end)),
        None if buf.len() >= limit + 2 => Err(Error::BadChunk),
        None => Ok(None),
    }
}

/// The size a chunk-size line (without its CRLF) gives: hex digits, then optional whitespace
/// (RFC 9112's BWS) and extensions; `None` when it gives none (at most 15 digits).
fn chunk_size(line: &[u8]) -> Option<usize> {
    let hex = trim_ows(line.split(|&b| b == b';').next().unwrap_or_default());
    if hex.is_empty() || hex.len() > 15 {
        return None;
    }
    hex.iter().try_fold(0usize, |size, &d| Some(size * 16 + (d as char).to_digit(16)? as usize))
}

/// `bytes` without leading and trailing spaces and tabs (HTTP's optional whitespace; a CR or
/// LF is not whitespace inside a line).
fn trim_ows(bytes: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !ows(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// The data of a chunked body already found whole by [`scan_chunked`].
pub fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(line_end) = find_crlf(&body[from..]) {
        let size = chunk_size(&body[from..from + line_end]).unwrap_or(0);
        let data = from + line_end + 2;
        if size == 0 || body.len() < data + size {
            break;
        }
        out.extend_from_slice(&body[data..data + size]);
        from = (data + size + 2).min(body.len());
    }
    out
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// The first end of a request head (the index after its empty line) in `input` beyond `from`
/// (where the last search stopped, or the last candidate that was only empty lines); httparse
/// accepts bare LF line ends, so `\n\n` ends a head too. Always past `from`, so a caller
/// looping over candidates makes progress.
pub fn find_head_end(input: &[u8], from: usize) -> Option<usize> {
    // A terminator may straddle where the last search stopped: look two bytes back.
    let mut i = from.saturating_sub(2);
    while let Some(nl) = input[i..].iter().position(|&b| b == b'\n') {
        let at = i + nl;
        let end = match input.get(at + 1..at + 3) {
            Some([b'\r', b'\n']) => Some(at + 3),
            Some([b'\n', _]) => Some(at + 2),
            None if input.get(at + 1) == Some(&b'\n') => Some(at + 2),
            _ => None,
        };
        if let Some(end) = end.filter(|&end| end > from) {
            return Some(end);
        }
        i = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_over_the_limit_are_refused_whole_or_trickling() {
        let head = b"HTTP/1.1 200 OK\r\nX: 0123456789\r\n\r\n";
        let read = |h: &ResponseHead<'_, '_>| Ok(h.status);
        assert_eq!(response_head(head, head.len(), read), Ok(Some((200, head.len()))));
        assert_eq!(response_head(head, head.len() - 1, read), Err(Error::ResponseHeadTooLarge));
        assert_eq!(response_head(&head[..20], 19, read), Err(Error::ResponseHeadTooLarge));
        assert_eq!(response_head(&head[..20], 64, read), Ok(None));
    }

    /// Found by fuzzing with streams past 64 KiB: 2 MiB of empty lines, then a malformed
    /// status line, was a bad head whole and a head too large when it came in pieces.
    #[test]
    fn what_lies_past_the_limit_does_not_change_the_verdict() {
        let stream = [vec![b'\n'; 100_000], b"HTTP/1.1 11\n".to_vec()].concat();
        let read = |h: &ResponseHead<'_, '_>| Ok(h.status);
        assert_eq!(response_head(&stream, 64 * 1024, read), Err(Error::ResponseHeadTooLarge));
        assert_eq!(response_head(&stream[..70_000], 64 * 1024, read), Err(Error::ResponseHeadTooLarge));
        assert_eq!(response_head(&stream[..1000], 64 * 1024, read), Ok(None));
    }

    #[test]
    fn fields_and_tokens() {
        let head = b"GET / HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\r\n";
        let got = request_head(head, 1024, |h| {
            (h.fields.has_token("connection", b"upgrade"), h.fields.get("UPGRADE").map(<[u8]>::to_vec))
        });
        assert_eq!(got, Ok(Some(((true, Some(b"WebSocket".to_vec())), head.len()))));
    }

    #[test]
    fn chunks_scan_resumably_and_dechunk() {
        let body = b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n";
        assert_eq!(scan_chunked(body, 0, 0, 100), Ok(ChunkScan::End(body.len())));
        assert_eq!(scan_chunked(&body[..10], 0, 0, 100), Ok(ChunkScan::Need(8)));
        assert_eq!(scan_chunked(body, 0, 8, 100), Ok(ChunkScan::End(body.len())));
        assert_eq!(dechunk(body), b"abcde");
        assert_eq!(scan_chunked(b"ff\r\n", 0, 0, 16), Err(Error::BodyTooLarge));
    }

    /// Found by the fuzzer (server_http1): a chunk-size line of 400 KiB, a bare CR after its
    /// digits, was a chunk of 0xf0 awaited when it came whole and a bad chunk in 4 KiB reads.
    /// Now a line longer than MAX_CHUNK_LINE is refused both ways, as are trailers longer than
    /// MAX_TRAILERS, and a line or trailer section right at its limit is accepted both ways.
    #[test]
    fn line_limits_judge_alike_whole_and_in_pieces() {
        let verdicts = |body: &[u8]| {
            let whole = scan_chunked(body, 0, 0, 1 << 20);
            // Every cut near the end (where the limits lie), a spread of the others.
            for cut in (0..body.len()).step_by(997).chain(body.len().saturating_sub(40)..body.len()) {
                let part = scan_chunked(&body[..cut], 0, 0, 1 << 20);
                assert!(
                    matches!(part, Ok(ChunkScan::Need(_))) || part == whole,
                    "cut at {cut}: {part:?} vs {whole:?}"
                );
            }
            whole
        };
        let line = |ext: usize| [b"5;".as_slice(), &vec![b'x'; ext], b"\r\nhello\r\n0\r\n\r\n"].concat();
        assert!(matches!(verdicts(&line(MAX_CHUNK_LINE - 2)), Ok(ChunkScan::End(_))));
        assert_eq!(verdicts(&line(MAX_CHUNK_LINE - 1)), Err(Error::BadChunk));
        assert_eq!(verdicts(b"f0\r;x\r\n"), Err(Error::BadChunk), "a bare CR is not whitespace");
        let trailers = |len: usize| [b"0\r\nT: ".as_slice(), &vec![b'v'; len - 3], b"\r\n\r\n"].concat();
        // The trailer section (fields and their CRLFs, not the last empty line) may be MAX_TRAILERS.
        assert!(matches!(verdicts(&trailers(MAX_TRAILERS - 2)), Ok(ChunkScan::End(_))));
        assert_eq!(verdicts(&trailers(MAX_TRAILERS - 1)), Err(Error::BadChunk));
        // The body's limit counts it as framed, judged alike (it was checked only while the
        // body was incomplete: two chunks under the limit each, over it together, passed whole).
        let body = b"5\r\nhello\r\n5\r\nhello\r\n0\r\n\r\n";
        for (max, verdict) in
            [(body.len(), Ok(ChunkScan::End(body.len()))), (body.len() - 1, Err(Error::BodyTooLarge))]
        {
            assert_eq!(scan_chunked(body, 0, 0, max), verdict);
            for cut in 0..body.len() {
                let part = scan_chunked(&body[..cut], 0, 0, max);
                assert!(
                    matches!(part, Ok(ChunkScan::Need(_))) || part == verdict,
                    "cut {cut}, max {max}: {part:?}"
                );
            }
        }
    }
}
