//! Every decoder, client and server side, fed random bytes and mutated valid messages: it must
//! never panic, never claim more bytes than it was given, and answer every prefix of a valid
//! stream consistently. A deterministic stand-in for a fuzzer (seeded xorshift), run by
//! `cargo test`.

use wirebench::proto::http1::{Http1Client, Http1Server, RequestSpec};
use wirebench::proto::nsq::{NsqClient, NsqHttpServer, NsqServer, PublishSpec, SinkLimits, encode_publish};
use wirebench::proto::ws::{WsClient, WsServer, WsSpec};
use wirebench::proto::{ClientCodec, Decoded, ServerCodec};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random bytes, or a valid sample with a few bytes changed, cut at a random length.
fn inputs(samples: &[Vec<u8>], count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let mut v = if rng.below(3) == 0 || samples.is_empty() {
                (0..rng.below(300)).map(|_| rng.next() as u8).collect::<Vec<u8>>()
            } else {
                samples[rng.below(samples.len())].clone()
            };
            for _ in 0..rng.below(4) {
                if !v.is_empty() {
                    let i = rng.below(v.len());
                    v[i] = rng.next() as u8;
                }
            }
            let cut = rng.below(v.len() + 1);
            v.truncate(cut.max(v.len() / 2));
            v
        })
        .collect()
}

fn check_client<C: ClientCodec>(prototype: &C, samples: &[Vec<u8>], seed: u64) {
    for input in inputs(samples, 5000, seed) {
        let mut c = prototype.clone();
        let mut out = Vec::new();
        let mut pos = 0;
        // Bounded: each Done consumes at least one byte or the loop stops.
        while pos < input.len() {
            match c.decode_op(&input[pos..], &mut out) {
                Ok(Decoded::Done { consumed, .. }) if consumed > 0 => {
                    assert!(pos + consumed <= input.len());
                    pos += consumed;
                }
                _ => break,
            }
        }
        let _ = c.clone().decode_eof(&input[pos..]);
        let _ = prototype.clone().decode_handshake(&input);
    }
}

fn check_server<S: ServerCodec>(prototype: &S, samples: &[Vec<u8>], seed: u64) {
    for input in inputs(samples, 5000, seed) {
        let mut s = prototype.clone();
        let mut out = Vec::new();
        let served = s.serve(&input, &mut out);
        assert!(served.consumed <= input.len());
        let mut out = Vec::new();
        s.heartbeat(&mut out);
    }
}

#[test]
fn http1_decoders_survive_garbage() {
    let spec = RequestSpec {
        method: "GET".into(),
        host: "h".into(),
        target: "/".into(),
        headers: vec![],
        body: vec![],
    };
    let responses = vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
        b"HTTP/1.0 404 Not Found\r\n\r\nbody".to_vec(),
    ];
    check_client(&Http1Client::new(&spec), &responses, 1);
    let requests = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"POST /pub?topic=t HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".to_vec(),
    ];
    check_server(&Http1Server::default(), &requests, 2);
    check_server(&NsqHttpServer::new(SinkLimits::default()), &requests, 3);
}

#[test]
fn nsq_decoders_survive_garbage() {
    let spec = PublishSpec { topic: "t".into(), message: b"m".to_vec(), batch: 1, defer_ms: None };
    let frames = vec![
        b"\x00\x00\x00\x06\x00\x00\x00\x00OK".to_vec(),
        b"\x00\x00\x00\x0f\x00\x00\x00\x00_heartbeat_".to_vec(),
    ];
    check_client(&NsqClient::new(&spec, None), &frames, 4);
    let commands = vec![
        [b"  V2".as_slice(), &encode_publish(&spec)].concat(),
        [b"  V2".as_slice(), &encode_publish(&PublishSpec { batch: 3, ..spec.clone() })].concat(),
        b"  V2IDENTIFY\n\x00\x00\x00\x02{}NOP\n".to_vec(),
    ];
    check_server(&NsqServer::new(SinkLimits::default()), &commands, 5);
}

#[test]
fn websocket_decoders_survive_garbage() {
    let spec = WsSpec {
        host: "h".into(),
        path: "/".into(),
        headers: vec![],
        message: b"hello".to_vec(),
        text: false,
    };
    let frames = vec![
        vec![0x82, 5, b'h', b'e', b'l', b'l', b'o'],
        vec![0x89, 0],
        vec![0x02, 2, b'h', b'e', 0x80, 3, b'l', b'l', b'o'],
    ];
    check_client(&WsClient::new(spec.clone()), &frames, 6);
    let mut client = WsClient::new(spec);
    let mut upgrade = Vec::new();
    client.handshake(&mut upgrade);
    let mut frame = Vec::new();
    client.encode_op(&mut frame);
    check_server(&WsServer::new(1 << 20), &[upgrade.clone(), [upgrade, frame].concat()], 7);
}
