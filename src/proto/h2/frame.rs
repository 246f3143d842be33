//! HTTP/2 frames (RFC 9113 §4 and §6), sans-IO: [`parse`] takes the bytes received so far and
//! gives one whole frame and the bytes it took, or `None` for "need more"; the writers append
//! frames. Every rule of §6 on a frame's length, stream and flags is checked here, so a frame
//! that breaks one is an [`Error`] naming the frame and the error code the connection closes
//! with (`FRAME_SIZE_ERROR`, `PROTOCOL_ERROR`, `FLOW_CONTROL_ERROR`).

/// What a client sends first on every connection (§3.4), before its SETTINGS.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Every frame starts with 9 octets: length (24 bits), type, flags, stream (31 bits).
pub const HEAD_LEN: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value, and the least a peer may set.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The largest a peer may set.
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// A flow-control window may not pass this.
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// SETTINGS parameters (§6.5.2).
pub const HEADER_TABLE_SIZE: u16 = 0x1;
pub const ENABLE_PUSH: u16 = 0x2;
pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const MAX_FRAME_SIZE: u16 = 0x5;
pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// The frame type's name, for errors and reports.
pub fn type_name(kind: u8) -> &'static str {
    match kind {
        DATA => "DATA",
        HEADERS => "HEADERS",
        PRIORITY => "PRIORITY",
        RST_STREAM => "RST_STREAM",
        SETTINGS => "SETTINGS",
        PUSH_PROMISE => "PUSH_PROMISE",
        PING => "PING",
        GOAWAY => "GOAWAY",
        WINDOW_UPDATE => "WINDOW_UPDATE",
        CONTINUATION => "CONTINUATION",
        _ => "an unknown frame",
    }
}

/// An error code's name (§7), as RST_STREAM and GOAWAY carry them.
pub fn code_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "an unknown error code",
    }
}

pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame that breaks RFC 9113: the error code the connection ends with, the frame's type,
/// and the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/2 {}: {} {why}", code_name(*code), type_name(*kind))]
pub struct Error {
    pub code: u32,
    pub kind: u8,
    pub why: &'static str,
}

/// One whole frame, borrowing its payload from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        stream: u32,
        end_stream: bool,
        data: &'a [u8],
        padding: usize,
    },
    Headers {
        stream: u32,
        end_stream: bool,
        end_headers: bool,
        block: &'a [u8],
        padding: usize,
        /// The stream it depends on, when it carries a priority (PRIORITY flag).
        dependency: Option<u32>,
    },
    Priority {
        stream: u32,
        /// The stream it depends on (a stream may not depend on itself, §5.3.1).
        dependency: u32,
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    /// Its parameters, six octets each: read them with [`settings`].
    Settings {
        ack: bool,
        params: &'a [u8],
    },
    PushPromise {
        stream: u32,
        promised: u32,
        end_headers: bool,
        block: &'a [u8],
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: u32,
        debug: &'a [u8],
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    Continuation {
        stream: u32,
        end_headers: bool,
        block: &'a [u8],
    },
    /// A type this side does not know: ignored (§4.1).
    Unknown {
        kind: u8,
    },
}

impl Frame<'_> {
    /// Its type's number.
    pub fn kind(&self) -> u8 {
        match self {
            Frame::Data { .. } => DATA,
            Frame::Headers { .. } => HEADERS,
            Frame::Priority { .. } => PRIORITY,
            Frame::RstStream { .. } => RST_STREAM,
            Frame::Settings { .. } => SETTINGS,
            Frame::PushPromise { .. } => PUSH_PROMISE,
            Frame::Ping { .. } => PING,
            Frame::GoAway { .. } => GOAWAY,
            Frame::WindowUpdate { .. } => WINDOW_UPDATE,
            Frame::Continuation { .. } => CONTINUATION,
            Frame::Unknown { kind } => *kind,
        }
    }
}

/// The head at the start of `input`, if whole: its payload's length, type, flags and stream
/// (the reserved bit cleared).
#[inline(always)]
fn head(input: &[u8]) -> Option<(u32, u8, u8, u32)> {
    let head = input.get(..HEAD_LEN)?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]);
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & MAX_WINDOW;
    Some((len, head[3], head[4], stream))
}

/// The frame at the start of `input`, and the octets it took; `None`: not whole yet. `max`:
/// the largest payload this side accepts (its SETTINGS_MAX_FRAME_SIZE). Inlined: its result
/// (a frame of a dozen fields) went back through the stack to each caller, and the client's
/// reads of it stalled on the writes.
#[inline(always)]
pub fn parse(input: &[u8], max: u32) -> Result<Option<(Frame<'_>, usize)>, Error> {
    let Some((len, kind, flags, stream)) = head(input) else { return Ok(None) };
    let err = |code, why| Error { code, kind, why };
    if len > max {
        return Err(err(FRAME_SIZE_ERROR, "larger than SETTINGS_MAX_FRAME_SIZE"));
    }
    let end = HEAD_LEN + len as usize;
    let Some(payload) = input.get(HEAD_LEN..end) else { return Ok(None) };
    let on_stream = matches!(kind, DATA | HEADERS | PRIORITY | RST_STREAM | PUSH_PROMISE | CONTINUATION);
    if on_stream && stream == 0 {
        return Err(err(PROTOCOL_ERROR, "on stream 0"));
    }
    if matches!(kind, SETTINGS | PING | GOAWAY) && stream != 0 {
        return Err(err(PROTOCOL_ERROR, "on a stream other than 0"));
    }
    let word =
        |at: usize| u32::from_be_bytes([payload[at], payload[at + 1], payload[at + 2], payload[at + 3]]);
    let frame = match kind {
        DATA => {
            let (data, padding) =
                unpad(payload, flags).ok_or(err(PROTOCOL_ERROR, "with padding as long as it"))?;
            Frame::Data { stream, end_stream: flags & END_STREAM != 0, data, padding }
        }
        HEADERS => {
            let (mut block, padding) =
                unpad(payload, flags).ok_or(err(PROTOCOL_ERROR, "with padding as long as it"))?;
            let mut dependency = None;
            if flags & PRIORITY_FLAG != 0 {
                let p = block.get(..5).ok_or(err(FRAME_SIZE_ERROR, "too short for its priority"))?;
                dependency = Some(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & MAX_WINDOW);
                block = &block[5..];
            }
            let (end_stream, end_headers) = (flags & END_STREAM != 0, flags & END_HEADERS != 0);
            Frame::Headers { stream, end_stream, end_headers, block, padding, dependency }
        }
        PRIORITY if len != 5 => return Err(err(FRAME_SIZE_ERROR, "not of 5 octets")),
        PRIORITY => Frame::Priority { stream, dependency: word(0) & MAX_WINDOW },
        RST_STREAM if len != 4 => return Err(err(FRAME_SIZE_ERROR, "not of 4 octets")),
        RST_STREAM => Frame::RstStream { stream, code: word(0) },
        SETTINGS if flags & ACK != 0 && len != 0 => {
            return Err(err(FRAME_SIZE_ERROR, "acknowledgement with a payload"));
        }
        SETTINGS if !len.is_multiple_of(6) => {
            return Err(err(FRAME_SIZE_ERROR, "not a multiple of 6 octets"));
        }
        SETTINGS => {
            for (id, value) in settings(payload) {
                check_setting(id, value)?;
            }
            Frame::Settings { ack: flags & ACK != 0, params: payload }
        }
        PUSH_PROMISE => {
            let (block, _) =
                unpad(payload, flags).ok_or(err(PROTOCOL_ERROR, "with padding as long as it"))?;
            let promised = block.get(..4).ok_or(err(FRAME_SIZE_ERROR, "too short for its stream"))?;
            let promised =
                u32::from_be_bytes([promised[0], promised[1], promised[2], promised[3]]) & MAX_WINDOW;
            Frame::PushPromise { stream, promised, end_headers: flags & END_HEADERS != 0, block: &block[4..] }
        }
        PING if len != 8 => return Err(err(FRAME_SIZE_ERROR, "not of 8 octets")),
        PING => {
            let mut data = [0; 8];
            data.copy_from_slice(payload);
            Frame::Ping { ack: flags & ACK != 0, data }
        }
        GOAWAY if len < 8 => return Err(err(FRAME_SIZE_ERROR, "shorter than 8 octets")),
        GOAWAY => Frame::GoAway { last_stream: word(0) & MAX_WINDOW, code: word(4), debug: &payload[8..] },
        WINDOW_UPDATE if len != 4 => return Err(err(FRAME_SIZE_ERROR, "not of 4 octets")),
        WINDOW_UPDATE => match word(0) & MAX_WINDOW {
            0 => return Err(err(PROTOCOL_ERROR, "of 0")),
            increment => Frame::WindowUpdate { stream, increment },
        },
        CONTINUATION => Frame::Continuation { stream, end_headers: flags & END_HEADERS != 0, block: payload },
        kind => Frame::Unknown { kind },
    };
    Ok(Some((frame, end)))
}

/// A padded frame's content and the octets of its padding (the length octet included).
fn unpad(payload: &[u8], flags: u8) -> Option<(&[u8], usize)> {
    if flags & PADDED == 0 {
        return Some((payload, 0));
    }
    let (&pad, rest) = payload.split_first()?;
    let keep = rest.len().checked_sub(usize::from(pad))?;
    Some((&rest[..keep], 1 + usize::from(pad)))
}

/// A SETTINGS payload's parameters: (identifier, value).
pub fn settings(params: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    params
        .chunks_exact(6)
        .map(|p| (u16::from_be_bytes([p[0], p[1]]), u32::from_be_bytes([p[2], p[3], p[4], p[5]])))
}

/// §6.5.2's bounds on the values.
fn check_setting(id: u16, value: u32) -> Result<(), Error> {
    let err = |code, why| Err(Error { code, kind: SETTINGS, why });
    match id {
        ENABLE_PUSH if value > 1 => err(PROTOCOL_ERROR, "with ENABLE_PUSH neither 0 nor 1"),
        INITIAL_WINDOW_SIZE if value > MAX_WINDOW => {
            err(FLOW_CONTROL_ERROR, "with INITIAL_WINDOW_SIZE above 2^31-1")
        }
        MAX_FRAME_SIZE if !(DEFAULT_MAX_FRAME..=MAX_MAX_FRAME).contains(&value) => {
            err(PROTOCOL_ERROR, "with MAX_FRAME_SIZE outside 16384..2^24-1")
        }
        _ => Ok(()),
    }
}

/// Append a frame's 9-octet head.
pub fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let [_, l0, l1, l2] = (len as u32).to_be_bytes();
    let [s0, s1, s2, s3] = (stream & MAX_WINDOW).to_be_bytes();
    out.extend_from_slice(&[l0, l1, l2, kind, flags, s0, s1, s2, s3]);
}

/// Whether `input` starts with a whole frame that may carry more of `stream`'s answer (DATA,
/// HEADERS or CONTINUATION on it, of at most `max` octets): read from its head alone.
#[inline]
pub fn answer_on(input: &[u8], stream: u32, max: u32) -> bool {
    let Some((len, kind, _, on)) = head(input) else { return false };
    matches!(kind, DATA | HEADERS | CONTINUATION)
        && on == stream
        && len <= max
        && input.len() >= HEAD_LEN + len as usize
}

/// Append a SETTINGS frame with `params` (an empty one: just the frame).
pub fn write_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    write_head(out, 6 * params.len(), SETTINGS, 0, 0);
    for (id, value) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, SETTINGS, ACK, 0);
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

pub fn write_ping(out: &mut Vec<u8>, ack: bool, data: [u8; 8]) {
    write_head(out, 8, PING, if ack { ACK } else { 0 }, 0);
    out.extend_from_slice(&data);
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    write_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A peer's new SETTINGS_INITIAL_WINDOW_SIZE `value`: every open stream's window moves by
/// the change from `initial` (RFC 9113 §6.9.2; below zero too), and `initial` becomes it.
/// `false` if a window would pass 2^31−1 (a FLOW_CONTROL_ERROR). Both roles'.
pub fn move_windows<'a>(initial: &mut i64, value: u32, windows: impl Iterator<Item = &'a mut i64>) -> bool {
    let delta = i64::from(value) - *initial;
    *initial = i64::from(value);
    let mut fits = true;
    for window in windows {
        *window += delta;
        fits &= *window <= i64::from(MAX_WINDOW);
    }
    fits
}

/// A stream's window would pass 2^31−1 (RFC 9113 §6.9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowOverflow;

/// A setting both roles apply alike: the largest frame the peer takes (`max_frame`), its
/// HPACK table (`encoder`), the initial window of its streams (`initial`: every open stream's
/// window moves by the change, through `window`). `Ok(false)`: a setting left to the caller;
/// `Err`: a window would pass 2^31−1 (a FLOW_CONTROL_ERROR).
pub fn common_setting<S>(
    (id, value): (u16, u32),
    max_frame: &mut u32,
    encoder: &mut super::hpack::Encoder,
    initial: &mut i64,
    streams: &mut [S],
    window: fn(&mut S) -> &mut i64,
) -> Result<bool, WindowOverflow> {
    match id {
        MAX_FRAME_SIZE => *max_frame = value,
        HEADER_TABLE_SIZE => encoder.peer_table_size(value as usize),
        INITIAL_WINDOW_SIZE if !move_windows(initial, value, streams.iter_mut().map(window)) => {
            return Err(WindowOverflow);
        }
        INITIAL_WINDOW_SIZE => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// A header block, whole: the stream it is on, whether its HEADERS ended the stream, and its
/// octets (borrowed from a HEADERS that had them all, or assembled from its pieces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    pub stream: u32,
    pub end_stream: bool,
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

/// How a header block broke RFC 9113 §6.10, or the receiver's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockError {
    /// A frame of this kind (or on another stream) came while a block awaited its
    /// CONTINUATION.
    Interleaved(&'static str),
    /// A CONTINUATION with no header block open.
    Stray,
    /// The block grew past the receiver's limit before its END_HEADERS.
    TooLarge,
}

/// Header blocks arriving in pieces — a HEADERS without END_HEADERS, then CONTINUATIONs on its
/// stream and nothing else between (§6.10) — assembled, both roles' one way: at most `limit`
/// octets held, so a CONTINUATION flood ends at the limit.
#[derive(Debug, Clone, Default)]
pub struct Blocks {
    open: Option<(u32, bool, Vec<u8>)>,
}

impl Blocks {
    /// A block is open: only its CONTINUATIONs may come.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Whether `f` may come now: anything while no block is open, else only the open block's
    /// CONTINUATION.
    pub fn check(&self, f: &Frame<'_>) -> Result<(), BlockError> {
        match (&self.open, f) {
            (None, _) => Ok(()),
            (Some((open, ..)), Frame::Continuation { stream, .. }) if stream == open => Ok(()),
            (Some(_), f) => Err(BlockError::Interleaved(type_name(f.kind()))),
        }
    }

    /// A HEADERS or CONTINUATION (any other frame: `Ok(None)`): the whole block once its
    /// END_HEADERS came, else `None` and the piece kept (up to `limit` octets in all). A
    /// whole block in one HEADERS, the usual case, is answered inline (its result does not
    /// go back to the caller through the stack, where reading it stalled on the writes).
    #[inline(always)]
    pub fn add<'a>(&mut self, f: &Frame<'a>, limit: usize) -> Result<Option<Block<'a>>, BlockError> {
        if self.open.is_none()
            && let Frame::Headers { stream, end_stream, end_headers: true, block, .. } = *f
        {
            return Ok(Some(Block { stream, end_stream, bytes: std::borrow::Cow::Borrowed(block) }));
        }
        self.add_in_pieces(f, limit)
    }

    /// What [`add`](Self::add) does not answer inline: a HEADERS without END_HEADERS, a
    /// CONTINUATION, any other frame, or any frame while a block is open (where `check`
    /// refuses a HEADERS: so a whole one never comes here).
    fn add_in_pieces<'a>(&mut self, f: &Frame<'a>, limit: usize) -> Result<Option<Block<'a>>, BlockError> {
        self.check(f)?;
        match *f {
            Frame::Headers { stream, end_stream, end_headers, block, .. } => {
                debug_assert!(!end_headers, "add answers a whole HEADERS inline");
                if block.len() > limit {
                    return Err(BlockError::TooLarge);
                }
                self.open = Some((stream, end_stream, block.to_vec()));
                Ok(None)
            }
            Frame::Continuation { end_headers, block, .. } => {
                let Some((_, _, held)) = &mut self.open else { return Err(BlockError::Stray) };
                if held.len() + block.len() > limit {
                    return Err(BlockError::TooLarge);
                }
                held.extend_from_slice(block);
                if !end_headers {
                    return Ok(None);
                }
                let (stream, end_stream, bytes) = self.open.take().ok_or(BlockError::Stray)?;
                Ok(Some(Block { stream, end_stream, bytes: std::borrow::Cow::Owned(bytes) }))
            }
            _ => Ok(None),
        }
    }
}

/// Append a header block as a HEADERS frame and as many CONTINUATIONs as frames of at most
/// `max` octets need; returns how many frames it took.
pub fn write_headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max: u32) -> usize {
    let max = max.max(1) as usize;
    let mut parts = block.chunks(max).peekable();
    let first = parts.next().unwrap_or(&[]);
    let last = parts.peek().is_none();
    let flags = if end_stream { END_STREAM } else { 0 } | if last { END_HEADERS } else { 0 };
    write_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut frames = 1;
    while let Some(part) = parts.next() {
        let flags = if parts.peek().is_none() { END_HEADERS } else { 0 };
        write_head(out, part.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(part);
        frames += 1;
    }
    frames
}

/// Append `data` as DATA frames of at most `max` octets (one empty frame for no data), the
/// last with END_STREAM when `end_stream`; returns how many frames it took.
pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool, max: u32) -> usize {
    let max = max.max(1) as usize;
    let count = data.len().div_ceil(max).max(1);
    for i in 0..count {
        let part = &data[(i * max).min(data.len())..((i + 1) * max).min(data.len())];
        let flags = if end_stream && i + 1 == count { END_STREAM } else { 0 };
        write_head(out, part.len(), DATA, flags, stream);
        out.extend_from_slice(part);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> Result<Frame<'_>, Error> {
        let (frame, used) = parse(bytes, DEFAULT_MAX_FRAME)?.expect("a whole frame");
        assert_eq!(used, bytes.len());
        Ok(frame)
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_head(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn every_writer_parses_back() {
        let mut out = Vec::new();
        write_settings(&mut out, &[(MAX_CONCURRENT_STREAMS, 100), (INITIAL_WINDOW_SIZE, 65_535)]);
        assert_eq!(out.len(), 9 + 12);
        let Frame::Settings { ack: false, params } = one(&out).unwrap() else { panic!() };
        assert_eq!(settings(params).collect::<Vec<_>>(), [(3, 100), (4, 65_535)]);
        for (write, want) in [
            (write_settings_ack as fn(&mut Vec<u8>), Frame::Settings { ack: true, params: &[] }),
            (
                |o: &mut Vec<u8>| write_window_update(o, 3, 1000),
                Frame::WindowUpdate { stream: 3, increment: 1000 },
            ),
            (|o: &mut Vec<u8>| write_ping(o, true, [7; 8]), Frame::Ping { ack: true, data: [7; 8] }),
            (|o: &mut Vec<u8>| write_rst_stream(o, 5, 8), Frame::RstStream { stream: 5, code: 8 }),
            (|o: &mut Vec<u8>| write_goaway(o, 7, 0), Frame::GoAway { last_stream: 7, code: 0, debug: &[] }),
        ] {
            let mut out = Vec::new();
            write(&mut out);
            assert_eq!(one(&out).unwrap(), want);
        }
    }

    #[test]
    fn blocks_and_data_are_cut_to_the_frame_size() {
        let block: Vec<u8> = (0..40).collect();
        let mut out = Vec::new();
        assert_eq!(write_headers(&mut out, 1, &block, true, 16), 3);
        let (f1, a) = parse(&out, 16).unwrap().unwrap();
        let (f2, b) = parse(&out[a..], 16).unwrap().unwrap();
        let (f3, c) = parse(&out[a + b..], 16).unwrap().unwrap();
        assert_eq!(a + b + c, out.len());
        assert_eq!(
            f1,
            Frame::Headers {
                stream: 1,
                end_stream: true,
                end_headers: false,
                block: &block[..16],
                padding: 0,
                dependency: None
            }
        );
        assert_eq!(f2, Frame::Continuation { stream: 1, end_headers: false, block: &block[16..32] });
        assert_eq!(f3, Frame::Continuation { stream: 1, end_headers: true, block: &block[32..] });
        let mut out = Vec::new();
        assert_eq!(write_data(&mut out, 3, &[9; 33], true, 16), 3);
        assert_eq!(out.len(), 3 * 9 + 33);
        let mut out = Vec::new();
        assert_eq!(write_data(&mut out, 3, &[], true, 16), 1);
        assert_eq!(one(&out).unwrap(), Frame::Data { stream: 3, end_stream: true, data: &[], padding: 0 });
    }

    #[test]
    fn partial_frames_wait_and_padding_and_priority_come_off() {
        let data = frame(DATA, PADDED | END_STREAM, 1, &[3, b'h', b'i', 0, 0, 0]);
        for cut in 0..data.len() {
            assert_eq!(parse(&data[..cut], DEFAULT_MAX_FRAME), Ok(None), "cut at {cut}");
        }
        assert_eq!(one(&data).unwrap(), Frame::Data { stream: 1, end_stream: true, data: b"hi", padding: 4 });
        let headers = frame(HEADERS, PADDED | PRIORITY_FLAG | END_HEADERS, 1, &[1, 0, 0, 0, 0, 16, 0x82, 0]);
        assert_eq!(
            one(&headers).unwrap(),
            Frame::Headers {
                stream: 1,
                end_stream: false,
                end_headers: true,
                block: &[0x82],
                padding: 2,
                dependency: Some(0)
            }
        );
        assert_eq!(one(&frame(0xfa, 0, 0, b"x")).unwrap(), Frame::Unknown { kind: 0xfa });
    }

    #[test]
    fn every_rule_broken_is_named() {
        let cases: [(Vec<u8>, u32, &str); 16] = [
            (frame(DATA, 0, 0, b"x"), PROTOCOL_ERROR, "DATA on stream 0"),
            (frame(SETTINGS, 0, 1, &[]), PROTOCOL_ERROR, "SETTINGS on a stream other than 0"),
            (frame(PING, 0, 0, &[0; 7]), FRAME_SIZE_ERROR, "PING not of 8 octets"),
            (frame(SETTINGS, 0, 0, &[0; 5]), FRAME_SIZE_ERROR, "SETTINGS not a multiple of 6 octets"),
            (frame(SETTINGS, ACK, 0, &[0; 6]), FRAME_SIZE_ERROR, "SETTINGS acknowledgement with a payload"),
            (frame(SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 2]), PROTOCOL_ERROR, "ENABLE_PUSH neither 0 nor 1"),
            (frame(SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]), FLOW_CONTROL_ERROR, "INITIAL_WINDOW_SIZE above"),
            (frame(SETTINGS, 0, 0, &[0, 5, 0, 0, 0x10, 0]), PROTOCOL_ERROR, "MAX_FRAME_SIZE outside"),
            (frame(RST_STREAM, 0, 1, &[0; 3]), FRAME_SIZE_ERROR, "RST_STREAM not of 4 octets"),
            (frame(WINDOW_UPDATE, 0, 1, &[0; 4]), PROTOCOL_ERROR, "WINDOW_UPDATE of 0"),
            (frame(WINDOW_UPDATE, 0, 0, &[0; 5]), FRAME_SIZE_ERROR, "WINDOW_UPDATE not of 4 octets"),
            (frame(GOAWAY, 0, 0, &[0; 7]), FRAME_SIZE_ERROR, "GOAWAY shorter than 8 octets"),
            (frame(PRIORITY, 0, 1, &[0; 4]), FRAME_SIZE_ERROR, "PRIORITY not of 5 octets"),
            (frame(DATA, PADDED, 1, &[2, 0]), PROTOCOL_ERROR, "DATA with padding as long as it"),
            (
                frame(HEADERS, PRIORITY_FLAG, 1, &[0; 4]),
                FRAME_SIZE_ERROR,
                "HEADERS too short for its priority",
            ),
            (frame(CONTINUATION, 0, 0, &[]), PROTOCOL_ERROR, "CONTINUATION on stream 0"),
        ];
        for (bytes, code, words) in cases {
            let e = parse(&bytes, DEFAULT_MAX_FRAME).unwrap_err();
            assert_eq!(e.code, code, "{e}");
            assert!(e.to_string().contains(words), "{e} lacks '{words}'");
        }
        let big = frame(DATA, 0, 1, &[0; 20]);
        let e = parse(&big, 16).unwrap_err();
        assert_eq!(e.to_string(), "HTTP/2 FRAME_SIZE_ERROR: DATA larger than SETTINGS_MAX_FRAME_SIZE");
        // Too large is known from the head alone: no waiting for a payload that may never end.
        assert_eq!(parse(&big[..9], 16).unwrap_err().code, FRAME_SIZE_ERROR);
        assert_eq!(code_name(0xb), "ENHANCE_YOUR_CALM");
    }

    /// A header block in three pieces is whole at its END_HEADERS; one in one piece is
    /// borrowed as it is; another frame in the middle, a CONTINUATION of nothing or of another
    /// stream, and a block past the limit are each refused (§6.10).
    #[test]
    fn header_blocks_are_assembled_from_their_pieces_and_nothing_else() {
        let headers = |end_headers, block| Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers,
            block,
            padding: 0,
            dependency: None,
        };
        let more = |stream, end_headers, block| Frame::Continuation { stream, end_headers, block };
        let mut b = Blocks::default();
        let whole = b.add(&headers(true, b"abc"), 10).unwrap().unwrap();
        assert!(matches!(whole.bytes, std::borrow::Cow::Borrowed(b"abc")));
        assert_eq!(b.add(&headers(false, b"ab"), 10), Ok(None));
        assert!(b.is_open());
        assert_eq!(b.add(&more(1, false, b"cd"), 10), Ok(None));
        let ping = Frame::Ping { ack: false, data: [0; 8] };
        assert_eq!(b.check(&ping), Err(BlockError::Interleaved("PING")));
        assert_eq!(b.check(&more(3, true, b"")), Err(BlockError::Interleaved("CONTINUATION")));
        let done = b.add(&more(1, true, b"ef"), 10).unwrap().unwrap();
        assert_eq!((done.stream, done.end_stream, &done.bytes[..]), (1, true, &b"abcdef"[..]));
        assert!(!b.is_open());
        assert_eq!(b.add(&more(1, true, b"x"), 10), Err(BlockError::Stray));
        assert_eq!(b.add(&headers(false, b"0123456789"), 10), Ok(None));
        assert_eq!(b.add(&more(1, false, b"x"), 10), Err(BlockError::TooLarge));
    }
}
