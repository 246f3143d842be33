//! NSQ's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid streams
//! `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::{
    MAGIC_V2, NsqClient, NsqHttpServer, NsqServer, PublishSpec, SinkLimits, encode_publish, write_frame,
};
use crate::props::{
    Target, client_splits_agree, server_input, server_splits_agree, split_input, with_prefix,
};

pub const TARGETS: &[(&str, Target)] =
    &[("client_nsq", client_nsq), ("server_nsq", server_nsq), ("server_nsq_http", server_nsq_http)];

/// The client the targets use: `PUB t`, after IDENTIFY.
pub fn client() -> NsqClient {
    let spec = PublishSpec { topic: "t".into(), message: b"m".to_vec(), batch: 1, defer_ms: None };
    NsqClient::new(&spec, Some(br#"{"client_id":"fuzz"}"#))
}

/// nsqd's `OK` to IDENTIFY: what a client connection needs before operations.
fn answer(_: &[u8]) -> Vec<u8> {
    frame(0, b"OK")
}

fn frame(kind: u32, data: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    write_frame(&mut f, kind, data);
    f
}

fn publish(batch: usize) -> Vec<u8> {
    encode_publish(&PublishSpec { topic: "t".into(), message: b"msg".to_vec(), batch, defer_ms: None })
}

fn client_nsq(data: &[u8]) {
    let (seed, stream) = split_input(data);
    client_splits_agree(&client(), &answer, &stream, seed);
}

// The sinks' limits in the targets are nsqd's defaults (1 MiB messages, 5 MiB bodies), so
// that streams past a batch are valid ones too.

fn server_nsq(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let stream = with_prefix(MAGIC_V2, &stream, lead);
    server_splits_agree(&NsqServer::new(SinkLimits::default()), &stream, &arrivals);
}

fn server_nsq_http(data: &[u8]) {
    let (arrivals, stream, _) = server_input(data);
    server_splits_agree(&NsqHttpServer::new(SinkLimits::default()), &stream, &arrivals);
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "client_nsq" => vec![
            [frame(0, b"OK"), frame(0, b"_heartbeat_"), frame(0, b"OK")].concat(),
            frame(1, b"E_BAD_TOPIC PUB topic name \"a!\" is not valid"),
        ],
        "server_nsq" => vec![
            [b"  V2".as_slice(), b"IDENTIFY\n\x00\x00\x00\x02{}", &publish(1), &publish(3), b"NOP\n"]
                .concat(),
            [b"  V2".as_slice(), b"DPUB t 10\n\x00\x00\x00\x01x"].concat(),
        ],
        "server_nsq_http" => crate::proto::http1::fuzz::requests(),
        _ => vec![],
    }
}
