//! MQTT 3.1.1 and 5.0, the IoT messaging protocol: a publisher (`mqtt://HOST:1883/TOPIC`,
//! `mqtts://` over TLS) whose operation is one PUBLISH at QoS 0, 1 or 2, and `serve mqtt`, a
//! minimal broker that acknowledges. The wire format is [`wire`]; the client [`client`]
//! (what completes an operation at each QoS is said there); the broker [`broker`].
//!
//! CONNECT/CONNACK is the handshake (a clean session, a client identifier per connection),
//! PINGREQ/PINGRESP and DISCONNECT are control bytes. A 400-byte QoS 1 PUBLISH on `test` is 411
//! bytes and its PUBACK 4 (MQTT 3.1.1); QoS 2 adds PUBREL (4, sent) and PUBCOMP (4, read).

pub mod broker;
pub mod client;
pub mod fuzz;
pub mod wire;

#[cfg(test)]
mod tests;

pub use broker::MqttServer;
pub use client::{MqttClient, PublishSpec};
pub use wire::Version;

use crate::plan::{CompareRow, Drive, LoadPlan, OptionSet, Payload, Prepared, Protocol, Scheme, Server};
use crate::tls::options::TlsStart;
use anyhow::bail;

/// How the broker (or what answered as one) broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("malformed MQTT packet")]
    Malformed,
    #[error("an MQTT packet larger than the largest accepted")]
    TooLarge,
    #[error("the broker refused CONNECT: {} ({:#04x})", wire::connack_v311(*.0), .0)]
    RefusedV311(u8),
    #[error("the broker refused CONNECT: {} ({:#04x})", wire::reason_name(*.0), .0)]
    Refused(u8),
    #[error("the broker refused the subscription the QoS 0 operations need: {} ({:#04x})", wire::reason_name(*.0), .0)]
    SubscribeRefused(u8),
    #[error("the broker allows QoS {0} at most (its CONNACK's Maximum QoS): lower --qos")]
    QosNotSupported(u8),
    #[error("a PUBLISH is larger than the broker's Maximum Packet Size ({0} bytes): lower --size")]
    BrokerLimit(u32),
    #[error("an unexpected {} from the broker", wire::packet_name(*.0))]
    Unexpected(u8),
    #[error("an acknowledgement for a packet identifier not in flight")]
    UnknownId,
    #[error("a message delivered on a topic this connection did not publish on")]
    OtherTopic,
}

impl super::CodecError for Error {}

/// MQTT's load options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "mqtt-options")]
pub struct Options {
    /// MQTT: the quality of service of each PUBLISH — 1 (default): until PUBACK; 2: PUBREC,
    /// PUBREL, PUBCOMP; 0: no acknowledgement, so each connection subscribes to its own topic
    /// and an operation ends when the broker delivers it back.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub qos: Option<u8>,
    /// MQTT: the protocol version (default 3.1.1).
    #[arg(long, value_name = "VERSION")]
    pub mqtt_version: Option<Version>,
    /// MQTT: CONNECT's keep-alive in seconds (default 60; 0: none); a PINGREQ goes every half
    /// of it.
    #[arg(long, value_name = "SECS")]
    pub mqtt_keep_alive: Option<u16>,
    /// MQTT: the user name CONNECT gives.
    #[arg(long, value_name = "NAME")]
    pub mqtt_username: Option<String>,
    /// MQTT: the password CONNECT gives.
    #[arg(long, value_name = "PASSWORD")]
    pub mqtt_password: Option<String>,
}

/// The broker's options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "mqtt-serve-options")]
pub struct ServeOptions {
    /// mqtt: largest packet accepted, in bytes after the fixed header (default 1048576; a
    /// larger one closes the connection, with 5.0's DISCONNECT 0x95 first).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=wire::MAX_REMAINING as u64))]
    pub max_packet_size: Option<u64>,
}

/// A PUBLISH's largest remaining length with a QoS 0 connection's own topic below the URL's
/// (a `/` and a client identifier of 23 characters).
const OWN_TOPIC: usize = 24;
/// CONNECT's keep-alive when `--mqtt-keep-alive` is not given (mosquitto_pub's).
const DEFAULT_KEEP_ALIVE: u16 = 60;

fn options(plan: &LoadPlan) -> std::sync::Arc<Options> {
    plan.load.options.get::<Options>()
}

fn qos(plan: &LoadPlan) -> u8 {
    options(plan).qos.unwrap_or(1)
}

/// The topic a URL names: its path without the first slash and the query.
fn topic(plan: &LoadPlan) -> &str {
    let path = plan.target.path.strip_prefix('/').unwrap_or(&plan.target.path);
    path.split('?').next().unwrap_or_default()
}

/// The start of each connection's client identifier: `wb` and five hex digits of this host's
/// name and process id, so that two generators (two pods, two processes) sharing a broker do
/// not end each other's sessions.
fn client_prefix(hostname: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (hostname, std::process::id()).hash(&mut h);
    format!("wb{:05x}", h.finish() & 0xf_ffff)
}

/// Build the publisher for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| {
        let options = options(&p.plan);
        MqttClient::new(&PublishSpec {
            version: options.mqtt_version.unwrap_or_default(),
            qos: qos(&p.plan),
            topic: topic(&p.plan).to_string(),
            keep_alive: options.mqtt_keep_alive.unwrap_or(DEFAULT_KEEP_ALIVE),
            client_prefix: client_prefix(&p.hostname),
            username: options.mqtt_username.clone(),
            password: options.mqtt_password.clone(),
            payload: p.body.to_vec(),
        })
    })
}

pub static PROTOCOL: Protocol = Protocol {
    name: "mqtt",
    schemes: &[
        Scheme { name: "mqtt", default_port: 1883, tls: None, datagrams: false },
        Scheme { name: "mqtts", default_port: 8883, tls: Some(TlsStart::AtConnect), datagrams: false },
    ],
    default_payload: 400,
    validate,
    check_payload: |plan, body| fits(plan, body.len()),
    messages_per_op: crate::plan::one_message,
    compare_rows: |plan| {
        let row = |qos: u8, label: &str| CompareRow {
            label: label.into(),
            plan: with_qos(plan, qos),
            payload_crossings: if qos == 0 { 2 } else { 1 },
            versus: None,
            floor: false,
        };
        vec![row(0, "MQTT QoS 0 (echo)"), row(1, "MQTT QoS 1"), row(2, "MQTT QoS 2")]
    },
    option_groups: &["mqtt-options"],
    http_method: None,
    // MQTT over TLS names no ALPN protocol (1883/8883 need none; "mqtt" is a cloud's choice).
    alpn: None,
    recognize: |bytes| match bytes {
        [0x20, 2, 0..=1, 0..=5, ..] | [0x20, 3..=127, 0..=1, _, ..] => Some("MQTT (a CONNACK)"),
        _ => None,
    },
};

fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    let topic = topic(plan);
    if topic.is_empty() {
        bail!("{}: an MQTT URL names its topic: mqtt://127.0.0.1:1883/TOPIC", plan.target.url);
    }
    if !wire::valid_topic(topic.as_bytes()) || topic.contains('\0') {
        bail!("{}: '{topic}' is a topic filter: a PUBLISH names one topic, without + or #", plan.target.url);
    }
    if topic.len() + OWN_TOPIC > 65_535 {
        bail!("the topic is {} bytes: MQTT's strings are at most 65,535", topic.len());
    }
    if !plan.load.headers.is_empty() {
        bail!("-H does not apply to mqtt:// targets: MQTT has no headers");
    }
    if let Some(Payload::Size(n)) = plan.load.payload {
        fits(plan, n)?;
    }
    Ok(())
}

/// A PUBLISH of `size` payload bytes fits MQTT's largest packet.
fn fits(plan: &LoadPlan, size: usize) -> anyhow::Result<()> {
    let version = options(plan).mqtt_version.unwrap_or_default();
    let remaining = wire::publish_remaining(version, topic(plan).len() + OWN_TOPIC, 2, size);
    if remaining > wire::MAX_REMAINING {
        bail!(
            "--size {size} does not fit an MQTT packet (at most {} bytes after its fixed header)",
            wire::MAX_REMAINING
        );
    }
    Ok(())
}

/// The plan with every PUBLISH at `qos`.
fn with_qos(plan: &LoadPlan, qos: u8) -> LoadPlan {
    plan.with_options(|o: &mut Options| o.qos = Some(qos))
}

pub static SERVER: Server = Server {
    name: "mqtt",
    about: "a minimal MQTT 3.1.1 and 5.0 broker: acknowledges every PUBLISH at its QoS (PUBACK; PUBREC/PUBCOMP), answers SUBSCRIBE and PINGREQ, delivers to the publishing connection's own subscriptions",
    default_listen: "127.0.0.1:1883",
    tls: &[TlsStart::AtConnect],
    listeners: |addr, options: &OptionSet, _| {
        let max =
            options.get::<ServeOptions>().max_packet_size.map_or(broker::DEFAULT_MAX_PACKET, |m| m as usize);
        Ok(vec![(addr, Box::new(MqttServer::new(max)))])
    },
    alpn: None,
    urls: |addrs, tls| {
        addrs.iter().map(|a| format!("mqtt{}://{a}/test", if tls { "s" } else { "" })).collect()
    },
    option_groups: &["mqtt-serve-options"],
    quic: false,
    datagrams: None,
};
