//! Every decoder, client and server side, on seeded random and mutated streams, and on the fuzz
//! corpus: the properties of `wirebench::props` (never over-consume, never a zero-byte
//! message, the same results whole and split anywhere) must hold. The fuzz targets in `fuzz/`
//! check the same properties on whatever the fuzzer finds; this replays their corpus.

use wirebench::props::{
    self, Arrivals, How, client_splits_agree, decode_client, serve_stream, server_splits_agree,
};
use wirebench::proto::h2::fuzz::{get as h2_get, grpc_call as h2_grpc, post as h2_post};
use wirebench::proto::{Hooks as _, Outcome};
use wirebench::protocol::fuzz_targets;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Valid streams for each target (what a well-behaved peer sends), to be mutated: its
/// module's.
fn samples(target: &str) -> Vec<Vec<u8>> {
    wirebench::protocol::fuzz_samples(target)
}

/// A target's input: a first byte (seed length, lead flag), seed bytes, then a stream that is
/// random or a mutated valid sample.
fn inputs(target: &str, count: usize, seed: u64) -> Vec<Vec<u8>> {
    let samples = samples(target);
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let mut stream = if rng.below(3) == 0 || samples.is_empty() {
                let n = rng.below(300);
                rng.bytes(n)
            } else {
                let mut v = samples[rng.below(samples.len())].clone();
                if rng.below(2) == 0 {
                    v.extend(samples[rng.below(samples.len())].clone()); // back to back
                }
                v
            };
            for _ in 0..rng.below(4) {
                if !stream.is_empty() {
                    let i = rng.below(stream.len());
                    stream[i] = rng.next() as u8;
                }
            }
            let cut = rng.below(stream.len() + 1);
            stream.truncate(cut.max(stream.len() / 2));
            // Samples already carry their handshake; random streams get one half the time.
            let lead = (rng.below(2) == 0) as u8;
            // Clients: seed bytes that cut the stream; servers: arrivals, three bytes each.
            let per = if target.starts_with("server") { 3 } else { 1 };
            let count = 1 + rng.below(7);
            let mut input = vec![(lead << 7) | count as u8];
            input.extend(rng.bytes(count * per));
            input.extend(props::literal(&stream));
            input
        })
        .collect()
}

#[test]
fn every_target_keeps_its_properties_on_seeded_streams() {
    for (i, (name, target)) in fuzz_targets().enumerate() {
        for input in inputs(name, 3000, 0x9e37_79b9_7f4a_7c15 ^ i as u64) {
            target(&input);
        }
    }
}

/// The fuzz corpus (`fuzz/corpus/TARGET/`), kept in the repository, replayed by every test run.
#[test]
fn the_fuzz_corpus_replays_cleanly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut replayed = 0;
    // One folder per target, the registry's: a new target's folder is missing until added.
    let mut folders: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut names: Vec<String> = fuzz_targets().map(|(n, _)| n.to_string()).collect();
    names.sort();
    for name in &names {
        assert!(
            folders.contains(name),
            "fuzz/corpus/{name} is missing: add it with one valid input (a sample stream as the target reads it: props::literal of it, see tools/fuzz.sh)"
        );
    }
    assert_eq!(folders, names, "every folder of fuzz/corpus names a fuzz target");
    for (name, target) in fuzz_targets() {
        let dir = std::fs::read_dir(root.join(name)).unwrap_or_else(|e| panic!("fuzz/corpus/{name}: {e}"));
        for entry in dir.flatten() {
            target(&std::fs::read(entry.path()).unwrap());
            replayed += 1;
        }
    }
    // The corpus is kept in the repository: none found is a broken checkout, not a pass.
    assert!(replayed > 0, "no corpus under {}", root.display());
    eprintln!("replayed {replayed} corpus inputs");
}

/// The properties themselves catch what they claim to: a stream whose valid messages decode
/// to the same outcomes however they are cut, and servers that answer alike.
#[test]
fn splitting_changes_nothing_on_valid_streams() {
    let stream = samples("client_http1").concat();
    let whole = decode_client(&wirebench::proto::http1::fuzz::client(), &|_| Vec::new(), &stream, &[]);
    assert_eq!(whole.messages.len(), 4, "{whole:?}"); // the 4th sample is close-delimited
    for b in 0..=255u8 {
        client_splits_agree(
            &wirebench::proto::http1::fuzz::client(),
            &|_| Vec::new(),
            &stream,
            &[b, b.wrapping_mul(7)],
        );
    }
    assert!(whole.messages.iter().any(|(_, o, _)| *o == Outcome::Control), "the 100 Continue");
    // HTTP/2: an answer's frames that came together are one message, cut apart two; either
    // way the same once an operation's parts are joined to what follows them — cut at every
    // offset of both samples (the first gRPC, the second not: the target picks by length).
    // The target makes gRPC calls on a stream of odd length: GETs first, then gRPC calls.
    let parity: Vec<usize> = samples("client_h2").iter().map(|s| s.len() % 2).collect();
    assert_eq!(parity, [0, 1]);
    for sample in samples("client_h2") {
        let target = fuzz_targets().find(|(name, _)| *name == "client_h2").unwrap().1;
        for b in 0..=255u8 {
            target(&[&[1, b][..], &props::literal(&sample)].concat());
        }
    }
    for sample in samples("server_nsq") {
        let limits = wirebench::proto::nsq::SinkLimits::default();
        let server = wirebench::proto::nsq::NsqServer::new(limits);
        let whole = serve_stream(&server, &sample, &Arrivals::whole());
        for b in 1..=255usize {
            let how = [How::Read, How::InPlace, How::WhileWriting][b % 3];
            let arrivals = Arrivals(vec![(b, how), (b / 3 + 1, How::WhileWriting)]);
            assert_eq!(serve_stream(&server, &sample, &arrivals).out, whole.out);
        }
        assert!(whole.requests > 0);
    }
    // Socket.IO: acks of the ids in flight complete operations, pings are answered.
    let answer = |request: &[u8]| {
        let key = String::from_utf8_lossy(request);
        let key = key.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: ")).unwrap_or_default();
        let accept = wirebench::proto::ws::accept_key(key.trim().as_bytes());
        format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").into_bytes()
    };
    let stream = &samples("client_sio")[0];
    let whole = decode_client(&wirebench::proto::sio::fuzz::client(), &answer, stream, &[]);
    let outcomes: Vec<Outcome> = whole.messages.iter().map(|m| m.1).collect();
    assert_eq!(outcomes, [Outcome::Op, Outcome::Control, Outcome::Op, Outcome::Control], "{whole:?}");
    assert_eq!(whole.replies, 7, "one masked pong");
    for b in 0..=255u8 {
        client_splits_agree(&wirebench::proto::sio::fuzz::client(), &answer, stream, &[b, b.wrapping_mul(3)]);
    }
    let whole =
        serve_stream(&wirebench::proto::sio::fuzz::server(), &samples("server_sio")[0], &Arrivals::whole());
    assert!(whole.out.windows(8).any(|w| w == b"430[\"x\"]"), "{:?}", String::from_utf8_lossy(&whole.out));
    let mut out = Vec::new();
    wirebench::proto::http1::Http1Server::default().busy(&mut out);
    assert!(!out.is_empty());
}

/// Streams larger than every buffer and batch of the servers (64 KiB batches, 4 KiB reads,
/// 1 MiB heads), delivered every way the engines deliver bytes: each answered as it is
/// answered whole. The first of them killed the `uring` server's core (a chunked upload past
/// 64 KiB arriving while an answer was being written).
#[test]
fn streams_past_every_buffer_are_answered_however_they_arrive() {
    let chunk = [&b"100\r\n"[..], &[b'x'; 256], b"\r\n"].concat();
    let upload = |path: &str| {
        [
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").as_bytes(),
            &chunk.repeat(400),
            b"0\r\n\r\n",
        ]
        .concat()
    };
    let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let long_head = |size: usize| {
        let line = format!("X-Pad: {}\r\n", "p".repeat(16_000));
        let lines = line.repeat(size / line.len());
        [b"GET /ping HTTP/1.1\r\n".as_slice(), lines.as_bytes(), b"\r\n"].concat()
    };
    let masked = |op: u8, data: &[u8]| {
        let mut f = Vec::new();
        wirebench::proto::ws::write_frame(&mut f, op, data, Some([9, 8, 7, 6]));
        f
    };
    let nsq_pub = |size: usize| {
        wirebench::proto::nsq::encode_publish(&wirebench::proto::nsq::PublishSpec {
            topic: "t".into(),
            message: vec![b'm'; size],
            batch: 1,
            defer_ms: None,
        })
    };
    let streams: Vec<(&str, Vec<u8>)> = vec![
        ("server_http1", [upload("/"), get.clone()].concat()),
        ("server_http1", [get.repeat(40_000), upload("/"), get.repeat(1000)].concat()),
        (
            "server_http1",
            [&b"POST / HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n"[..], &vec![b'b'; 1 << 20], &get].concat(),
        ),
        ("server_nsq_http", [upload("/mpub?topic=t"), long_head(70 * 1024), long_head(900 * 1024)].concat()),
        (
            "server_ws",
            [
                wirebench::proto::ws::fuzz::UPGRADE.to_vec(),
                masked(2, &vec![b'w'; 200_000]),
                masked(2, b"small").repeat(20_000),
            ]
            .concat(),
        ),
        ("server_nsq", [b"  V2".to_vec(), nsq_pub(300_000), nsq_pub(10).repeat(10_000)].concat()),
        (
            "server_h2",
            [
                {
                    // A client that reads what it is sent: room for every answer.
                    use wirebench::proto::h2::frame;
                    let mut hello = frame::PREFACE.to_vec();
                    frame::write_settings(&mut hello, &[(frame::INITIAL_WINDOW_SIZE, 1 << 20)]);
                    frame::write_window_update(&mut hello, 0, frame::MAX_WINDOW - 65_535);
                    hello
                },
                h2_post(1, &vec![b'p'; 900_000]),
                h2_grpc(3, &vec![b'g'; 100_000]),
                (0..40_000).flat_map(|i| h2_get(5 + 2 * i)).collect(),
            ]
            .concat(),
        ),
    ];
    let ways = [
        Arrivals::whole(),
        Arrivals(vec![(4096, How::InPlace)]),
        Arrivals(vec![(4096, How::InPlace), (4096, How::WhileWriting), (4096, How::WhileWriting)]),
        Arrivals(vec![(65_535, How::WhileWriting), (1, How::InPlace), (65_537, How::Read)]),
        Arrivals(vec![(1000, How::Read)]),
        Arrivals(vec![(7, How::InPlace), (70_000, How::WhileWriting)]),
    ];
    let limits = wirebench::proto::nsq::SinkLimits::default();
    for (target, stream) in &streams {
        let whole = match *target {
            "server_http1" => {
                serve_stream(&wirebench::proto::http1::Http1Server::default(), stream, &Arrivals::whole())
            }
            "server_nsq_http" => {
                serve_stream(&wirebench::proto::nsq::NsqHttpServer::new(limits), stream, &Arrivals::whole())
            }
            "server_ws" => {
                serve_stream(&wirebench::proto::ws::WsServer::new(1 << 20), stream, &Arrivals::whole())
            }
            "server_h2" => {
                serve_stream(&wirebench::proto::h2::server::H2Server::default(), stream, &Arrivals::whole())
            }
            _ => serve_stream(&wirebench::proto::nsq::NsqServer::new(limits), stream, &Arrivals::whole()),
        };
        assert!(whole.requests + whole.messages >= 2, "{target}: {} requests", whole.requests);
        assert!(
            whole.closed_after.is_none(),
            "{target}: closed after {:?}: {:?}",
            whole.closed_after,
            String::from_utf8_lossy(&whole.out[whole.out.len().saturating_sub(200)..])
        );
        for way in &ways {
            match *target {
                "server_http1" => {
                    server_splits_agree(&wirebench::proto::http1::Http1Server::default(), stream, way)
                }
                "server_nsq_http" => {
                    server_splits_agree(&wirebench::proto::nsq::NsqHttpServer::new(limits), stream, way)
                }
                "server_ws" => {
                    server_splits_agree(&wirebench::proto::ws::WsServer::new(1 << 20), stream, way)
                }
                "server_h2" => {
                    server_splits_agree(&wirebench::proto::h2::server::H2Server::default(), stream, way)
                }
                _ => server_splits_agree(&wirebench::proto::nsq::NsqServer::new(limits), stream, way),
            }
        }
        // And as a fuzz input says it: the same stream through the target itself.
        let input = props::server_fuzz_input(
            &[(4096, How::InPlace), (4096, How::WhileWriting)],
            false,
            &props::literal(stream),
        );
        wirebench::protocol::fuzz(target, &input);
    }
}
