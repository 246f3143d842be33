//! `serve h2` against hostile and strict clients, on every server engine: a gRPC client that
//! gives window back as it reads (normal traffic, never a flood), requests RFC 9113 calls
//! malformed (each a stream error; the connection goes on), DATA on a closed stream, and
//! floods of frames that do no work — each ended with GOAWAY `ENHANCE_YOUR_CALM` while a
//! normal client beside it is served throughout.

use super::common::*;
use super::kit::h2::*;
use std::io::Write;
use std::time::Duration;
use wirebench::outcome::ErrorClass;

const PROTOCOL_ERROR: u32 = 0x1;
const STREAM_CLOSED: u32 = 0x5;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// `:method GET` (static index 2: 0x82), `:scheme http` (6: 0x86), `:path /` (4: 0x84), and
/// `:authority h` as a literal without indexing of static name 1 (0x01, 1, `h`).
const GET: [u8; 6] = [0x82, 0x86, 0x84, 0x01, 1, b'h'];

/// Item 1 of issue 33: a gRPC client echoing 40,000-octet messages gives window back as it
/// reads — one or two WINDOW_UPDATEs per call, some after the call's stream ended. That is
/// work, not a flood: no GOAWAY, no reconnect, no failed call (3–12 reconnects in 3 s).
#[test]
fn a_grpc_client_granting_window_as_it_reads_is_never_taken_for_a_flood() {
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "h2");
        let url = format!("grpc://{}/wirebench.Echo/Unary", server.addr());
        let cpu = client_cpu().to_string();
        let r = bench(&[&url, "-c", "1", "--size", "40000", "-d", "2s", "--cores", &cpu]);
        assert_clean(&r);
        assert!(r.ops > 200, "{engine}: {}", r.ops);
        assert_eq!(r.reconnects, 0, "{engine}: {:?}", r.error_samples);
        let _ = server.stop();
    }
}

/// Item 6: requests §8.3.1 calls malformed — no `:scheme`, two `:scheme`, two `:authority` —
/// and a stream depending on itself (§5.3.1, by HEADERS or by PRIORITY) are stream errors
/// (RST_STREAM PROTOCOL_ERROR); DATA on a stream the client already ended is STREAM_CLOSED;
/// the connection then serves its next request. (Each got a normal answer.)
#[test]
fn malformed_requests_and_self_dependencies_are_reset_and_the_connection_goes_on() {
    let no_scheme = [0x82, 0x84, 0x01, 1, b'h'].to_vec();
    let two_schemes = [0x82, 0x86, 0x86, 0x84, 0x01, 1, b'h'].to_vec();
    let two_authorities = [&GET[..], &[0x01, 1, b'h']].concat();
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "h2");
        let addr = server.addr();
        let mut stream = 1;
        let mut next = || {
            stream += 2;
            stream - 2
        };
        let mut p = super::kit::h2::Peer::connect(addr);
        let cases: Vec<(&str, Frames, u32)> = vec![
            ("no :scheme", request(no_scheme.clone()), PROTOCOL_ERROR),
            ("two :scheme", request(two_schemes.clone()), PROTOCOL_ERROR),
            ("two :authority", request(two_authorities.clone()), PROTOCOL_ERROR),
            (
                "HEADERS depending on itself",
                Box::new(|s| {
                    let priority = [&s.to_be_bytes()[..], &[15]].concat();
                    frame(
                        HEADERS,
                        END_HEADERS | END_STREAM | PRIORITY_FLAG,
                        s,
                        &[&priority[..], &GET].concat(),
                    )
                }),
                PROTOCOL_ERROR,
            ),
            (
                "PRIORITY depending on itself",
                Box::new(|s| frame(PRIORITY, 0, s, &[&s.to_be_bytes()[..], &[15]].concat())),
                PROTOCOL_ERROR,
            ),
        ];
        for (what, bytes, code) in &cases {
            let s = next();
            p.send(&bytes(s)).unwrap();
            let f = p.verdict(s).unwrap_or_else(|| panic!("{engine} {what}: closed without a word"));
            assert_eq!(
                (f.kind, &f.payload[..4]),
                (RST_STREAM, &code.to_be_bytes()[..]),
                "{engine} {what}: {f:?}"
            );
            // The connection goes on: its next request is answered.
            let s = next();
            p.send(&frame(HEADERS, END_HEADERS | END_STREAM, s, &GET)).unwrap();
            let f = p.verdict(s).unwrap();
            assert_eq!(f.kind, HEADERS, "{engine} after {what}: {f:?}");
        }
        // DATA on a stream whose request had ended (END_STREAM), once its answer is whole.
        let s = next();
        p.send(&frame(HEADERS, END_HEADERS | END_STREAM, s, &GET)).unwrap();
        loop {
            let f = p.verdict(s).unwrap();
            if f.flags & END_STREAM != 0 {
                break;
            }
        }
        p.send(&frame(DATA, 0, s, b"late")).unwrap();
        let f = p.verdict(s).unwrap();
        assert_eq!(
            (f.kind, &f.payload[..4]),
            (RST_STREAM, &STREAM_CLOSED.to_be_bytes()[..]),
            "{engine}: {f:?}"
        );
        drop(p);
        let _ = server.stop();
    }
}

/// What a scenario sends, given a stream (or a count).
type Frames = Box<dyn Fn(u32) -> Vec<u8>>;

/// A request of header block `block` on the stream it is given.
fn request(block: Vec<u8>) -> Frames {
    Box::new(move |s| frame(HEADERS, END_HEADERS | END_STREAM, s, &block))
}

/// Send `one` `times` times (a reader beside, so that answers cannot block the writes) and
/// return the GOAWAY that ended it, if one came within 5 s.
fn flood(
    addr: std::net::SocketAddr,
    before: &[u8],
    one: &dyn Fn(u32) -> Vec<u8>,
    times: u32,
) -> Option<Frame> {
    let mut p = super::kit::h2::Peer::connect(addr);
    p.send(before).unwrap();
    let mut writer = p.s.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < until {
            let f = p.frame()?;
            if f.kind == GOAWAY {
                return Some(f);
            }
        }
        None
    });
    let mut batch = Vec::new();
    for i in 0..times {
        batch.extend(one(i));
        if batch.len() > 16 << 10 {
            if writer.write_all(&batch).is_err() {
                break;
            }
            batch.clear();
        }
    }
    let _ = writer.write_all(&batch);
    reader.join().unwrap()
}

/// Floods of frames that do no work end with GOAWAY ENHANCE_YOUR_CALM on every server
/// engine — PINGs, SETTINGS, empty DATA, Rapid Reset (HEADERS then RST_STREAM), and
/// WINDOW_UPDATEs of one octet while nothing was sent — and a normal client on the same
/// server meanwhile completes every operation.
#[test]
fn floods_of_frames_that_do_no_work_are_cut_off_and_a_normal_client_is_served() {
    let open_post = frame(HEADERS, END_HEADERS, 1, &[0x83, 0x86, 0x84, 0x01, 1, b'h']);
    let floods: [(&str, Vec<u8>, Frames); 5] = [
        ("PING", Vec::new(), Box::new(|_| frame(PING, 0, 0, &[0; 8]))),
        ("SETTINGS", Vec::new(), Box::new(|_| frame(SETTINGS, 0, 0, &[]))),
        ("empty DATA", open_post, Box::new(|_| frame(DATA, 0, 1, &[]))),
        (
            "Rapid Reset",
            Vec::new(),
            Box::new(|i| {
                let s = 2 * i + 1;
                [
                    frame(HEADERS, END_HEADERS | END_STREAM, s, &GET),
                    frame(RST_STREAM, 0, s, &8u32.to_be_bytes()),
                ]
                .concat()
            }),
        ),
        ("WINDOW_UPDATE", Vec::new(), Box::new(|_| frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()))),
    ];
    for engine in SERVER_ENGINES {
        let server = start_builtin_on(engine, "h2");
        let addr = server.addr();
        let url = format!("h2c://{addr}/");
        let cpu = client_cpu().to_string();
        let normal = std::thread::spawn(move || bench(&[&url, "-c", "2", "-d", "2s", "--cores", &cpu]));
        for (what, before, one) in &floods {
            let f = flood(addr, before, one.as_ref(), 20_000)
                .unwrap_or_else(|| panic!("{engine} {what}: no GOAWAY"));
            assert_eq!(&f.payload[4..8], &ENHANCE_YOUR_CALM.to_be_bytes()[..], "{engine} {what}: {f:?}");
        }
        let r = normal.join().unwrap();
        assert_clean(&r);
        assert!(r.ops > 100, "{engine}: {}", r.ops);
        assert_eq!(r.failed.get(ErrorClass::Protocol), 0);
        let _ = server.stop();
    }
}

/// h2spec (v2.2.1, built by `tools/install-peers.sh`), the HTTP/2 conformance suite no one here
/// wrote, against `serve h2` in cleartext and over TLS: every one of its 145 cases passes.
#[test]
#[ignore = "needs h2spec (tools/install-peers.sh)"]
fn h2spec_passes_every_case_in_cleartext_and_over_tls() {
    let h2spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/bin/h2spec");
    if !h2spec.is_file() {
        return skip("h2spec is not built (tools/install-peers.sh)");
    }
    for tls in [false, true] {
        let extra: &[&str] = if tls { &["--tls"] } else { &[] };
        let started = serve_started("uring", "h2", extra);
        let port = started.handle.addr().port().to_string();
        let mut args = vec!["-h", "127.0.0.1", "-p", &port, "-o", "3"];
        if tls {
            args.extend(["-t", "-k"]);
        }
        let out = std::process::Command::new(&h2spec).args(&args).output().expect("h2spec runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let summary = text.lines().rev().find(|l| l.contains("tests,")).unwrap_or_default().to_string();
        assert!(out.status.success() && summary.contains(" 0 failed"), "tls {tls}: {summary}\n{text}");
        assert!(summary.contains("145 tests, 145 passed"), "tls {tls}: {summary}");
        let _ = started.handle.stop();
    }
}
