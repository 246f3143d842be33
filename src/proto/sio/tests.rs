//! Socket.IO's byte vectors, computed by hand from the packet format, and exchanges between
//! the client and the built-in server, both Engine.IO versions.

use super::*;
use crate::proto::ws::{OP_TEXT, parse_head};
use crate::proto::{ClientCodec, Decoded, Hooks as _, Outcome, ServerCodec};
use std::time::Duration;

fn spec(eio: u8, namespace: &str, reply: Option<&str>) -> SioSpec {
    SioSpec {
        host: "127.0.0.1:3000".into(),
        path: format!("/socket.io/?EIO={eio}&transport=websocket"),
        headers: vec![],
        namespace: namespace.into(),
        body: event_body("message", &[b'x'; 400]),
        reply_event: reply.map(str::to_string),
        eio,
        depth: 1,
    }
}

fn server(eio: u8, reply: Option<&str>) -> SioServer {
    let handler =
        SioHandler::new(eio, Duration::from_secs(25), Duration::from_secs(20), reply.map(str::to_string));
    SioServer::with(handler, server::MAX_MESSAGE)
}

/// The payloads of the WebSocket frames in `bytes`, unmasked.
fn payloads(mut bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(h) = parse_head(bytes) {
        let mut p = bytes[h.head_len..h.head_len + h.len as usize].to_vec();
        if let Some(key) = h.mask {
            crate::proto::ws::apply_mask(&mut p, key, 0);
        }
        out.push(String::from_utf8_lossy(&p).into_owned());
        bytes = &bytes[h.head_len + h.len as usize..];
    }
    out
}

/// Run the client's handshake against the server; returns both, joined.
fn joined(eio: u8, namespace: &str, reply: Option<&str>) -> (SioClient, SioServer) {
    let mut c = SioClient::new(spec(eio, namespace, reply));
    let mut s = server(eio, reply);
    let mut to_server = Vec::new();
    c.handshake(&mut to_server);
    let mut to_client = Vec::new();
    for _ in 0..4 {
        let served = s.serve(&to_server, &mut to_client);
        assert!(!served.close, "{}", String::from_utf8_lossy(&to_client));
        to_server.clear();
        let mut pos = 0;
        loop {
            match c.decode_handshake(&to_client[pos..], &mut to_server).unwrap() {
                Decoded::Partial => break,
                Decoded::Done { consumed, outcome } => {
                    pos += consumed;
                    if outcome != Outcome::Handshaking {
                        assert_eq!(pos, to_client.len());
                        return (c, s);
                    }
                }
            }
        }
        to_client.drain(..pos);
    }
    panic!("the handshake did not complete");
}

/// The byte vector: a 400-byte payload event with ack id 0 on `/`, and its ack.
#[test]
fn a_400_byte_event_and_its_ack_are_425_and_411_bytes_on_both_versions() {
    // `42` + id `0` + `["message","` + 400 × x + `"]`: 2 + 1 + 12 + 400 + 2 = 417 bytes of
    // packet; a masked text frame of 417 is 2 + 2 (16-bit length) + 4 (mask) + 417 = 425.
    // The ack `430["` + 400 × x + `"]`: 3 + 2 + 400 + 2 = 407; unmasked frame 2 + 2 + 407 = 411.
    let packet = format!("420[\"message\",\"{}\"]", "x".repeat(400));
    assert_eq!(packet.len(), 417);
    let ack = format!("430[\"{}\"]", "x".repeat(400));
    assert_eq!(ack.len(), 407);
    for eio in [3, 4] {
        let (mut c, mut s) = joined(eio, "/", None);
        let mut event = Vec::new();
        c.encode_op(0, &mut event);
        assert_eq!(event.len(), 425, "EIO {eio}");
        assert_eq!(payloads(&event), std::slice::from_ref(&packet));
        let mut answer = Vec::new();
        let served = s.serve(&event, &mut answer);
        assert_eq!((served.requests, served.close), (1, false));
        assert_eq!(answer.len(), 411, "EIO {eio}");
        assert_eq!(payloads(&answer), std::slice::from_ref(&ack));
        for cut in 0..answer.len() {
            assert_eq!(c.decode_op(&answer[..cut], &mut Vec::new()), Ok(Decoded::Partial));
        }
        assert_eq!(
            c.decode_op(&answer, &mut Vec::new()),
            Ok(Decoded::Done { consumed: 411, outcome: Outcome::Op })
        );
    }
}

#[test]
fn the_handshake_on_the_wire() {
    // Engine.IO 4: open packet, then the client asks for `/` and gets its sid.
    let mut s = server(4, None);
    let mut c = SioClient::new(spec(4, "/admin", None));
    let mut req = Vec::new();
    c.handshake(&mut req);
    assert!(
        req.starts_with(b"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:3000\r\n")
    );
    let mut out = Vec::new();
    s.serve(&req, &mut out);
    let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let open = payloads(&out[head_end..]);
    assert_eq!(open.len(), 1);
    assert!(
        open[0].starts_with("0{\"sid\":\"")
            && open[0].ends_with(
                ",\"upgrades\":[],\"pingInterval\":25000,\"pingTimeout\":20000,\"maxPayload\":1000000}"
            ),
        "{open:?}"
    );
    let (_, _) = joined(4, "/admin", None);
    // Engine.IO 3: the server joins `/` unasked, right after its open packet.
    let mut s = server(3, None);
    let mut out = Vec::new();
    let mut c = SioClient::new(spec(3, "/", None));
    let mut req = Vec::new();
    c.handshake(&mut req);
    s.serve(&req, &mut out);
    let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let frames = payloads(&out[head_end..]);
    assert!(frames[0].ends_with("\"pingInterval\":25000,\"pingTimeout\":20000}"));
    assert_eq!(frames[1], "40");
}

#[test]
fn namespaces_reply_events_and_heartbeats() {
    // A namespace appears in every packet: `42/chat,0[…]` and `43/chat,0[…]`.
    let (mut c, mut s) = joined(4, "/chat", None);
    let mut event = Vec::new();
    c.encode_op(0, &mut event);
    assert!(payloads(&event)[0].starts_with("42/chat,0[\"message\""));
    let mut answer = Vec::new();
    s.serve(&event, &mut answer);
    assert!(payloads(&answer)[0].starts_with("43/chat,0[\"xxx"));
    assert_eq!(
        c.decode_op(&answer, &mut Vec::new()).unwrap(),
        Decoded::Done { consumed: answer.len(), outcome: Outcome::Op }
    );
    // The ask/answer pattern: no ack id; the server's reply event completes the operation.
    let (mut c, mut s) = joined(4, "/", Some("answer"));
    let mut event = Vec::new();
    c.encode_op(0, &mut event);
    assert!(payloads(&event)[0].starts_with("42[\"message\""));
    let mut answer = Vec::new();
    s.serve(&event, &mut answer);
    assert!(payloads(&answer)[0].starts_with("42[\"answer\",\"xxx"));
    assert_eq!(
        c.decode_op(&answer, &mut Vec::new()).unwrap(),
        Decoded::Done { consumed: answer.len(), outcome: Outcome::Op }
    );
    // Engine.IO 4: the server pings (`2`), the client answers `3`.
    let mut ping = Vec::new();
    s.heartbeat(&mut ping);
    assert_eq!(payloads(&ping), ["2"]);
    let mut pong = Vec::new();
    assert_eq!(
        c.decode_op(&ping, &mut pong).unwrap(),
        Decoded::Done { consumed: 3, outcome: Outcome::Control }
    );
    assert_eq!(payloads(&pong), ["3"]);
    assert_eq!(c.heartbeat_interval(), None, "Engine.IO 4 clients do not ping");
    assert_eq!(c.silence_limit(), Some(Duration::from_secs(45)));
    // Engine.IO 3: the client pings, the server answers.
    let (mut c, mut s) = joined(3, "/", None);
    assert_eq!(c.heartbeat_interval(), Some(Duration::from_secs(25)));
    let mut ping = Vec::new();
    c.heartbeat(&mut ping);
    let mut pong = Vec::new();
    s.serve(&ping, &mut pong);
    assert_eq!(payloads(&pong), ["3"]);
    assert_eq!(
        c.decode_op(&pong, &mut Vec::new()).unwrap(),
        Decoded::Done { consumed: 3, outcome: Outcome::Control }
    );
}

/// A server's frame of `text` (unmasked).
fn frame(text: &str) -> Vec<u8> {
    let mut f = Vec::new();
    crate::proto::ws::write_frame(&mut f, OP_TEXT, text.as_bytes(), None);
    f
}

#[test]
fn every_packet_a_server_may_send_is_handled_or_refused_clearly() {
    let (mut c, _) = joined(4, "/", None);
    let mut op = Vec::new();
    c.encode_op(0, &mut op);
    let decode = |c: &mut SioClient, text: &str| c.decode_op(&frame(text), &mut Vec::new());
    // A frame of a short text is 2 header bytes and the text.
    let control = |text: &str| Ok(Decoded::Done { consumed: 2 + text.len(), outcome: Outcome::Control });
    assert_eq!(decode(&mut c, "6"), control("6"), "noop");
    assert_eq!(decode(&mut c, "42[\"news\",1]"), control("42[\"news\",1]"), "an event of the server's own");
    assert_eq!(decode(&mut c, "42/other,[\"x\"]"), control("42/other,[\"x\"]"), "another namespace");
    assert_eq!(decode(&mut c, "431[\"x\"]"), Err(Error::WrongAckId));
    assert_eq!(decode(&mut c, "430[\"x\""), Err(Error::BadJson));
    assert_eq!(decode(&mut c, "451-[\"x\",{\"_placeholder\":true,\"num\":0}]"), Err(Error::BinaryPacket));
    assert_eq!(decode(&mut c, "9"), Err(Error::BadSioPacket));
    assert_eq!(decode(&mut c, "4x"), Err(Error::BadSioPacket));
    let mut c2 = c.clone();
    assert_eq!(decode(&mut c2, "44{\"message\":\"not authorized\"}"), Err(Error::SioConnectError));
    assert_eq!(c2.error_detail().as_deref(), Some("{\"message\":\"not authorized\"}"));
    let mut c3 = c.clone();
    assert_eq!(decode(&mut c3, "41"), control("41"));
    assert!(c3.peer_closing(), "a disconnect ends the connection");
    assert_eq!(decode(&mut c, "1"), control("1"));
    assert!(c.peer_closing(), "an Engine.IO close too");
}

#[test]
fn an_event_over_the_servers_max_payload_is_refused_at_the_handshake() {
    let mut c = SioClient::new(SioSpec { body: event_body("message", &[b'x'; 2000]), ..spec(4, "/", None) });
    let mut out = Vec::new();
    c.handshake(&mut out);
    c.stage = client_stage_open();
    let open = frame(
        "0{\"sid\":\"a\",\"upgrades\":[],\"pingInterval\":25000,\"pingTimeout\":20000,\"maxPayload\":1000}",
    );
    assert_eq!(c.decode_handshake(&open, &mut Vec::new()), Err(Error::OversizePacket));
    assert!(c.error_detail().is_some_and(|d| d.contains("maxPayload 1000")));
}

fn client_stage_open() -> client::Stage {
    client::Stage::Open
}

#[test]
fn packets_parse_with_and_without_namespace_and_id() {
    let p = parse_packet(b"2/chat,12[\"a\"]").unwrap();
    assert_eq!((p.kind, p.nsp, p.id, p.data), (SIO_EVENT, "/chat", Some(12), &b"[\"a\"]"[..]));
    let p = parse_packet(b"0/chat").unwrap();
    assert_eq!((p.kind, p.nsp, p.id), (SIO_CONNECT, "/chat", None));
    let p = parse_packet(b"3[]").unwrap();
    assert_eq!((p.nsp, p.id), ("/", None));
    assert_eq!(parse_packet(b"29999999999999999999[]"), Err(Error::BadSioPacket), "an id too long");
}

#[test]
fn errors_carried_in_another_protocol_keep_their_class_and_words() {
    use crate::outcome::ErrorClass;
    use crate::proto::{CodecError, http1, ws};
    let cut = Error::Ws(ws::Error::Http(http1::Error::TruncatedResponse));
    assert_eq!(cut.class(), ErrorClass::Closed);
    assert_eq!(cut.to_string(), "connection closed in the middle of a response");
    let refused = Error::Ws(ws::Error::UpgradeRefused(404));
    assert_eq!(refused.class(), ErrorClass::Protocol);
    assert_eq!(refused.to_string(), "WebSocket upgrade refused: HTTP 404 instead of 101");
    assert_eq!(crate::proto::nsq::Error::TlsRefused.class(), ErrorClass::Tls);
}
