//! The floor's byte vectors: a request is its payload exactly, a response its size exactly,
//! and the set-up the only other bytes.

use super::wire::{HELLO_LEN, Sizes};
use super::*;
use crate::proto::{ClientCodec, Decoded, Outcome, ServerCodec};

#[test]
fn a_request_is_its_payload_and_the_set_up_eight_bytes() {
    let mut c = TcpClient::new(vec![b'x'; 400], 1);
    let mut out = Vec::new();
    c.handshake(&mut out);
    assert_eq!(out, [0, 0, 1, 0x90, 0, 0, 0, 1]);
    assert_eq!(
        c.decode_handshake(&[], &mut out).unwrap(),
        Decoded::Done { consumed: 0, outcome: Outcome::Control }
    );
    out.clear();
    c.encode_op(0, &mut out);
    assert_eq!(out, vec![b'x'; 400]);
    assert_eq!(c.decode_op(&[], &mut out).unwrap(), Decoded::Partial);
    assert_eq!(c.decode_op(b"!", &mut out).unwrap(), Decoded::Done { consumed: 1, outcome: Outcome::Op });
}

#[test]
fn a_large_response_comes_in_pieces_where_the_sizes_say() {
    let mut c = TcpClient::new(b"r".to_vec(), 150_000);
    let mut out = Vec::new();
    assert_eq!(c.decode_op(&[0; 65_535], &mut out).unwrap(), Decoded::Partial);
    let big = vec![0; 200_000];
    let part = Decoded::Done { consumed: client::PIECE, outcome: Outcome::OpPart };
    assert_eq!(c.decode_op(&big, &mut out).unwrap(), part);
    assert_eq!(c.decode_op(&big, &mut out).unwrap(), part);
    let last = 150_000 - 2 * client::PIECE;
    assert_eq!(c.decode_op(&big, &mut out).unwrap(), Decoded::Done { consumed: last, outcome: Outcome::Op });
    // The next response starts whole again.
    assert_eq!(c.decode_op(&big, &mut out).unwrap(), part);
}

#[test]
fn the_server_answers_each_request_with_its_response() {
    let mut s = TcpServer::default();
    let mut out = Vec::new();
    let hello = Sizes { request: 3, response: 2 }.hello();
    let served = s.serve(&hello[..5], &mut out);
    assert_eq!((served.consumed, served.requests), (0, 0));
    let input = [&hello[..], b"abcdefgh"].concat();
    let served = s.serve(&input, &mut out);
    assert_eq!((served.consumed, served.requests, served.close), (HELLO_LEN + 8, 2, false));
    assert_eq!(out, b"xxxx");
    assert_eq!(served.awaiting, crate::proto::Awaiting::Body, "2 of the third request's 3 bytes");
    let served = s.serve(b"i", &mut out);
    assert_eq!((served.consumed, served.requests), (1, 1));
    assert_eq!(out.len(), 6);
}

#[test]
fn a_set_up_out_of_bounds_closes() {
    let mut out = Vec::new();
    let served = TcpServer::default().serve(&[0; 8], &mut out);
    assert!(served.close && out.is_empty());
    let served = TcpServer::default().serve(b"GET / HTTP/1.1\r\n\r\n", &mut out);
    assert!(served.close, "an HTTP request is sizes past 16 MiB");
}

#[test]
fn answers_for_pipelined_requests_go_a_batch_at_a_time() {
    let mut s = TcpServer::default();
    let mut out = Vec::new();
    let hello = Sizes { request: 1, response: 16 << 20 }.hello();
    let input = [&hello[..], &[b'r'; 10]].concat();
    let served = s.serve(&input, &mut out);
    assert_eq!((served.consumed, served.requests), (HELLO_LEN + 4, 4), "64 MiB of answers, the rest later");
    assert_eq!(out.len(), 64 << 20);
}
