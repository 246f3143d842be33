//! The MQTT publisher: CONNECT once per connection (and, at QoS 0, SUBSCRIBE to its own
//! topic), then PUBLISH per operation.
//!
//! What completes an operation depends on its QoS:
//! - **QoS 1**: the broker's PUBACK for its packet identifier;
//! - **QoS 2**: PUBREC, to which the client answers PUBREL (the operation's own bytes), then
//!   PUBCOMP — two round trips;
//! - **QoS 0** has no acknowledgement, so the connection subscribes to a topic of its own (the
//!   URL's topic, `/`, its client identifier) and publishes there: the operation completes
//!   when the broker delivers the message back. Its latency is the broker's publish-to-deliver
//!   time plus the round trip; the payload crosses the wire twice.
//!
//! Packet identifiers (QoS 1 and 2) name the operation an acknowledgement completes, so
//! acknowledgements may come in any order; one still in flight is never reused. MQTT 5.0's
//! CONNACK may bound the operations in flight (Receive Maximum), the QoS (Maximum QoS) and the
//! packet size (Maximum Packet Size): each is kept. A PINGREQ goes every half keep-alive
//! (control bytes); at the end of a run the client says DISCONNECT.

use super::Error;
use super::wire::{self, Packet, Reader, Version};
use crate::outcome::{Answer, Code, Failure};
use crate::proto::{ClientCodec, Decoded, Outcome};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// The packet identifier of the one SUBSCRIBE a QoS 0 connection sends.
const SUBSCRIBE_ID: u16 = 1;

/// What to publish, as the user asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishSpec {
    pub version: Version,
    pub qos: u8,
    /// The topic the URL names.
    pub topic: String,
    pub keep_alive: u16,
    /// The start of every connection's client identifier; the rest comes from the
    /// connection's seed, so that no two connections share one (a broker ends the older of
    /// two sessions with the same identifier).
    pub client_prefix: String,
    pub username: Option<String>,
    pub password: Option<String>,
    pub payload: Vec<u8>,
}

/// Where the handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Connack,
    Suback,
    Running,
}

/// The publisher: one value per connection, cloned from a prototype built once.
#[derive(Debug, Clone)]
pub struct MqttClient {
    version: Version,
    qos: u8,
    keep_alive: u16,
    client_prefix: Arc<str>,
    client_id: String,
    base_topic: Arc<[u8]>,
    /// The topic this connection publishes on: the URL's, or at QoS 0 its own below it.
    topic: Arc<[u8]>,
    credentials: (Option<Arc<str>>, Option<Arc<str>>),
    /// The payload of each entry (`--requests`; one without).
    payloads: Arc<Vec<Arc<[u8]>>>,
    step: Step,
    next_id: u16,
    in_flight: HashSet<u16>,
    /// QoS 2 operations whose PUBREC came: their PUBREL is due.
    pubrel_due: VecDeque<u16>,
    /// The broker's bounds (5.0's CONNACK): operations in flight, and a packet's size.
    receive_max: u16,
    max_packet: u32,
    /// The operation the message just decoded answers, and what it said.
    answered: Option<u16>,
    answer: Option<Answer>,
    /// The broker said DISCONNECT (5.0) and why.
    closing: bool,
    closing_answer: Option<Answer>,
}

impl MqttClient {
    pub fn new(spec: &PublishSpec) -> Self {
        let prefix: Arc<str> = spec.client_prefix.as_str().into();
        let base: Arc<[u8]> = spec.topic.as_bytes().into();
        let mut client = MqttClient {
            version: spec.version,
            qos: spec.qos.min(2),
            keep_alive: spec.keep_alive,
            client_prefix: prefix,
            client_id: String::new(),
            base_topic: base.clone(),
            topic: base,
            credentials: (spec.username.as_deref().map(Arc::from), spec.password.as_deref().map(Arc::from)),
            payloads: Arc::new(vec![spec.payload.as_slice().into()]),
            step: Step::Connack,
            next_id: 0,
            in_flight: HashSet::new(),
            pubrel_due: VecDeque::new(),
            receive_max: u16::MAX,
            max_packet: wire::MAX_REMAINING as u32 + 5,
            answered: None,
            answer: None,
            closing: false,
            closing_answer: None,
        };
        client.seed(0);
        client
    }

    /// The client identifier of this connection (known once seeded).
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The topic this connection publishes on.
    pub fn topic(&self) -> &[u8] {
        &self.topic
    }

    /// The next packet identifier not in flight (1–65,535; `--depth` is at most 4,096, so one
    /// is always free).
    fn take_id(&mut self) -> u16 {
        for _ in 0..=u16::MAX {
            self.next_id = self.next_id.checked_add(1).unwrap_or(1);
            if !self.in_flight.contains(&self.next_id) {
                break;
            }
        }
        self.in_flight.insert(self.next_id);
        self.next_id
    }

    /// The acknowledgement `kind` for operation `id`, with 5.0's reason code: `Done` with the
    /// outcome, after `id` is checked to be in flight.
    fn acked(&mut self, kind: u8, body: &[u8], len: usize) -> Result<Decoded, Error> {
        let (id, reason) = wire::parse_ack(body)?;
        if !self.in_flight.contains(&id) {
            return Err(Error::UnknownId);
        }
        self.answered = Some(id);
        let name = if self.version.v5() { wire::reason_name(reason) } else { wire::packet_name(kind) };
        let kind_word = if self.version.v5() { wire::packet_name(kind) } else { "" };
        let success = reason < 0x80;
        self.answer = Some(Answer::new(kind_word, Code::Name(name), success));
        let outcome = if !success {
            self.in_flight.remove(&id);
            Outcome::OpFailed(Failure::protocol(wire::packet_name(kind), name))
        } else if kind == wire::PUBREC {
            self.pubrel_due.push_back(id);
            Outcome::OpPart
        } else {
            self.in_flight.remove(&id);
            Outcome::Op
        };
        Ok(Decoded::Done { consumed: len, outcome })
    }

    /// CONNACK: accepted, or the broker's refusal; 5.0's bounds read off its properties.
    fn connack(&mut self, packet: Packet<'_>, out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if packet.kind != wire::CONNACK {
            return Err(Error::Unexpected(packet.kind));
        }
        let mut r = Reader::new(packet.body);
        let _session_present = r.u8()?;
        let code = r.u8()?;
        if self.version.v5() {
            if code >= 0x80 {
                return Err(Error::Refused(code));
            }
            let mut max_qos = 2;
            r.properties(|id, value| match id {
                wire::PROP_RECEIVE_MAXIMUM => self.receive_max = value.int().clamp(1, 65_535) as u16,
                wire::PROP_MAXIMUM_QOS => max_qos = value.int(),
                wire::PROP_MAXIMUM_PACKET_SIZE => self.max_packet = value.int(),
                _ => {}
            })?;
            if u32::from(self.qos) > max_qos {
                return Err(Error::QosNotSupported(max_qos as u8));
            }
            let largest = self.payloads.iter().map(|p| self.publish_len(p.len())).max().unwrap_or(0);
            if largest > self.max_packet as usize {
                return Err(Error::BrokerLimit(self.max_packet));
            }
        } else if code != 0 {
            return Err(Error::RefusedV311(code));
        }
        if self.qos == 0 {
            wire::encode_subscribe(self.version, SUBSCRIBE_ID, &self.topic, 0, out);
            self.step = Step::Suback;
            return Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Handshaking });
        }
        self.step = Step::Running;
        Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Control })
    }

    /// SUBACK of the QoS 0 subscription: granted, or refused.
    fn suback(&mut self, packet: Packet<'_>) -> Result<Decoded, Error> {
        if packet.kind != wire::SUBACK {
            return Err(Error::Unexpected(packet.kind));
        }
        let mut r = Reader::new(packet.body);
        if r.u16()? != SUBSCRIBE_ID {
            return Err(Error::UnknownId);
        }
        if self.version.v5() {
            r.properties(|_, _| {})?;
        }
        let code = r.u8()?;
        if code >= 0x80 {
            return Err(Error::SubscribeRefused(code));
        }
        self.step = Step::Running;
        Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Control })
    }

    /// A PUBLISH the broker delivered: at QoS 0, the oldest operation's message come back.
    fn delivered(&mut self, packet: Packet<'_>) -> Result<Decoded, Error> {
        let qos = (packet.flags >> 1) & 3;
        if self.qos != 0 || qos != 0 {
            return Err(Error::Unexpected(wire::PUBLISH));
        }
        let mut r = Reader::new(packet.body);
        let topic = r.string()?;
        if topic != &*self.topic {
            return Err(Error::OtherTopic);
        }
        if self.version.v5() {
            r.properties(|_, _| {})?;
        }
        self.answered = None;
        self.answer = None;
        Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Op })
    }

    /// DISCONNECT from the broker (5.0 only): the connection ends, with its reason counted.
    fn disconnected(&mut self, packet: Packet<'_>) -> Result<Decoded, Error> {
        if !self.version.v5() {
            return Err(Error::Unexpected(wire::DISCONNECT));
        }
        let reason = packet.body.first().copied().unwrap_or(0);
        self.closing = true;
        self.closing_answer =
            Some(Answer::of_connection("DISCONNECT", Code::Name(wire::reason_name(reason)), reason < 0x80));
        Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Control })
    }

    fn publish_len(&self, payload: usize) -> usize {
        let remaining = wire::publish_remaining(self.version, self.topic.len(), self.qos, payload);
        1 + wire::varint_len(remaining) + remaining
    }
}

impl ClientCodec for MqttClient {
    type Error = Error;

    /// The connection's client identifier (the prefix, then 16 hex digits of the seed: at
    /// most 23 characters of `[0-9a-zA-Z]` with the default prefix, which every 3.1.1 broker
    /// must accept), and at QoS 0 its own topic.
    fn seed(&mut self, seed: u64) {
        self.client_id = format!("{}{seed:016x}", self.client_prefix);
        if self.qos == 0 {
            let mut topic = self.base_topic.to_vec();
            topic.push(b'/');
            topic.extend_from_slice(self.client_id.as_bytes());
            self.topic = topic.into();
        }
    }

    fn handshake(&mut self, out: &mut Vec<u8>) {
        let spec = wire::ConnectSpec {
            version: self.version,
            client_id: self.client_id.clone(),
            keep_alive: self.keep_alive,
            username: self.credentials.0.as_deref().map(String::from),
            password: self.credentials.1.as_deref().map(String::from),
        };
        wire::encode_connect(&spec, out);
    }

    fn decode_handshake(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let Some(packet) = wire::parse_packet(input, wire::MAX_REMAINING)? else {
            return Ok(Decoded::Partial);
        };
        match self.step {
            Step::Connack => self.connack(packet, out),
            _ => self.suback(packet),
        }
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        let id = if self.qos > 0 { self.take_id() } else { 0 };
        let payloads = Arc::clone(&self.payloads);
        wire::encode_publish(self.version, &self.topic, self.qos, id, &payloads[entry], out);
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.payloads).extend(other.payloads.iter().cloned());
    }

    fn op_id(&self) -> Option<u64> {
        (self.qos > 0).then_some(u64::from(self.next_id))
    }

    fn op_open(&self) -> bool {
        self.qos == 2
    }

    fn op_more(&mut self, out: &mut Vec<u8>) -> Option<(u64, bool)> {
        let id = self.pubrel_due.pop_front()?;
        wire::encode_ack(wire::PUBREL, id, 0, out);
        Some((u64::from(id), true))
    }

    fn answers_op(&self) -> Option<u64> {
        self.answered.map(u64::from)
    }

    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let Some(packet) = wire::parse_packet(input, wire::MAX_REMAINING)? else {
            return Ok(Decoded::Partial);
        };
        let acked = |kind| match self.qos {
            1 => kind == wire::PUBACK,
            2 => kind == wire::PUBREC || kind == wire::PUBCOMP,
            _ => false,
        };
        match packet.kind {
            kind if acked(kind) => {
                if kind == wire::PUBCOMP {
                    let (id, _) = wire::parse_ack(packet.body)?;
                    if self.pubrel_due.contains(&id) {
                        return Err(Error::Unexpected(kind)); // before its PUBREL was sent
                    }
                }
                self.acked(kind, packet.body, packet.len)
            }
            wire::PUBLISH => self.delivered(packet),
            wire::PINGRESP => Ok(Decoded::Done { consumed: packet.len, outcome: Outcome::Control }),
            wire::DISCONNECT => self.disconnected(packet),
            kind => Err(Error::Unexpected(kind)),
        }
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }

    fn accepts_ops(&self) -> bool {
        !self.closing && (self.qos == 0 || self.in_flight.len() < usize::from(self.receive_max))
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&wire::DISCONNECT_PACKET);
        false
    }

    fn answer(&self) -> Option<Answer> {
        self.answer
    }

    fn closing_answer(&self) -> Option<Answer> {
        self.closing_answer
    }

    fn heartbeat_interval(&self) -> Option<Duration> {
        (self.keep_alive > 0).then(|| Duration::from_millis(u64::from(self.keep_alive) * 500))
    }

    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&wire::PINGREQ_PACKET);
    }
}
