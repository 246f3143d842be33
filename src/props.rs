//! Properties every codec keeps, whatever bytes a peer sends and however the socket splits
//! them: a decoder never claims more bytes than it was given, never reports a whole message of
//! zero bytes (an engine would spin on it), and decodes a stream split anywhere exactly as it
//! decodes it whole — up to where an answer's parts end: its parts that arrived together may
//! come as one message (HTTP/2's HEADERS and DATA), so the parts of one operation are joined
//! to the message that follows them before two streams are compared. `cargo test` checks them on seeded random and mutated streams and replays
//! the fuzz corpus (`tests/decoders_random.rs`); the cargo-fuzz targets in `fuzz/` check them on
//! whatever the fuzzer finds. A violation panics, saying what differed.

use crate::clock::Instant;
use crate::codec::{Awaiting, ClientCodec, CodecError, Decoded, Outcome, ServerCodec};
use crate::engine::serve_conn::{ServerConn, ServerLimits};
use crate::outcome::ErrorClass;
use crate::stats::ServerTally;

/// What a client codec made of a stream from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTrace {
    /// The handshake answer's length, if the handshake completed.
    pub handshake: Option<usize>,
    /// Every whole message: its length, what it meant, and the operation it named; an
    /// operation's parts ([`Outcome::OpPart`]) joined to the message of it that follows.
    pub messages: Vec<(usize, Outcome, Option<u64>)>,
    /// Bytes of control replies the codec queued (pongs, NOPs; masks differ, lengths do not).
    pub replies: usize,
    /// Bytes of operations the codec sent later, as the peer made room (`op_more`: an HTTP/2
    /// body under flow control), with the operations they belonged to.
    pub more: Vec<(u64, bool, usize)>,
    /// How the stream ended: a protocol error, the peer closing (the codec said so), or the
    /// end of the bytes with what `decode_eof` made of the rest.
    pub end: ClientEnd,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEnd {
    Error(Broke),
    PeerClosing,
    Eof(Result<Option<(usize, Outcome)>, Broke>),
}

/// A codec's error as the engine sees it: its class and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broke {
    pub class: ErrorClass,
    pub text: String,
}

impl Broke {
    fn of(e: impl CodecError) -> Broke {
        Broke { class: e.class(), text: e.to_string() }
    }
}

/// Where to cut `len` bytes, chosen by `seed` (a fuzzer's bytes): up to one cut per seed byte.
pub fn cuts_from(seed: &[u8], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = seed.iter().map(|&b| b as usize * len / 256).filter(|&c| c > 0).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The pieces of `stream` between `cuts` (sorted offsets), as reads would return them.
pub fn pieces<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().filter(|&&c| c > 0 && c < stream.len()) {
        out.push(&stream[from..cut]);
        from = cut;
    }
    out.push(&stream[from..]);
    out
}

/// Operations a decoded client connection keeps in flight.
pub const IN_FLIGHT: usize = 4;
/// The most pieces of bodies asked for after one message (none of the codecs' streams comes
/// near it; a codec that gave more would show as a difference, not a hang).
const MORE_PIECES: usize = 4096;

/// Decode `stream` with a fresh clone of `prototype`, fed in pieces cut where `seed` says
/// ([`cuts_from`]; an empty seed: whole), as the connection machine feeds it: the handshake
/// first (its answer, `answer(request)`, leads the stream), then every whole message after
/// each read; with [`IN_FLIGHT`] operations encoded once the handshake is done and one more
/// after each that completes, as the engine keeps a connection's pipeline full.
pub fn decode_client<C: ClientCodec>(
    prototype: &C,
    answer: &dyn Fn(&[u8]) -> Vec<u8>,
    stream: &[u8],
    seed: &[u8],
) -> ClientTrace {
    let mut codec = prototype.clone();
    let mut request = Vec::new();
    codec.handshake(&mut request);
    let mut input = if request.is_empty() { Vec::new() } else { answer(&request) };
    input.extend_from_slice(stream);
    let mut trace = ClientTrace {
        handshake: None,
        messages: Vec::new(),
        replies: 0,
        more: Vec::new(),
        end: ClientEnd::PeerClosing,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut replies = Vec::new();
    let mut handshake_bytes = 0;
    let mut encoded = 0;
    // A codec whose handshake needs no answer is done before any byte arrives.
    if request.is_empty() {
        trace.handshake = Some(0);
    } else if let Ok(Decoded::Done { consumed, .. }) = codec.decode_handshake(&[], &mut Vec::new()) {
        trace.handshake = Some(consumed);
    }
    // The handshake answer is cut too: the split must not matter there either.
    for piece in pieces(&input, &cuts_from(seed, input.len())) {
        buf.extend_from_slice(piece);
        // Decoded messages and handshake steps are passed over, not drained one by one, and
        // the buffer compacted once per piece: a stream of a million two-byte frames made this
        // harness quadratic (CI's fuzzing hit inputs of 50 s in client_ws, then 32 s in
        // client_sio's handshake, each a stream of tiny WebSocket frames).
        let mut start = 0;
        if !handshake_steps(&mut codec, &buf, &mut start, &mut handshake_bytes, &mut trace) {
            return trace;
        }
        if trace.handshake.is_none() {
            buf.drain(..start);
            continue;
        }
        while encoded < IN_FLIGHT {
            codec.encode_op(0, &mut Vec::new());
            encoded += 1;
        }
        if let Some(end) = op_messages(&mut codec, &buf, &mut start, &mut replies, &mut trace) {
            trace.replies = replies.len();
            trace.end = end;
            return trace;
        }
        buf.drain(..start);
    }
    trace.replies = replies.len();
    if trace.handshake.is_none() {
        trace.end = ClientEnd::Eof(Ok(None));
        return trace;
    }
    trace.end = ClientEnd::Eof(match codec.decode_eof(&buf) {
        Ok(Decoded::Partial) => Ok(None),
        Ok(Decoded::Done { consumed, outcome }) => {
            assert!(consumed <= buf.len(), "at end of stream claimed {consumed} of {} bytes", buf.len());
            Ok(Some((consumed, outcome)))
        }
        Err(e) => Err(Broke::of(e)),
    });
    trace
}

/// The handshake's steps in `buf` from `start` (a step that goes on is `Handshaking`), until
/// it is done or needs more. `false`: it failed (said in `trace.end`).
fn handshake_steps<C: ClientCodec>(
    codec: &mut C,
    buf: &[u8],
    start: &mut usize,
    handshake_bytes: &mut usize,
    trace: &mut ClientTrace,
) -> bool {
    while trace.handshake.is_none() {
        let rest = &buf[*start..];
        match codec.decode_handshake(rest, &mut Vec::new()) {
            Ok(Decoded::Partial) => break,
            Ok(Decoded::Done { consumed, outcome }) => {
                assert!(consumed <= rest.len(), "handshake claimed {consumed} of {} bytes", rest.len());
                *start += consumed;
                *handshake_bytes += consumed;
                if outcome != Outcome::Handshaking {
                    trace.handshake = Some(*handshake_bytes);
                } else {
                    assert!(consumed > 0, "a handshake step of zero bytes");
                }
            }
            Err(e) => {
                trace.end = ClientEnd::Error(Broke::of(e));
                return false;
            }
        }
    }
    true
}

/// The operations' messages in `buf` from `start`, each answered as the engine would (a new
/// operation for each one ended, the bodies it let go of asked for), until more bytes are
/// needed. `Some`: the stream ended there (the peer closing, or an error).
fn op_messages<C: ClientCodec>(
    codec: &mut C,
    buf: &[u8],
    start: &mut usize,
    replies: &mut Vec<u8>,
    trace: &mut ClientTrace,
) -> Option<ClientEnd> {
    loop {
        let rest = &buf[*start..];
        match codec.decode_op(rest, replies) {
            Ok(Decoded::Partial) => return None,
            Ok(Decoded::Done { consumed, outcome }) => {
                assert!(consumed > 0, "a whole message of zero bytes ({outcome:?}): the engine would spin");
                assert!(consumed <= rest.len(), "claimed {consumed} of {} bytes", rest.len());
                *start += consumed;
                let op = codec.answers_op();
                let mut len = consumed;
                if !matches!(outcome, Outcome::Control)
                    && let Some(&(part, Outcome::OpPart, of)) = trace.messages.last()
                    && of == op
                {
                    trace.messages.pop();
                    len += part;
                }
                trace.messages.push((len, outcome, op));
                if matches!(outcome, Outcome::Op | Outcome::OpFailed(_)) {
                    codec.encode_op(0, &mut Vec::new());
                }
                // What the message let go of bodies waiting for room, all of it (the engine
                // asks at most once per operation in flight and a few more each time it sends;
                // here the room left must not depend on how many messages came): bounded, as
                // each piece is at least an octet of a body under a window.
                for _ in 0..MORE_PIECES {
                    let mut piece = Vec::new();
                    let Some((op, last)) = codec.op_more(&mut piece) else { break };
                    assert!(!piece.is_empty(), "op_more gave operation {op} nothing");
                    trace.more.push((op, last, piece.len()));
                }
                if codec.peer_closing() {
                    return Some(ClientEnd::PeerClosing);
                }
            }
            Err(e) => return Some(ClientEnd::Error(Broke::of(e))),
        }
    }
}

/// The client property: `stream` decodes the same whole and cut where `seed` says.
pub fn client_splits_agree<C: ClientCodec>(
    prototype: &C,
    answer: &dyn Fn(&[u8]) -> Vec<u8>,
    stream: &[u8],
    seed: &[u8],
) {
    let whole = decode_client(prototype, answer, stream, &[]);
    let split = decode_client(prototype, answer, stream, seed);
    assert_eq!(whole, split, "the same stream, whole and cut by seed {seed:?}");
}

/// What a built-in server made of a stream from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTrace {
    /// Everything it wrote.
    pub out: Vec<u8>,
    pub requests: u64,
    pub messages: u64,
    /// It closed the connection, after reading this many bytes of the stream.
    pub closed_after: Option<usize>,
    pub awaiting: Awaiting,
}

/// How a piece of a client's stream reaches the server's connection machine: each way one of
/// the engines delivers bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Read into the machine's own buffer (`read_buf`, `received`: the async engines, which
    /// read only once their answers are written).
    Read,
    /// Answered where it lies (`serve_from`: the `uring` engine's provided buffers, when the
    /// connection is free to answer).
    InPlace,
    /// Arrived while the answers to earlier pieces were being written (`arrived`: the `uring`
    /// engine's receive stays armed); they are answered, a batch at a time, once the write is
    /// done — when a piece that is not `WhileWriting` comes, or the stream ends.
    WhileWriting,
}

/// Where a stream is cut and how each piece arrives: pieces of these sizes, arriving these
/// ways, in turn (the list cycled until the stream ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrivals(pub Vec<(usize, How)>);

impl Arrivals {
    /// The whole stream at once, answered a batch at a time (the reference every other way
    /// of arriving must agree with).
    pub fn whole() -> Arrivals {
        Arrivals(vec![(usize::MAX, How::WhileWriting)])
    }

    /// From a fuzzer's bytes: three per piece, a size (16 bits, 0 for 65,536) and a way.
    pub fn from_bytes(bytes: &[u8]) -> Arrivals {
        let pieces = bytes
            .chunks_exact(3)
            .map(|c| {
                let size = match usize::from(u16::from_le_bytes([c[0], c[1]])) {
                    0 => 1 << 16,
                    n => n,
                };
                let how = [How::Read, How::InPlace, How::WhileWriting][usize::from(c[2] % 3)];
                (size, how)
            })
            .collect::<Vec<_>>();
        if pieces.is_empty() { Arrivals::whole() } else { Arrivals(pieces) }
    }

    pub fn pieces<'a>(&'a self, stream: &'a [u8]) -> impl Iterator<Item = (&'a [u8], How)> + 'a {
        let mut rest = stream;
        self.0.iter().cycle().map_while(move |&(size, how)| {
            if rest.is_empty() {
                return None;
            }
            let (piece, after) = rest.split_at(size.min(rest.len()));
            rest = after;
            Some((piece, how))
        })
    }
}

/// Feed `stream` to a server connection machine around a fresh clone of `prototype`, cut and
/// delivered as `arrivals` says, as the engines feed it: a read never larger than the buffer
/// offers, bytes that come while answers are being written kept until the write is done and
/// then answered in batches ([`ServerConn::serve_arrived`]).
pub fn serve_stream<S: ServerCodec>(prototype: &S, stream: &[u8], arrivals: &Arrivals) -> ServerTrace {
    let now = Instant::now();
    let mut conn = ServerConn::new(prototype.clone(), ServerLimits::default(), now);
    let mut tally = ServerTally::default();
    let mut trace = ServerTrace {
        out: Vec::new(),
        requests: 0,
        messages: 0,
        closed_after: None,
        awaiting: Awaiting::Request,
    };
    let mut fed = 0;
    // Answers are being written: their write completes when the next piece does not come
    // while writing.
    let mut writing = false;
    for (piece, how) in arrivals.pieces(stream) {
        if writing && how != How::WhileWriting {
            writing = false;
            if write_then_serve_arrived(&mut conn, &mut trace, &mut tally) {
                trace.closed_after = Some(fed);
                return finish(trace, &tally);
            }
        }
        let fits = match how {
            How::WhileWriting if writing => conn.arrived(piece, &mut tally),
            How::WhileWriting | How::InPlace => conn.serve_from(piece, now, 0, &mut tally),
            How::Read => {
                let mut rest = piece;
                while !rest.is_empty() {
                    let Some(buf) = conn.read_buf() else { break };
                    let n = buf.len().min(rest.len());
                    buf[..n].copy_from_slice(&rest[..n]);
                    conn.received(n, now, 0, &mut tally);
                    rest = &rest[n..];
                    if conn.closing() {
                        break;
                    }
                    if !conn.to_write().is_empty() && !rest.is_empty() {
                        // An async engine writes before it reads again.
                        if write_then_serve_arrived(&mut conn, &mut trace, &mut tally) {
                            break;
                        }
                    }
                }
                rest.is_empty() || conn.closing()
            }
        };
        fed += piece.len();
        trace.awaiting = conn.awaiting();
        if !fits {
            trace.closed_after = Some(fed);
            return finish(trace, &tally);
        }
        if !conn.to_write().is_empty() {
            writing = true;
        } else if conn.closing() {
            trace.closed_after = Some(fed);
            return finish(trace, &tally);
        }
    }
    if write_then_serve_arrived(&mut conn, &mut trace, &mut tally) {
        trace.closed_after = Some(fed);
    }
    trace.awaiting = conn.awaiting();
    finish(trace, &tally)
}

/// The answers are written; what arrived meanwhile is answered a batch at a time, each batch
/// written before the next (as the `uring` engine does). `true`: the connection closes.
fn write_then_serve_arrived<S: ServerCodec>(
    conn: &mut ServerConn<S>,
    trace: &mut ServerTrace,
    tally: &mut ServerTally,
) -> bool {
    let now = Instant::now();
    // Bounded: every batch that says more is left used some of the input.
    loop {
        trace.out.extend_from_slice(conn.to_write());
        conn.written(now, tally);
        if conn.closing() {
            return true;
        }
        if !conn.has_arrived() {
            return false;
        }
        let more = conn.serve_arrived(now, 0, tally);
        if !more && conn.to_write().is_empty() {
            return conn.closing();
        }
    }
}

fn finish(mut trace: ServerTrace, tally: &ServerTally) -> ServerTrace {
    trace.requests = tally.requests;
    trace.messages = tally.messages;
    assert_eq!(tally.tx, trace.out.len() as u64, "the tally counts what was written");
    trace
}

/// The server property: `stream` is answered the same whole and delivered as `arrivals` says
/// (and closed or not alike; how much was read before a close depends on the reads).
pub fn server_splits_agree<S: ServerCodec>(prototype: &S, stream: &[u8], arrivals: &Arrivals) {
    let whole = serve_stream(prototype, stream, &Arrivals::whole());
    let split = serve_stream(prototype, stream, arrivals);
    // After a close, what the connection would have waited for means nothing.
    let comparable = |t: &ServerTrace| {
        let awaiting = if t.closed_after.is_some() { Awaiting::Request } else { t.awaiting };
        ServerTrace { closed_after: None, awaiting, ..t.clone() }
    };
    let same = comparable(&whole) == comparable(&split);
    if !same || whole.closed_after.is_some() != split.closed_after.is_some() {
        let short = |t: &ServerTrace| {
            format!(
                "{} bytes out ({:?}…), {} requests, {} messages, closed after {:?}, awaiting {:?}",
                t.out.len(),
                String::from_utf8_lossy(&t.out[..t.out.len().min(120)]),
                t.requests,
                t.messages,
                t.closed_after,
                t.awaiting
            )
        };
        panic!(
            "the same stream of {} bytes, whole and delivered as {:?}:\n whole {}\n split {}",
            stream.len(),
            &arrivals.0[..arrivals.0.len().min(8)],
            short(&whole),
            short(&split)
        );
    }
}

/// Streams at most this long are built from a fuzzer's input ([`expand`]): past every buffer
/// and batch of the servers (64 KiB batches, 1 MiB heads, 4 KiB reads).
pub const MAX_STREAM: usize = 2 << 20;
/// The escape byte of [`expand`]'s input.
const ESCAPE: u8 = 0xFE;

/// A stream from a fuzzer's input, so that a few bytes can stand for a megabyte: `0xFE 0` is
/// a literal `0xFE`; `0xFE L C0 C1` repeats the last `L` bytes `C` times (`C` little-endian);
/// any other byte stands for itself. At most [`MAX_STREAM`] bytes.
pub fn expand(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() && out.len() < MAX_STREAM {
        if input[i] != ESCAPE {
            out.push(input[i]);
            i += 1;
            continue;
        }
        match (input.get(i + 1), input.get(i + 2..i + 4)) {
            (Some(0), _) => {
                out.push(ESCAPE);
                i += 2;
            }
            (Some(&len), Some(&[c0, c1])) => {
                let len = usize::from(len).min(out.len());
                let times = usize::from(u16::from_le_bytes([c0, c1]));
                let from = out.len() - len;
                for _ in 0..times {
                    if len == 0 || out.len() + len > MAX_STREAM {
                        break;
                    }
                    out.extend_from_within(from..from + len);
                }
                i += 4;
            }
            _ => {
                out.push(ESCAPE);
                i += 1;
            }
        }
    }
    out.truncate(MAX_STREAM);
    out
}

/// The input [`expand`] turns into `stream` byte for byte (escape bytes escaped).
pub fn literal(stream: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stream.len());
    for &b in stream {
        out.push(b);
        if b == ESCAPE {
            out.push(0);
        }
    }
    out
}

/// An input for [`expand`] that repeats `unit` `times` times.
pub fn repeated(unit: &[u8], times: u16) -> Vec<u8> {
    assert!(!unit.is_empty() && unit.len() <= 255 && !unit.contains(&ESCAPE));
    let mut out = unit.to_vec();
    out.extend_from_slice(&[ESCAPE, unit.len() as u8]);
    out.extend_from_slice(&times.saturating_sub(1).to_le_bytes());
    out
}

/// A fuzz target: the codec and the property it checks on arbitrary bytes. Each protocol's
/// module lists its own (`proto::*::fuzz::TARGETS`); the registry gathers them.
pub type Target = fn(&[u8]);

/// A client target's input: its first byte says how many seed bytes follow (low 3 bits); the
/// rest is the stream, [`expand`]ed.
pub fn split_input(data: &[u8]) -> (&[u8], Vec<u8>) {
    let Some((&first, rest)) = data.split_first() else { return (&[], Vec::new()) };
    let n = usize::from(first & 7).min(rest.len());
    (&rest[..n], expand(&rest[n..]))
}

/// A server target's input: its first byte says whether a valid handshake leads the stream
/// (top bit) and how many arrivals follow (low 3 bits, three bytes each: [`Arrivals`]); the
/// rest is the stream, [`expand`]ed.
pub fn server_input(data: &[u8]) -> (Arrivals, Vec<u8>, bool) {
    let Some((&first, rest)) = data.split_first() else { return (Arrivals::whole(), Vec::new(), false) };
    let n = (3 * usize::from(first & 7)).min(rest.len());
    (Arrivals::from_bytes(&rest[..n]), expand(&rest[n..]), first & 0x80 != 0)
}

/// A server target's input for `stream` (given as [`expand`] reads it) delivered as `arrivals`
/// says (at most 7 of them), led by the target's handshake when `lead`.
pub fn server_fuzz_input(arrivals: &[(u16, How)], lead: bool, stream: &[u8]) -> Vec<u8> {
    let arrivals = &arrivals[..arrivals.len().min(7)];
    let mut input = vec![(u8::from(lead) << 7) | arrivals.len() as u8];
    for &(size, how) in arrivals {
        input.extend_from_slice(&size.to_le_bytes());
        input.push(how as u8);
    }
    input.extend_from_slice(stream);
    input
}

/// The server's answer a client connection needs before operations, where it needs none
/// (HTTP).
pub fn no_answer(_: &[u8]) -> Vec<u8> {
    Vec::new()
}

/// `prefix` (a valid handshake) before `stream` when `lead`.
pub fn with_prefix(prefix: &[u8], stream: &[u8], lead: bool) -> Vec<u8> {
    if lead { [prefix, stream].concat() } else { stream.to_vec() }
}
