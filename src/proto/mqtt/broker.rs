//! `serve mqtt`: a minimal MQTT 3.1.1 and 5.0 broker for one connection at a time — it
//! accepts CONNECT (any client identifier and credentials, a clean session), acknowledges
//! every PUBLISH at its QoS (PUBACK; PUBREC, then PUBCOMP for the PUBREL), answers SUBSCRIBE,
//! UNSUBSCRIBE and PINGREQ, and delivers a message to the subscriptions **of the connection that
//! published it** (at QoS 0, which it grants for every subscription). Delivery across
//! connections is not built: each connection is served on its own, as every built-in server.
//!
//! It is strict where the standards say a server must close the connection: a first packet
//! other than CONNECT, a second CONNECT, reserved flags set, QoS 3, a wildcard in a PUBLISH's
//! topic, a packet identifier of 0, an acknowledgement for a message it never sent, a packet
//! larger than `--max-packet-size`, malformed lengths or strings. 5.0 connections get a
//! DISCONNECT with the reason first. It keeps a client's keep-alive: silent for one and a half
//! times it, the connection is closed.

use super::wire::{self, Reader, Version};
use crate::proto::{Ask, Awaiting, Served, ServerCodec, Step, Tell};
use std::collections::HashSet;
use std::time::Duration;

/// A connection subscribes to at most this many filters (more get SUBACK's failure code).
pub const MAX_SUBSCRIPTIONS: usize = 64;
/// `--max-packet-size`'s default: 1 MiB of remaining length, as mosquitto's
/// `max_packet_size` might be set (its own default is the standard's 256 MiB).
pub const DEFAULT_MAX_PACKET: usize = 1 << 20;

/// The broker's side of one connection.
#[derive(Debug, Clone)]
pub struct MqttServer {
    max_packet: usize,
    /// `None` until CONNECT.
    version: Option<Version>,
    keep_alive: u16,
    filters: Vec<Box<[u8]>>,
    /// QoS 2 messages received whose PUBREL has not come (each counted once).
    pending: HashSet<u16>,
    seed: u64,
}

impl MqttServer {
    pub fn new(max_packet: usize) -> Self {
        MqttServer {
            max_packet: max_packet.min(wire::MAX_REMAINING),
            version: None,
            keep_alive: 0,
            filters: Vec::new(),
            pending: HashSet::new(),
            seed: 0,
        }
    }

    fn v5(&self) -> bool {
        self.version == Some(Version::V5)
    }

    /// Close, with 5.0's DISCONNECT and `reason` first.
    fn refuse(&self, reason: u8, out: &mut Vec<u8>) -> Step {
        if self.v5() {
            out.extend_from_slice(&[wire::DISCONNECT << 4, 1, reason]);
        }
        Step::Close
    }

    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Step {
        let packet = match wire::parse_packet(input, self.max_packet) {
            Ok(Some(p)) => p,
            Ok(None) if input.is_empty() && self.version.is_some() => return Step::Need(Awaiting::Request),
            Ok(None) if self.version.is_none() || input.len() < 5 => return Step::Need(Awaiting::Head),
            Ok(None) => return Step::Need(Awaiting::Body),
            Err(super::Error::TooLarge) => return self.refuse(0x95, out),
            Err(_) => return self.refuse(0x81, out),
        };
        let used = packet.len;
        let Some(version) = self.version else {
            if packet.kind != wire::CONNECT {
                return Step::Close;
            }
            return match self.connect(packet.flags, packet.body, out) {
                Ok(true) => published(used, false),
                _ => Step::Close,
            };
        };
        let result = match (packet.kind, packet.flags) {
            (wire::PUBLISH, flags) => return self.publish(flags, packet.body, used, out),
            (wire::PUBREL, 0x02) => self.pubrel(packet.body, out),
            (wire::SUBSCRIBE, 0x02) => self.subscribe(packet.body, out),
            (wire::UNSUBSCRIBE, 0x02) => self.unsubscribe(packet.body, out),
            (wire::PINGREQ, 0) if packet.body.is_empty() => {
                out.extend_from_slice(&[wire::PINGRESP << 4, 0]);
                Ok(())
            }
            (wire::DISCONNECT, 0) => return Step::Close,
            // A second CONNECT, acknowledgements of messages never sent, AUTH (no method
            // offered), reserved types and flags.
            _ => return self.refuse(if version.v5() { 0x82 } else { 0 }, out),
        };
        match result {
            Ok(()) => published(used, false),
            Err(_) => self.refuse(0x81, out),
        }
    }

    /// CONNECT: `Ok(true)` accepted (CONNACK written); `Ok(false)` refused with a CONNACK
    /// that says why; `Err` malformed (closed without one).
    fn connect(&mut self, flags: u8, body: &[u8], out: &mut Vec<u8>) -> Result<bool, super::Error> {
        let mut r = Reader::new(body);
        let name = r.string()?;
        let level = r.u8()?;
        if flags != 0 || name != b"MQTT" {
            return Err(super::Error::Malformed);
        }
        let version = match level {
            4 => Version::V311,
            5 => Version::V5,
            _ => {
                // 3.1.1's answer to a level it does not speak (MQTT 3.1.1 §3.1.2.2).
                out.extend_from_slice(&[wire::CONNACK << 4, 2, 0, 1]);
                return Ok(false);
            }
        };
        let connect_flags = r.u8()?;
        let will = connect_flags & 0x04 != 0;
        let will_qos = (connect_flags >> 3) & 3;
        if connect_flags & 0x01 != 0 || will_qos == 3 || (!will && connect_flags & 0x38 != 0) {
            return Err(super::Error::Malformed);
        }
        self.keep_alive = r.u16()?;
        if version.v5() {
            r.properties(|_, _| {})?;
        }
        let client_id = r.string()?;
        if will {
            if version.v5() {
                r.properties(|_, _| {})?;
            }
            r.string()?;
            r.bytes()?;
        }
        if connect_flags & 0x80 != 0 {
            r.string()?;
        }
        if connect_flags & 0x40 != 0 {
            r.bytes()?;
        }
        if !r.rest.is_empty() {
            return Err(super::Error::Malformed);
        }
        let clean = connect_flags & 0x02 != 0;
        self.version = Some(version);
        if version.v5() {
            // An empty client identifier is given one (5.0 §3.2.2.3.7).
            let mut props = Vec::new();
            if client_id.is_empty() {
                props.push(wire::PROP_ASSIGNED_CLIENT_ID);
                wire::put_str(&mut props, format!("wirebench-{:016x}", self.seed).as_bytes());
            }
            out.extend_from_slice(&[wire::CONNACK << 4]);
            wire::put_varint(out, 2 + wire::varint_len(props.len()) + props.len());
            out.extend_from_slice(&[0, 0]);
            wire::put_varint(out, props.len());
            out.extend_from_slice(&props);
        } else if client_id.is_empty() && !clean {
            // 3.1.1 §3.1.3.1: an empty identifier needs a clean session.
            out.extend_from_slice(&[wire::CONNACK << 4, 2, 0, 2]);
            return Ok(false);
        } else {
            out.extend_from_slice(&[wire::CONNACK << 4, 2, 0, 0]);
        }
        Ok(true)
    }

    fn publish(&mut self, flags: u8, body: &[u8], used: usize, out: &mut Vec<u8>) -> Step {
        let qos = (flags >> 1) & 3;
        let dup = flags & 0x08 != 0;
        if qos == 3 || (qos == 0 && dup) {
            return self.refuse(0x81, out);
        }
        let mut r = Reader::new(body);
        let Ok(topic) = r.string() else { return self.refuse(0x81, out) };
        if !wire::valid_topic(topic) {
            return self.refuse(0x90, out);
        }
        let id = if qos > 0 {
            match r.u16() {
                Ok(0) | Err(_) => return self.refuse(0x81, out),
                Ok(id) => id,
            }
        } else {
            0
        };
        if self.v5() {
            let mut alias = false;
            if r.properties(|id, _| alias |= id == wire::PROP_TOPIC_ALIAS).is_err() {
                return self.refuse(0x81, out);
            }
            if alias {
                // No Topic Alias Maximum was offered: every alias is invalid.
                return self.refuse(0x94, out);
            }
        }
        let payload = r.rest;
        // A QoS 2 message sent again before its PUBREL is the same message.
        let first = qos < 2 || self.pending.insert(id);
        let matched = self.filters.iter().any(|f| wire::matches(f, topic));
        if first && matched {
            wire::encode_publish(self.version.unwrap_or_default(), topic, 0, 0, payload, out);
        }
        // 5.0's PUBACK says when no one subscribed (0x10, a success), as mosquitto 2.0's
        // does; its PUBREC does not.
        let unheard = if self.v5() && !matched { 0x10 } else { 0 };
        match qos {
            1 => wire::encode_ack(wire::PUBACK, id, unheard, out),
            2 => wire::encode_ack(wire::PUBREC, id, 0, out),
            _ => {}
        }
        published(used, first)
    }

    fn pubrel(&mut self, body: &[u8], out: &mut Vec<u8>) -> Result<(), super::Error> {
        let (id, _) = wire::parse_ack(body)?;
        let known = self.pending.remove(&id);
        // 5.0 says so when the identifier is unknown; 3.1.1 answers PUBCOMP regardless.
        let reason = if known || !self.v5() { 0 } else { 0x92 };
        wire::encode_ack(wire::PUBCOMP, id, reason, out);
        Ok(())
    }

    fn subscribe(&mut self, body: &[u8], out: &mut Vec<u8>) -> Result<(), super::Error> {
        let mut r = Reader::new(body);
        let id = r.u16()?;
        if id == 0 {
            return Err(super::Error::Malformed);
        }
        if self.v5() {
            r.properties(|_, _| {})?;
        }
        let mut codes = Vec::new();
        while !r.rest.is_empty() {
            let filter = r.string()?;
            let options = r.u8()?;
            if options & 0x03 == 3 || options & if self.v5() { 0xC0 } else { 0xFC } != 0 {
                return Err(super::Error::Malformed);
            }
            let code = if !wire::valid_filter(filter) {
                if self.v5() { 0x8F } else { 0x80 }
            } else if self.filters.iter().any(|f| **f == *filter) {
                0
            } else if self.filters.len() >= MAX_SUBSCRIPTIONS {
                if self.v5() { 0x97 } else { 0x80 }
            } else {
                self.filters.push(filter.into());
                0
            };
            codes.push(code);
        }
        if codes.is_empty() {
            return Err(super::Error::Malformed);
        }
        self.suback(wire::SUBACK, id, &codes, out);
        Ok(())
    }

    fn unsubscribe(&mut self, body: &[u8], out: &mut Vec<u8>) -> Result<(), super::Error> {
        let mut r = Reader::new(body);
        let id = r.u16()?;
        if self.v5() {
            r.properties(|_, _| {})?;
        }
        let mut codes = Vec::new();
        while !r.rest.is_empty() {
            let filter = r.string()?;
            let before = self.filters.len();
            self.filters.retain(|f| **f != *filter);
            codes.push(if self.filters.len() < before { 0 } else { 0x11 });
        }
        if codes.is_empty() {
            return Err(super::Error::Malformed);
        }
        if self.v5() {
            self.suback(wire::UNSUBACK, id, &codes, out);
        } else {
            wire::encode_ack(wire::UNSUBACK, id, 0, out);
        }
        Ok(())
    }

    /// SUBACK (or 5.0's UNSUBACK): the identifier, 5.0's empty properties, a code per filter.
    fn suback(&self, kind: u8, id: u16, codes: &[u8], out: &mut Vec<u8>) {
        out.push(kind << 4);
        wire::put_varint(out, 2 + usize::from(self.v5()) + codes.len());
        out.extend_from_slice(&id.to_be_bytes());
        if self.v5() {
            out.push(0);
        }
        out.extend_from_slice(codes);
    }
}

impl ServerCodec for MqttServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        Served::by_steps(input, |rest| self.step(rest, out))
    }

    fn ask(&self, question: Ask<'_>) {
        if let Ask::SilenceLimit(limit) = question {
            // MQTT 3.1.1 §3.1.2.10: one and a half keep-alives without a packet.
            *limit = (self.keep_alive > 0).then(|| Duration::from_millis(u64::from(self.keep_alive) * 1500));
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        if let Tell::Seed(seed) = news {
            self.seed = seed;
        }
    }
}

/// A packet answered: `used` bytes; a PUBLISH counts as a request and a message.
fn published(used: usize, publish: bool) -> Step {
    Step::Done { used, requests: u64::from(publish), messages: u64::from(publish), start_tls: false }
}
