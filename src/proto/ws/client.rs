//! The WebSocket client: the checked upgrade, masked data frames (keys and masks from a
//! seeded generator), and echo decoding with fragments, pings and closes.

use super::Error;
use super::{
    CLIENT_MAX_FRAME, CLOSE_NORMAL, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
};
use super::{accept_octets, parse_head, write_frame};
use crate::proto::http1::{self, RequestSpec};
use crate::proto::{ClientCodec, Decoded, Outcome};
use base64::Engine as _;
use std::sync::Arc;

/// What the client sends: the upgrade request's parts and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsSpec {
    pub host: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub message: Vec<u8>,
    pub text: bool,
    pub expect: Expect,
}

/// One WebSocket client connection below its operations: the checked upgrade, masked frames
/// out (keys and masks from a generator the engine seeds per connection: RFC 6455 asks for
/// unpredictable masks, a fixed seed gives reproducible frames), and frames in — fragments
/// reassembled, pings answered, closes echoed. The echo client and Socket.IO run on it.
#[derive(Debug, Clone)]
pub struct Session {
    rng: fastrand::Rng,
    /// The `Sec-WebSocket-Accept` the upgrade's answer must carry (inline: a connection's
    /// only heap allocation made during its handshake that outlived it, it kept the
    /// handshake's freed buffers from ever being reused whole: 0.4 KiB a connection).
    pub(super) expected_accept: [u8; 28],
    /// Whether a fragmented message's payload is kept (Socket.IO reads it; the echo only
    /// needs its length).
    keep_payload: bool,
    /// The message being received across fragments: its opcode, length and (kept) payload.
    pub(super) in_message: bool,
    opcode: u8,
    pub(super) received: u64,
    message: Vec<u8>,
    closing: bool,
    close_code: Option<u16>,
    goodbye_sent: bool,
}

/// What one frame from the server was.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A ping, pong or close, handled (replies appended).
    Control,
    /// A fragment of a message that goes on.
    Part,
    /// A whole message: its opcode, length and payload (reassembled from fragments when the
    /// session keeps payloads; otherwise the last fragment's).
    Message { opcode: u8, len: u64, payload: &'a [u8] },
}

impl Session {
    pub fn new(keep_payload: bool) -> Self {
        Session {
            rng: fastrand::Rng::with_seed(0),
            expected_accept: [0; 28],
            keep_payload,
            in_message: false,
            opcode: 0,
            received: 0,
            message: Vec::new(),
            closing: false,
            close_code: None,
            goodbye_sent: false,
        }
    }

    pub fn seed(&mut self, seed: u64) {
        self.rng = fastrand::Rng::with_seed(seed);
    }

    fn mask(&mut self) -> Option<[u8; 4]> {
        Some(self.rng.u32(..).to_ne_bytes())
    }

    /// Append the upgrade request (a fresh key) for `path` on `host`, with extra `headers`.
    pub fn upgrade(&mut self, host: &str, path: &str, headers: &[(String, String)], out: &mut Vec<u8>) {
        let key = base64::engine::general_purpose::STANDARD.encode(self.rng.u128(..).to_ne_bytes());
        self.expected_accept = accept_octets(key.as_bytes());
        let mut all = vec![
            ("Upgrade".to_string(), "websocket".to_string()),
            ("Connection".to_string(), "Upgrade".to_string()),
            ("Sec-WebSocket-Key".to_string(), key),
            ("Sec-WebSocket-Version".to_string(), "13".to_string()),
        ];
        all.extend(headers.iter().cloned());
        let request = RequestSpec {
            method: "GET".into(),
            host: host.into(),
            target: path.into(),
            headers: all,
            body: vec![],
        };
        out.extend_from_slice(&http1::encode_request(&request));
    }

    /// The server's answer to the upgrade: its length once whole (`None` while it arrives).
    pub fn decode_upgrade(&self, input: &[u8]) -> Result<Option<usize>, Error> {
        let expected = &self.expected_accept[..];
        let checked = http1::head::response_head(input, http1::MAX_RESPONSE_HEAD, |h| {
            if h.status != 101 {
                return Err(Error::UpgradeRefused(h.status));
            }
            let upgrade =
                h.fields.get("upgrade").is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"websocket"));
            // An extension we did not offer would change the frames: refused too.
            if !upgrade
                || !h.fields.has_token("connection", b"upgrade")
                || h.fields.get("sec-websocket-extensions").is_some()
            {
                return Err(Error::BadUpgrade);
            }
            if h.fields.get("sec-websocket-accept").map(<[u8]>::trim_ascii) != Some(expected) {
                return Err(Error::BadAcceptKey);
            }
            Ok(())
        })?;
        Ok(checked.map(|((), len)| len))
    }

    /// Append a whole masked frame.
    pub fn send(&mut self, out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
        let mask = self.mask();
        write_frame(out, opcode, payload, mask);
    }

    /// The frame at the start of `input`: its length and what it was, or `None` while it
    /// arrives. Control replies (pong, close echo) are appended to `out`.
    pub fn frame<'a>(
        &'a mut self,
        input: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<(usize, Frame<'a>)>, Error> {
        let Some(head) = parse_head(input) else { return Ok(None) };
        if head.rsv != 0 {
            // `H` of `HTTP/1.1 400 …` reads as a frame with reserved bits: a server that wrote an
            // HTTP answer after its 101 (socket.io 4 does, for an Engine.IO version it refuses).
            // Judged on its first 12 octets, so that it is judged alike however it arrives.
            const HTTP: &[u8] = b"HTTP/1.1 ";
            if input.len() < HTTP.len() + 3 && HTTP.starts_with(&input[..input.len().min(HTTP.len())]) {
                return Ok(None);
            }
            if let Some(status) = input.strip_prefix(HTTP).and_then(|s| s.get(..3)) {
                let status = std::str::from_utf8(status).ok().and_then(|s| s.parse().ok());
                return Err(Error::HttpAfterUpgrade(status.unwrap_or(0)));
            }
            return Err(Error::ReservedBits);
        }
        if head.mask.is_some() {
            return Err(Error::MaskedServerFrame);
        }
        if head.len > CLIENT_MAX_FRAME {
            return Err(Error::FrameTooLarge);
        }
        if !matches!(head.opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG) {
            return Err(Error::BadOpcode);
        }
        if head.opcode >= 8 && (!head.fin || head.len > 125) {
            return Err(Error::BadControlFrame);
        }
        let is_data = matches!(head.opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY);
        if is_data && self.received.saturating_add(head.len) > CLIENT_MAX_FRAME {
            // Endless fragments end at the message limit, before their bytes are awaited.
            return Err(Error::FrameTooLarge);
        }
        let total = head.head_len + head.len as usize;
        if input.len() < total {
            return Ok(None);
        }
        let payload = &input[head.head_len..total];
        let frame = match head.opcode {
            OP_PING => {
                self.send(out, OP_PONG, payload);
                Frame::Control
            }
            OP_PONG => Frame::Control,
            OP_CLOSE => {
                // No code in the frame is 1005 (RFC 6455 §7.1.5: "no status received").
                self.close_code = Some(payload.get(..2).map_or(1005, |c| u16::from_be_bytes([c[0], c[1]])));
                if !self.goodbye_sent {
                    // Echo the status code, as RFC 6455 §5.5.1 asks.
                    self.send(out, OP_CLOSE, payload.get(..2).unwrap_or_default());
                }
                self.closing = true;
                Frame::Control
            }
            _ => {
                if (head.opcode == OP_CONTINUATION) != self.in_message {
                    return Err(Error::BadFragment);
                }
                if head.opcode != OP_CONTINUATION {
                    self.opcode = head.opcode;
                    self.message.clear();
                }
                self.received += head.len;
                let fragmented = self.in_message || !head.fin;
                if fragmented && self.keep_payload {
                    self.message.extend_from_slice(payload);
                }
                if !head.fin {
                    self.in_message = true;
                    return Ok(Some((total, Frame::Part)));
                }
                self.in_message = false;
                let len = std::mem::take(&mut self.received);
                // A reassembled message is handed out whole; cleared when the next one starts.
                let payload = if fragmented && self.keep_payload { &self.message[..] } else { payload };
                return Ok(Some((total, Frame::Message { opcode: self.opcode, len, payload })));
            }
        };
        Ok(Some((total, frame)))
    }

    /// The server sent a close (or the session said goodbye and the server answered).
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// The code of a Close the server sent first (its echo of our own goodbye says nothing
    /// about the server and is not counted).
    pub fn close_code(&self) -> Option<u16> {
        self.close_code.filter(|_| !self.goodbye_sent)
    }

    /// Append Close 1000, unless the server closed first: `true` if its answer is awaited.
    pub fn goodbye(&mut self, out: &mut Vec<u8>) -> bool {
        if self.closing {
            return false;
        }
        self.goodbye_sent = true;
        self.send(out, OP_CLOSE, &CLOSE_NORMAL.to_be_bytes());
        true
    }
}

/// What the echo client does with a whole message from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Expect {
    /// An echo: its length must be the message's (`--expect echo`, the default).
    #[default]
    Echo,
    /// Any data message completes an operation, whatever its length (`--expect any`: servers
    /// that answer in their own words).
    Any,
}

/// The echo client: one value per connection; an operation is one data message out and the
/// server's answer back.
#[derive(Debug, Clone)]
pub struct WsClient {
    spec: Arc<WsSpec>,
    /// The message of each entry (`--requests`; one without), and with several, the length
    /// of each message in flight, oldest first, for the echo's check.
    messages: Arc<Vec<Vec<u8>>>,
    echoes: std::collections::VecDeque<u64>,
    pub(super) session: Session,
}

impl WsClient {
    pub fn new(spec: WsSpec) -> Self {
        let messages = Arc::new(vec![spec.message.clone()]);
        WsClient { spec: Arc::new(spec), messages, echoes: Default::default(), session: Session::new(false) }
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
    type Error = Error;

    fn seed(&mut self, seed: u64) {
        self.session.seed(seed);
    }

    fn handshake(&mut self, out: &mut Vec<u8>) {
        let spec = &self.spec;
        self.session.upgrade(&spec.host, &spec.path, &spec.headers, out);
    }

    fn decode_handshake(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        Ok(match self.session.decode_upgrade(input)? {
            None => Decoded::Partial,
            Some(len) => Decoded::Done { consumed: len, outcome: Outcome::Control },
        })
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        let opcode = if self.spec.text { OP_TEXT } else { OP_BINARY };
        let message = &self.messages[entry];
        if self.messages.len() > 1 {
            self.echoes.push_back(message.len() as u64);
        }
        self.session.send(out, opcode, message);
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.messages).extend(other.messages.iter().cloned());
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let expect = self.spec.expect;
        let Some((consumed, frame)) = self.session.frame(input, out)? else { return Ok(Decoded::Partial) };
        let outcome = match frame {
            Frame::Control => Outcome::Control,
            Frame::Part => Outcome::OpPart,
            Frame::Message { len, .. } if self.messages.len() > 1 => {
                let expected = self.echoes.pop_front().unwrap_or(len);
                if expect == Expect::Echo && len != expected {
                    return Err(Error::EchoLength);
                }
                Outcome::Op
            }
            Frame::Message { len, .. } if expect == Expect::Echo && len != self.spec.message.len() as u64 => {
                return Err(Error::EchoLength);
            }
            Frame::Message { .. } => Outcome::Op,
        };
        Ok(Decoded::Done { consumed, outcome })
    }

    fn peer_closing(&self) -> bool {
        self.session.closing()
    }

    fn closing_answer(&self) -> Option<crate::outcome::Answer> {
        self.session.close_code().map(super::close_answer)
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) -> bool {
        self.session.goodbye(out)
    }
}
