//! The bytes a connection has to write, and the traffic class of each run of them (and the
//! operation whose bytes they are, by its place in the ledger): what a write took is counted
//! under the classes it carried, in order ([`SendQueue::wrote`]).

use crate::stats::Traffic;
use std::collections::VecDeque;

/// Bytes to write (on the wire: records, with TLS), what of them went, and the class of each
/// run of them.
#[derive(Debug, Default)]
pub struct SendQueue {
    bytes: Vec<u8>,
    sent: usize,
    classes: VecDeque<Run>,
}

/// A run of bytes of one class (and one operation's, `op`: its place in the ledger).
#[derive(Debug, Clone, Copy)]
struct Run {
    traffic: Traffic,
    op: Option<u64>,
    len: usize,
}

impl SendQueue {
    /// What is left to write.
    #[inline]
    pub fn pending(&self) -> &[u8] {
        &self.bytes[self.sent..]
    }

    /// Something is left to write.
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.sent < self.bytes.len()
    }

    /// The buffer to append to: bytes appended from [`len`](Self::len) on are then tagged
    /// with [`tag`](Self::tag).
    #[inline]
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// `bytes[from..]` is of class `traffic`, and operation `op`'s when it names one (its
    /// place in the ledger); returns its length.
    #[inline]
    pub fn tag(&mut self, from: usize, traffic: Traffic, op: Option<u64>) -> u64 {
        let len = self.bytes.len() - from;
        match self.classes.back_mut() {
            Some(last) if last.traffic == traffic && last.op == op => last.len += len,
            _ if len > 0 => self.classes.push_back(Run { traffic, op, len }),
            _ => {}
        }
        len as u64
    }

    /// Forget everything (written, or the connection ended).
    #[inline]
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.sent = 0;
        self.classes.clear();
    }

    /// Give the memory back (an idle connection), if nothing is left to write.
    #[inline]
    pub fn release(&mut self) {
        if !self.has_pending() {
            self.bytes = Vec::new();
            self.classes = VecDeque::new();
        }
    }

    /// `n` bytes went: `each(class, operation, bytes)` for every run they carried, in order;
    /// bytes past the runs (none, unless a bug) as `control`. The queue empties once all went.
    #[inline]
    pub fn wrote(&mut self, n: usize, mut each: impl FnMut(Traffic, Option<u64>, u64)) {
        let mut left = n;
        while left > 0
            && let Some(run) = self.classes.front_mut()
        {
            let take = left.min(run.len);
            let (traffic, op) = (run.traffic, run.op);
            run.len -= take;
            left -= take;
            if run.len == 0 {
                self.classes.pop_front();
            }
            each(traffic, op, take as u64);
        }
        if left > 0 {
            each(Traffic::Control, None, left as u64);
        }
        self.sent += n;
        if self.sent >= self.bytes.len() {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_counted_under_the_classes_it_carried() {
        let mut q = SendQueue::default();
        q.buf().extend_from_slice(b"hello");
        q.tag(0, Traffic::Handshake, None);
        for op in [0, 1] {
            let from = q.len();
            q.buf().extend_from_slice(b"GET ");
            q.tag(from, Traffic::Op, Some(op));
        }
        let mut seen = Vec::new();
        q.wrote(7, |t, op, n| seen.push((t, op, n)));
        assert_eq!(seen, [(Traffic::Handshake, None, 5), (Traffic::Op, Some(0), 2)]);
        assert_eq!(q.pending(), b"T GET ");
        seen.clear();
        q.wrote(6, |t, op, n| seen.push((t, op, n)));
        assert_eq!(seen, [(Traffic::Op, Some(0), 2), (Traffic::Op, Some(1), 4)]);
        assert!(q.is_empty() && !q.has_pending());
    }
}
