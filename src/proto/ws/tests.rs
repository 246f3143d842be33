//! The WebSocket codecs' byte vectors and exchanges, client and server together.

use super::*;
use crate::proto::{ClientCodec, Decoded, Outcome, ServerCodec};

fn spec(size: usize) -> WsSpec {
    WsSpec {
        host: "127.0.0.1:9001".into(),
        path: "/".into(),
        headers: vec![],
        message: vec![b'x'; size],
        text: false,
        expect: Expect::Echo,
    }
}

#[test]
fn rfc_6455_example_accept_key() {
    assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

#[test]
fn frame_sizes_at_the_length_boundaries() {
    // RFC 6455 §5.2: FIN + opcode, mask bit + 7-bit length (126: 16 bits follow, 127: 64
    // bits follow), the 4-byte mask key from a client, then the payload.
    for (size, length_bytes) in [
        (125, vec![125]),
        (126, vec![126, 0, 126]),
        (500, vec![126, 0x01, 0xF4]),
        (65535, vec![126, 0xFF, 0xFF]),
        (65536, vec![127, 0, 0, 0, 0, 0, 1, 0, 0]),
    ] {
        let mut c = WsClient::new(spec(size));
        let mut out = Vec::new();
        c.encode_op(0, &mut out);
        let mut head = vec![0x80 | OP_BINARY, 0x80 | length_bytes[0]];
        head.extend_from_slice(&length_bytes[1..]);
        assert_eq!(out[..head.len()], head, "client header of {size}");
        assert_eq!((out.len(), c.frame_len()), (head.len() + 4 + size, head.len() + 4 + size));
        let mut echo = Vec::new();
        write_frame(&mut echo, OP_BINARY, &vec![b'x'; size], None);
        head[1] &= 0x7f;
        assert_eq!(echo[..head.len()], head, "server header of {size}");
        assert_eq!(echo.len(), head.len() + size);
    }
    let mut out = Vec::new();
    WsClient::new(spec(500)).encode_op(0, &mut out);
    assert_eq!(out.len(), 508, "the issue's figure: 2 + 2 + 4 + 500");
}

#[test]
fn word_masking_equals_byte_masking_at_any_offset() {
    let key = [0x12, 0x34, 0x56, 0x78];
    for len in [0, 1, 7, 8, 9, 31, 500] {
        for offset in 0..4 {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut fast = data.clone();
            apply_mask(&mut fast, key, offset);
            let slow: Vec<u8> = data.iter().enumerate().map(|(i, b)| b ^ key[(offset + i) & 3]).collect();
            assert_eq!(fast, slow, "len {len} offset {offset}");
        }
    }
}

#[test]
fn masking_round_trips_and_keys_change() {
    let mut c = WsClient::new(spec(500));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    c.encode_op(0, &mut a);
    c.encode_op(0, &mut b);
    let head = parse_head(&a).unwrap();
    assert_eq!((head.fin, head.opcode, head.len, head.head_len), (true, OP_BINARY, 500, 8));
    let mut payload = a[8..].to_vec();
    apply_mask(&mut payload, head.mask.unwrap(), 0);
    assert_eq!(payload, vec![b'x'; 500]);
    assert_ne!(a[4..8], b[4..8], "a fresh mask key per frame");
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let frames = |seed: u64| {
        let mut c = WsClient::new(spec(20));
        c.seed(seed);
        let mut out = Vec::new();
        c.handshake(&mut out);
        c.encode_op(0, &mut out);
        out
    };
    assert_eq!(frames(7), frames(7));
    assert_ne!(frames(7), frames(8));
}

fn upgraded_pair() -> (WsClient, WsServer) {
    let mut c = WsClient::new(spec(500));
    let mut s = WsServer::new(DEFAULT_MAX_MESSAGE);
    let mut req = Vec::new();
    c.handshake(&mut req);
    let mut resp = Vec::new();
    let served = s.serve(&req, &mut resp);
    assert_eq!((served.consumed, served.close), (req.len(), false));
    for cut in 0..resp.len() {
        assert_eq!(c.decode_handshake(&resp[..cut], &mut Vec::new()), Ok(Decoded::Partial));
    }
    assert_eq!(
        c.decode_handshake(&resp, &mut Vec::new()),
        Ok(Decoded::Done { consumed: resp.len(), outcome: Outcome::Control })
    );
    (c, s)
}

#[test]
fn echo_through_the_server_is_504_bytes_and_completes_the_op() {
    let (mut c, mut s) = upgraded_pair();
    let mut frame = Vec::new();
    c.encode_op(0, &mut frame);
    c.encode_op(0, &mut frame);
    let mut echo = Vec::new();
    let served = s.serve(&frame, &mut echo);
    assert_eq!((served.consumed, served.messages), (1016, 2));
    assert_eq!(echo.len(), 1008);
    let mut out = Vec::new();
    for cut in 0..504 {
        assert_eq!(c.decode_op(&echo[..cut], &mut out), Ok(Decoded::Partial));
    }
    assert_eq!(c.decode_op(&echo, &mut out), Ok(Decoded::Done { consumed: 504, outcome: Outcome::Op }));
}

#[test]
fn fragments_pings_and_close() {
    let (mut c, _) = upgraded_pair();
    let mut input = Vec::new();
    input.extend_from_slice(&[OP_BINARY, 100]); // FIN clear: first fragment
    input.extend_from_slice(&[b'x'; 100]);
    write_frame(&mut input, OP_PING, b"hi", None);
    input.extend_from_slice(&[0x80, 126, 0x01, 0x90]); // final continuation, 400 bytes
    input.extend_from_slice(&[b'x'; 400]);
    write_frame(&mut input, OP_CLOSE, &1001u16.to_be_bytes(), None);
    let mut out = Vec::new();
    let mut outcomes = Vec::new();
    let mut pos = 0;
    while let Ok(Decoded::Done { consumed, outcome }) = c.decode_op(&input[pos..], &mut out) {
        outcomes.push(outcome);
        pos += consumed;
    }
    assert_eq!(pos, input.len());
    assert_eq!(outcomes, [Outcome::OpPart, Outcome::Control, Outcome::Op, Outcome::Control]);
    assert!(c.peer_closing());
    // The pong and the close reply, both masked.
    let pong = parse_head(&out).unwrap();
    assert_eq!((pong.opcode, pong.len, pong.mask.is_some()), (OP_PONG, 2, true));
    let close = parse_head(&out[8..]).unwrap();
    assert_eq!((close.opcode, close.len), (OP_CLOSE, 2));
}

#[test]
fn client_refuses_bad_upgrades_and_frames() {
    let mut c = WsClient::new(spec(5));
    c.handshake(&mut Vec::new());
    assert_eq!(
        c.decode_handshake(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &mut Vec::new()),
        Err(Error::UpgradeRefused(200))
    );
    let wrong = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    assert_eq!(c.decode_handshake(wrong, &mut Vec::new()), Err(Error::BadAcceptKey));
    let mut out = Vec::new();
    assert_eq!(c.decode_op(&[0xC2, 0x00], &mut out), Err(Error::ReservedBits));
    let http = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 28\r\n\r\nUnsupported protocol version";
    assert_eq!(c.decode_op(http, &mut out), Err(Error::HttpAfterUpgrade(400)));
    // In pieces, the same verdict: its first 12 octets are awaited (the fuzzer's property).
    for cut in 2..12 {
        assert!(c.decode_op(&http[..cut], &mut out).is_ok(), "{cut} octets of it are awaited");
    }
    assert_eq!(c.decode_op(b"HTX", &mut out), Err(Error::ReservedBits));
    assert_eq!(c.decode_op(&[0x82, 0x7f, 0xff, 0, 0, 0, 0, 0, 0, 0], &mut out), Err(Error::FrameTooLarge));
    assert_eq!(c.decode_op(&[0x82, 0x02, b'a', b'b'], &mut out), Err(Error::EchoLength));
    assert_eq!(c.decode_op(&[0x89, 126, 0, 126], &mut out), Err(Error::BadControlFrame));
    assert_eq!(c.decode_op(&[0x83, 0], &mut out), Err(Error::BadOpcode));
}

#[test]
fn server_refuses_and_closes_as_the_rfc_says() {
    let mut s = WsServer::new(DEFAULT_MAX_MESSAGE);
    let mut out = Vec::new();
    let served = s.serve(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &mut out);
    assert!(served.close && out.starts_with(b"HTTP/1.1 400 "));
    // Unmasked client frame: 1002.
    let (_, mut s) = upgraded_pair();
    let mut out = Vec::new();
    assert!(s.serve(&[0x82, 0x01, b'a'], &mut out).close);
    assert_eq!(out, [0x88, 0x02, 0x03, 0xea]);
    // Over --max-message: 1009.
    let mut s = WsServer::new(10);
    s.upgraded = true;
    let mut frame = Vec::new();
    write_frame(&mut frame, OP_BINARY, &[0; 11], Some([1, 2, 3, 4]));
    let mut out = Vec::new();
    assert!(s.serve(&frame, &mut out).close);
    assert_eq!(out, [0x88, 0x02, 0x03, 0xf1]);
    // Close is answered with close.
    let (_, mut s) = upgraded_pair();
    let mut frame = Vec::new();
    write_frame(&mut frame, OP_CLOSE, &1000u16.to_be_bytes(), Some([1, 2, 3, 4]));
    let mut out = Vec::new();
    assert!(s.serve(&frame, &mut out).close);
    assert_eq!(out, [0x88, 0x02, 0x03, 0xe8]);
}

#[test]
fn server_reassembles_fragments_and_answers_ping() {
    let (_, mut s) = upgraded_pair();
    let mut input = Vec::new();
    let key = [1, 2, 3, 4];
    let mut part = |fin: bool, op: u8, data: &[u8]| {
        input.push(if fin { 0x80 } else { 0 } | op);
        input.push(0x80 | data.len() as u8);
        input.extend_from_slice(&key);
        let start = input.len();
        input.extend_from_slice(data);
        apply_mask(&mut input[start..], key, 0);
    };
    part(false, OP_TEXT, b"hel");
    part(true, OP_PING, b"p");
    part(true, OP_CONTINUATION, b"lo");
    let mut out = Vec::new();
    let served = s.serve(&input, &mut out);
    assert_eq!((served.consumed, served.messages), (input.len(), 1));
    assert_eq!(out, [&[0x8a, 1, b'p'][..], &[0x81, 5], b"hello"].concat());
}

/// The second reproduction: a non-final fragment, then a continuation declaring
/// 2^64 − 1 bytes. The server closes with 1009 instead of overflowing.
#[test]
fn an_overflowing_continuation_is_too_big_not_a_crash() {
    let (_, mut s) = upgraded_pair();
    let mut input = vec![0x02, 0x81, 1, 2, 3, 4, b'a' ^ 1];
    input.extend_from_slice(&[0x80, 0xFF]);
    input.extend_from_slice(&[0xFF; 8]);
    input.extend_from_slice(&[1, 2, 3, 4]);
    let mut out = Vec::new();
    let served = s.serve(&input, &mut out);
    assert!(served.close);
    assert_eq!(out, [0x88, 0x02, 0x03, 0xf1], "close 1009");
    // A 64-bit length with the top bit set, unfragmented: the same.
    let (_, mut s) = upgraded_pair();
    let mut out = Vec::new();
    let frame = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
    assert!(s.serve(&frame, &mut out).close);
    assert_eq!(out, [0x88, 0x02, 0x03, 0xf1]);
}

#[test]
fn endless_fragments_end_at_the_clients_message_limit() {
    let (mut c, _) = upgraded_pair();
    let mut out = Vec::new();
    let first = [0x02, 0x7f, 0, 0, 0, 0, 0x02, 0, 0, 0]; // 32 MiB, not final
    let head = parse_head(&first).unwrap();
    let mut c2 = c.clone();
    // Pretend two 32 MiB fragments already arrived whole.
    c2.session.in_message = true;
    c2.session.received = 2 * head.len;
    let next = [0x00, 0x7e, 0x00, 0x10];
    assert_eq!(c2.decode_op(&next, &mut out), Err(Error::FrameTooLarge));
    let _ = c.decode_op(&first, &mut out);
}

#[test]
fn expect_any_takes_an_answer_in_the_servers_own_words() {
    let mut c = WsClient::new(WsSpec { expect: Expect::Any, ..spec(5) });
    c.handshake(&mut Vec::new());
    let mut out = Vec::new();
    // Three bytes more than the message (a server that prefixes its echoes).
    let answer = [&[0x82, 8][..], b"re:hello"].concat();
    assert_eq!(c.decode_op(&answer, &mut out), Ok(Decoded::Done { consumed: 10, outcome: Outcome::Op }));
    let mut echo_only = WsClient::new(spec(5));
    assert_eq!(echo_only.decode_op(&answer, &mut out), Err(Error::EchoLength));
}

#[test]
fn a_session_reassembles_fragmented_text_when_it_keeps_payloads() {
    let mut s = Session::new(true);
    let mut out = Vec::new();
    let input = [&[0x01, 3][..], b"hel", &[0x89, 0], &[0x80, 2], b"lo"].concat();
    let mut pos = 0;
    let mut seen = Vec::new();
    while let Some((n, frame)) = s.frame(&input[pos..], &mut out).unwrap() {
        seen.push(match frame {
            Frame::Message { opcode, len, payload } => {
                format!("{opcode} {len} {}", String::from_utf8_lossy(payload))
            }
            other => format!("{other:?}"),
        });
        pos += n;
    }
    assert_eq!(seen, ["Part", "Control", "1 5 hello"]);
    assert_eq!(parse_head(&out).map(|h| h.opcode), Some(OP_PONG), "the ping answered");
}
