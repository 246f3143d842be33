//! The floor's fuzz targets (each checks `crate::props` on arbitrary bytes) and the valid
//! streams `tests/decoders_random.rs` mutates for them. The registry lists them.

use super::wire::Sizes;
use super::{TcpClient, TcpServer};
use crate::props::{
    Target, client_splits_agree, no_answer, server_input, server_splits_agree, split_input, with_prefix,
};

pub const TARGETS: &[(&str, Target)] =
    &[("client_tcp", client_tcp), ("server_tcp", server_tcp), ("server_udp", server_udp)];

/// A client of 3-byte requests awaiting 70,000-byte responses (past one piece).
fn client() -> TcpClient {
    TcpClient::new(b"req".to_vec(), 70_000)
}

fn client_tcp(data: &[u8]) {
    let (seed, stream) = split_input(data);
    client_splits_agree(&client(), &no_answer, &stream, seed);
}

/// The set-up of 5-byte requests and 3-byte responses.
fn hello() -> [u8; 8] {
    Sizes { request: 5, response: 3 }.hello()
}

/// How many times its request a response the server target is asked for may be: the property
/// keeps every answer whole to compare the runs, so 3 KB answers to each of 790,000 1-byte
/// requests would hold it gigabytes (its findings, out-of-memory twice). The engine writes
/// answers as they come (1 MiB per look at the input): only the harness needs this bound.
const MOST_FUZZ_AMPLIFICATION: u32 = 16;

fn server_tcp(data: &[u8]) {
    let (arrivals, stream, lead) = server_input(data);
    let mut stream = with_prefix(&hello(), &stream, lead);
    if stream.len() >= 8 {
        let request = u32::from_be_bytes([stream[0], stream[1], stream[2], stream[3]]).max(1);
        let response = u32::from_be_bytes([stream[4], stream[5], stream[6], stream[7]]);
        let most = request.saturating_mul(MOST_FUZZ_AMPLIFICATION);
        if response > most {
            stream[4..8].copy_from_slice(&(response % most + 1).to_be_bytes());
        }
    }
    server_splits_agree(&TcpServer::default(), &stream, &arrivals);
}

/// `serve udp`'s answerer given datagrams from a few peers: the input cut at `0xff` bytes,
/// each piece's first byte the sender's port, the rest the datagram. An answer is never past a
/// datagram's size; a request is answered at the size its sender set up, and nothing else is
/// answered but a set-up, by its echo.
fn server_udp(data: &[u8]) {
    use crate::codec::{Answered, DatagramServer};
    let mut server = super::UdpServer::default();
    let mut set_up = std::collections::HashMap::new();
    let mut out = Vec::new();
    for piece in data.split(|&b| b == 0xff).filter(|p| !p.is_empty()) {
        let from = std::net::SocketAddr::from(([127, 0, 0, 1], u16::from(piece[0])));
        out.clear();
        match server.answer(from, &piece[1..], &mut out) {
            Answered::SetUp => {
                assert_eq!(out, &piece[1..], "a set-up is echoed");
                let sizes = <&[u8; 8]>::try_from(&piece[1..]).ok().and_then(Sizes::of_hello);
                set_up.insert(from, sizes.expect("a set-up is a valid hello"));
            }
            Answered::Request => {
                let sizes = set_up.get(&from).expect("a request from a client set up");
                assert_eq!(out.len(), sizes.response as usize);
            }
            Answered::Dropped => assert!(out.is_empty()),
        }
        assert!(out.len() <= super::udp::MAX_DATAGRAM as usize);
    }
}

/// Valid streams for the target `name` (what a well-behaved peer sends), to be mutated.
pub fn samples(name: &str) -> Vec<Vec<u8>> {
    match name {
        "client_tcp" => vec![vec![b'x'; 140_000], vec![b'x'; 70_001]],
        "server_tcp" => vec![[&hello()[..], b"aaaaabbbbbccccc"].concat(), hello().to_vec()],
        "server_udp" => vec![[&[1u8][..], &hello()[..], &[0xff, 1], b"aaaaa", &[0xff, 2], b"bbbbb"].concat()],
        _ => vec![],
    }
}
