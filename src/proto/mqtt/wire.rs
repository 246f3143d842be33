//! MQTT's wire format, 3.1.1 (OASIS, 2014) and 5.0 (OASIS, 2019): the packets the client
//! sends and the broker answers, encoded and parsed by hand, and nothing else.
//!
//! Every packet is a fixed header — one byte of type (high nibble) and flags (low nibble),
//! then the length of the rest as a variable byte integer (7 bits a byte, at most 4 bytes) —
//! a variable header and a payload. 5.0 adds a properties block (its length, then
//! identifier–value pairs) to most variable headers, and reason codes to the acknowledgements.
//! A 400-byte QoS 1 PUBLISH on topic `test` is 1 + 2 + (2 + 4) + 2 + 400 = 411 bytes in 3.1.1
//! (412 in 5.0: an empty properties block); its PUBACK is 4.

use super::Error;

/// The packet types (the fixed header's high nibble).
pub const CONNECT: u8 = 1;
pub const CONNACK: u8 = 2;
pub const PUBLISH: u8 = 3;
pub const PUBACK: u8 = 4;
pub const PUBREC: u8 = 5;
pub const PUBREL: u8 = 6;
pub const PUBCOMP: u8 = 7;
pub const SUBSCRIBE: u8 = 8;
pub const SUBACK: u8 = 9;
pub const UNSUBSCRIBE: u8 = 10;
pub const UNSUBACK: u8 = 11;
pub const PINGREQ: u8 = 12;
pub const PINGRESP: u8 = 13;
pub const DISCONNECT: u8 = 14;
pub const AUTH: u8 = 15;

/// The largest remaining length a variable byte integer can say (4 bytes: 268,435,455).
pub const MAX_REMAINING: usize = 268_435_455;
/// PINGREQ, as the client sends it.
pub const PINGREQ_PACKET: [u8; 2] = [PINGREQ << 4, 0];
/// DISCONNECT with no reason (3.1.1's only form; 5.0's "normal disconnection").
pub const DISCONNECT_PACKET: [u8; 2] = [DISCONNECT << 4, 0];

/// The protocol version, as CONNECT's protocol level byte says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Version {
    /// MQTT 3.1.1 (protocol level 4): the most widely deployed.
    #[default]
    #[value(name = "3.1.1")]
    #[serde(rename = "3.1.1")]
    V311,
    /// MQTT 5.0 (protocol level 5): properties and reason codes.
    #[value(name = "5")]
    #[serde(rename = "5")]
    V5,
}

impl Version {
    pub fn level(self) -> u8 {
        match self {
            Version::V311 => 4,
            Version::V5 => 5,
        }
    }
    pub fn v5(self) -> bool {
        self == Version::V5
    }
}

/// Append a variable byte integer (`n` at most [`MAX_REMAINING`]).
pub fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n % 128) as u8;
        n /= 128;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The length of `n` as a variable byte integer.
pub fn varint_len(n: usize) -> usize {
    match n {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// A variable byte integer at the start of `input`: its value and length; `Ok(None)`: not all
/// here yet; a fifth byte is malformed.
pub fn get_varint(input: &[u8]) -> Result<Option<(usize, usize)>, Error> {
    let mut value = 0usize;
    for (i, &byte) in input.iter().enumerate().take(4) {
        value += usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    if input.len() >= 4 { Err(Error::Malformed) } else { Ok(None) }
}

/// Append a UTF-8 string or binary field: its 2-byte length, then its bytes (at most 65,535).
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len().min(65_535) as u16).to_be_bytes());
    out.extend_from_slice(&s[..s.len().min(65_535)]);
}

/// One whole packet: its type, its flags, its body (what follows the fixed header) and its
/// length on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub kind: u8,
    pub flags: u8,
    pub body: &'a [u8],
    pub len: usize,
}

/// The whole packet at the start of `input`, if it has arrived; one longer than `max`
/// (remaining length) is refused before its body arrives.
pub fn parse_packet(input: &[u8], max: usize) -> Result<Option<Packet<'_>>, Error> {
    let Some(&first) = input.first() else { return Ok(None) };
    let Some((remaining, n)) = get_varint(&input[1..])? else { return Ok(None) };
    if remaining > max {
        return Err(Error::TooLarge);
    }
    let len = 1 + n + remaining;
    if input.len() < len {
        return Ok(None);
    }
    Ok(Some(Packet { kind: first >> 4, flags: first & 0x0f, body: &input[1 + n..len], len }))
}

/// Reads fields off a packet's body, each bounded by what is there.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    pub rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Reader { rest: body }
    }
    pub fn u8(&mut self) -> Result<u8, Error> {
        let (&b, rest) = self.rest.split_first().ok_or(Error::Malformed)?;
        self.rest = rest;
        Ok(b)
    }
    pub fn u16(&mut self) -> Result<u16, Error> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.rest.len() < n {
            return Err(Error::Malformed);
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }
    /// A length-prefixed string or binary field.
    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }
    /// A UTF-8 string field: valid UTF-8 without U+0000 (both versions' rule).
    pub fn string(&mut self) -> Result<&'a [u8], Error> {
        let s = self.bytes()?;
        if std::str::from_utf8(s).is_err() || s.contains(&0) {
            return Err(Error::Malformed);
        }
        Ok(s)
    }
    pub fn varint(&mut self) -> Result<usize, Error> {
        let (value, n) = get_varint(self.rest)?.ok_or(Error::Malformed)?;
        self.rest = &self.rest[n..];
        Ok(value)
    }
    /// A 5.0 properties block: each property handed to `each` (its identifier and value).
    pub fn properties(&mut self, mut each: impl FnMut(u8, Value<'a>)) -> Result<(), Error> {
        let n = self.varint()?;
        let mut block = Reader::new(self.take(n)?);
        while !block.rest.is_empty() {
            let id = block.varint()?;
            let id = u8::try_from(id).map_err(|_| Error::Malformed)?;
            let value = match id {
                // Byte properties.
                0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => Value::Int(block.u8()?.into()),
                // Two-byte integers.
                0x13 | 0x21 | 0x22 | 0x23 => Value::Int(block.u16()?.into()),
                // Four-byte integers.
                0x02 | 0x11 | 0x18 | 0x27 => {
                    let b = block.take(4)?;
                    Value::Int(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                }
                // A variable byte integer (the subscription identifier).
                0x0B => Value::Int(u32::try_from(block.varint()?).unwrap_or(u32::MAX)),
                // UTF-8 strings and binary data.
                0x03 | 0x08 | 0x12 | 0x15 | 0x1A | 0x1C | 0x1F => Value::Bytes(block.bytes()?),
                0x09 | 0x16 => Value::Bytes(block.bytes()?),
                // A user property: a pair of strings.
                0x26 => {
                    block.string()?;
                    Value::Bytes(block.string()?)
                }
                _ => return Err(Error::Malformed),
            };
            each(id, value);
        }
        Ok(())
    }
}

/// A property's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Int(u32),
    Bytes(&'a [u8]),
}

impl Value<'_> {
    pub fn int(self) -> u32 {
        match self {
            Value::Int(n) => n,
            Value::Bytes(_) => 0,
        }
    }
}

/// 5.0's property identifiers this crate reads or writes.
pub const PROP_SESSION_EXPIRY: u8 = 0x11;
pub const PROP_ASSIGNED_CLIENT_ID: u8 = 0x12;
pub const PROP_SERVER_KEEP_ALIVE: u8 = 0x13;
pub const PROP_REASON_STRING: u8 = 0x1F;
pub const PROP_RECEIVE_MAXIMUM: u8 = 0x21;
pub const PROP_TOPIC_ALIAS: u8 = 0x23;
pub const PROP_MAXIMUM_QOS: u8 = 0x24;
pub const PROP_MAXIMUM_PACKET_SIZE: u8 = 0x27;

/// The fixed header of a packet of `kind` with `flags` and `remaining` bytes after it.
fn head(out: &mut Vec<u8>, kind: u8, flags: u8, remaining: usize) {
    out.push(kind << 4 | flags);
    put_varint(out, remaining);
}

/// What CONNECT says: the client's identity and how its session goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectSpec {
    pub version: Version,
    pub client_id: String,
    /// Seconds the client may stay silent (0: no keep-alive).
    pub keep_alive: u16,
    pub username: Option<String>,
    pub password: Option<String>,
}

/// CONNECT with a clean session (3.1.1's Clean Session, 5.0's Clean Start): no state kept
/// between connections, so every connection of a run starts alike.
pub fn encode_connect(spec: &ConnectSpec, out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(32 + spec.client_id.len());
    put_str(&mut body, b"MQTT");
    body.push(spec.version.level());
    let mut flags = 0x02;
    if spec.username.is_some() {
        flags |= 0x80;
    }
    if spec.password.is_some() {
        flags |= 0x40;
    }
    body.push(flags);
    body.extend_from_slice(&spec.keep_alive.to_be_bytes());
    if spec.version.v5() {
        body.push(0); // no properties
    }
    put_str(&mut body, spec.client_id.as_bytes());
    if let Some(user) = &spec.username {
        put_str(&mut body, user.as_bytes());
    }
    if let Some(password) = &spec.password {
        put_str(&mut body, password.as_bytes());
    }
    head(out, CONNECT, 0, body.len());
    out.extend_from_slice(&body);
}

/// The length of a PUBLISH's remaining part: topic, packet id (QoS 1 and 2), properties (5.0),
/// payload.
pub fn publish_remaining(version: Version, topic: usize, qos: u8, payload: usize) -> usize {
    2 + topic + if qos > 0 { 2 } else { 0 } + usize::from(version.v5()) + payload
}

/// PUBLISH of `payload` on `topic` at `qos` with packet identifier `id` (unused at QoS 0).
pub fn encode_publish(version: Version, topic: &[u8], qos: u8, id: u16, payload: &[u8], out: &mut Vec<u8>) {
    let remaining = publish_remaining(version, topic.len(), qos, payload.len());
    out.reserve(5 + remaining);
    head(out, PUBLISH, qos << 1, remaining);
    put_str(out, topic);
    if qos > 0 {
        out.extend_from_slice(&id.to_be_bytes());
    }
    if version.v5() {
        out.push(0);
    }
    out.extend_from_slice(payload);
}

/// PUBACK, PUBREC, PUBREL or PUBCOMP for `id`: 4 bytes, or 5.0's with a reason code other
/// than success (the code is left out when it is 0, as the standard allows).
pub fn encode_ack(kind: u8, id: u16, reason: u8, out: &mut Vec<u8>) {
    let flags = if kind == PUBREL { 0x02 } else { 0 };
    let [hi, lo] = id.to_be_bytes();
    if reason == 0 {
        out.extend_from_slice(&[kind << 4 | flags, 2, hi, lo]);
    } else {
        out.extend_from_slice(&[kind << 4 | flags, 3, hi, lo, reason]);
    }
}

/// SUBSCRIBE to one topic filter at QoS `qos` with packet identifier `id`.
pub fn encode_subscribe(version: Version, id: u16, filter: &[u8], qos: u8, out: &mut Vec<u8>) {
    let remaining = 2 + usize::from(version.v5()) + 2 + filter.len() + 1;
    head(out, SUBSCRIBE, 0x02, remaining);
    out.extend_from_slice(&id.to_be_bytes());
    if version.v5() {
        out.push(0);
    }
    put_str(out, filter);
    out.push(qos);
}

/// A packet identifier at the start of an acknowledgement's body, and 5.0's reason code
/// after it (0, success, where the body stops after the identifier).
pub fn parse_ack(body: &[u8]) -> Result<(u16, u8), Error> {
    let mut r = Reader::new(body);
    let id = r.u16()?;
    let reason = if r.rest.is_empty() { 0 } else { r.u8()? };
    Ok((id, reason))
}

/// Whether `topic` matches the subscription `filter`: `+` one level, `#` (last) every level
/// below; a topic starting with `$` matches no filter starting with a wildcard (MQTT 4.7.2).
pub fn matches(filter: &[u8], topic: &[u8]) -> bool {
    if topic.first() == Some(&b'$') && matches!(filter.first(), Some(b'+' | b'#')) {
        return false;
    }
    let mut levels = topic.split(|&b| b == b'/');
    for part in filter.split(|&b| b == b'/') {
        match (part, levels.next()) {
            (b"#", _) => return true,
            (b"+", Some(_)) => {}
            (part, Some(level)) if part == level => {}
            _ => return false,
        }
    }
    levels.next().is_none()
}

/// A topic filter as the standard allows it: non-empty, `#` only as a whole last level, `+`
/// only as a whole level.
pub fn valid_filter(filter: &[u8]) -> bool {
    let levels: Vec<&[u8]> = filter.split(|&b| b == b'/').collect();
    !filter.is_empty()
        && levels.iter().enumerate().all(|(i, level)| {
            let wild = level.iter().any(|&b| b == b'+' || b == b'#');
            !wild || (*level == b"+") || (*level == b"#" && i == levels.len() - 1)
        })
}

/// A topic name as the standard allows it for PUBLISH: non-empty, no wildcard.
pub fn valid_topic(topic: &[u8]) -> bool {
    !topic.is_empty() && !topic.iter().any(|&b| b == b'+' || b == b'#')
}

/// The name of a 5.0 reason code (and of 3.1.1's CONNACK return codes, given as
/// `connack_v311`), for answers and errors.
pub fn reason_name(code: u8) -> &'static str {
    match code {
        0x00 => "success",
        0x01 => "granted QoS 1",
        0x02 => "granted QoS 2",
        0x04 => "disconnect with will message",
        0x10 => "no matching subscribers",
        0x11 => "no subscription existed",
        0x80 => "unspecified error",
        0x81 => "malformed packet",
        0x82 => "protocol error",
        0x83 => "implementation specific error",
        0x84 => "unsupported protocol version",
        0x85 => "client identifier not valid",
        0x86 => "bad user name or password",
        0x87 => "not authorized",
        0x88 => "server unavailable",
        0x89 => "server busy",
        0x8A => "banned",
        0x8B => "server shutting down",
        0x8C => "bad authentication method",
        0x8D => "keep alive timeout",
        0x8E => "session taken over",
        0x8F => "topic filter invalid",
        0x90 => "topic name invalid",
        0x91 => "packet identifier in use",
        0x92 => "packet identifier not found",
        0x93 => "receive maximum exceeded",
        0x94 => "topic alias invalid",
        0x95 => "packet too large",
        0x96 => "message rate too high",
        0x97 => "quota exceeded",
        0x98 => "administrative action",
        0x99 => "payload format invalid",
        0x9A => "retain not supported",
        0x9B => "QoS not supported",
        0x9C => "use another server",
        0x9D => "server moved",
        0x9E => "shared subscriptions not supported",
        0x9F => "connection rate exceeded",
        0xA0 => "maximum connect time",
        0xA1 => "subscription identifiers not supported",
        0xA2 => "wildcard subscriptions not supported",
        _ => "unknown reason code",
    }
}

/// 3.1.1's CONNACK return codes (1–5; 0 is accepted).
pub fn connack_v311(code: u8) -> &'static str {
    match code {
        0 => "connection accepted",
        1 => "unacceptable protocol version",
        2 => "identifier rejected",
        3 => "server unavailable",
        4 => "bad user name or password",
        5 => "not authorized",
        _ => "unknown return code",
    }
}

/// The name of a packet type, for errors.
pub fn packet_name(kind: u8) -> &'static str {
    [
        "reserved (0)",
        "CONNECT",
        "CONNACK",
        "PUBLISH",
        "PUBACK",
        "PUBREC",
        "PUBREL",
        "PUBCOMP",
        "SUBSCRIBE",
        "SUBACK",
        "UNSUBSCRIBE",
        "UNSUBACK",
        "PINGREQ",
        "PINGRESP",
        "DISCONNECT",
        "AUTH",
    ][usize::from(kind & 0x0f)]
}
