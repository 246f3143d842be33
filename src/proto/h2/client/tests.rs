//! Tests of `proto/h2/client.rs`.

use super::*;

fn spec(method: &str, body: &[u8]) -> RequestSpec {
    RequestSpec {
        method: method.into(),
        scheme: "http",
        authority: "127.0.0.1:8080".into(),
        path: "/a".into(),
        headers: vec![("Connection".into(), "close".into()), ("X-Trace".into(), "1".into())],
        body: body.to_vec(),
        grpc: false,
    }
}

/// What a server would say: its SETTINGS, then per stream a HEADERS with `:status` (the
/// encoder's own table in step with the client's decoder) and DATA.
fn answer(encoder: &mut hpack::Encoder, stream: u32, status: &str, body: &[u8], out: &mut Vec<u8>) {
    let mut block = Vec::new();
    encoder.encode([(&b":status"[..], status.as_bytes())], &mut block);
    frame::write_headers(out, stream, &block, body.is_empty(), 16_384);
    if !body.is_empty() {
        frame::write_data(out, stream, body, true, 16_384);
    }
}

/// Feed `input` to `decode_op` message by message: each outcome with the stream it names.
fn decode_all(c: &mut H2Client, mut input: &[u8], out: &mut Vec<u8>) -> Vec<(Outcome, Option<u64>)> {
    let mut seen = Vec::new();
    while let Decoded::Done { consumed, outcome } = c.decode_op(input, out).unwrap() {
        seen.push((outcome, c.answers_op()));
        input = &input[consumed..];
    }
    assert!(input.is_empty());
    seen
}

/// The first request's header block, by RFC 7541 by hand: `:method GET` (0x82), `:scheme
/// http` (0x86), `:authority` as a literal of static name 1 (0x41, a length, the value),
/// `:path /a` of static name 4 (0x44, …), `x-trace: 1` with a new name (0x40, …); raw: 33
/// octets. Huffman-coded (Appendix B): the authority's 78 bits in 10 octets instead of 14,
/// `x-trace`'s 39 bits in 5 instead of 7, `/a` and `1` no shorter: 27 octets.
#[test]
fn huffman_off_sends_the_strings_as_they_are() {
    for (huffman, block) in [(false, 33), (true, 27)] {
        let mut c = H2Client::new(&spec("get", b""), huffman);
        let mut out = Vec::new();
        c.encode_op(0, &mut out);
        assert_eq!(out.len(), frame::HEAD_LEN + block, "huffman {huffman}");
        if !huffman {
            assert!(out.windows(14).any(|w| w == b"127.0.0.1:8080"));
        }
    }
}

/// A block kept for the steady state is sent only while it is what encoding would give:
/// alternating entries (each inserting nothing after the first of each) and a table size
/// the server changes midway, against an encoder that encodes every block.
#[test]
fn kept_blocks_are_the_octets_encoding_gives() {
    let mut c = H2Client::new(&spec("get", b""), true);
    let mut other = spec("post", b"x");
    other.path = "/b".into();
    c.add_entries(H2Client::new(&other, true));
    let fields = |r: &Request| r.fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect::<Vec<_>>();
    let (first, second) = (fields(&c.requests[0]), fields(&c.requests[1]));
    let mut reference = hpack::Encoder::new(true);
    for i in 0..40 {
        if i == 20 {
            let mut settings = Vec::new();
            frame::write_settings(&mut settings, &[(frame::HEADER_TABLE_SIZE, 100)]);
            decode_all(&mut c, &settings, &mut Vec::new());
            reference.peer_table_size(100);
        }
        let entry = (i * 7 / 5) % 2;
        let mut out = Vec::new();
        c.encode_op(entry, &mut out);
        let mut block = Vec::new();
        let f = if entry == 0 { &first } else { &second };
        reference.encode(f.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
        let Some((Frame::Headers { block: sent, .. }, _)) = frame::parse(&out, MAX_FRAME).unwrap() else {
            panic!("no HEADERS")
        };
        assert_eq!(sent, &block[..], "op {i}, entry {entry}");
    }
}

#[test]
fn a_status_is_three_digits() {
    assert_eq!(status_code(b"200"), Some(200));
    for odd in [&b"+200"[..], b" 200", b"20", b"2000", b"2a0", b""] {
        assert_eq!(status_code(odd), None, "{odd:?}");
    }
}

#[test]
fn grpc_status_names_only_plain_codes() {
    assert_eq!(grpc_code_name(b"0"), "OK");
    assert_eq!(grpc_code_name(b"14"), "UNAVAILABLE");
    for odd in [&b"+0"[..], b"", b"017", b"17", b" 0"] {
        assert_eq!(grpc_code_name(odd), "UNKNOWN", "{odd:?}");
    }
}

/// A call's status is the one its last block says: a `grpc-status` in the leading
/// HEADERS does not make trailers without one a success.
#[test]
fn a_grpc_status_counts_only_in_the_block_that_ends_the_answer() {
    let mut c = H2Client::new(&RequestSpec { grpc: true, ..spec("post", b"\0\0\0\0\0") }, true);
    c.encode_op(0, &mut Vec::new());
    let mut enc = hpack::Encoder::new(true);
    let mut input = Vec::new();
    let mut block = Vec::new();
    enc.encode([(&b":status"[..], &b"200"[..]), (b"grpc-status", b"0")], &mut block);
    frame::write_headers(&mut input, 1, &block, false, 16_384);
    frame::write_data(&mut input, 1, b"\0\0\0\0\0", false, 16_384);
    let mut block = Vec::new();
    enc.encode([(&b"x-other"[..], &b"1"[..])], &mut block);
    frame::write_headers(&mut input, 1, &block, true, 16_384);
    let seen = decode_all(&mut c, &input, &mut Vec::new());
    assert_eq!(
        seen.last().map(|s| s.0),
        Some(Outcome::OpFailed(crate::proto::h2::grpc::failure("no grpc-status")))
    );
}

#[test]
fn handshake_then_streams_answered_out_of_order() {
    let mut c = H2Client::new(&spec("get", b""), true);
    let mut hello = Vec::new();
    c.handshake(&mut hello);
    assert!(hello.starts_with(frame::PREFACE));
    let mut server = Vec::new();
    frame::write_settings(&mut server, &[(frame::MAX_CONCURRENT_STREAMS, 100)]);
    let mut out = Vec::new();
    assert_eq!(
        c.decode_handshake(&server, &mut out).unwrap(),
        Decoded::Done { consumed: server.len(), outcome: Outcome::Control }
    );
    assert_eq!(out.len(), 9, "the SETTINGS acknowledged");
    // Three requests: the first inserts its headers in the table, the others index them.
    let mut lens = Vec::new();
    for _ in 0..3 {
        let mut req = Vec::new();
        c.encode_op(0, &mut req);
        lens.push(req.len());
    }
    assert!(lens[0] > lens[1] && lens[1] == lens[2], "{lens:?}");
    assert_eq!(c.op_id(), Some(5));
    // Answered 3, 5, then 1 (failed with 503).
    let mut enc = hpack::Encoder::new(true);
    let mut input = Vec::new();
    answer(&mut enc, 3, "200", b"Hello World", &mut input);
    answer(&mut enc, 5, "204", b"", &mut input);
    answer(&mut enc, 1, "503", b"busy", &mut input);
    // Each answer's HEADERS and DATA, whole here, are one message.
    let seen = decode_all(&mut c, &input, &mut out);
    assert_eq!(
        seen,
        [(Outcome::Op, Some(3)), (Outcome::Op, Some(5)), (Outcome::OpFailed(Failure::status(503)), Some(1))]
    );
}

/// An answer's frames are one message only while they follow each other whole: its DATA not
/// yet here, or another stream's frame between, and its HEADERS are a part; a frame of it that
/// breaks the connection comes as the error after the parts before it, which are counted.
#[test]
fn an_answer_is_one_message_only_while_its_frames_follow_whole() {
    let mut c = H2Client::new(&spec("get", b""), false);
    for _ in 0..3 {
        c.encode_op(0, &mut Vec::new());
    }
    let mut enc = hpack::Encoder::new(false);
    let (mut input, mut out) = (Vec::new(), Vec::new());
    answer(&mut enc, 1, "200", b"Hello World", &mut input);
    // Its DATA cut short: the HEADERS alone, then the rest once here.
    let cut = input.len() - 3;
    let headers = frame::HEAD_LEN + 1;
    assert_eq!(
        c.decode_op(&input[..cut], &mut out).unwrap(),
        Decoded::Done { consumed: headers, outcome: Outcome::OpPart }
    );
    assert_eq!(c.decode_op(&input[..cut][headers..], &mut out).unwrap(), Decoded::Partial);
    assert_eq!(
        c.decode_op(&input[headers..], &mut out).unwrap(),
        Decoded::Done { consumed: input.len() - headers, outcome: Outcome::Op }
    );
    // Stream 3's HEADERS, then stream 5's, then 3's DATA: three messages.
    let mut input = Vec::new();
    let mut block = Vec::new();
    enc.encode([(&b":status"[..], &b"200"[..])], &mut block);
    frame::write_headers(&mut input, 3, &block, false, 16_384);
    frame::write_headers(&mut input, 5, &block, false, 16_384);
    frame::write_data(&mut input, 3, b"x", true, 16_384);
    let seen = decode_all(&mut c, &input, &mut out);
    assert_eq!(seen, [(Outcome::OpPart, Some(3)), (Outcome::OpPart, Some(5)), (Outcome::Op, Some(3))]);
    // A new stream's DATA padded past its length (a PROTOCOL_ERROR of the connection) right
    // after its HEADERS: the HEADERS first, as the stream's part, then the error.
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    frame::write_headers(&mut input, 7, &block, false, 16_384);
    let headers = input.len();
    frame::write_head(&mut input, 1, frame::DATA, 0x8, 7);
    input.push(5);
    assert_eq!(
        c.decode_op(&input, &mut out).unwrap(),
        Decoded::Done { consumed: headers, outcome: Outcome::OpPart }
    );
    assert_eq!(c.answers_op(), Some(7));
    assert!(c.decode_op(&input[headers..], &mut out).is_err());
}

#[test]
fn a_goaway_lets_the_streams_it_names_finish_then_ends_the_connection() {
    let mut c = H2Client::new(&spec("GET", b""), false);
    for _ in 0..3 {
        c.encode_op(0, &mut Vec::new());
    }
    let mut enc = hpack::Encoder::new(false);
    let mut input = Vec::new();
    frame::write_goaway(&mut input, 3, 0);
    answer(&mut enc, 1, "204", b"", &mut input);
    let mut out = Vec::new();
    decode_all(&mut c, &input, &mut out);
    assert!(!c.peer_closing(), "stream 3 may still be answered");
    let mut input = Vec::new();
    answer(&mut enc, 3, "204", b"", &mut input);
    decode_all(&mut c, &input, &mut out);
    assert!(c.peer_closing(), "stream 5 will not be: the connection ends, 5 fails as closed");
}

#[test]
fn what_a_server_may_not_do_and_what_it_limits() {
    let mut out = Vec::new();
    // DATA before the answer's HEADERS.
    let mut c = H2Client::new(&spec("GET", b""), false);
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    frame::write_data(&mut input, 1, b"x", true, 16_384);
    assert_eq!(c.decode_op(&input, &mut out), Err(Error::DataBeforeHeaders));
    // A reset leaves no status behind for the answers' tally.
    let mut c = H2Client::new(&spec("GET", b""), false);
    c.encode_op(0, &mut Vec::new());
    c.encode_op(0, &mut Vec::new());
    let mut enc = hpack::Encoder::new(false);
    let mut input = Vec::new();
    answer(&mut enc, 1, "200", b"", &mut input);
    frame::write_rst_stream(&mut input, 3, 7);
    let seen = decode_all(&mut c, &input, &mut out);
    assert_eq!(seen[1], (Outcome::OpFailed(Failure::protocol("RST_STREAM", "REFUSED_STREAM")), Some(3)));
    assert_eq!(c.answer(), None);
    // MAX_CONCURRENT_STREAMS caps the streams in flight.
    let mut c = H2Client::new(&spec("GET", b""), false);
    let mut settings = Vec::new();
    frame::write_settings(&mut settings, &[(frame::MAX_CONCURRENT_STREAMS, 1)]);
    c.decode_op(&settings, &mut out).unwrap();
    assert!(c.accepts_ops());
    c.encode_op(0, &mut Vec::new());
    assert!(!c.accepts_ops(), "one stream in flight is the server's limit");
    // A stream's last DATA takes no WINDOW_UPDATE for the stream (it is closed).
    let mut c = H2Client::new(&spec("GET", b""), false);
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    let mut block = Vec::new();
    hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
    frame::write_headers(&mut input, 1, &block, false, 16_384);
    // 16,384 + 10,000 open, then the last 10,000 cross half the window and end the stream.
    frame::write_data(&mut input, 1, &[b'x'; 16_384], false, 16_384);
    frame::write_data(&mut input, 1, &[b'x'; 10_000], false, 16_384);
    frame::write_data(&mut input, 1, &[b'x'; 10_000], true, 16_384);
    let mut replies = Vec::new();
    decode_all(&mut c, &input, &mut replies);
    let mut updates = Vec::new();
    let mut rest = &replies[..];
    while let Some((f, used)) = frame::parse(rest, 16_384).unwrap() {
        updates.push(f);
        rest = &rest[used..];
    }
    assert_eq!(updates, [Frame::WindowUpdate { stream: 0, increment: 36_384 }], "{updates:?}");
}

/// The frames in `bytes`: (type, flags, stream, payload length) each.
fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, usize)> {
    let mut seen = Vec::new();
    while bytes.len() >= frame::HEAD_LEN {
        let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
        let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap());
        seen.push((bytes[3], bytes[4], stream, len));
        bytes = &bytes[frame::HEAD_LEN + len..];
    }
    assert!(bytes.is_empty());
    seen
}

/// A body past the windows (RFC 9113 §6.9: 65,535 octets for the connection and each
/// stream until the server says more) goes as far as they allow, in DATA frames of at
/// most 16,384 octets, and the rest as the server's WINDOW_UPDATEs make room — on the
/// connection and on the stream both; END_STREAM on the very last frame only.
#[test]
fn a_body_past_the_windows_goes_as_the_server_grants_room() {
    const DATA: u8 = 0x0;
    const END: u8 = 0x1;
    let mut c = H2Client::new(&spec("POST", &vec![b'b'; 100_000]), false);
    let mut first = Vec::new();
    c.encode_op(0, &mut first);
    assert!(c.op_open());
    let data: Vec<_> = frames(&first).into_iter().skip(1).collect();
    // 65,535 = 3 × 16,384 + 16,383, none the last.
    assert_eq!(
        data,
        [(DATA, 0, 1, 16_384), (DATA, 0, 1, 16_384), (DATA, 0, 1, 16_384), (DATA, 0, 1, 16_383)]
    );
    let mut out = Vec::new();
    assert_eq!(c.op_more(&mut out), None, "both windows spent");
    let mut grant = Vec::new();
    frame::write_window_update(&mut grant, 1, 40_000);
    c.decode_op(&grant, &mut Vec::new()).unwrap();
    assert_eq!(c.op_more(&mut out), None, "the connection's window is still spent");
    grant.clear();
    frame::write_window_update(&mut grant, 0, 20_000);
    c.decode_op(&grant, &mut Vec::new()).unwrap();
    assert_eq!(c.op_more(&mut out), Some((1, false)));
    assert_eq!(frames(&out), [(DATA, 0, 1, 16_384), (DATA, 0, 1, 3_616)]);
    assert_eq!(out.len(), 20_000 + 2 * 9);
    assert_eq!(c.op_more(&mut Vec::new()), None);
    grant.clear();
    frame::write_window_update(&mut grant, 0, 100_000);
    c.decode_op(&grant, &mut Vec::new()).unwrap();
    out.clear();
    // The stream's own window has 20,000 left; the body's last 14,465 fit.
    assert_eq!(c.op_more(&mut out), Some((1, true)));
    assert_eq!(frames(&out), [(DATA, END, 1, 14_465)]);
    assert_eq!(c.op_more(&mut Vec::new()), None);
    // A WINDOW_UPDATE past 2^31-1 breaks flow control.
    grant.clear();
    frame::write_window_update(&mut grant, 0, frame::MAX_WINDOW);
    assert_eq!(c.decode_op(&grant, &mut Vec::new()), Err(Error::WindowOverflow));
}

/// Streams waiting for room share the connection's window in turn, each its share of what
/// is left (the window over the streams waiting, at least a frame): of 40,000, stream 1
/// 20,000, stream 3 16,384 (a frame: 10,000 would be less), stream 1 the last 3,616. None
/// above a GOAWAY's last stream goes on; room for a stream never opened is an error.
#[test]
fn waiting_bodies_share_the_window_in_turn() {
    let feed = |c: &mut H2Client, frames: &[(u32, u32)]| {
        let mut grant = Vec::new();
        for &(stream, n) in frames {
            frame::write_window_update(&mut grant, stream, n);
        }
        decode_all(c, &grant, &mut Vec::new());
    };
    let mut c = H2Client::new(&spec("POST", &vec![b'b'; 100_000]), false);
    c.encode_op(0, &mut Vec::new()); // stream 1: 65,535 of it, the connection's all
    c.encode_op(0, &mut Vec::new()); // stream 3: none yet
    feed(&mut c, &[(1, 50_000), (0, 40_000)]);
    let mut pieces = Vec::new();
    while let Some((id, _)) = c.op_more(&mut Vec::new()) {
        pieces.push((id, c.streams.iter().find(|s| u64::from(s.id) == id).unwrap().body_sent));
    }
    assert_eq!(pieces, [(1, 85_535), (3, 16_384), (1, 89_151)]);
    // After GOAWAY(1), stream 3's body stops; stream 1's goes on.
    let mut goaway = Vec::new();
    frame::write_goaway(&mut goaway, 1, 0);
    decode_all(&mut c, &goaway, &mut Vec::new());
    feed(&mut c, &[(0, 30_000), (3, 10_000)]);
    let mut served = Vec::new();
    while let Some((id, _)) = c.op_more(&mut Vec::new()) {
        served.push(id);
    }
    assert_eq!(served, [1]);
    let mut idle = Vec::new();
    frame::write_window_update(&mut idle, 5, 1);
    assert_eq!(c.decode_op(&idle, &mut Vec::new()), Err(Error::IdleStream("WINDOW_UPDATE", 5)));
    // A window of 1 never grants 0: an empty DATA takes no WINDOW_UPDATE.
    let mut c = H2Client::new(&spec("GET", b""), false).with_window(Some(1));
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    let mut block = Vec::new();
    hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
    frame::write_headers(&mut input, 1, &block, false, 16_384);
    frame::write_data(&mut input, 1, b"", false, 16_384);
    let mut replies = Vec::new();
    decode_all(&mut c, &input, &mut replies);
    assert!(replies.is_empty(), "{replies:?}");
}

/// SETTINGS_INITIAL_WINDOW_SIZE sets a new stream's room and moves an open stream's by
/// the change (§6.9.2), below zero too; a stream answered before its body went whole is
/// reset (CANCEL) and sends no more.
#[test]
fn settings_move_the_stream_windows_and_an_early_answer_stops_the_body() {
    let mut c = H2Client::new(&spec("POST", &vec![b'b'; 5_000]), false);
    let mut settings = Vec::new();
    frame::write_settings(&mut settings, &[(frame::INITIAL_WINDOW_SIZE, 1_000)]);
    c.decode_op(&settings, &mut Vec::new()).unwrap();
    let mut first = Vec::new();
    c.encode_op(0, &mut first);
    assert_eq!(frames(&first)[1..], [(0x0, 0, 1, 1_000)]);
    // 1,000 → 0: the stream's window goes to -1,000; 2,000 more makes 1,000 of room.
    settings.clear();
    frame::write_settings(&mut settings, &[(frame::INITIAL_WINDOW_SIZE, 0)]);
    frame::write_window_update(&mut settings, 1, 2_000);
    let mut input = &settings[..];
    while let Decoded::Done { consumed, .. } = c.decode_op(input, &mut Vec::new()).unwrap() {
        input = &input[consumed..];
    }
    let mut out = Vec::new();
    assert_eq!(c.op_more(&mut out), Some((1, false)));
    assert_eq!(frames(&out), [(0x0, 0, 1, 1_000)]);
    // The answer, whole, before the body: the stream is reset and goes no further.
    let mut answer_bytes = Vec::new();
    answer(&mut hpack::Encoder::new(false), 1, "413", b"", &mut answer_bytes);
    let mut replies = Vec::new();
    let seen = decode_all(&mut c, &answer_bytes, &mut replies);
    assert_eq!(seen, [(Outcome::OpFailed(Failure::status(413)), Some(1))]);
    assert_eq!(frames(&replies), [(frame::RST_STREAM, 0, 1, 4)]);
    assert_eq!(replies[frame::HEAD_LEN..], frame::CANCEL.to_be_bytes());
    let mut grant = Vec::new();
    frame::write_window_update(&mut grant, 1, 50_000);
    assert_eq!(decode_all(&mut c, &grant, &mut Vec::new()), [(Outcome::Control, None)]);
    assert_eq!(c.op_more(&mut Vec::new()), None, "the stream ended");
}

/// The layers of a gRPC call, by RFC 9113 and gRPC's framing by hand: out, a HEADERS
/// frame (9 + its block) and one DATA frame (9) of a 5-octet prefix and the message; back,
/// `:status 200` (one octet, 0x88, static index 8), a DATA frame of prefix and message, and
/// trailers `grpc-status: 0` (a literal with a new name: 0x40, 11 + "grpc-status", 1 + "0":
/// 15 octets). Stream 1 is the connection's first; stream 3 counts apart. A frame on stream
/// 0 is in none.
#[test]
fn each_streams_bytes_are_counted_by_layer_first_apart() {
    let mut request = spec("POST", &crate::proto::h2::grpc::framed(&[b'm'; 400]));
    request.grpc = true;
    let mut c = H2Client::new(&request, false);
    let mut out = Vec::new();
    c.encode_op(0, &mut out);
    let first_block = out.len() - 9 - 9 - 405;
    c.encode_op(0, &mut out);
    let mut server = hpack::Encoder::new(false);
    let mut input = Vec::new();
    for stream in [1, 3] {
        let mut block = Vec::new();
        server.encode([(&b":status"[..], &b"200"[..])], &mut block);
        assert_eq!(block, [0x88]);
        frame::write_headers(&mut input, stream, &block, false, 16_384);
        frame::write_data(&mut input, stream, &crate::proto::h2::grpc::framed(&[b'e'; 300]), false, 16_384);
        block.clear();
        server.encode([(&b"grpc-status"[..], &b"0"[..])], &mut block);
        assert_eq!(block.len(), if stream == 1 { 15 } else { 1 }, "a literal inserted, then its index");
        frame::write_headers(&mut input, stream, &block, true, 16_384);
        frame::write_ping(&mut input, false, [0; 8]);
    }
    let seen = decode_all(&mut c, &input, &mut Vec::new());
    assert_eq!(seen.iter().filter(|(o, _)| *o == Outcome::Op).count(), 2);
    let l = c.take_layers().unwrap();
    let bytes = |headers, trailers, framing, prefix, payload| crate::stats::LayerBytes {
        headers,
        trailers,
        framing,
        prefix,
        payload,
    };
    assert_eq!((l.first.ops, l.steady.ops), (1, 1));
    assert_eq!(l.first.tx, bytes(first_block as u64, 0, 18, 5, 400));
    assert_eq!(l.first.rx, bytes(1, 15, 27, 5, 300));
    // The second call's headers all indexed, one octet each: :method, :scheme, :authority,
    // :path, x-trace, content-type and te (`connection` is dropped); its trailers too.
    assert_eq!(l.steady.tx, bytes(7, 0, 18, 5, 400));
    assert_eq!(l.steady.rx, bytes(1, 1, 27, 5, 300));
    let (tx, rx) = l.totals();
    assert_eq!(tx as usize, out.len());
    assert_eq!(rx as usize, input.len() - 2 * 17, "all but the PINGs");
}

/// `--window 1 MiB`: SETTINGS_INITIAL_WINDOW_SIZE in this side's SETTINGS (a third
/// parameter: 9 + 18 octets) and a WINDOW_UPDATE raising the connection's by 1,048,576 −
/// 65,535 (13 octets); then 600,000 octets of DATA on a stream take one grant each for the
/// stream and the connection (at half a window), where 65,535 would have taken 18.
#[test]
fn a_larger_window_is_announced_and_granted_at_its_half() {
    let mut c = H2Client::new(&spec("GET", b""), false).with_window(Some(1 << 20));
    let mut hello = Vec::new();
    c.handshake(&mut hello);
    assert_eq!(hello.len(), 24 + 27 + 13);
    let settings = &hello[24..24 + 27];
    assert_eq!(&settings[21..27], &[0, 4, 0, 0x10, 0, 0][..], "INITIAL_WINDOW_SIZE 1,048,576");
    assert_eq!(&hello[24 + 27 + 9..], &(1_048_576u32 - 65_535).to_be_bytes()[..]);
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    let mut block = Vec::new();
    hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
    frame::write_headers(&mut input, 1, &block, false, 16_384);
    frame::write_data(&mut input, 1, &vec![b'x'; 600_000], false, 16_384);
    let mut replies = Vec::new();
    decode_all(&mut c, &input, &mut replies);
    let updates: Vec<_> = frames(&replies).into_iter().map(|(kind, _, stream, _)| (kind, stream)).collect();
    assert_eq!(updates, [(frame::WINDOW_UPDATE, 0), (frame::WINDOW_UPDATE, 1)]);
}

#[test]
fn the_request_is_what_http2_allows() {
    let c = H2Client::new(&spec("post", b"xyz"), false);
    let fields: Vec<(String, String)> = c.requests[0]
        .fields
        .iter()
        .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
        .collect();
    let want = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "127.0.0.1:8080"),
        (":path", "/a"),
        ("x-trace", "1"),
        ("content-length", "3"),
    ];
    assert_eq!(fields, want.map(|(n, v)| (n.to_string(), v.to_string())));
    let mut c = c;
    let mut req = Vec::new();
    c.encode_op(0, &mut req);
    let (f, used) = frame::parse(&req, 16_384).unwrap().unwrap();
    assert!(matches!(f, Frame::Headers { stream: 1, end_stream: false, end_headers: true, .. }));
    let (f, _) = frame::parse(&req[used..], 16_384).unwrap().unwrap();
    assert_eq!(f, Frame::Data { stream: 1, end_stream: true, data: b"xyz", padding: 0 });
}

#[test]
fn control_frames_resets_continuations_and_window_updates() {
    let mut c = H2Client::new(&spec("GET", b""), true);
    let mut req = Vec::new();
    c.encode_op(0, &mut req);
    c.encode_op(0, &mut req);
    let mut input = Vec::new();
    frame::write_ping(&mut input, false, [1; 8]);
    frame::write_rst_stream(&mut input, 1, 8);
    // Stream 3's answer in a HEADERS and a CONTINUATION, then 40,000 bytes of DATA.
    let mut block = Vec::new();
    hpack::Encoder::new(false).encode([(&b":status"[..], &b"200"[..])], &mut block);
    frame::write_headers(&mut input, 3, &block, false, 2);
    frame::write_data(&mut input, 3, &[b'x'; 40_000], true, 16_384);
    let mut out = Vec::new();
    let seen = decode_all(&mut c, &input, &mut out);
    assert_eq!(seen[0], (Outcome::Control, None));
    assert_eq!(seen[1], (Outcome::OpFailed(Failure::protocol("RST_STREAM", "CANCEL")), Some(1)));
    assert_eq!(seen.last(), Some(&(Outcome::Op, Some(3))));
    assert!(seen[2..seen.len() - 1].iter().all(|s| *s == (Outcome::OpPart, Some(3))), "{seen:?}");
    // The PING answered, and room granted back for the connection and the stream.
    let mut replies = &out[..];
    let mut kinds = Vec::new();
    while let Some((f, used)) = frame::parse(replies, 16_384).unwrap() {
        kinds.push(f);
        replies = &replies[used..];
    }
    assert_eq!(kinds[0], Frame::Ping { ack: true, data: [1; 8] });
    assert!(kinds.contains(&Frame::WindowUpdate { stream: 0, increment: 32_768 }), "{kinds:?}");
    assert!(kinds.iter().any(|f| matches!(f, Frame::WindowUpdate { stream: 3, .. })), "{kinds:?}");
    // A frame between a HEADERS and its CONTINUATION breaks the connection.
    let mut c = H2Client::new(&spec("GET", b""), true);
    c.encode_op(0, &mut Vec::new());
    let mut input = Vec::new();
    frame::write_head(&mut input, 1, frame::HEADERS, 0, 1);
    input.push(0x88);
    frame::write_ping(&mut input, false, [0; 8]);
    let (Ok(Decoded::Done { consumed, .. }), mut out) = (c.decode_op(&input, &mut Vec::new()), Vec::new())
    else {
        panic!()
    };
    assert_eq!(c.decode_op(&input[consumed..], &mut out), Err(Error::Interleaved("PING")));
    assert_eq!(
        H2Client::new(&spec("GET", b""), true).decode_op(&[0, 0, 4, 5, 4, 0, 0, 0, 1, 0, 0, 0, 2], &mut out),
        Err(Error::Push)
    );
}

/// The steady state's HEADERS frame is sent again as it was kept, its stream's id written in:
/// the frame the second request's block makes on that stream, with or without a body; a
/// header block larger than a frame of the least size a server may set is not kept, and goes
/// with its CONTINUATION each time.
#[test]
fn a_kept_headers_frame_goes_on_its_own_stream() {
    let mut large = spec("get", b"");
    large.headers.push(("x-large".into(), "v".repeat(20_000)));
    for (spec, frames) in [(spec("get", b""), 1), (spec("post", b"body"), 1), (large, 2)] {
        let body = !spec.body.is_empty();
        let mut c = H2Client::new(&spec, false);
        let mut steady = Vec::new();
        for stream in [1u32, 3, 5, 7] {
            let mut out = Vec::new();
            c.encode_op(0, &mut out);
            let (mut at, mut heads, mut block) = (0, Vec::new(), Vec::new());
            while let Some((f, n)) = frame::parse(&out[at..], 1 << 20).unwrap() {
                if let Frame::Headers { block: b, .. } | Frame::Continuation { block: b, .. } = f {
                    block.extend_from_slice(b);
                }
                heads.push((f.kind(), u32::from_be_bytes(out[at + 5..at + 9].try_into().unwrap())));
                at += n;
            }
            assert_eq!(at, out.len());
            assert!(heads.iter().all(|&(_, id)| id == stream), "{heads:?}");
            assert_eq!(heads.iter().filter(|h| h.0 != frame::DATA).count(), frames);
            // Kept from the second request on (the first changed the table), if one frame.
            assert_eq!(c.blocks[0].is_some(), stream > 1 && frames == 1, "stream {stream}");
            if stream == 3 {
                steady = block; // the table holds the request's fields from here on
            } else if stream > 3 {
                let mut expected = Vec::new();
                frame::write_headers(&mut expected, stream, &steady, !body, frame::DEFAULT_MAX_FRAME);
                assert_eq!(out[..expected.len()], expected[..], "stream {stream}");
            }
        }
    }
}
