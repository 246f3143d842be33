//! The WebSocket client: the checked upgrade, masked data frames (keys and masks from a
//! seeded generator), and echo decoding with fragments, pings and closes.

use super::{
    CLIENT_MAX_FRAME, CLOSE_NORMAL, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
};
use super::{accept_key, parse_head, write_frame};
use crate::proto::http1::{self, RequestSpec};
use crate::proto::{ClientCodec, Decoded, Outcome, ProtoError};
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
}

/// The client: one value per connection (a fresh key per upgrade, a fresh mask per frame).
#[derive(Debug, Clone)]
pub struct WsClient {
    spec: Arc<WsSpec>,
    /// Keys and masks: seeded per connection by the engine (RFC 6455 asks for unpredictable
    /// masks; a seed from the OS per run gives that, a fixed one reproducible frames).
    rng: fastrand::Rng,
    pub(super) expected_accept: String,
    /// Payload bytes of the message being received (across fragments).
    pub(super) received: u64,
    pub(super) in_message: bool,
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
