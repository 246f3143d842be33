//! Socket.IO's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid
//! streams `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::{SioClient, SioHandler, SioServer, SioSpec};
use crate::props::{
    Target, client_splits_agree, server_input, server_splits_agree, split_input, with_prefix,
};
use crate::proto::ws::fuzz::{answer, masked};
use std::time::Duration;

pub const TARGETS: &[(&str, Target)] = &[("client_sio", client_sio), ("server_sio", server_sio)];

/// The upgrade to Socket.IO and the namespace joined, masked: what a fuzzed stream to the
/// built-in Socket.IO server may follow.
pub const UPGRADE: &[u8] = b"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: h\r\n\
Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
Sec-WebSocket-Version: 13\r\n\r\n\x81\x82\x01\x02\x03\x04\x35\x32";

/// The client the targets and tests use: events on `/`, 4 in flight.
pub fn client() -> SioClient {
    SioClient::new(SioSpec {
        host: "h".into(),
        path: "/socket.io/?EIO=4&transport=websocket".into(),
        headers: vec![],
        namespace: "/".into(),
        body: super::event_body("message", b"\"hi\""),
        reply_event: None,
        eio: 4,
        depth: 4,
    })
}

/// The server the targets and tests use: it answers with the event `r`.
pub fn server() -> SioServer {
    let handler = SioHandler::new(4, Duration::from_secs(25), Duration::from_secs(20), Some("r".into()));
    SioServer::with(handler, 1 << 16)
}

/// Engine.IO's open packet and the namespace joined, in unmasked text frames: what a fuzzed
/// stream to the Socket.IO client may follow.
pub fn joined() -> Vec<u8> {
    [
        text(br#"0{"sid":"s","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#),
        text(br#"40{"sid":"n"}"#),
    ]
    .concat()
}

/// A text frame as a server sends it (unmasked).
fn text(data: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    crate::proto::ws::write_frame(&mut f, crate::proto::ws::OP_TEXT, data, None);
    f
}

fn client_sio(data: &[u8]) {
    let Some((&first, _)) = data.split_first() else { return };
    let (seed, stream) = split_input(data);
    let stream = with_prefix(&joined(), &stream, first & 0x80 != 0);
    client_splits_agree(&client(), &answer, &stream, seed);
}

fn server_sio(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let stream = with_prefix(UPGRADE, &stream, lead);
    server_splits_agree(&server(), &stream, &arrivals);
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "client_sio" => vec![
            [joined(), text(b"430[\"hi\"]"), text(b"2"), text(b"431[\"hi\"]"), text(b"6")].concat(),
            [joined(), text(b"42[\"news\",{\"a\":1}]"), text(b"41"), text(b"1")].concat(),
            [joined(), text(b"451-0[{\"_placeholder\":true,\"num\":0}]"), vec![0x82, 1, 7]].concat(),
            [text(br#"0{"sid":"s","pingInterval":100,"pingTimeout":100}"#), text(br#"44{"message":"no"}"#)]
                .concat(),
        ],
        "server_sio" => vec![
            [UPGRADE.to_vec(), masked(1, b"420[\"message\",\"x\"]"), masked(1, b"3"), masked(1, b"2")]
                .concat(),
            [
                UPGRADE.to_vec(),
                masked(1, b"40/chat,"),
                masked(1, b"42/chat,[\"ask\",1]"),
                masked(1, b"41/chat,"),
            ]
            .concat(),
            [UPGRADE.to_vec(), masked(1, b"42[\"r\"]"), masked(1, b"1")].concat(),
        ],
        _ => vec![],
    }
}
