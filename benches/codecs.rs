//! Micro-benchmarks of the codecs: ns per encode and per decode for each protocol, client and
//! server roles. `cargo bench` prints one line each: the median of 7 rounds of at least 100 ms.
//! Absolute figures move with the machine; compare lines of one run.

use std::hint::black_box;
use std::time::{Duration, Instant};
use wirebench::proto::http1::{Http1Client, Http1Server, RequestSpec};
use wirebench::proto::nsq::{NsqClient, NsqServer, PublishSpec, SinkLimits, encode_identify, write_frame};
use wirebench::proto::ws::{self, WsClient, WsServer, WsSpec};
use wirebench::proto::{ClientCodec, Decoded, ServerCodec};

/// ns per call of `f`, the median of 7 rounds.
fn measure(name: &str, mut f: impl FnMut()) {
    let mut per_call = Vec::new();
    for _ in 0..7 {
        let (mut n, start) = (0u64, Instant::now());
        while start.elapsed() < Duration::from_millis(100) {
            for _ in 0..1000 {
                f();
            }
            n += 1000;
        }
        per_call.push(start.elapsed().as_nanos() as f64 / n as f64);
    }
    per_call.sort_by(f64::total_cmp);
    println!("{name:<44} {:>9.1} ns", per_call[3]);
}

fn decode_one<C: ClientCodec>(c: &mut C, input: &[u8], out: &mut Vec<u8>) {
    match c.decode_op(black_box(input), out) {
        Ok(Decoded::Done { consumed, .. }) => assert_eq!(consumed, input.len()),
        other => panic!("{other:?}"),
    }
}

fn main() {
    let get = RequestSpec {
        method: "GET".into(),
        host: "127.0.0.1:8080".into(),
        target: "/".into(),
        headers: vec![],
        body: vec![],
    };
    let mut http = Http1Client::new(&get);
    let mut out = Vec::with_capacity(1 << 16);
    measure("http1 encode GET", || {
        out.clear();
        http.encode_op(0, &mut out);
    });
    let hello = wirebench::proto::http1::RESPONSE_HELLO;
    measure("http1 decode 50-byte response (same head)", || decode_one(&mut http, hello, &mut out));
    let nginx = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 09:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nHello World";
    measure("http1 decode nginx response (same head)", || decode_one(&mut http, nginx, &mut out));
    // Two heads that differ in their Date: every decode misses the remembered head.
    let nginx2 = String::from_utf8_lossy(nginx).replace("09:00:00", "09:00:01").into_bytes();
    let mut flip = false;
    measure("http1 decode nginx response (parsed afresh)", || {
        flip = !flip;
        decode_one(&mut http, if flip { nginx } else { &nginx2 }, &mut out)
    });
    let mut server = Http1Server::default();
    let request = http.request().to_vec();
    measure("http1 serve GET", || {
        out.clear();
        black_box(server.serve(black_box(&request), &mut out));
    });

    let spec = WsSpec {
        host: "h".into(),
        path: "/".into(),
        headers: vec![],
        message: vec![b'x'; 500],
        text: false,
        expect: ws::Expect::Echo,
    };
    let mut wsc = WsClient::new(spec);
    measure("ws encode 500-byte masked frame", || {
        out.clear();
        wsc.encode_op(0, &mut out);
    });
    let mut echo = Vec::new();
    ws::write_frame(&mut echo, ws::OP_BINARY, &[b'x'; 500], None);
    measure("ws decode 504-byte echo", || decode_one(&mut wsc, &echo, &mut out));
    let mut wss = WsServer::new(ws::DEFAULT_MAX_MESSAGE);
    let mut upgrade = Vec::new();
    wsc.handshake(&mut upgrade);
    wss.serve(&upgrade, &mut Vec::new());
    let mut frame = Vec::new();
    wsc.encode_op(0, &mut frame);
    measure("ws serve (unmask + echo) 500 bytes", || {
        out.clear();
        black_box(wss.serve(black_box(&frame), &mut out));
    });

    let publish = PublishSpec { topic: "test".into(), message: vec![b'x'; 400], batch: 1, defer_ms: None };
    let mut nsq = NsqClient::new(&publish, None);
    measure("nsq encode PUB 400", || {
        out.clear();
        nsq.encode_op(0, &mut out);
    });
    let mut mpub = NsqClient::new(&PublishSpec { batch: 10, ..publish.clone() }, None);
    measure("nsq encode MPUB 10 x 400", || {
        out.clear();
        mpub.encode_op(0, &mut out);
    });
    let mut ok = Vec::new();
    write_frame(&mut ok, 0, b"OK");
    measure("nsq decode OK frame", || decode_one(&mut nsq, &ok, &mut out));
    let mut sink = NsqServer::new(SinkLimits::default());
    let mut hello = b"  V2".to_vec();
    hello.extend(encode_identify(b"{}"));
    sink.serve(&hello, &mut Vec::new());
    let pub_bytes = nsq.publish().to_vec();
    measure("nsq serve PUB 400", || {
        out.clear();
        black_box(sink.serve(black_box(&pub_bytes), &mut out));
    });
}
