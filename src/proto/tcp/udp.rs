//! `serve udp`: the floor over UDP (netperf's `UDP_RR`). A client's first datagram is its
//! set-up (the floor's 8 bytes: the two sizes), answered by its echo; after it, every datagram
//! from that client is a request, answered by one datagram of the response's size (`x` bytes).
//! There is no connection: a client is its address and port, kept while this core holds fewer
//! than [`MAX_PEERS`] (the oldest forgotten first). A request from an address it does not
//! know — a set-up lost, or forgotten — is dropped, unanswered: the client's timeout says so,
//! and its next socket sets up again.

use super::wire::{HELLO_LEN, Sizes};
use crate::codec::{Answered, BoxedDatagramServer, DatagramServer};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

/// The largest UDP payload over IPv4 (65,535 less the IP and UDP headers): a request or
/// response of `udp://` is at most this.
pub const MAX_DATAGRAM: u32 = 65_507;
/// Clients one core keeps the sizes of.
pub const MAX_PEERS: usize = 1 << 16;

#[derive(Debug, Clone, Default)]
pub struct UdpServer {
    peers: HashMap<SocketAddr, Sizes>,
    /// The peers in the order they set up: the oldest is forgotten first.
    order: VecDeque<SocketAddr>,
}

impl UdpServer {
    fn set_up(&mut self, from: SocketAddr, sizes: Sizes) {
        if self.peers.insert(from, sizes).is_none() {
            self.order.push_back(from);
        }
        while self.order.len() > MAX_PEERS {
            if let Some(old) = self.order.pop_front() {
                self.peers.remove(&old);
            }
        }
    }
}

impl DatagramServer for UdpServer {
    fn answer(&mut self, from: SocketAddr, request: &[u8], out: &mut Vec<u8>) -> Answered {
        let hello = <&[u8; HELLO_LEN]>::try_from(request).ok().and_then(Sizes::of_hello);
        let fits = |s: Sizes| s.request <= MAX_DATAGRAM && s.response <= MAX_DATAGRAM;
        match (self.peers.get(&from).copied(), hello) {
            // A set-up: from a client not known, or known (a new socket on the port of one gone):
            // taken, and echoed. (A request never reads as one: the client refuses a body that
            // does, and its `x` bytes say sizes past the largest.)
            (_, Some(sizes)) if fits(sizes) => {
                self.set_up(from, sizes);
                out.extend_from_slice(request);
                Answered::SetUp
            }
            (Some(sizes), _) => {
                out.resize(out.len() + sizes.response as usize, b'x');
                Answered::Request
            }
            (None, _) => Answered::Dropped,
        }
    }

    fn boxed_clone(&self) -> BoxedDatagramServer {
        Box::new(UdpServer::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_set_up_is_echoed_then_each_request_answered_at_its_size() {
        let mut s = UdpServer::default();
        let hello = Sizes { request: 41, response: 50 }.hello();
        let mut out = Vec::new();
        assert_eq!(s.answer(from(1), &[b'x'; 41], &mut out), Answered::Dropped, "not set up");
        assert!(out.is_empty());
        assert_eq!(s.answer(from(1), &hello, &mut out), Answered::SetUp);
        assert_eq!(out, hello);
        out.clear();
        assert_eq!(s.answer(from(1), &[b'x'; 41], &mut out), Answered::Request);
        assert_eq!(out, vec![b'x'; 50]);
        // Another client is another set-up.
        out.clear();
        assert_eq!(s.answer(from(2), &[b'x'; 41], &mut out), Answered::Dropped);
        // A set-up past a datagram's size is no set-up.
        let big = Sizes { request: 41, response: MAX_DATAGRAM + 1 }.hello();
        assert_eq!(s.answer(from(2), &big, &mut out), Answered::Dropped);
        // A new socket on a port the server knows sets up again; 8 bytes of `x` are a request.
        let eight = Sizes { request: 8, response: 3 }.hello();
        assert_eq!(s.answer(from(3), &eight, &mut out), Answered::SetUp);
        out.clear();
        assert_eq!(s.answer(from(3), b"xxxxxxxx", &mut out), Answered::Request);
        assert_eq!(out, b"xxx");
        out.clear();
        assert_eq!(s.answer(from(3), &hello, &mut out), Answered::SetUp, "set up again");
        out.clear();
        assert_eq!(s.answer(from(3), &[b'x'; 41], &mut out), Answered::Request);
        assert_eq!(out.len(), 50);
    }

    #[test]
    fn the_oldest_clients_are_forgotten_past_the_bound() {
        let mut s = UdpServer::default();
        let hello = Sizes { request: 1, response: 1 }.hello();
        let addr = |n: usize| SocketAddr::from(([127, 0, (n >> 16) as u8, 1], n as u16));
        let mut out = Vec::new();
        for n in 0..=MAX_PEERS {
            assert_eq!(s.answer(addr(n), &hello, &mut out), Answered::SetUp);
        }
        assert_eq!((s.peers.len(), s.order.len()), (MAX_PEERS, MAX_PEERS));
        assert_eq!(s.answer(addr(0), b"r", &mut out), Answered::Dropped, "the oldest, forgotten");
        assert_eq!(s.answer(addr(MAX_PEERS), b"r", &mut out), Answered::Request);
    }
}
