//! The server side of WebSocket: a [`Session`] validates the upgrade, reads masked frames
//! (fragments reassembled under a message limit, pings answered, the close handshake
//! completed, RFC 6455's close codes for what breaks the rules) and hands whole messages to
//! its [`Handler`]. The built-in echo server is a session with the [`Echo`] handler;
//! Socket.IO's server is another handler.

use super::{CLOSE_INVALID_DATA, CLOSE_PROTOCOL_ERROR, CLOSE_TOO_BIG, OP_BINARY, OP_CLOSE, OP_CONTINUATION};
use super::{OP_PING, OP_PONG, OP_TEXT, accept_key, apply_mask, parse_head, write_frame};
use crate::proto::http1;
use crate::proto::{Ask, Awaiting, Served, ServerCodec, Tell};
use base64::Engine as _;

/// What runs on a server-side WebSocket session.
pub trait Handler: Clone {
    /// Whether to accept the upgrade of this request target (path and query).
    fn accept(&mut self, _target: &str) -> bool {
        true
    }
    /// The upgrade was answered: append what is sent at once (Engine.IO's open packet).
    fn opened(&mut self, _out: &mut Vec<u8>) {}
    /// A whole data message arrived (unmasked): append the answers; `Ok(n)`: n messages
    /// answered, `Err(code)`: close with this code.
    fn message(&mut self, opcode: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<u64, u16>;
    /// Close once the answers are written (the protocol said goodbye in its own words).
    fn closing(&self) -> bool {
        false
    }
    /// The server codec's questions and news ([`ServerCodec::ask`], [`ServerCodec::tell`]),
    /// once upgraded (before, the session answers for itself).
    fn ask(&self, _question: Ask<'_>) {}
    fn tell(&mut self, _news: Tell<'_>) {}
}

/// Append an unmasked frame (a server's) carrying `payload`.
pub fn send(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    write_frame(out, opcode, payload, None);
}

/// The echo: every data message back, unmasked, with its opcode; text must be UTF-8.
#[derive(Debug, Clone, Default)]
pub struct Echo;

impl Handler for Echo {
    fn message(&mut self, opcode: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<u64, u16> {
        if opcode == OP_TEXT && std::str::from_utf8(payload).is_err() {
            return Err(CLOSE_INVALID_DATA);
        }
        send(out, opcode, payload);
        Ok(1)
    }
}

/// One server-side WebSocket connection: one value per connection.
#[derive(Debug, Clone)]
pub struct Session<H> {
    pub(super) handler: H,
    max_message: usize,
    pub(super) upgraded: bool,
    /// The message being reassembled (or a single frame unmasked), and a fragmented one's opcode.
    message: Vec<u8>,
    fragment_opcode: Option<u8>,
}

/// The built-in echo server.
pub type WsServer = Session<Echo>;

impl WsServer {
    pub fn new(max_message: usize) -> Self {
        Session::with(Echo, max_message)
    }
}

/// The answer to a refused upgrade.
const REFUSED: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

impl<H: Handler> Session<H> {
    pub fn with(handler: H, max_message: usize) -> Self {
        Session { handler, max_message, upgraded: false, message: Vec::new(), fragment_opcode: None }
    }

    /// Answer the upgrade request at the start of `input` (nothing while it is arriving).
    fn upgrade(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let handler = &mut self.handler;
        let accept = |h: &http1::head::RequestHead<'_, '_>| {
            let key = h.fields.get("sec-websocket-key").map(<[u8]>::trim_ascii).unwrap_or_default();
            let key_ok = base64::engine::general_purpose::STANDARD.decode(key).is_ok_and(|k| k.len() == 16);
            let valid = h.method == "GET"
                && h.minor_version == 1
                && h.fields.has_token("upgrade", b"websocket")
                && h.fields.has_token("connection", b"upgrade")
                && h.fields.get("sec-websocket-version").map(<[u8]>::trim_ascii) == Some(b"13")
                && key_ok
                && handler.accept(h.target);
            valid.then(|| accept_key(key))
        };
        match http1::head::request_head(input, http1::MAX_REQUEST_HEAD, accept) {
            Ok(None) => Served { awaiting: Awaiting::Head, ..Served::default() },
            Ok(Some((Some(accept), len))) => {
                out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
                out.extend_from_slice(accept.as_bytes());
                out.extend_from_slice(b"\r\n\r\n");
                self.upgraded = true;
                self.handler.opened(out);
                Served { consumed: len, ..Served::default() }
            }
            Ok(Some((None, _))) | Err(_) => {
                out.extend_from_slice(REFUSED);
                Served { consumed: input.len(), close: true, ..Served::default() }
            }
        }
    }
}

fn close_with(out: &mut Vec<u8>, code: u16) {
    send(out, OP_CLOSE, &code.to_be_bytes());
}

impl<H: Handler> ServerCodec for Session<H> {
    fn ask(&self, question: Ask<'_>) {
        match question {
            // Refused before any upgrade: in HTTP.
            Ask::Busy(out) => out.extend_from_slice(http1::RESPONSE_BUSY),
            // The handler's timing starts with its protocol, after the upgrade.
            Ask::HeartbeatInterval(_) | Ask::SilenceLimit(_) if !self.upgraded => {}
            question => self.handler.ask(question),
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        self.handler.tell(news);
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
            let fail = |out: &mut Vec<u8>, code: u16, mut served: Served| {
                close_with(out, code);
                served.consumed = input.len();
                served.close = true;
                served
            };
            if self.handler.closing() {
                served.close = true;
                served.consumed = input.len();
                return served;
            }
            let Some(head) = parse_head(rest) else { return served };
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
            let buffered = if self.fragment_opcode.is_some() { self.message.len() as u64 } else { 0 };
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
                        (OP_TEXT | OP_BINARY, None) => {
                            self.message.clear();
                            head.opcode
                        }
                        _ => return fail(out, CLOSE_PROTOCOL_ERROR, served),
                    };
                    let start = self.message.len();
                    self.message.extend_from_slice(payload);
                    apply_mask(&mut self.message[start..], key, 0);
                    if !head.fin {
                        self.fragment_opcode = Some(opcode);
                        continue;
                    }
                    self.fragment_opcode = None;
                    match self.handler.message(opcode, &self.message, out) {
                        Ok(answered) => {
                            served.requests += answered;
                            served.messages += answered;
                        }
                        Err(code) => return fail(out, code, served),
                    }
                    if self.message.capacity() > 64 * 1024 {
                        self.message = Vec::new(); // given back after a large message
                    }
                }
                OP_PING => {
                    let mut data = payload.to_vec();
                    apply_mask(&mut data, key, 0);
                    send(out, OP_PONG, &data);
                }
                OP_PONG => {}
                OP_CLOSE => {
                    let mut data = payload.get(..2).unwrap_or_default().to_vec();
                    apply_mask(&mut data, key, 0);
                    send(out, OP_CLOSE, &data);
                    served.close = true;
                    served.consumed = input.len();
                    return served;
                }
                _ => return fail(out, CLOSE_PROTOCOL_ERROR, served),
            }
        }
    }
}
