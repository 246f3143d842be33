//! The built-in Socket.IO server: a [`Handler`] on the WebSocket server session. It accepts the
//! upgrade to Engine.IO's websocket transport, sends the open packet (and, under Engine.IO 3,
//! joins `/` at once), joins namespaces on request, acknowledges every event with its
//! arguments, emits a reply event when configured, and keeps Engine.IO's heartbeat: under 4 it
//! pings every ping interval, under 3 it answers the client's pings; a client silent past the
//! interval plus the timeout is closed (the server connection machine's silence limit).

use super::{DEFAULT_PATH, nsp_part, parse_packet};
use super::{EIO_CLOSE, EIO_MESSAGE, EIO_NOOP, EIO_PING, EIO_PONG, SIO_CONNECT, SIO_DISCONNECT, SIO_EVENT};
use crate::proto::ws::{CLOSE_PROTOCOL_ERROR, OP_TEXT};
use crate::proto::ws::{Handler, ServerSession};
use crate::proto::{Ask, Tell};
use std::time::Duration;

/// The largest WebSocket message the server reads (socket.io's default `maxHttpBufferSize`).
pub const MAX_MESSAGE: usize = 1_000_000;
/// The WebSocket close code for data a server cannot accept (RFC 6455: 1003, unsupported data).
const CLOSE_UNSUPPORTED: u16 = 1003;

/// The built-in server: a WebSocket session running [`SioHandler`].
pub type SioServer = ServerSession<SioHandler>;

/// Socket.IO on one connection.
#[derive(Debug, Clone)]
pub struct SioHandler {
    eio: u8,
    ping_interval: Duration,
    ping_timeout: Duration,
    reply_event: Option<String>,
    /// The Engine.IO session id (20 characters, as socket.io's), from a per-connection seed.
    sid: String,
    rng: fastrand::Rng,
    closing: bool,
}

impl SioHandler {
    pub fn new(
        eio: u8,
        ping_interval: Duration,
        ping_timeout: Duration,
        reply_event: Option<String>,
    ) -> Self {
        SioHandler {
            eio,
            ping_interval,
            ping_timeout,
            reply_event,
            sid: String::new(),
            rng: fastrand::Rng::with_seed(0),
            closing: false,
        }
    }

    /// A fresh 20-character id of socket.io's alphabet.
    fn id(&mut self) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..20).map(|_| ALPHABET[self.rng.usize(..ALPHABET.len())] as char).collect()
    }

    fn send(out: &mut Vec<u8>, parts: &[&[u8]]) {
        crate::proto::ws::server::send(out, OP_TEXT, &parts.concat());
    }

    /// One Socket.IO packet from the client (after the Engine.IO `4`).
    fn socketio(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<u64, u16> {
        let p = parse_packet(data).map_err(|_| CLOSE_UNSUPPORTED)?;
        let nsp = nsp_part(p.nsp);
        match p.kind {
            SIO_CONNECT if self.eio >= 4 => {
                let sid = self.id();
                let reply = format!("{{\"sid\":\"{sid}\"}}");
                Self::send(out, &[b"40", nsp.as_bytes(), reply.as_bytes()]);
                Ok(0)
            }
            SIO_CONNECT => {
                Self::send(out, &[b"40", nsp.as_bytes()]);
                Ok(0)
            }
            SIO_DISCONNECT => Ok(0),
            SIO_EVENT => {
                let value: serde_json::Value =
                    serde_json::from_slice(p.data).map_err(|_| CLOSE_UNSUPPORTED)?;
                let Some([_, args @ ..]) = value.as_array().map(Vec::as_slice) else {
                    return Err(CLOSE_UNSUPPORTED);
                };
                let args = serde_json::to_vec(args).map_err(|_| CLOSE_UNSUPPORTED)?;
                if let Some(id) = p.id {
                    Self::send(out, &[b"43", nsp.as_bytes(), id.to_string().as_bytes(), &args]);
                }
                if let Some(reply) = &self.reply_event {
                    // `["reply",args…]`: the arguments after the name.
                    let name = serde_json::to_vec(reply).unwrap_or_default();
                    let mut event = Vec::with_capacity(args.len() + name.len() + 2);
                    event.push(b'[');
                    event.extend_from_slice(&name);
                    if args.len() > 2 {
                        event.push(b',');
                        event.extend_from_slice(&args[1..args.len() - 1]);
                    }
                    event.push(b']');
                    Self::send(out, &[b"42", nsp.as_bytes(), &event]);
                }
                Ok(1)
            }
            _ => Err(CLOSE_PROTOCOL_ERROR),
        }
    }
}

impl Handler for SioHandler {
    fn accept(&mut self, target: &str) -> bool {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let mut eio = None;
        let mut websocket = false;
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "EIO" => eio = v.parse::<u8>().ok(),
                "transport" => websocket = v == "websocket",
                _ => {}
            }
        }
        path.trim_end_matches('/') == DEFAULT_PATH.trim_end_matches('/') && eio == Some(self.eio) && websocket
    }

    fn opened(&mut self, out: &mut Vec<u8>) {
        self.sid = self.id();
        let (interval, timeout) = (self.ping_interval.as_millis(), self.ping_timeout.as_millis());
        let open = if self.eio >= 4 {
            format!(
                "0{{\"sid\":\"{}\",\"upgrades\":[],\"pingInterval\":{interval},\"pingTimeout\":{timeout},\"maxPayload\":{MAX_MESSAGE}}}",
                self.sid
            )
        } else {
            format!(
                "0{{\"sid\":\"{}\",\"upgrades\":[],\"pingInterval\":{interval},\"pingTimeout\":{timeout}}}",
                self.sid
            )
        };
        Self::send(out, &[open.as_bytes()]);
        if self.eio < 4 {
            // Engine.IO 3 (socket.io 2) joins `/` without being asked.
            Self::send(out, &[b"40"]);
        }
    }

    fn message(&mut self, opcode: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<u64, u16> {
        if opcode != OP_TEXT {
            return Err(CLOSE_UNSUPPORTED); // binary attachments are not served
        }
        let (&kind, data) = payload.split_first().ok_or(CLOSE_UNSUPPORTED)?;
        match kind {
            EIO_MESSAGE => self.socketio(data, out),
            EIO_PING => {
                Self::send(out, &[b"3", data]);
                Ok(0)
            }
            EIO_PONG | EIO_NOOP => Ok(0),
            EIO_CLOSE => {
                self.closing = true;
                Ok(0)
            }
            _ => Err(CLOSE_UNSUPPORTED),
        }
    }

    fn closing(&self) -> bool {
        self.closing
    }

    fn ask(&self, question: Ask<'_>) {
        match question {
            Ask::HeartbeatInterval(a) => *a = (self.eio >= 4).then_some(self.ping_interval),
            Ask::SilenceLimit(a) => *a = Some(self.ping_interval + self.ping_timeout),
            Ask::Busy(_) => {}
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        match news {
            Tell::Heartbeat(out) => Self::send(out, &[b"2"]),
            Tell::Seed(seed) => self.rng = fastrand::Rng::with_seed(seed),
            Tell::UnixTime(_) | Tell::TlsEstablished(_) => {}
        }
    }
}
