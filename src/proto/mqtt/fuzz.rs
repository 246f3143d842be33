//! MQTT's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid streams
//! `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::wire::{self, Version};
use super::{MqttClient, MqttServer, PublishSpec};
use crate::props::{
    Target, client_splits_agree, server_input, server_splits_agree, split_input, with_prefix,
};

pub const TARGETS: &[(&str, Target)] =
    &[("client_mqtt", client_mqtt), ("client_mqtt_qos0", client_mqtt_qos0), ("server_mqtt", server_mqtt)];

/// A publisher of `m` on `t`: 5.0 at QoS 2 (properties, PUBREC/PUBREL/PUBCOMP, DISCONNECT), or
/// 3.1.1 at QoS 0 (SUBSCRIBE in the handshake, deliveries completing operations).
pub fn client(version: Version, qos: u8) -> MqttClient {
    MqttClient::new(&PublishSpec {
        version,
        qos,
        topic: "t".into(),
        keep_alive: 60,
        client_prefix: "wb".into(),
        username: None,
        password: None,
        payload: b"m".to_vec(),
    })
}

/// CONNACK accepting the connection (5.0's with an empty properties block).
pub fn connack(version: Version) -> Vec<u8> {
    match version {
        Version::V311 => vec![0x20, 2, 0, 0],
        Version::V5 => vec![0x20, 3, 0, 0, 0],
    }
}

fn client_mqtt(data: &[u8]) {
    let (seed, stream) = split_input(data);
    client_splits_agree(&client(Version::V5, 2), &|_| connack(Version::V5), &stream, seed);
}

fn client_mqtt_qos0(data: &[u8]) {
    let (seed, stream) = split_input(data);
    // CONNACK, then the SUBACK granting QoS 0 to the one SUBSCRIBE (identifier 1).
    let answer = |_: &[u8]| [connack(Version::V311), vec![0x90, 3, 0, 1, 0]].concat();
    client_splits_agree(&client(Version::V311, 0), &answer, &stream, seed);
}

/// CONNECT as the publisher sends it.
pub fn connect(version: Version) -> Vec<u8> {
    let mut out = Vec::new();
    let spec = wire::ConnectSpec {
        version,
        client_id: "wbfuzz".into(),
        keep_alive: 60,
        username: None,
        password: None,
    };
    wire::encode_connect(&spec, &mut out);
    out
}

fn server_mqtt(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let stream = with_prefix(&connect(Version::V5), &stream, lead);
    server_splits_agree(&MqttServer::new(super::broker::DEFAULT_MAX_PACKET), &stream, &arrivals);
}

fn publish(version: Version, qos: u8, id: u16) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode_publish(version, b"t", qos, id, b"msg", &mut out);
    out
}

fn subscribe(version: Version, filter: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode_subscribe(version, 3, filter, 0, &mut out);
    out
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    let v5 = Version::V5;
    match name {
        // PUBREC and PUBCOMP for the first operations, a PINGRESP, DISCONNECT 0x8B.
        "client_mqtt" => vec![
            [&[0x50, 2, 0, 1][..], &[0x70, 2, 0, 1], &[0xD0, 0], &[0x50, 3, 0, 2, 0x10], &[0x70, 2, 0, 2]]
                .concat(),
            [&[0x50, 4, 0, 1, 0x80, 0][..], &[0xE0, 1, 0x8B]].concat(),
        ],
        // The broker delivering the operations' messages back (on `t/wb` and its seed).
        "client_mqtt_qos0" => {
            let mut delivered = Vec::new();
            wire::encode_publish(Version::V311, b"t/wb0000000000000000", 0, 0, b"m", &mut delivered);
            vec![[delivered.clone(), vec![0xD0, 0], delivered].concat()]
        }
        "server_mqtt" => vec![
            [
                connect(v5),
                publish(v5, 0, 0),
                publish(v5, 1, 7),
                publish(v5, 2, 8),
                vec![0x62, 2, 0, 8],
                vec![0xC0, 0],
                subscribe(v5, b"t/#"),
                publish(v5, 0, 0),
                vec![0xE0, 0],
            ]
            .concat(),
            [connect(Version::V311), publish(Version::V311, 2, 1), vec![0x62, 2, 0, 1]].concat(),
        ],
        _ => vec![],
    }
}
