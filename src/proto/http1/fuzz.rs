//! HTTP/1.1's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid
//! streams `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::{Http1Client, Http1Server, RequestSpec};
use crate::props::{Target, client_splits_agree, no_answer, server_input, server_splits_agree, split_input};

pub const TARGETS: &[(&str, Target)] = &[("client_http1", client_http1), ("server_http1", server_http1)];

/// The client the targets and tests use: `GET /`.
pub fn client() -> Http1Client {
    Http1Client::new(&RequestSpec {
        method: "GET".into(),
        host: "h".into(),
        target: "/".into(),
        headers: vec![],
        body: vec![],
    })
}

fn client_http1(data: &[u8]) {
    let (seed, stream) = split_input(data);
    client_splits_agree(&client(), &no_answer, &stream, seed);
}

fn server_http1(data: &[u8]) {
    let (arrivals, stream, _) = server_input(data);
    server_splits_agree(&Http1Server::default(), &stream, &arrivals);
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "client_http1" => vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nT: v\r\n\r\n".to_vec(),
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
            b"HTTP/1.0 200 OK\r\n\r\nuntil the end".to_vec(),
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi".to_vec(),
        ],
        "server_http1" => requests(),
        _ => vec![],
    }
}

/// Requests a server of HTTP/1.1 is sent (nsqd's HTTP side too).
pub fn requests() -> Vec<Vec<u8>> {
    vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        b"POST /pub?topic=t HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
        b"POST /mpub?topic=t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na\nb\r\n0\r\n\r\n".to_vec(),
    ]
}
