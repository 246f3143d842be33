//! The operation ledger of one connection: what is in flight, which bytes each operation has
//! written and read, and how each one ends. An operation is found by the id its codec gave it
//! ([`crate::proto::ClientCodec::op_id`]: an HTTP/2 stream, a Socket.IO ack id), so answers may
//! complete them in any order; a codec that answers in order gives none, and its answers
//! complete the oldest ([`Ledger::complete`] with `None`).
//!
//! The bytes a write moved are credited to the operation whose they are: the send queue
//! keeps each run of an operation's bytes tagged with its place in the ledger
//! ([`Ledger::written`]), so an operation whose bytes go out in pieces between others' (an
//! HTTP/2 body sent as the server grants room) is credited with each piece, and bytes of one
//! answered before they all went (a server may answer early) go to no other.

use crate::clock::Instant;
use crate::stats::Traffic;
use std::collections::VecDeque;

/// An operation sent and not yet answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// The codec's name for it (`None`: answered in order).
    pub id: Option<u64>,
    /// When the workload meant it to go (latency is measured from here)…
    pub intended: Instant,
    /// …and when it went (the uncorrected latency of paced workloads, and where its answer's
    /// timeout counts from).
    pub sent: Instant,
    pub traffic: Traffic,
    /// Its kind of `--requests` entry (0 without).
    pub kind: u16,
    /// Its encoded length (on the wire: with TLS, its record), and how much of it the socket
    /// has taken so far.
    pub tx_len: u64,
    pub tx_written: u64,
    /// Its plaintext, and its answer's so far, with TLS (else 0).
    pub tx_plain: u64,
    pub rx_plain: u64,
    /// Bytes of its answer received so far (parts of it: WebSocket fragments, HTTP/2 frames).
    pub rx: u64,
    /// When its last byte was written, and when the first byte of its answer arrived.
    pub written: Option<Instant>,
    pub first_byte: Option<Instant>,
    /// More of its bytes are to come, as the peer makes room
    /// ([`crate::proto::ClientCodec::op_more`]): `tx_len` grows with each piece queued, and
    /// it is written whole only once this is `false`.
    pub open: bool,
    /// Its place in the order operations were queued (the ledger's own).
    seq: u64,
}

impl InFlight {
    #[inline]
    pub fn new(id: Option<u64>, intended: Instant, sent: Instant, traffic: Traffic, tx_len: u64) -> InFlight {
        InFlight {
            id,
            intended,
            sent,
            traffic,
            kind: 0,
            tx_len,
            tx_written: 0,
            tx_plain: 0,
            rx_plain: 0,
            rx: 0,
            written: None,
            first_byte: None,
            open: false,
            seq: 0,
        }
    }

    /// Its place in the ledger, which the send queue tags its bytes with.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// The operations of one connection in flight, in the order they were queued.
#[derive(Debug, Default)]
pub struct Ledger {
    ops: VecDeque<InFlight>,
    next_seq: u64,
    /// Measured operations in flight.
    measured: u64,
}

impl Ledger {
    #[inline]
    pub fn with_capacity(depth: usize) -> Ledger {
        Ledger { ops: VecDeque::with_capacity(depth), ..Ledger::default() }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Measured operations in flight.
    #[inline]
    pub fn measured(&self) -> u64 {
        self.measured
    }

    /// The oldest operation in flight.
    #[inline]
    pub fn oldest(&self) -> Option<&InFlight> {
        self.ops.front()
    }

    /// The place the next operation pushed will have (its bytes are tagged with it).
    #[inline]
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// A new operation, in the place [`next_seq`](Self::next_seq) said.
    #[inline]
    pub fn push(&mut self, mut op: InFlight) {
        op.seq = self.next_seq;
        self.next_seq += 1;
        if op.traffic == Traffic::Op {
            self.measured += 1;
        }
        self.ops.push_back(op);
    }

    /// Where operation `id` is (`None`: the oldest).
    #[inline]
    fn position(&self, id: Option<u64>) -> Option<usize> {
        match id {
            None => (!self.ops.is_empty()).then_some(0),
            Some(id) => self.ops.iter().position(|op| op.id == Some(id)),
        }
    }

    /// Where the operation queued as `seq` is, if still in flight: first where it would be
    /// with no answer out of order.
    #[inline]
    fn find(&self, seq: u64) -> Option<usize> {
        let guess = usize::try_from(seq.checked_sub(self.ops.front()?.seq)?).ok()?;
        match self.ops.get(guess) {
            Some(op) if op.seq == seq => Some(guess),
            _ => self.ops.binary_search_by_key(&seq, |op| op.seq).ok(),
        }
    }

    /// The operation `id` (`None`: the oldest), to add a part of its answer to.
    #[inline]
    pub fn get_mut(&mut self, id: Option<u64>) -> Option<&mut InFlight> {
        let at = self.position(id)?;
        self.ops.get_mut(at)
    }

    /// The operation `id` (`None`: the oldest) is answered: out of the ledger.
    #[inline]
    pub fn complete(&mut self, id: Option<u64>) -> Option<InFlight> {
        let op = match self.position(id)? {
            0 => self.ops.pop_front()?,
            at => self.ops.remove(at)?,
        };
        if op.traffic == Traffic::Op {
            self.measured -= 1;
        }
        Some(op)
    }

    /// `n` bytes of the operation queued as `seq` were written: counted, and the operation
    /// stamped `now` once written whole. Bytes of one already answered go to no other.
    #[inline]
    pub fn written(&mut self, seq: u64, n: u64, now: Instant) {
        if let Some(at) = self.find(seq) {
            let op = &mut self.ops[at];
            op.tx_written += n;
            if op.tx_written >= op.tx_len && !op.open {
                op.written = Some(now);
            }
        }
    }

    /// The connection ended: every operation still in flight, to fail.
    #[inline]
    pub fn drain(&mut self) -> impl Iterator<Item = InFlight> + '_ {
        self.measured = 0;
        self.ops.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[inline]
    fn op(id: Option<u64>, len: u64, at: Instant) -> InFlight {
        InFlight::new(id, at, at, Traffic::Op, len)
    }

    #[test]
    fn in_order_answers_complete_the_oldest() {
        let t = Instant::now();
        let mut l = Ledger::default();
        l.push(op(None, 10, t));
        l.push(op(None, 20, t + Duration::from_millis(1)));
        l.written(0, 10, t);
        l.written(1, 20, t);
        assert_eq!(l.complete(None).map(|o| (o.tx_len, o.tx_written)), Some((10, 10)));
        assert_eq!(l.complete(None).map(|o| (o.tx_len, o.tx_written)), Some((20, 20)));
        assert_eq!(l.complete(None), None);
        assert_eq!(l.measured(), 0);
    }

    /// Answers by id complete their own operation, whatever their order.
    #[test]
    fn answers_by_id_complete_their_own_in_any_order() {
        let t = Instant::now();
        let mut l = Ledger::default();
        for id in [1, 3, 5] {
            l.push(op(Some(id), 10, t));
        }
        assert_eq!(l.measured(), 3);
        for seq in 0..3 {
            l.written(seq, 10, t);
        }
        assert_eq!(l.complete(Some(3)).map(|o| o.id), Some(Some(3)));
        assert_eq!(l.complete(Some(7)), None, "no such operation");
        l.get_mut(Some(5)).unwrap().rx += 4;
        assert_eq!(l.complete(Some(5)).map(|o| o.rx), Some(4));
        assert_eq!(l.complete(Some(1)).map(|o| o.id), Some(Some(1)));
        assert!(l.is_empty());
        assert_eq!(l.measured(), 0);
    }

    /// Written bytes go to the operation they are tagged with, each stamped once whole; an
    /// open one (its body still going out in pieces) only once its last piece went; bytes of
    /// one answered early go to no other.
    #[test]
    fn written_bytes_go_to_their_own_operation_piece_by_piece() {
        let t = Instant::now();
        let later = t + Duration::from_millis(5);
        let mut l = Ledger::default();
        for id in [1, 2, 3] {
            l.push(op(Some(id), 100, t));
        }
        l.get_mut(Some(2)).unwrap().open = true;
        l.written(0, 100, t);
        l.written(1, 100, t);
        assert_eq!(l.get_mut(Some(1)).unwrap().written, Some(t));
        assert_eq!(l.get_mut(Some(2)).unwrap().written, None, "2 has more to come");
        // 3 answered before a byte of it went: its bytes are no one's.
        assert_eq!(l.complete(Some(3)).map(|o| o.tx_written), Some(0));
        l.written(2, 100, later);
        // 2's last piece: 50 more bytes, queued and written.
        let two = l.get_mut(Some(2)).unwrap();
        (two.tx_len, two.open) = (150, false);
        l.written(1, 50, later);
        assert_eq!(l.get_mut(Some(2)).unwrap().written, Some(later));
        assert_eq!(l.complete(Some(2)).map(|o| o.tx_written), Some(150));
        assert_eq!(l.drain().count(), 1);
    }
}
