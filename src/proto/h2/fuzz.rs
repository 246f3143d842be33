//! HTTP/2's fuzz targets — its client, its server and HPACK — (each checks `crate::props` on
//! arbitrary bytes) and the valid streams `tests/decoders_random.rs` mutates for them. The
//! registry lists them.

use crate::props::{
    Target, client_splits_agree, server_input, server_splits_agree, split_input, with_prefix,
};
use crate::proto;

pub const TARGETS: &[(&str, Target)] =
    &[("hpack", hpack), ("client_h2", client_h2), ("server_h2", server_h2)];

/// The HTTP/2 client after the server's SETTINGS, on whatever frames follow; its requests
/// are gRPC calls of 100,000 octets (past every window, so WINDOW_UPDATEs and SETTINGS let the
/// rest go: `op_more`) when the stream's length is odd, GETs when even.
fn client_h2(data: &[u8]) {
    let (seed, stream) = split_input(data);
    let grpc = stream.len() % 2 == 1;
    let body = if grpc { proto::h2::grpc::framed(&[b'g'; 99_995]) } else { vec![] };
    let method = if grpc { "POST" } else { "GET" };
    let spec = proto::h2::client::RequestSpec {
        grpc,
        ..proto::h2::client::RequestSpec::plain(method, "http", "h", body)
    };
    let settings = |_: &[u8]| {
        let mut out = Vec::new();
        proto::h2::frame::write_settings(&mut out, &[]);
        out
    };
    client_splits_agree(&proto::h2::client::H2Client::new(&spec, true), &settings, &stream, seed);
}

/// HPACK's decoder on arbitrary header blocks: its first byte sets the dynamic table size this
/// side allows (×32 bytes), its second how many cut points follow (low 3 bits), one byte each,
/// cutting the rest into blocks. Per block: no panic; an accepted block leaves the table within
/// its size; and what it decoded, encoded again by an [`Encoder`](proto::h2::hpack::Encoder)
/// (with Huffman or without), decodes to the same fields on a decoder of its own. Each block
/// goes three times (the others replayed from its record, where it may be; the third as a
/// caller that knows the record, which gives no fields) and gives the same fields and table as
/// on a decoder that decodes every block in full.
fn hpack(data: &[u8]) {
    use proto::h2::hpack::{Decoder, Encoder};
    let [size, cuts, rest @ ..] = data else { return };
    let n = usize::from(cuts & 7).min(rest.len());
    let (cuts, stream) = rest.split_at(n);
    let mut points: Vec<usize> = cuts.iter().map(|&c| usize::from(c) % (stream.len() + 1)).collect();
    points.push(stream.len());
    points.sort_unstable();
    let allowed = usize::from(*size) * 32;
    let mut decoder = Decoder::new(allowed, 1 << 16);
    let mut full = Decoder::new(allowed, 1 << 16).without_replay();
    let (mut plain, mut huffman) = (Encoder::new(false), Encoder::new(true));
    let (mut plain_back, mut huffman_back) = (Decoder::new(4096, 1 << 20), Decoder::new(4096, 1 << 20));
    let mut from = 0;
    for to in points {
        let block = &stream[from..to];
        from = to;
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut record = None;
        for again in 0..3 {
            // The third time, as a caller that kept what the record's fields said.
            let known = if again == 2 { record.unwrap_or(0) } else { 0 };
            let (mut mine, mut theirs) = (Vec::new(), Vec::new());
            let ok = decoder.decode_known(block, known, |n, v| mine.push((n.to_vec(), v.to_vec())));
            let full_ok = full.decode(block, |n, v| theirs.push((n.to_vec(), v.to_vec())));
            assert_eq!(ok.map(|_| ()), full_ok, "replayed or not, the same verdict (again: {again})");
            let Ok(now) = ok else {
                return; // the connection's end
            };
            if known != 0 && now == Some(known) {
                assert!(mine.is_empty(), "a known record gives no fields");
            } else {
                assert_eq!(mine, theirs, "replayed or not, the same fields (again: {again})");
                fields = mine;
            }
            assert!(decoder.table() == full.table(), "replayed or not, the same table (again: {again})");
            record = now;
        }
        assert!(decoder.table().size() <= allowed, "the table grew past {allowed}");
        for (encoder, back) in [(&mut plain, &mut plain_back), (&mut huffman, &mut huffman_back)] {
            let mut again = Vec::new();
            encoder.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut again);
            let mut decoded = Vec::new();
            back.decode(&again, |n, v| decoded.push((n.to_vec(), v.to_vec())))
                .expect("our own block decodes");
            assert_eq!(decoded, fields, "re-encoded fields differ");
        }
    }
}

/// The HTTP/2 server, after the client's preface and SETTINGS when the input's first byte says
/// so (the frames that follow are the fuzzer's).
fn server_h2(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let mut hello = proto::h2::frame::PREFACE.to_vec();
    proto::h2::frame::write_settings(&mut hello, &[]);
    let stream = with_prefix(&hello, &stream, lead);
    server_splits_agree(&proto::h2::server::H2Server::default(), &stream, &arrivals);
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "server_h2" => vec![
            [hello(), get(1), get(3), post(5, b"body")].concat(),
            [hello(), grpc_call(1, b"hello"), get(3)].concat(),
        ],
        // Answers, each HEADERS then DATA, and a PING between: an even stream (the target's
        // GETs), and an odd one (its gRPC calls: a 100 Continue first, trailers with
        // grpc-status last). `tests/decoders_random.rs` checks the lengths say so.
        "client_h2" => vec![
            [answer(1, b"OK"), answer(3, b"Hello World"), ping(), answer(5, b"")].concat(),
            [informational(1), answer(1, b"\0\0\0\0\x01x"), ping(), trailers(1), answer(3, b"")].concat(),
        ],
        _ => vec![],
    }
}

/// A server's `200` on `stream` (`:status` from the static table): HEADERS, then `body` in
/// a DATA and an empty DATA that ends the stream (none for an empty body: the HEADERS end it).
pub fn answer(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &[0x88], body.is_empty(), 16_384);
    if !body.is_empty() {
        super::frame::write_data(&mut out, stream, body, false, 16_384);
        super::frame::write_data(&mut out, stream, b"", true, 16_384);
    }
    out
}

/// A PING from the server (the client answers it).
pub fn ping() -> Vec<u8> {
    let mut out = Vec::new();
    super::frame::write_ping(&mut out, false, [7; 8]);
    out
}

/// A `100 Continue` on `stream` (`:status` as a literal of static name 8).
pub fn informational(stream: u32) -> Vec<u8> {
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &[0x08, 0x03, b'1', b'0', b'0'], false, 16_384);
    out
}

/// gRPC's trailers on `stream`: `grpc-status: 0`, ending it.
pub fn trailers(stream: u32) -> Vec<u8> {
    let mut block = vec![0x00, 11];
    block.extend_from_slice(b"grpc-status");
    block.extend_from_slice(&[1, b'0']);
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &block, true, 16_384);
    out
}

/// An HTTP/2 client's preface and SETTINGS.
pub fn hello() -> Vec<u8> {
    let mut out = super::frame::PREFACE.to_vec();
    super::frame::write_settings(&mut out, &[]);
    out
}

/// `GET /` on `stream`, its header block from the static table alone.
pub fn get(stream: u32) -> Vec<u8> {
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &[0x82, 0x86, 0x84], true, 16_384);
    out
}

/// `POST /` on `stream` with `body` in DATA frames of at most 16 KiB.
pub fn post(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &[0x83, 0x86, 0x84], false, 16_384);
    super::frame::write_data(&mut out, stream, body, true, 16_384);
    out
}

/// A gRPC call carrying `message`: `content-type: application/grpc` as a literal.
pub fn grpc_call(stream: u32, message: &[u8]) -> Vec<u8> {
    let mut block = vec![0x83, 0x86, 0x84, 0x0f, 0x10, 16];
    block.extend_from_slice(b"application/grpc");
    let mut out = Vec::new();
    super::frame::write_headers(&mut out, stream, &block, false, 16_384);
    super::frame::write_data(&mut out, stream, &super::grpc::framed(message), true, 16_384);
    out
}
