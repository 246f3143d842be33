//! WebSocket (RFC 6455): the client's checked upgrade, masked frames and echo decoding, and
//! the built-in echo server.
//!
//! An operation is one data message out and its echo back. A client frame is 2 header bytes,
//! 2 or 8 more for lengths over 125 and 65535, a 4-byte mask key, then the masked payload: a
//! 500-byte message is 2 + 2 + 4 + 500 = 508 bytes, its unmasked echo 504. The upgrade is
//! handshake traffic; pings, pongs and closes are control traffic.

use super::http1::{self, RequestSpec};
use super::{Awaiting, ClientCodec, Decoded, Outcome, ProtoError, Served, ServerCodec};
use base64::Engine as _;
use sha1::{Digest, Sha1};
use std::sync::Arc;

const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;
/// Close codes the echo server sends.
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_TOO_BIG: u16 = 1009;
/// The echo server's default `--max-message`.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The client refuses server frames larger than this (they are held whole in the read buffer).
const CLIENT_MAX_FRAME: u64 = 64 * 1024 * 1024;

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(GUID);
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// Append a frame header (FIN set) for `len` payload bytes, with `mask` when a client sends.
pub fn write_header(out: &mut Vec<u8>, opcode: u8, len: usize, mask: Option<[u8; 4]>) {
    out.push(0x80 | opcode);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match len {
        0..=125 => out.push(mask_bit | len as u8),
        126..=65535 => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    if let Some(key) = mask {
        out.extend_from_slice(&key);
    }
}

/// Append a whole frame, masked with `mask` when a client sends it.
pub fn write_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    let key = mask;
    write_header(out, opcode, payload.len(), key);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = key {
        apply_mask(&mut out[start..], key, 0);
    }
}

/// XOR `data` with `key`, as if `data` started `offset` bytes into the payload.
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    // Eight bytes at a time with the key rotated to the offset and repeated, then the tail.
    let rotated: [u8; 4] = std::array::from_fn(|i| key[(offset + i) & 3]);
    let word = u64::from_ne_bytes([rotated, rotated].concat().try_into().expect("8 bytes"));
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes((&*chunk).try_into().expect("8 bytes")) ^ word;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= rotated[i & 3];
    }
}

/// A frame header parsed from the start of some input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    pub fin: bool,
    pub rsv: u8,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    pub len: u64,
    /// Header bytes (2 to 14).
    pub head_len: usize,
}

/// Parse a frame header; `None` if it has not all arrived.
pub fn parse_head(input: &[u8]) -> Option<FrameHead> {
    if input.len() < 2 {
        return None;
    }
    let (b0, b1) = (input[0], input[1]);
    let (mut len, mut pos) = (u64::from(b1 & 0x7f), 2);
    if len == 126 {
        len = u64::from(u16::from_be_bytes(input.get(2..4)?.try_into().ok()?));
        pos = 4;
    } else if len == 127 {
        len = u64::from_be_bytes(input.get(2..10)?.try_into().ok()?);
        pos = 10;
    }
    let mask = if b1 & 0x80 != 0 {
        let key: [u8; 4] = input.get(pos..pos + 4)?.try_into().ok()?;
        pos += 4;
        Some(key)
    } else {
        None
    };
    Some(FrameHead { fin: b0 & 0x80 != 0, rsv: (b0 >> 4) & 0x7, opcode: b0 & 0x0f, mask, len, head_len: pos })
}

/// What the client sends: the upgrade request's parts and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsSpec {
    pub host: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub message: Vec<u8>,
    pub text: bool,
}

/// The client: one value per connection (a fresh key per upgrade, a fresh mask per frame).
#[derive(Debug, Clone)]
pub struct WsClient {
    spec: Arc<WsSpec>,
    /// Keys and masks: seeded per connection by the engine (RFC 6455 asks for unpredictable
    /// masks; a seed from the OS per run gives that, a fixed one reproducible frames).
    rng: fastrand::Rng,
    expected_accept: String,
    /// Payload bytes of the message being received (across fragments).
    received: u64,
    in_message: bool,
    closing: bool,
    goodbye_sent: bool,
}

impl WsClient {
    pub fn new(spec: WsSpec) -> Self {
        WsClient {
            spec: Arc::new(spec),
            rng: fastrand::Rng::with_seed(0),
            expected_accept: String::new(),
            received: 0,
            in_message: false,
            closing: false,
            goodbye_sent: false,
        }
    }

    /// The upgrade request for `key`.
    pub fn upgrade_request(&self, key: &str) -> Vec<u8> {
        let mut headers = vec![
            ("Upgrade".to_string(), "websocket".to_string()),
            ("Connection".to_string(), "Upgrade".to_string()),
            ("Sec-WebSocket-Key".to_string(), key.to_string()),
            ("Sec-WebSocket-Version".to_string(), "13".to_string()),
        ];
        headers.extend(self.spec.headers.iter().cloned());
        http1::encode_request(&RequestSpec {
            method: "GET".into(),
            host: self.spec.host.clone(),
            target: self.spec.path.clone(),
            headers,
            body: vec![],
        })
    }

    fn mask(&mut self) -> Option<[u8; 4]> {
        Some(self.rng.u32(..).to_ne_bytes())
    }

    /// Bytes of one operation's frame (the mask key changes, the length does not).
    pub fn frame_len(&self) -> usize {
        let n = self.spec.message.len();
        n + 2
            + 4
            + if n > 65535 {
                8
            } else if n > 125 {
                2
            } else {
                0
            }
    }
}

impl ClientCodec for WsClient {
    fn seed(&mut self, seed: u64) {
        self.rng = fastrand::Rng::with_seed(seed);
    }

    fn handshake(&mut self, out: &mut Vec<u8>) {
        let key = base64::engine::general_purpose::STANDARD.encode(self.rng.u128(..).to_ne_bytes());
        self.expected_accept = accept_key(key.as_bytes());
        out.extend_from_slice(&self.upgrade_request(&key));
    }

    fn decode_handshake(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let expected = self.expected_accept.as_bytes();
        let checked = http1::head::response_head(input, http1::MAX_RESPONSE_HEAD, |h| {
            if h.status != 101 {
                return Err(ProtoError::UpgradeRefused(h.status));
            }
            let upgrade =
                h.fields.get("upgrade").is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"websocket"));
            // An extension we did not offer would change the frames: refused too.
            if !upgrade
                || !h.fields.has_token("connection", b"upgrade")
                || h.fields.get("sec-websocket-extensions").is_some()
            {
                return Err(ProtoError::BadUpgrade);
            }
            if h.fields.get("sec-websocket-accept").map(<[u8]>::trim_ascii) != Some(expected) {
                return Err(ProtoError::BadAcceptKey);
            }
            Ok(())
        })?;
        Ok(match checked {
            None => Decoded::Partial,
            Some(((), len)) => Decoded::Done { consumed: len, outcome: Outcome::Control },
        })
    }

    fn encode_op(&mut self, out: &mut Vec<u8>) {
        let opcode = if self.spec.text { OP_TEXT } else { OP_BINARY };
        let mask = self.mask();
        write_frame(out, opcode, &self.spec.message, mask);
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, ProtoError> {
        let Some(head) = parse_head(input) else { return Ok(Decoded::Partial) };
        if head.rsv != 0 {
            return Err(ProtoError::ReservedBits);
        }
        if head.mask.is_some() {
            return Err(ProtoError::MaskedServerFrame);
        }
        if head.len > CLIENT_MAX_FRAME {
            return Err(ProtoError::FrameTooLarge);
        }
        if !matches!(head.opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG) {
            return Err(ProtoError::BadOpcode);
        }
        if head.opcode >= 8 && (!head.fin || head.len > 125) {
            return Err(ProtoError::BadControlFrame);
        }
        let is_data = matches!(head.opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY);
        if is_data && self.received.saturating_add(head.len) > CLIENT_MAX_FRAME {
            // Endless fragments end at the message limit, before their bytes are awaited.
            return Err(ProtoError::FrameTooLarge);
        }
        let total = head.head_len + head.len as usize;
        if input.len() < total {
            return Ok(Decoded::Partial);
        }
        let payload = &input[head.head_len..total];
        let outcome = match head.opcode {
            OP_PING => {
                let mask = self.mask();
                write_frame(out, OP_PONG, payload, mask);
                Outcome::Control
            }
            OP_PONG => Outcome::Control,
            OP_CLOSE => {
                if !self.goodbye_sent {
                    // Echo the status code, as RFC 6455 §5.5.1 asks.
                    let mask = self.mask();
                    write_frame(out, OP_CLOSE, payload.get(..2).unwrap_or_default(), mask);
                }
                self.closing = true;
                Outcome::Control
            }
            OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                if (head.opcode == OP_CONTINUATION) != self.in_message {
                    return Err(ProtoError::BadFragment);
                }
                self.received += head.len;
                if !head.fin {
                    self.in_message = true;
                    return Ok(Decoded::Done { consumed: total, outcome: Outcome::OpPart });
                }
                let length = std::mem::take(&mut self.received);
                self.in_message = false;
                if length != self.spec.message.len() as u64 {
                    return Err(ProtoError::EchoLength);
                }
                Outcome::Op
            }
            _ => return Err(ProtoError::BadOpcode),
        };
        Ok(Decoded::Done { consumed: total, outcome })
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) -> bool {
        if self.closing {
            return false;
        }
        self.goodbye_sent = true;
        let mask = self.mask();
        write_frame(out, OP_CLOSE, &CLOSE_NORMAL.to_be_bytes(), mask);
        true
    }
}

/// The built-in echo server: one value per connection.
#[derive(Debug, Clone)]
pub struct WsServer {
    max_message: usize,
    upgraded: bool,
    /// The message being reassembled from fragments, and its opcode.
    fragments: Vec<u8>,
    fragment_opcode: Option<u8>,
}

impl WsServer {
    pub fn new(max_message: usize) -> Self {
        WsServer { max_message, upgraded: false, fragments: Vec::new(), fragment_opcode: None }
    }

    /// Answer the upgrade request at the start of `input` (nothing while it is arriving).
    fn upgrade(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let accept = |h: &http1::head::RequestHead<'_, '_>| {
            let key = h.fields.get("sec-websocket-key").map(<[u8]>::trim_ascii).unwrap_or_default();
            let key_ok = base64::engine::general_purpose::STANDARD.decode(key).is_ok_and(|k| k.len() == 16);
            let valid = h.method == "GET"
                && h.minor_version == 1
                && h.fields.has_token("upgrade", b"websocket")
                && h.fields.has_token("connection", b"upgrade")
                && h.fields.get("sec-websocket-version").map(<[u8]>::trim_ascii) == Some(b"13")
                && key_ok;
            valid.then(|| accept_key(key))
        };
        match http1::head::request_head(input, http1::MAX_REQUEST_HEAD, accept) {
            Ok(None) => Served { awaiting: Awaiting::Head, ..Served::default() },
            Ok(Some((Some(accept), len))) => {
                out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
                out.extend_from_slice(accept.as_bytes());
                out.extend_from_slice(b"\r\n\r\n");
                self.upgraded = true;
                Served { consumed: len, ..Served::default() }
            }
            Ok(Some((None, _))) | Err(_) => {
                out.extend_from_slice(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                Served { consumed: input.len(), close: true, ..Served::default() }
            }
        }
    }
}

fn close_with(out: &mut Vec<u8>, code: u16) {
    write_frame(out, OP_CLOSE, &code.to_be_bytes(), None);
}

impl ServerCodec for WsServer {
    fn busy(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(http1::RESPONSE_BUSY);
    }

    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let mut served = Served::default();
        if !self.upgraded {
            let answered = self.upgrade(input, out);
            if !self.upgraded {
                return answered;
            }
            served.consumed = answered.consumed;
        }
        loop {
            let rest = &input[served.consumed..];
            served.awaiting = if rest.is_empty() && self.fragment_opcode.is_none() {
                Awaiting::Request
            } else {
                Awaiting::Body
            };
            let Some(head) = parse_head(rest) else { return served };
            let fail = |out: &mut Vec<u8>, code: u16, mut served: Served| {
                close_with(out, code);
                served.consumed = input.len();
                served.close = true;
                served
            };
            let known =
                matches!(head.opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG);
            if !known
                || head.rsv != 0
                || head.mask.is_none()
                || (head.opcode >= 8 && (!head.fin || head.len > 125))
            {
                return fail(out, CLOSE_PROTOCOL_ERROR, served);
            }
            // Lengths come from the peer: no arithmetic on them without a check (a 2^64 − 1
            // continuation after a fragment must be "too big", not an overflow).
            let buffered = self.fragments.len() as u64;
            if head.opcode < 8 && head.len.saturating_add(buffered) > self.max_message as u64 {
                return fail(out, CLOSE_TOO_BIG, served);
            }
            let Some(total) = usize::try_from(head.len).ok().and_then(|len| head.head_len.checked_add(len))
            else {
                return fail(out, CLOSE_TOO_BIG, served);
            };
            if rest.len() < total {
                return served;
            }
            let key = head.mask.unwrap_or_default();
            let payload = &rest[head.head_len..total];
            served.consumed += total;
            match head.opcode {
                OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                    let opcode = match (head.opcode, self.fragment_opcode) {
                        (OP_CONTINUATION, Some(op)) => op,
                        (OP_TEXT | OP_BINARY, None) => head.opcode,
                        _ => return fail(out, CLOSE_PROTOCOL_ERROR, served),
                    };
                    if !head.fin || self.fragment_opcode.is_some() {
                        let start = self.fragments.len();
                        self.fragments.extend_from_slice(payload);
                        apply_mask(&mut self.fragments[start..], key, 0);
                        self.fragment_opcode = Some(opcode);
                        if !head.fin {
                            continue;
                        }
                    }
                    let header_at = out.len();
                    if self.fragment_opcode.take().is_some() {
                        let message = std::mem::take(&mut self.fragments);
                        write_header(out, opcode, message.len(), None);
                        out.extend_from_slice(&message);
                    } else {
                        write_header(out, opcode, payload.len(), None);
                        let start = out.len();
                        out.extend_from_slice(payload);
                        apply_mask(&mut out[start..], key, 0);
                    }
                    let body_at = header_at + parse_head(&out[header_at..]).map_or(0, |h| h.head_len);
                    if opcode == OP_TEXT && std::str::from_utf8(&out[body_at..]).is_err() {
                        out.truncate(header_at);
                        return fail(out, CLOSE_INVALID_DATA, served);
                    }
                    served.requests += 1;
                    served.messages += 1;
                }
                OP_PING => {
                    let mut data = payload.to_vec();
                    apply_mask(&mut data, key, 0);
                    write_frame(out, OP_PONG, &data, None);
                }
                OP_PONG => {}
                OP_CLOSE => {
                    let mut data = payload.get(..2).unwrap_or_default().to_vec();
                    apply_mask(&mut data, key, 0);
                    write_frame(out, OP_CLOSE, &data, None);
                    served.close = true;
                    served.consumed = input.len();
                    return served;
                }
                _ => return fail(out, CLOSE_PROTOCOL_ERROR, served),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: usize) -> WsSpec {
        WsSpec {
            host: "127.0.0.1:9001".into(),
            path: "/".into(),
            headers: vec![],
            message: vec![b'x'; size],
            text: false,
        }
    }

    #[test]
    fn rfc_6455_example_accept_key() {
        assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn frame_sizes_at_the_length_boundaries() {
        // RFC 6455 §5.2: FIN + opcode, mask bit + 7-bit length (126: 16 bits follow, 127: 64
        // bits follow), the 4-byte mask key from a client, then the payload.
        for (size, length_bytes) in [
            (125, vec![125]),
            (126, vec![126, 0, 126]),
            (500, vec![126, 0x01, 0xF4]),
            (65535, vec![126, 0xFF, 0xFF]),
            (65536, vec![127, 0, 0, 0, 0, 0, 1, 0, 0]),
        ] {
            let mut c = WsClient::new(spec(size));
            let mut out = Vec::new();
            c.encode_op(&mut out);
            let mut head = vec![0x80 | OP_BINARY, 0x80 | length_bytes[0]];
            head.extend_from_slice(&length_bytes[1..]);
            assert_eq!(out[..head.len()], head, "client header of {size}");
            assert_eq!((out.len(), c.frame_len()), (head.len() + 4 + size, head.len() + 4 + size));
            let mut echo = Vec::new();
            write_frame(&mut echo, OP_BINARY, &vec![b'x'; size], None);
            head[1] &= 0x7f;
            assert_eq!(echo[..head.len()], head, "server header of {size}");
            assert_eq!(echo.len(), head.len() + size);
        }
        let mut out = Vec::new();
        WsClient::new(spec(500)).encode_op(&mut out);
        assert_eq!(out.len(), 508, "the issue's figure: 2 + 2 + 4 + 500");
    }

    #[test]
    fn word_masking_equals_byte_masking_at_any_offset() {
        let key = [0x12, 0x34, 0x56, 0x78];
        for len in [0, 1, 7, 8, 9, 31, 500] {
            for offset in 0..4 {
                let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
                let mut fast = data.clone();
                apply_mask(&mut fast, key, offset);
                let slow: Vec<u8> = data.iter().enumerate().map(|(i, b)| b ^ key[(offset + i) & 3]).collect();
                assert_eq!(fast, slow, "len {len} offset {offset}");
            }
        }
    }

    #[test]
    fn masking_round_trips_and_keys_change() {
        let mut c = WsClient::new(spec(500));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        c.encode_op(&mut a);
        c.encode_op(&mut b);
        let head = parse_head(&a).unwrap();
        assert_eq!((head.fin, head.opcode, head.len, head.head_len), (true, OP_BINARY, 500, 8));
        let mut payload = a[8..].to_vec();
        apply_mask(&mut payload, head.mask.unwrap(), 0);
        assert_eq!(payload, vec![b'x'; 500]);
        assert_ne!(a[4..8], b[4..8], "a fresh mask key per frame");
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let frames = |seed: u64| {
            let mut c = WsClient::new(spec(20));
            c.seed(seed);
            let mut out = Vec::new();
            c.handshake(&mut out);
            c.encode_op(&mut out);
            out
        };
        assert_eq!(frames(7), frames(7));
        assert_ne!(frames(7), frames(8));
    }

    fn upgraded_pair() -> (WsClient, WsServer) {
        let mut c = WsClient::new(spec(500));
        let mut s = WsServer::new(DEFAULT_MAX_MESSAGE);
        let mut req = Vec::new();
        c.handshake(&mut req);
        let mut resp = Vec::new();
        let served = s.serve(&req, &mut resp);
        assert_eq!((served.consumed, served.close), (req.len(), false));
        for cut in 0..resp.len() {
            assert_eq!(c.decode_handshake(&resp[..cut]), Ok(Decoded::Partial));
        }
        assert_eq!(
            c.decode_handshake(&resp),
            Ok(Decoded::Done { consumed: resp.len(), outcome: Outcome::Control })
        );
        (c, s)
    }

    #[test]
    fn echo_through_the_server_is_504_bytes_and_completes_the_op() {
        let (mut c, mut s) = upgraded_pair();
        let mut frame = Vec::new();
        c.encode_op(&mut frame);
        c.encode_op(&mut frame);
        let mut echo = Vec::new();
        let served = s.serve(&frame, &mut echo);
        assert_eq!((served.consumed, served.messages), (1016, 2));
        assert_eq!(echo.len(), 1008);
        let mut out = Vec::new();
        for cut in 0..504 {
            assert_eq!(c.decode_op(&echo[..cut], &mut out), Ok(Decoded::Partial));
        }
        assert_eq!(c.decode_op(&echo, &mut out), Ok(Decoded::Done { consumed: 504, outcome: Outcome::Op }));
    }

    #[test]
    fn fragments_pings_and_close() {
        let (mut c, _) = upgraded_pair();
        let mut input = Vec::new();
        input.extend_from_slice(&[OP_BINARY, 100]); // FIN clear: first fragment
        input.extend_from_slice(&[b'x'; 100]);
        write_frame(&mut input, OP_PING, b"hi", None);
        input.extend_from_slice(&[0x80, 126, 0x01, 0x90]); // final continuation, 400 bytes
        input.extend_from_slice(&[b'x'; 400]);
        write_frame(&mut input, OP_CLOSE, &1001u16.to_be_bytes(), None);
        let mut out = Vec::new();
        let mut outcomes = Vec::new();
        let mut pos = 0;
        while let Ok(Decoded::Done { consumed, outcome }) = c.decode_op(&input[pos..], &mut out) {
            outcomes.push(outcome);
            pos += consumed;
        }
        assert_eq!(pos, input.len());
        assert_eq!(outcomes, [Outcome::OpPart, Outcome::Control, Outcome::Op, Outcome::Control]);
        assert!(c.peer_closing());
        // The pong and the close reply, both masked.
        let pong = parse_head(&out).unwrap();
        assert_eq!((pong.opcode, pong.len, pong.mask.is_some()), (OP_PONG, 2, true));
        let close = parse_head(&out[8..]).unwrap();
        assert_eq!((close.opcode, close.len), (OP_CLOSE, 2));
    }

    #[test]
    fn client_refuses_bad_upgrades_and_frames() {
        let mut c = WsClient::new(spec(5));
        c.handshake(&mut Vec::new());
        assert_eq!(
            c.decode_handshake(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            Err(ProtoError::UpgradeRefused(200))
        );
        let wrong = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        assert_eq!(c.decode_handshake(wrong), Err(ProtoError::BadAcceptKey));
        let mut out = Vec::new();
        assert_eq!(c.decode_op(&[0xC2, 0x00], &mut out), Err(ProtoError::ReservedBits));
        assert_eq!(
            c.decode_op(&[0x82, 0x7f, 0xff, 0, 0, 0, 0, 0, 0, 0], &mut out),
            Err(ProtoError::FrameTooLarge)
        );
        assert_eq!(c.decode_op(&[0x82, 0x02, b'a', b'b'], &mut out), Err(ProtoError::EchoLength));
        assert_eq!(c.decode_op(&[0x89, 126, 0, 126], &mut out), Err(ProtoError::BadControlFrame));
        assert_eq!(c.decode_op(&[0x83, 0], &mut out), Err(ProtoError::BadOpcode));
    }

    #[test]
    fn server_refuses_and_closes_as_the_rfc_says() {
        let mut s = WsServer::new(DEFAULT_MAX_MESSAGE);
        let mut out = Vec::new();
        let served = s.serve(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &mut out);
        assert!(served.close && out.starts_with(b"HTTP/1.1 400 "));
        // Unmasked client frame: 1002.
        let (_, mut s) = upgraded_pair();
        let mut out = Vec::new();
        assert!(s.serve(&[0x82, 0x01, b'a'], &mut out).close);
        assert_eq!(out, [0x88, 0x02, 0x03, 0xea]);
        // Over --max-message: 1009.
        let mut s = WsServer::new(10);
        s.upgraded = true;
        let mut frame = Vec::new();
        write_frame(&mut frame, OP_BINARY, &[0; 11], Some([1, 2, 3, 4]));
        let mut out = Vec::new();
        assert!(s.serve(&frame, &mut out).close);
        assert_eq!(out, [0x88, 0x02, 0x03, 0xf1]);
        // Close is answered with close.
        let (_, mut s) = upgraded_pair();
        let mut frame = Vec::new();
        write_frame(&mut frame, OP_CLOSE, &1000u16.to_be_bytes(), Some([1, 2, 3, 4]));
        let mut out = Vec::new();
        assert!(s.serve(&frame, &mut out).close);
        assert_eq!(out, [0x88, 0x02, 0x03, 0xe8]);
    }

    #[test]
    fn server_reassembles_fragments_and_answers_ping() {
        let (_, mut s) = upgraded_pair();
        let mut input = Vec::new();
        let key = [1, 2, 3, 4];
        let mut part = |fin: bool, op: u8, data: &[u8]| {
            input.push(if fin { 0x80 } else { 0 } | op);
            input.push(0x80 | data.len() as u8);
            input.extend_from_slice(&key);
            let start = input.len();
            input.extend_from_slice(data);
            apply_mask(&mut input[start..], key, 0);
        };
        part(false, OP_TEXT, b"hel");
        part(true, OP_PING, b"p");
        part(true, OP_CONTINUATION, b"lo");
        let mut out = Vec::new();
        let served = s.serve(&input, &mut out);
        assert_eq!((served.consumed, served.messages), (input.len(), 1));
        assert_eq!(out, [&[0x8a, 1, b'p'][..], &[0x81, 5], b"hello"].concat());
    }

    /// The second reproduction: a non-final fragment, then a continuation declaring
    /// 2^64 − 1 bytes. The server closes with 1009 instead of overflowing.
    #[test]
    fn an_overflowing_continuation_is_too_big_not_a_crash() {
        let (_, mut s) = upgraded_pair();
        let mut input = vec![0x02, 0x81, 1, 2, 3, 4, b'a' ^ 1];
        input.extend_from_slice(&[0x80, 0xFF]);
        input.extend_from_slice(&[0xFF; 8]);
        input.extend_from_slice(&[1, 2, 3, 4]);
        let mut out = Vec::new();
        let served = s.serve(&input, &mut out);
        assert!(served.close);
        assert_eq!(out, [0x88, 0x02, 0x03, 0xf1], "close 1009");
        // A 64-bit length with the top bit set, unfragmented: the same.
        let (_, mut s) = upgraded_pair();
        let mut out = Vec::new();
        let frame = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        assert!(s.serve(&frame, &mut out).close);
        assert_eq!(out, [0x88, 0x02, 0x03, 0xf1]);
    }

    #[test]
    fn endless_fragments_end_at_the_clients_message_limit() {
        let (mut c, _) = upgraded_pair();
        let mut out = Vec::new();
        let first = [0x02, 0x7f, 0, 0, 0, 0, 0x02, 0, 0, 0]; // 32 MiB, not final
        let head = parse_head(&first).unwrap();
        let mut c2 = c.clone();
        // Pretend two 32 MiB fragments already arrived whole.
        c2.in_message = true;
        c2.received = 2 * head.len;
        let next = [0x00, 0x7e, 0x00, 0x10];
        assert_eq!(c2.decode_op(&next, &mut out), Err(ProtoError::FrameTooLarge));
        let _ = c.decode_op(&first, &mut out);
    }
}
