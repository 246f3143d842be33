//! MQTT's byte vectors, from the 3.1.1 and 5.0 standards where they give one, and the client
//! and broker driven against each other and against hand-made answers.

use super::wire::{self, Version};
use super::*;
use crate::proto::{ClientCodec, Decoded, Hooks as _, Outcome, ServerCodec};

fn spec(version: Version, qos: u8) -> PublishSpec {
    PublishSpec {
        version,
        qos,
        topic: "test".into(),
        keep_alive: 60,
        client_prefix: "wb".into(),
        username: None,
        password: None,
        payload: vec![b'x'; 400],
    }
}

fn done(consumed: usize, outcome: Outcome) -> Result<Decoded, Error> {
    Ok(Decoded::Done { consumed, outcome })
}

/// A client past its handshake (CONNACK `connack`), with its CONNECT.
fn connected(version: Version, qos: u8, connack: &[u8]) -> (MqttClient, Vec<u8>) {
    let mut c = MqttClient::new(&spec(version, qos));
    c.seed(0x1234);
    let mut connect = Vec::new();
    c.handshake(&mut connect);
    let mut out = Vec::new();
    let decoded = c.decode_handshake(connack, &mut out);
    assert!(matches!(decoded, Ok(Decoded::Done { .. })), "{decoded:?}");
    (c, connect)
}

#[test]
fn variable_byte_integers_as_the_standard_tables_them() {
    // MQTT 3.1.1 §2.2.3 (5.0 §1.5.5): the limits of each length.
    let table: [(usize, &[u8]); 8] = [
        (0, &[0x00]),
        (127, &[0x7F]),
        (128, &[0x80, 0x01]),
        (16_383, &[0xFF, 0x7F]),
        (16_384, &[0x80, 0x80, 0x01]),
        (2_097_151, &[0xFF, 0xFF, 0x7F]),
        (2_097_152, &[0x80, 0x80, 0x80, 0x01]),
        (268_435_455, &[0xFF, 0xFF, 0xFF, 0x7F]),
    ];
    for (n, bytes) in table {
        let mut out = Vec::new();
        wire::put_varint(&mut out, n);
        assert_eq!(out, bytes, "{n}");
        assert_eq!(wire::varint_len(n), bytes.len());
        assert_eq!(wire::get_varint(bytes), Ok(Some((n, bytes.len()))));
        assert_eq!(wire::get_varint(&bytes[..bytes.len() - 1]), Ok(None));
    }
    assert_eq!(wire::get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x7F]), Err(Error::Malformed));
}

#[test]
fn connect_publish_and_acks_byte_for_byte() {
    let mut c = MqttClient::new(&spec(Version::V311, 1));
    c.seed(0xab);
    assert_eq!(c.client_id(), "wb00000000000000ab");
    let mut connect = Vec::new();
    c.handshake(&mut connect);
    // 3.1.1 §3.1.2: the protocol name, level 4, Clean Session, keep-alive 60; the identifier.
    let id = b"wb00000000000000ab";
    let body = [&[0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, id.len() as u8][..], id].concat();
    assert_eq!(connect, [&[0x10, body.len() as u8][..], &body].concat());
    // 5.0 §3.1.2: level 5 and an empty properties block before the payload.
    let mut c5 = MqttClient::new(&spec(Version::V5, 1));
    c5.seed(0xab);
    let mut connect5 = Vec::new();
    c5.handshake(&mut connect5);
    assert_eq!(&connect5[2..13], &[0, 4, b'M', b'Q', b'T', b'T', 5, 0x02, 0, 60, 0]);
    assert_eq!(connect5.len(), connect.len() + 1);

    // 3.1.1 §3.3.2.3's example variable header: topic "a/b", packet identifier 10.
    let mut p = Vec::new();
    wire::encode_publish(Version::V311, b"a/b", 1, 10, b"", &mut p);
    assert_eq!(p, [0x32, 7, 0x00, 0x03, b'a', b'/', b'b', 0x00, 0x0A]);
    // The study's figures: a 400-byte QoS 1 PUBLISH on `test` is 411 bytes (412 in 5.0).
    let mut op = Vec::new();
    let (mut c, _) = connected(Version::V311, 1, &[0x20, 2, 0, 0]);
    c.encode_op(0, &mut op);
    assert_eq!(op.len(), 411);
    assert_eq!(&op[..11], &[0x32, 0x98, 0x03, 0, 4, b't', b'e', b's', b't', 0, 1]);
    let (mut c5, _) = connected(Version::V5, 1, &[0x20, 3, 0, 0, 0]);
    op.clear();
    c5.encode_op(0, &mut op);
    assert_eq!((op.len(), op[11]), (412, 0));
    // PUBACK, PUBREC, PUBREL (flags 0010), PUBCOMP: 4 bytes; 5.0's with a reason, 5.
    let mut acks = Vec::new();
    for kind in [wire::PUBACK, wire::PUBREC, wire::PUBREL, wire::PUBCOMP] {
        wire::encode_ack(kind, 0x0102, 0, &mut acks);
    }
    assert_eq!(acks, [0x40, 2, 1, 2, 0x50, 2, 1, 2, 0x62, 2, 1, 2, 0x70, 2, 1, 2]);
    acks.clear();
    wire::encode_ack(wire::PUBCOMP, 7, 0x92, &mut acks);
    assert_eq!(acks, [0x70, 3, 0, 7, 0x92]);
    assert_eq!((wire::PINGREQ_PACKET, wire::DISCONNECT_PACKET), ([0xC0, 0], [0xE0, 0]));
}

#[test]
fn qos1_acks_complete_their_own_operation_in_any_order() {
    let (mut c, _) = connected(Version::V311, 1, &[0x20, 2, 0, 0]);
    let mut out = Vec::new();
    c.encode_op(0, &mut out);
    assert_eq!(c.op_id(), Some(1));
    c.encode_op(0, &mut out);
    assert_eq!(c.op_id(), Some(2));
    let acks = [0x40, 2, 0, 2, 0x40, 2, 0, 1];
    for cut in 0..4 {
        assert_eq!(c.decode_op(&acks[..cut], &mut out), Ok(Decoded::Partial));
    }
    assert_eq!(c.decode_op(&acks, &mut out), done(4, Outcome::Op));
    assert_eq!(c.answers_op(), Some(2));
    assert_eq!(c.decode_op(&acks[4..], &mut out), done(4, Outcome::Op));
    assert_eq!(c.answers_op(), Some(1));
    let answer = c.answer().unwrap();
    assert!(answer.is_success());
    // An identifier not in flight is the broker's mistake.
    assert_eq!(c.decode_op(&acks[4..], &mut out), Err(Error::UnknownId));
}

#[test]
fn qos2_sends_pubrel_as_the_operations_bytes_and_ends_at_pubcomp() {
    let (mut c, _) = connected(Version::V5, 2, &[0x20, 3, 0, 0, 0]);
    let mut out = Vec::new();
    c.encode_op(0, &mut out);
    assert!(c.op_open(), "PUBREL is to come");
    assert_eq!(c.op_more(&mut out), None, "not before PUBREC");
    // PUBREC 5.0 with "no matching subscribers" (a success) and a properties length.
    let pubrec = [0x50, 4, 0, 1, 0x10, 0];
    assert_eq!(c.decode_op(&pubrec, &mut out), done(6, Outcome::OpPart));
    assert_eq!(c.answers_op(), Some(1));
    let mut pubrel = Vec::new();
    assert_eq!(c.op_more(&mut pubrel), Some((1, true)));
    assert_eq!(pubrel, [0x62, 2, 0, 1]);
    assert_eq!(c.decode_op(&[0x70, 2, 0, 1], &mut out), done(4, Outcome::Op));
    assert_eq!(c.answers_op(), Some(1));
    // A refusal (5.0 PUBREC 0x87) fails the operation with its name; no PUBREL follows.
    c.encode_op(0, &mut out);
    let refused = c.decode_op(&[0x50, 3, 0, 2, 0x87], &mut out);
    assert_eq!(
        refused,
        done(5, Outcome::OpFailed(crate::outcome::Failure::protocol("PUBREC", "not authorized")))
    );
    assert_eq!(c.op_more(&mut out), None);
}

#[test]
fn qos0_subscribes_to_its_own_topic_and_completes_on_delivery() {
    let mut c = MqttClient::new(&spec(Version::V311, 0));
    c.seed(0xff);
    assert_eq!(c.topic(), b"test/wb00000000000000ff");
    let mut connect = Vec::new();
    c.handshake(&mut connect);
    let mut subscribe = Vec::new();
    assert_eq!(c.decode_handshake(&[0x20, 2, 0, 0], &mut subscribe), done(4, Outcome::Handshaking));
    let topic = b"test/wb00000000000000ff";
    assert_eq!(
        subscribe,
        [&[0x82, 2 + 2 + topic.len() as u8 + 1, 0, 1, 0, topic.len() as u8][..], topic, &[0]].concat()
    );
    assert_eq!(c.decode_handshake(&[0x90, 3, 0, 1, 0], &mut Vec::new()), done(5, Outcome::Control));
    let mut op = Vec::new();
    c.encode_op(0, &mut op);
    assert_eq!(c.op_id(), None, "answers in order");
    assert_eq!(op[0], 0x30);
    // The broker delivers the same packet back.
    assert_eq!(c.decode_op(&op, &mut Vec::new()), done(op.len(), Outcome::Op));
    let mut other = Vec::new();
    wire::encode_publish(Version::V311, b"test/else", 0, 0, b"x", &mut other);
    assert_eq!(c.decode_op(&other, &mut Vec::new()), Err(Error::OtherTopic));
    // A refused subscription is the handshake's failure.
    let mut c = MqttClient::new(&spec(Version::V311, 0));
    c.decode_handshake(&[0x20, 2, 0, 0], &mut Vec::new()).unwrap();
    assert_eq!(
        c.decode_handshake(&[0x90, 3, 0, 1, 0x80], &mut Vec::new()),
        Err(Error::SubscribeRefused(0x80))
    );
}

#[test]
fn connack_refusals_and_bounds_are_kept() {
    let mut c = MqttClient::new(&spec(Version::V311, 1));
    assert_eq!(c.decode_handshake(&[0x20, 2, 0, 5], &mut Vec::new()), Err(Error::RefusedV311(5)));
    assert_eq!(Error::RefusedV311(5).to_string(), "the broker refused CONNECT: not authorized (0x05)");
    let mut c = MqttClient::new(&spec(Version::V5, 1));
    assert_eq!(c.decode_handshake(&[0x20, 3, 0, 0x87, 0], &mut Vec::new()), Err(Error::Refused(0x87)));
    // 5.0 CONNACK with Receive Maximum 2 and Maximum QoS 1.
    let connack = [0x20, 8, 0, 0, 5, 0x21, 0, 2, 0x24, 1];
    let (mut c, _) = connected(Version::V5, 1, &connack);
    let mut out = Vec::new();
    c.encode_op(0, &mut out);
    assert!(c.accepts_ops());
    c.encode_op(0, &mut out);
    assert!(!c.accepts_ops(), "Receive Maximum 2");
    let mut c = MqttClient::new(&spec(Version::V5, 2));
    assert_eq!(c.decode_handshake(&connack, &mut Vec::new()), Err(Error::QosNotSupported(1)));
    // Maximum Packet Size 100: the 412-byte PUBLISH cannot go.
    let mut c = MqttClient::new(&spec(Version::V5, 1));
    let small = [0x20, 8, 0, 0, 5, 0x27, 0, 0, 0, 100];
    assert_eq!(c.decode_handshake(&small, &mut Vec::new()), Err(Error::BrokerLimit(100)));
}

#[test]
fn broker_answers_each_qos() {
    let mut b = MqttServer::new(broker::DEFAULT_MAX_PACKET);
    let mut input = fuzz::connect(Version::V311);
    let publish = |qos, id| {
        let mut p = Vec::new();
        wire::encode_publish(Version::V311, b"t", qos, id, b"msg", &mut p);
        p
    };
    input.extend(publish(0, 0));
    input.extend(publish(1, 5));
    input.extend(publish(2, 6));
    input.extend(publish(2, 6)); // sent again before PUBREL: one message
    input.extend([0x62, 2, 0, 6, 0xC0, 0]);
    let mut out = Vec::new();
    let served = b.serve(&input, &mut out);
    assert_eq!((served.consumed, served.requests, served.messages, served.close), (input.len(), 3, 3, false));
    let expected = [
        &[0x20, 2, 0, 0][..],
        &[0x40, 2, 0, 5],
        &[0x50, 2, 0, 6],
        &[0x50, 2, 0, 6],
        &[0x70, 2, 0, 6],
        &[0xD0, 0],
    ]
    .concat();
    assert_eq!(out, expected);
    // Every prefix is answered only as far as it is whole.
    for cut in 0..input.len() {
        let mut b = MqttServer::new(broker::DEFAULT_MAX_PACKET);
        let served = b.serve(&input[..cut], &mut Vec::new());
        assert!(served.consumed <= cut && !served.close);
    }
}

#[test]
fn broker_delivers_to_the_connections_own_subscriptions() {
    let mut b = MqttServer::new(broker::DEFAULT_MAX_PACKET);
    let mut input = fuzz::connect(Version::V5);
    wire::encode_subscribe(Version::V5, 9, b"a/+", 0, &mut input);
    wire::encode_publish(Version::V5, b"a/b", 1, 1, b"hi", &mut input);
    wire::encode_publish(Version::V5, b"b/b", 0, 0, b"no", &mut input);
    wire::encode_publish(Version::V5, b"b/b", 1, 2, b"no", &mut input);
    let mut out = Vec::new();
    b.serve(&input, &mut out);
    let mut delivered = Vec::new();
    wire::encode_publish(Version::V5, b"a/b", 0, 0, b"hi", &mut delivered);
    // The last PUBACK says "no matching subscribers" (0x10), as mosquitto 2.0's.
    let expected = [
        &[0x20, 3, 0, 0, 0][..],
        &[0x90, 4, 0, 9, 0, 0],
        &delivered,
        &[0x40, 2, 0, 1],
        &[0x40, 3, 0, 2, 0x10],
    ]
    .concat();
    assert_eq!(out, expected);
}

#[test]
fn broker_closes_on_what_the_standards_forbid() {
    let v5 = fuzz::connect(Version::V5);
    let cases: [(&str, Vec<u8>, &[u8]); 6] = [
        ("a first packet other than CONNECT", vec![0xC0, 0], &[]),
        ("QoS 3", [v5.clone(), vec![0x36, 5, 0, 1, b't', 0, 1]].concat(), &[0xE0, 1, 0x81]),
        ("a wildcard in a topic", [v5.clone(), vec![0x30, 4, 0, 1, b'#', 0]].concat(), &[0xE0, 1, 0x90]),
        ("packet identifier 0", [v5.clone(), vec![0x32, 6, 0, 1, b't', 0, 0, 0]].concat(), &[0xE0, 1, 0x81]),
        ("a second CONNECT", [v5.clone(), v5.clone()].concat(), &[0xE0, 1, 0x82]),
        (
            "a packet past --max-packet-size",
            [v5.clone(), vec![0x30, 0x80, 0x80, 0x01]].concat(),
            &[0xE0, 1, 0x95],
        ),
    ];
    for (what, input, last) in cases {
        let mut b = MqttServer::new(1000);
        let mut out = Vec::new();
        let served = b.serve(&input, &mut out);
        assert!(served.close, "{what}");
        assert!(out.ends_with(last), "{what}: {out:?}");
    }
    // An unknown protocol level gets 3.1.1's "unacceptable protocol version".
    let mut connect = fuzz::connect(Version::V311);
    connect[8] = 3;
    let mut out = Vec::new();
    assert!(MqttServer::new(1000).serve(&connect, &mut out).close);
    assert_eq!(out, [0x20, 2, 0, 1]);
}

#[test]
fn broker_keeps_the_clients_keep_alive() {
    let mut b = MqttServer::new(1000);
    b.serve(&fuzz::connect(Version::V311), &mut Vec::new());
    assert_eq!(b.silence_limit(), Some(std::time::Duration::from_secs(90)));
}

#[test]
fn topic_filters_as_the_standard_examples_say() {
    // MQTT 3.1.1 §4.7.1 and §4.7.2.
    for (filter, topic, yes) in [
        ("sport/tennis/player1/#", "sport/tennis/player1", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true),
        ("sport/#", "sport", true),
        ("sport/tennis/+", "sport/tennis/player1", true),
        ("sport/tennis/+", "sport/tennis/player1/ranking", false),
        ("sport/+", "sport", false),
        ("sport/+", "sport/", true),
        ("+/+", "/finance", true),
        ("/+", "/finance", true),
        ("+", "/finance", false),
        ("#", "$SYS/broker", false),
        ("$SYS/#", "$SYS/broker", true),
    ] {
        assert_eq!(wire::matches(filter.as_bytes(), topic.as_bytes()), yes, "{filter} {topic}");
    }
    for (filter, ok) in
        [("sport/tennis#", false), ("sport/tennis/#/ranking", false), ("sport+", false), ("+/tennis/#", true)]
    {
        assert_eq!(wire::valid_filter(filter.as_bytes()), ok, "{filter}");
    }
}

#[test]
fn the_client_against_the_broker() {
    for (version, qos) in [(Version::V311, 0), (Version::V311, 1), (Version::V5, 2), (Version::V5, 0)] {
        let mut c = MqttClient::new(&spec(version, qos));
        c.seed(7);
        let mut b = MqttServer::new(broker::DEFAULT_MAX_PACKET);
        let mut to_broker = Vec::new();
        c.handshake(&mut to_broker);
        let mut to_client = Vec::new();
        b.serve(&to_broker, &mut to_client);
        // Each handshake step is one answer: CONNACK, then (QoS 0) SUBACK.
        loop {
            to_broker.clear();
            let d = c.decode_handshake(&to_client, &mut to_broker).unwrap();
            let Decoded::Done { consumed, outcome } = d else { panic!("{version:?} {qos}: {d:?}") };
            assert_eq!(consumed, to_client.len());
            if outcome != Outcome::Handshaking {
                break;
            }
            to_client.clear();
            b.serve(&to_broker, &mut to_client);
        }
        let mut completed = 0;
        for _ in 0..3 {
            to_broker.clear();
            c.encode_op(0, &mut to_broker);
            for _ in 0..3 {
                to_client.clear();
                let served = b.serve(&to_broker, &mut to_client);
                assert_eq!(served.consumed, to_broker.len());
                to_broker.clear();
                let mut at = 0;
                while let Ok(Decoded::Done { consumed, outcome }) =
                    c.decode_op(&to_client[at..], &mut Vec::new())
                {
                    at += consumed;
                    completed += usize::from(outcome == Outcome::Op);
                }
                while c.op_more(&mut to_broker).is_some() {}
                if to_broker.is_empty() {
                    break;
                }
            }
        }
        assert_eq!(completed, 3, "{version:?} QoS {qos}");
    }
}
