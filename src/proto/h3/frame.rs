//! HTTP/3's frames (RFC 9114 §7) and QUIC's variable-length integers (RFC 9000 §16), sans-IO:
//! a frame is a type and a length, each a varint, then its payload. Parsed frames borrow their
//! payload; each rule of §7.2 a frame can break is named with its error code.
//!
//! What differs from HTTP/2's framing (`proto::h2::frame`): no stream id (QUIC's streams carry
//! the frames of one request each), no flags (a request ends with its stream's FIN), and a
//! frame head of 2 octets for a small frame (HTTP/2's is always 9).

/// The frame types this side knows (§7.2); HTTP/2's types that HTTP/3 reserves (0x02, 0x06,
/// 0x08, 0x09) are errors, any other unknown type is skipped (§9).
pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (§6.2; RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x00;
pub const PUSH_STREAM: u64 = 0x01;
pub const QPACK_ENCODER_STREAM: u64 = 0x02;
pub const QPACK_DECODER_STREAM: u64 = 0x03;

/// SETTINGS parameters (§7.2.4.1; RFC 9204 §5).
pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// Error codes (§8.1; RFC 9204 §6).
pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub const H3_INTERNAL_ERROR: u64 = 0x102;
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_SETTINGS_ERROR: u64 = 0x109;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_REQUEST_INCOMPLETE: u64 = 0x10d;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// The largest value a varint holds: 2^62 − 1.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// An error code's name (RFC 9114 §8.1, RFC 9204 §6), as a stream reset or a connection close
/// carries it.
pub fn code_name(code: u64) -> &'static str {
    match code {
        H3_NO_ERROR => "H3_NO_ERROR",
        H3_GENERAL_PROTOCOL_ERROR => "H3_GENERAL_PROTOCOL_ERROR",
        H3_INTERNAL_ERROR => "H3_INTERNAL_ERROR",
        H3_STREAM_CREATION_ERROR => "H3_STREAM_CREATION_ERROR",
        H3_CLOSED_CRITICAL_STREAM => "H3_CLOSED_CRITICAL_STREAM",
        H3_FRAME_UNEXPECTED => "H3_FRAME_UNEXPECTED",
        H3_FRAME_ERROR => "H3_FRAME_ERROR",
        H3_EXCESSIVE_LOAD => "H3_EXCESSIVE_LOAD",
        H3_ID_ERROR => "H3_ID_ERROR",
        H3_SETTINGS_ERROR => "H3_SETTINGS_ERROR",
        H3_MISSING_SETTINGS => "H3_MISSING_SETTINGS",
        H3_REQUEST_REJECTED => "H3_REQUEST_REJECTED",
        H3_REQUEST_CANCELLED => "H3_REQUEST_CANCELLED",
        H3_REQUEST_INCOMPLETE => "H3_REQUEST_INCOMPLETE",
        H3_MESSAGE_ERROR => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        QPACK_DECOMPRESSION_FAILED => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => "an unknown error code",
    }
}

/// A frame that breaks RFC 9114: the error code it calls for and what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A frame of a type HTTP/3 reserves (HTTP/2's PRIORITY, PING, WINDOW_UPDATE,
    /// CONTINUATION): H3_FRAME_UNEXPECTED.
    #[error("HTTP/3 H3_FRAME_UNEXPECTED: frame type {0:#x} is HTTP/2's, reserved in HTTP/3")]
    Reserved(u64),
    /// A frame longer than the receiver accepts (its payload would be held whole):
    /// H3_EXCESSIVE_LOAD.
    #[error("HTTP/3 H3_EXCESSIVE_LOAD: a {kind} frame of {len} bytes, over the {max} accepted")]
    TooLong { kind: &'static str, len: u64, max: u64 },
    /// A frame whose payload does not parse as its type says (a SETTINGS cut mid-parameter, a
    /// GOAWAY with bytes after its id): H3_FRAME_ERROR.
    #[error("HTTP/3 H3_FRAME_ERROR: a malformed {0} frame")]
    Malformed(&'static str),
}

impl Error {
    /// The error code it calls for.
    pub fn code(&self) -> u64 {
        match self {
            Error::Reserved(_) => H3_FRAME_UNEXPECTED,
            Error::TooLong { .. } => H3_EXCESSIVE_LOAD,
            Error::Malformed(_) => H3_FRAME_ERROR,
        }
    }
}

/// Append `value` as a varint of the fewest octets (1, 2, 4 or 8: the top two bits say which).
/// Values past 2^62 − 1 cannot be encoded: they are clamped (no length here comes near).
pub fn write_varint(out: &mut Vec<u8>, value: u64) {
    let v = value.min(MAX_VARINT);
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16_384..=1_073_741_823 => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// The octets `value` takes as a varint.
pub fn varint_len(value: u64) -> usize {
    match value {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// A varint at the start of `input` and the octets it took; `None`: cut short.
pub fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let len = 1usize << (first >> 6);
    let bytes = input.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        value = value << 8 | u64::from(b);
    }
    Some((value, len))
}

/// One whole frame, borrowing its payload from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Data(&'a [u8]),
    /// An encoded field section (QPACK).
    Headers(&'a [u8]),
    /// Its parameters, as (identifier, value) varint pairs: read them with [`settings`].
    Settings(&'a [u8]),
    /// The stream id (from a server) or push id (from a client) after which no more is taken.
    GoAway(u64),
    CancelPush(u64),
    MaxPushId(u64),
    PushPromise(&'a [u8]),
    /// A type this side does not know (an extension, or a reserved "grease" type): skipped.
    Unknown {
        kind: u64,
    },
}

impl Frame<'_> {
    /// The frame type's name, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            Frame::Data(_) => "DATA",
            Frame::Headers(_) => "HEADERS",
            Frame::Settings(_) => "SETTINGS",
            Frame::GoAway(_) => "GOAWAY",
            Frame::CancelPush(_) => "CANCEL_PUSH",
            Frame::MaxPushId(_) => "MAX_PUSH_ID",
            Frame::PushPromise(_) => "PUSH_PROMISE",
            Frame::Unknown { .. } => "an unknown frame",
        }
    }
}

/// A frame type's name by its number.
fn type_name(kind: u64) -> &'static str {
    match kind {
        DATA => "DATA",
        HEADERS => "HEADERS",
        SETTINGS => "SETTINGS",
        GOAWAY => "GOAWAY",
        CANCEL_PUSH => "CANCEL_PUSH",
        MAX_PUSH_ID => "MAX_PUSH_ID",
        PUSH_PROMISE => "PUSH_PROMISE",
        _ => "unknown",
    }
}

/// The frame at the start of `input` and the octets it took; `Ok(None)`: not whole yet. A frame
/// whose payload is over `max` octets is refused before it arrives whole (`DATA` too: a
/// receiver that streams DATA parses its head with [`parse_head`] instead).
pub fn parse(input: &[u8], max: u64) -> Result<Option<(Frame<'_>, usize)>, Error> {
    let Some((kind, len, head)) = parse_head(input)? else { return Ok(None) };
    if len > max {
        return Err(Error::TooLong { kind: type_name(kind), len, max });
    }
    let end = head + len as usize;
    let Some(payload) = input.get(head..end) else { return Ok(None) };
    let single = |name| match read_varint(payload) {
        Some((v, used)) if used == payload.len() => Ok(v),
        _ => Err(Error::Malformed(name)),
    };
    let frame = match kind {
        DATA => Frame::Data(payload),
        HEADERS => Frame::Headers(payload),
        SETTINGS => {
            settings(payload).try_for_each(|p| p.map(|_| ()))?;
            Frame::Settings(payload)
        }
        GOAWAY => Frame::GoAway(single("GOAWAY")?),
        CANCEL_PUSH => Frame::CancelPush(single("CANCEL_PUSH")?),
        MAX_PUSH_ID => Frame::MaxPushId(single("MAX_PUSH_ID")?),
        PUSH_PROMISE => Frame::PushPromise(payload),
        _ => Frame::Unknown { kind },
    };
    Ok(Some((frame, end)))
}

/// Whether HTTP/3 defines frame type `kind` (an unknown one is skipped, whatever its length).
pub fn is_known(kind: u64) -> bool {
    matches!(kind, DATA | HEADERS | CANCEL_PUSH | SETTINGS | PUSH_PROMISE | GOAWAY | MAX_PUSH_ID)
}

/// A frame's type and payload length, and the octets its head took; `Ok(None)`: the head is
/// not whole yet. Reserved types are refused here.
pub fn parse_head(input: &[u8]) -> Result<Option<(u64, u64, usize)>, Error> {
    let Some((kind, a)) = read_varint(input) else { return Ok(None) };
    let Some((len, b)) = read_varint(&input[a..]) else { return Ok(None) };
    if matches!(kind, 0x02 | 0x06 | 0x08 | 0x09) {
        return Err(Error::Reserved(kind));
    }
    Ok(Some((kind, len, a + b)))
}

/// A SETTINGS frame's parameters, each (identifier, value); a parameter cut short is an error.
pub fn settings(payload: &[u8]) -> impl Iterator<Item = Result<(u64, u64), Error>> + '_ {
    let mut rest = payload;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let pair = read_varint(rest).and_then(|(id, a)| read_varint(&rest[a..]).map(|(v, b)| (id, v, a + b)));
        match pair {
            Some((id, value, used)) => {
                rest = &rest[used..];
                Some(Ok((id, value)))
            }
            None => {
                rest = &[];
                Some(Err(Error::Malformed("SETTINGS")))
            }
        }
    })
}

/// Append a frame's head: its type and its payload's length.
pub fn write_head(out: &mut Vec<u8>, kind: u64, len: usize) {
    write_varint(out, kind);
    write_varint(out, len as u64);
}

/// Append a frame of `kind` around `payload`.
pub fn write_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    write_head(out, kind, payload.len());
    out.extend_from_slice(payload);
}

/// Append the start of a control stream (§6.2.1): its type, then SETTINGS — a QPACK dynamic
/// table of capacity 0, no blocked streams, and the field section size accepted — as both
/// of this side's roles announce them.
pub fn write_control_stream(out: &mut Vec<u8>, max_field_section: u64) {
    write_varint(out, CONTROL_STREAM);
    write_settings(
        out,
        &[
            (QPACK_MAX_TABLE_CAPACITY, 0),
            (QPACK_BLOCKED_STREAMS, 0),
            (MAX_FIELD_SECTION_SIZE, max_field_section),
        ],
    );
}

/// Append a SETTINGS frame of these parameters.
pub fn write_settings(out: &mut Vec<u8>, params: &[(u64, u64)]) {
    let mut payload = Vec::with_capacity(params.len() * 4);
    for &(id, value) in params {
        write_varint(&mut payload, id);
        write_varint(&mut payload, value);
    }
    write_frame(out, SETTINGS, &payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 §A.1's sample varints, both ways.
    #[test]
    fn varints_are_rfc_9000s_examples() {
        let samples: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in samples {
            assert_eq!(read_varint(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(varint_len(value), bytes.len());
        }
        // §A.1: 0x4025 is 37 too, in two octets (not the shortest, still valid).
        assert_eq!(read_varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(read_varint(&[0x9d, 0x7f]), None, "cut short");
    }

    /// Frames by hand: DATA of 3 octets is 00 03 + the octets; HEADERS likewise with type 01;
    /// SETTINGS (04) of QPACK_MAX_TABLE_CAPACITY 0 and MAX_FIELD_SECTION_SIZE 16,384 (past
    /// 16,383: a four-octet varint) is 04 07 01 00 06 80 00 40 00; GOAWAY (07) of stream 4 is
    /// 07 01 04; an unknown type is kept as such.
    #[test]
    fn frames_by_hand() {
        let mut out = Vec::new();
        write_frame(&mut out, DATA, b"abc");
        write_frame(&mut out, HEADERS, b"\x00\x00\xd1");
        write_settings(&mut out, &[(QPACK_MAX_TABLE_CAPACITY, 0), (MAX_FIELD_SECTION_SIZE, 16_384)]);
        write_frame(&mut out, GOAWAY, &[4]);
        write_frame(&mut out, 0x21, b"grease");
        assert_eq!(
            out,
            [
                &[0x00, 0x03][..],
                b"abc",
                &[0x01, 0x03, 0x00, 0x00, 0xd1],
                &[0x04, 0x07, 0x01, 0x00, 0x06, 0x80, 0x00, 0x40, 0x00],
                &[0x07, 0x01, 0x04],
                &[0x21, 0x06],
                b"grease",
            ]
            .concat()
        );
        let mut rest = &out[..];
        let mut seen = Vec::new();
        while let Some((f, used)) = parse(rest, 1 << 20).unwrap() {
            seen.push(f);
            rest = &rest[used..];
        }
        assert!(rest.is_empty());
        assert_eq!(seen.len(), 5);
        assert_eq!(seen[0], Frame::Data(b"abc"));
        assert_eq!(seen[3], Frame::GoAway(4));
        assert_eq!(seen[4], Frame::Unknown { kind: 0x21 });
        let Frame::Settings(params) = seen[2] else { panic!("{:?}", seen[2]) };
        let params: Vec<_> = settings(params).map(Result::unwrap).collect();
        assert_eq!(params, [(QPACK_MAX_TABLE_CAPACITY, 0), (MAX_FIELD_SECTION_SIZE, 16_384)]);
        // Any cut of the whole is "not yet", never an error or a wrong frame.
        for cut in 0..out.len() {
            if let Some((_, used)) = parse(&out[..cut], 1 << 20).unwrap() {
                assert!(used <= cut);
            }
        }
    }

    /// HTTP/2's frame types are errors here; a frame over the limit is refused before it is
    /// whole; a GOAWAY with bytes after its id, and a SETTINGS cut mid-parameter, are malformed.
    #[test]
    fn what_http3_refuses() {
        assert_eq!(parse(&[0x08, 0x04, 0, 0, 0, 1], 100), Err(Error::Reserved(0x08)));
        assert_eq!(Error::Reserved(8).code(), H3_FRAME_UNEXPECTED);
        let err = parse(&[0x00, 0x44, 0x00], 100);
        assert_eq!(err, Err(Error::TooLong { kind: "DATA", len: 1024, max: 100 }));
        assert_eq!(parse(&[0x07, 0x02, 0x04, 0x00], 100), Err(Error::Malformed("GOAWAY")));
        assert_eq!(parse(&[0x04, 0x01, 0x06], 100), Err(Error::Malformed("SETTINGS")));
        assert_eq!(code_name(H3_REQUEST_REJECTED), "H3_REQUEST_REJECTED");
    }
}
