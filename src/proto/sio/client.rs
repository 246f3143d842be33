//! The Socket.IO client: the WebSocket upgrade straight to Engine.IO's websocket transport (no
//! long-polling phase), the open packet, the namespace joined, then operations — one event
//! with an acknowledgement id, completed by the matching acknowledgement (or, with a reply
//! event, by the server emitting it) — with Engine.IO's heartbeats answered (4) or sent (3).
//!
//! Acknowledgement ids reuse the slots in flight (0 … depth − 1), so every operation has the
//! same size; a socket.io client counts up instead, adding a byte at every power of ten.

use super::Error;
use super::{
    EIO_CLOSE, EIO_MESSAGE, EIO_NOOP, EIO_OPEN, EIO_PING, EIO_PONG, Open, nsp_part, parse_open, parse_packet,
};
use super::{SIO_ACK, SIO_CONNECT, SIO_CONNECT_ERROR, SIO_DISCONNECT, SIO_EVENT};
use crate::proto::ws::{Frame, OP_TEXT, Session};
use crate::proto::{ClientCodec, Decoded, Outcome};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// What a Socket.IO client sends: where, and the event of every operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SioSpec {
    pub host: String,
    /// The Engine.IO path with its query: `/socket.io/?EIO=4&transport=websocket`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// `/` or `/name`.
    pub namespace: String,
    /// The event's JSON, `["event",payload]` ([`super::event_body`]).
    pub body: Vec<u8>,
    /// Complete operations by this event from the server instead of by acknowledgements.
    pub reply_event: Option<String>,
    /// Engine.IO version: 3 or 4.
    pub eio: u8,
    /// Operations in flight at most (acknowledgement ids cycle through 0 … depth − 1).
    pub depth: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// The HTTP upgrade is on its way.
    Upgrade,
    /// Waiting for Engine.IO's open packet.
    Open,
    /// The namespace is being joined.
    Connect,
    Ready,
}

/// The client: one value per connection.
#[derive(Debug, Clone)]
pub struct SioClient {
    spec: Arc<SioSpec>,
    /// The event's body (its arguments) of each entry (`--requests`; one without).
    bodies: Arc<Vec<Vec<u8>>>,
    pub(super) session: Session,
    pub(super) stage: Stage,
    open: Option<Open>,
    /// Acknowledgement ids in flight, oldest first; the next id to use.
    in_flight: VecDeque<u64>,
    next_id: u64,
    closing: bool,
    detail: Option<String>,
}

impl SioClient {
    pub fn new(spec: SioSpec) -> Self {
        SioClient {
            bodies: Arc::new(vec![spec.body.clone()]),
            spec: Arc::new(spec),
            session: Session::new(true),
            stage: Stage::Upgrade,
            open: None,
            in_flight: VecDeque::new(),
            next_id: 0,
            closing: false,
            detail: None,
        }
    }

    /// The namespace's part of a packet: nothing for `/`, else `/name,`.
    fn nsp(&self) -> String {
        nsp_part(&self.spec.namespace)
    }

    /// Bytes of one operation's Socket.IO packet: `42`, then `/ns,` and the ack id when present,
    /// then the body (the largest of the entries' with `--requests`).
    pub fn packet_len(&self, id: Option<u64>) -> usize {
        let body = self.bodies.iter().map(Vec::len).max().unwrap_or(0);
        2 + self.nsp().len() + id.map_or(0, |id| id.to_string().len()) + body
    }

    /// Append an Engine.IO text packet: the type digit and its data.
    fn send(&mut self, out: &mut Vec<u8>, parts: &[&[u8]]) {
        let packet: Vec<u8> = parts.concat();
        self.session.send(out, OP_TEXT, &packet);
    }

    /// A server's Engine.IO packet during the handshake or the run: what it means, with the
    /// operation it completes (if any).
    fn packet(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<Outcome, Error> {
        let (&kind, data) = payload.split_first().ok_or(Error::BadSioPacket)?;
        match kind {
            EIO_PING => {
                // Engine.IO 4's heartbeat; answered under 3 too. A ping's data comes back.
                self.send(out, &[b"3", data]);
                Ok(Outcome::Control)
            }
            EIO_PONG | EIO_NOOP => Ok(Outcome::Control),
            EIO_CLOSE => {
                self.closing = true;
                Ok(Outcome::Control)
            }
            EIO_MESSAGE => self.socketio(data),
            EIO_OPEN => Err(Error::BadSioPacket), // a second open packet
            _ => Err(Error::BadSioPacket),
        }
    }

    fn socketio(&mut self, data: &[u8]) -> Result<Outcome, Error> {
        let p = parse_packet(data)?;
        if p.kind == SIO_CONNECT_ERROR {
            self.detail = Some(String::from_utf8_lossy(p.data).into_owned());
            return Err(Error::SioConnectError);
        }
        if p.nsp != self.spec.namespace {
            return Ok(Outcome::Control); // another namespace's traffic
        }
        match p.kind {
            SIO_CONNECT => Ok(Outcome::Control),
            SIO_DISCONNECT => {
                self.closing = true;
                Ok(Outcome::Control)
            }
            SIO_ACK if self.spec.reply_event.is_none() => {
                serde_json::from_slice::<serde::de::IgnoredAny>(p.data).map_err(|_| Error::BadJson)?;
                if p.id.is_none() || p.id != self.in_flight.front().copied() {
                    return Err(Error::WrongAckId);
                }
                self.in_flight.pop_front();
                Ok(Outcome::Op)
            }
            SIO_ACK => Err(Error::WrongAckId), // we asked for none
            SIO_EVENT => {
                let value: serde_json::Value = serde_json::from_slice(p.data).map_err(|_| Error::BadJson)?;
                let name = value.get(0).and_then(serde_json::Value::as_str).ok_or(Error::BadJson)?;
                match &self.spec.reply_event {
                    Some(reply) if reply == name && !self.in_flight.is_empty() => {
                        self.in_flight.pop_front();
                        Ok(Outcome::Op)
                    }
                    _ => Ok(Outcome::Control), // an event of the server's own
                }
            }
            _ => Err(Error::BadSioPacket),
        }
    }
}

impl ClientCodec for SioClient {
    type Error = Error;

    fn seed(&mut self, seed: u64) {
        self.session.seed(seed);
    }

    fn handshake(&mut self, out: &mut Vec<u8>) {
        let spec = self.spec.clone();
        self.session.upgrade(&spec.host, &spec.path, &spec.headers, out);
    }

    fn decode_handshake(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if self.stage == Stage::Upgrade {
            return Ok(match self.session.decode_upgrade(input)? {
                None => Decoded::Partial,
                Some(len) => {
                    self.stage = Stage::Open;
                    Decoded::Done { consumed: len, outcome: Outcome::Handshaking }
                }
            });
        }
        let frame = self.session.frame(input, out).inspect_err(|e| {
            if let crate::proto::ws::Error::HttpAfterUpgrade(_) = e {
                let words = input.split(|&b| b == b'\n').next_back().unwrap_or_default();
                let words = String::from_utf8_lossy(&words[..words.len().min(120)]);
                self.detail = Some(format!(
                    "{words:?}; the server may not speak Engine.IO {}: see --eio",
                    self.spec.eio
                ));
            }
        })?;
        let Some((consumed, frame)) = frame else { return Ok(Decoded::Partial) };
        let payload = match frame {
            Frame::Control | Frame::Part => {
                return Ok(Decoded::Done { consumed, outcome: Outcome::Handshaking });
            }
            Frame::Message { opcode, .. } if opcode != OP_TEXT => return Err(Error::BinaryPacket),
            Frame::Message { payload, .. } => payload.to_vec(),
        };
        let done = |outcome| Ok(Decoded::Done { consumed, outcome });
        match self.stage {
            Stage::Open => {
                let (&kind, json) = payload.split_first().ok_or(Error::BadSioPacket)?;
                if kind != EIO_OPEN {
                    return Err(Error::BadSioPacket);
                }
                let open = parse_open(json)?;
                if open.ping_interval < super::MIN_PING || open.ping_timeout < super::MIN_PING {
                    self.detail = Some(format!(
                        "pingInterval {} ms, pingTimeout {} ms (at least {} ms each)",
                        open.ping_interval.as_millis(),
                        open.ping_timeout.as_millis(),
                        super::MIN_PING.as_millis()
                    ));
                    return Err(Error::SioTiming);
                }
                let largest = self.packet_len(Some(self.spec.depth.saturating_sub(1) as u64));
                if open.max_payload.is_some_and(|max| largest as u64 > max) {
                    self.detail =
                        Some(format!("{largest} bytes > maxPayload {}", open.max_payload.unwrap_or(0)));
                    return Err(Error::OversizePacket);
                }
                self.open = Some(open);
                self.stage = Stage::Connect;
                // Engine.IO 3 servers join `/` on their own; any other namespace is asked for.
                if self.spec.eio >= 4 || self.spec.namespace != "/" {
                    let nsp = self.nsp();
                    self.send(out, &[b"40", nsp.as_bytes()]);
                }
                done(Outcome::Handshaking)
            }
            _ => match self.packet(&payload, out)? {
                // The namespace joined: `40[/ns,]{"sid":…}` (4) or `40[/ns,]` (3).
                _ if payload.starts_with(b"40")
                    && parse_packet(&payload[1..])?.nsp == self.spec.namespace =>
                {
                    self.stage = Stage::Ready;
                    done(Outcome::Control)
                }
                _ if self.closing => Err(Error::BadSioPacket),
                _ => done(Outcome::Handshaking),
            },
        }
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.bodies).extend(other.bodies.iter().cloned());
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        let nsp = self.nsp();
        let spec = self.spec.clone();
        let id = match spec.reply_event {
            Some(_) => None,
            None => {
                let id = self.next_id;
                self.next_id = (self.next_id + 1) % spec.depth.max(1) as u64;
                Some(id)
            }
        };
        self.in_flight.push_back(id.unwrap_or(0));
        let id = id.map(|id| id.to_string()).unwrap_or_default();
        let bodies = self.bodies.clone();
        self.send(out, &[b"42", nsp.as_bytes(), id.as_bytes(), &bodies[entry]]);
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let in_flight = !self.in_flight.is_empty();
        let Some((consumed, frame)) = self.session.frame(input, out)? else { return Ok(Decoded::Partial) };
        let outcome = match frame {
            Frame::Control => Outcome::Control,
            Frame::Part if in_flight => Outcome::OpPart,
            Frame::Part => Outcome::Control,
            Frame::Message { opcode, .. } if opcode != OP_TEXT => return Err(Error::BinaryPacket),
            Frame::Message { payload, .. } => {
                let payload = payload.to_vec();
                self.packet(&payload, out)?
            }
        };
        Ok(Decoded::Done { consumed, outcome })
    }

    fn peer_closing(&self) -> bool {
        self.closing || self.session.closing()
    }

    fn closing_answer(&self) -> Option<crate::outcome::Answer> {
        self.session.close_code().map(crate::proto::ws::close_answer)
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) -> bool {
        if self.peer_closing() {
            return false;
        }
        let nsp = self.nsp();
        self.send(out, &[b"41", nsp.as_bytes()]);
        self.session.goodbye(out)
    }

    fn heartbeat_interval(&self) -> Option<Duration> {
        // Engine.IO 3: the client pings.
        self.open.filter(|_| self.spec.eio == 3).map(|o| o.ping_interval)
    }

    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        self.send(out, &[b"2"]);
    }

    fn silence_limit(&self) -> Option<Duration> {
        self.open.map(|o| o.ping_interval + o.ping_timeout)
    }

    fn answer_within(&self) -> Option<Duration> {
        // Engine.IO 4: the server's pings want a pong within pingTimeout.
        self.open.filter(|_| self.spec.eio >= 4).map(|o| o.ping_timeout)
    }

    fn error_detail(&self) -> Option<String> {
        self.detail.clone()
    }
}
