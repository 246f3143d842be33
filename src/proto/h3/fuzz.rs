//! HTTP/3's fuzz target — its frames, QPACK, and both protocol halves on one stream —
//! checking `crate::props` on arbitrary bytes. The registry lists it.

use crate::props::{Target, cuts_from, pieces, split_input};
use crate::proto;

pub const TARGETS: &[(&str, Target)] = &[("h3", h3)];

/// HTTP/3's frames and QPACK on an arbitrary stream (`props::expand`ed): parsed frame by frame with
/// no panic, a cut anywhere never giving another frame than the whole stream gives (only "not
/// yet"), and each HEADERS payload's field section, if QPACK takes it, encoded again (Huffman
/// on and off) decoding to the same fields. The same stream as a request stream to the
/// server and as a response stream to the client, whole and cut where the first byte says:
/// the same answer, error and counts either way.
fn h3(data: &[u8]) {
    use proto::h3::{client::H3Client, frame, qpack, server::H3Server};
    let (seed, stream) = split_input(data);
    let cuts = cuts_from(seed, stream.len());
    let serve = |pieces: &[&[u8]]| {
        let mut server = H3Server::default();
        let mut out = Vec::new();
        let mut result = Ok(false);
        for (i, piece) in pieces.iter().enumerate() {
            result = server.request_data(0, piece, i + 1 == pieces.len(), &mut out);
            if result.is_err() {
                break;
            }
        }
        (result, out)
    };
    let whole: Vec<&[u8]> = vec![&stream];
    let split = pieces(&stream, &cuts);
    assert_eq!(serve(&whole), serve(&split), "serve h3: the same request stream whole and cut");
    let spec = proto::h2::client::RequestSpec {
        method: "GET".into(),
        scheme: "https",
        authority: "h".into(),
        path: "/".into(),
        headers: vec![],
        body: vec![],
        grpc: false,
    };
    let answer = |pieces: &[&[u8]]| {
        let mut c = H3Client::new(&spec, true);
        c.request(0, 0);
        let mut result = Ok(None);
        for (i, piece) in pieces.iter().enumerate() {
            result = c.request_data(0, piece, i + 1 == pieces.len());
            if result.is_err() {
                break;
            }
        }
        (result, *c.layers())
    };
    assert_eq!(answer(&whole), answer(&split), "the h3 client: the same response stream whole and cut");
    let mut rest = &stream[..];
    let mut frames = 0usize;
    while let Ok(Some((f, used))) = frame::parse(rest, 1 << 20) {
        assert!(used > 0 && used <= rest.len(), "a frame of {used} octets in {}", rest.len());
        // Any cut short of the whole frame is "not yet" (or the same error), never a frame.
        for cut in [0, used / 2, used - 1] {
            if let Ok(Some((g, n))) = frame::parse(&rest[..cut], 1 << 20) {
                panic!("{cut} octets of a {used}-octet frame parsed as {g:?} of {n}");
            }
        }
        if let frame::Frame::Headers(section) = f {
            let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            if qpack::decode(section, 1 << 16, |n, v| fields.push((n.to_vec(), v.to_vec()))).is_ok() {
                for huffman in [false, true] {
                    let mut again = Vec::new();
                    qpack::encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), huffman, &mut again);
                    let mut back = Vec::new();
                    qpack::decode(&again, usize::MAX, |n, v| back.push((n.to_vec(), v.to_vec())))
                        .expect("our own field section decodes");
                    assert_eq!(back, fields, "re-encoded fields differ");
                }
            }
        }
        rest = &rest[used..];
        frames += 1;
        if frames > 1 << 20 {
            break;
        }
    }
}

/// No samples: its streams are the fuzzer's and the seeded random ones.
pub fn samples(_: &str) -> Vec<Vec<u8>> {
    Vec::new()
}
