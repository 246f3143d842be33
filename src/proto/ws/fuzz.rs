//! WebSocket's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid
//! streams `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::{Expect, WsClient, WsServer, WsSpec};
use crate::props::{
    Target, client_splits_agree, server_input, server_splits_agree, split_input, with_prefix,
};

pub const TARGETS: &[(&str, Target)] = &[("client_ws", client_ws), ("server_ws", server_ws)];

/// A valid WebSocket upgrade request (what a fuzzed stream to the echo server may follow).
pub const UPGRADE: &[u8] = b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/// The client the targets use: a 5-byte binary echo.
pub fn client() -> WsClient {
    WsClient::new(WsSpec {
        host: "h".into(),
        path: "/".into(),
        headers: vec![],
        message: b"hello".to_vec(),
        text: false,
        expect: Expect::Echo,
    })
}

/// The server's 101 for the upgrade request's own key: what a client connection needs before
/// operations.
pub fn answer(request: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(request);
    let key = text.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: ")).unwrap_or_default();
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        super::accept_key(key.trim().as_bytes())
    )
    .into_bytes()
}

/// A frame as a client sends it (masked).
pub fn masked(op: u8, data: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    super::write_frame(&mut f, op, data, Some([9, 8, 7, 6]));
    f
}

fn client_ws(data: &[u8]) {
    let (seed, stream) = split_input(data);
    client_splits_agree(&client(), &answer, &stream, seed);
}

fn server_ws(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let stream = with_prefix(UPGRADE, &stream, lead);
    server_splits_agree(&WsServer::new(1 << 20), &stream, &arrivals);
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "client_ws" => vec![
            [&[0x82, 5][..], b"hello"].concat(),
            [&[0x02, 2][..], b"he", &[0x89, 0], &[0x80, 3], b"llo", &[0x88, 2, 3, 0xe8]].concat(),
            vec![0x8a, 1, b'p', 0x82, 5, b'h', b'e', b'l', b'l', b'o'],
        ],
        "server_ws" => vec![
            [UPGRADE.to_vec(), masked(2, b"hello"), masked(9, b"p"), masked(1, b"text")].concat(),
            [UPGRADE.to_vec(), vec![0x01, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'e' ^ 2], masked(0, b"llo")].concat(),
        ],
        _ => vec![],
    }
}
