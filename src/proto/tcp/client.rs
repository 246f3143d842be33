//! The floor's client: each operation writes its request (the payload, exactly) and reads a
//! response of the size the set-up announced. A response is taken in pieces of at most
//! [`PIECE`] bytes, so a large one is never buffered whole; the pieces fall where the sizes
//! say, not where the reads did (decoding is the same however the bytes arrive).

use super::Error;
use super::wire::{HELLO_LEN, Sizes};
use crate::proto::{ClientCodec, Decoded, Outcome};

/// The most of a response taken at once (its pieces are [`Outcome::OpPart`] until its last).
pub const PIECE: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct TcpClient {
    request: Vec<u8>,
    response: u32,
    /// Bytes of the current response still to come.
    left: usize,
    /// Over UDP (`udp://`): the set-up is its own datagram, answered by the server's echo of
    /// it before the first request goes (so no request shares its datagram).
    datagrams: bool,
    /// It sends the set-up (`--no-setup`: not, for a server told the sizes otherwise).
    setup: bool,
}

impl TcpClient {
    /// A client sending `request` and awaiting `response` bytes for each (at least 1).
    pub fn new(request: Vec<u8>, response: u32) -> TcpClient {
        TcpClient { request, response, left: response as usize, datagrams: false, setup: true }
    }

    /// The same without the set-up: the server knows the sizes (neper's and netperf's servers
    /// are given them on their command lines).
    pub fn without_setup(self) -> TcpClient {
        TcpClient { setup: false, ..self }
    }

    /// The same over UDP: each request one datagram, each response one.
    pub fn datagrams(request: Vec<u8>, response: u32) -> TcpClient {
        TcpClient { datagrams: true, ..TcpClient::new(request, response) }
    }

    fn sizes(&self) -> Sizes {
        Sizes { request: self.request.len() as u32, response: self.response }
    }
}

impl ClientCodec for TcpClient {
    type Error = Error;

    fn handshake(&mut self, out: &mut Vec<u8>) {
        if self.setup {
            out.extend_from_slice(&self.sizes().hello());
        }
    }

    /// Over TCP the set-up needs no answer: done at once. Over UDP it is done when its echo
    /// has come back (the server took it: a datagram may be lost).
    fn decode_handshake(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if !self.datagrams {
            return Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control });
        }
        match input.len() {
            n if n < HELLO_LEN => Ok(Decoded::Partial),
            _ if input[..HELLO_LEN] == self.sizes().hello() => {
                Ok(Decoded::Done { consumed: HELLO_LEN, outcome: Outcome::Control })
            }
            _ => Err(Error::SetUpRefused),
        }
    }

    fn encode_op(&mut self, _entry: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.request);
    }

    /// The floor has one request, so `--requests` is refused for it (validate).
    fn add_entries(&mut self, _other: Self) {}

    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let piece = self.left.min(PIECE);
        if input.len() < piece {
            return Ok(Decoded::Partial);
        }
        self.left -= piece;
        if self.left > 0 {
            return Ok(Decoded::Done { consumed: piece, outcome: Outcome::OpPart });
        }
        self.left = self.response as usize;
        Ok(Decoded::Done { consumed: piece, outcome: Outcome::Op })
    }
}
