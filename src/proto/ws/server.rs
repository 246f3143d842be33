//! The built-in WebSocket echo server: a validated upgrade, every data message echoed unmasked
//! with its opcode (fragments reassembled, text checked as UTF-8), pings answered, the close
//! handshake completed, and RFC 6455's close codes for what breaks the rules.

use super::{CLOSE_INVALID_DATA, CLOSE_PROTOCOL_ERROR, CLOSE_TOO_BIG, OP_BINARY, OP_CLOSE, OP_CONTINUATION};
use super::{OP_PING, OP_PONG, OP_TEXT, accept_key, apply_mask, parse_head, write_frame, write_header};
use crate::proto::http1;
use crate::proto::{Awaiting, Served, ServerCodec};
use base64::Engine as _;

/// The built-in echo server: one value per connection.
#[derive(Debug, Clone)]
pub struct WsServer {
    max_message: usize,
    pub(super) upgraded: bool,
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
