//! A connection's receive buffer ([`RecvBuf`]): the bytes read and not yet decoded, grown for a
//! large message and given back when idle. Below everything that reads from a socket: the
//! engines' connection machines and the TLS layer (ciphertext in, plaintext out) both keep one.

/// Initial per-connection receive buffer: small, since many connections must fit in little
/// memory; it grows for larger messages.
pub const RECV_BUF_INITIAL: usize = 4 * 1024;
/// A single message (response head plus body, WebSocket frame) may grow the buffer to this.
pub const RECV_BUF_MAX: usize = 80 * 1024 * 1024;

/// A connection's receive buffer: `buf[start..end]` holds bytes read but not yet decoded. It
/// is allocated at its first use, grows (doubling) for a large message up to its limit, and
/// shrinks back to its initial size once emptied, so one large message does not pin memory for
/// a connection's life; an idle connection gives it back whole ([`RecvBuf::release`]).
#[derive(Debug)]
pub struct RecvBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    initial: usize,
    max: usize,
}

impl RecvBuf {
    pub fn new() -> Self {
        Self::bounded(RECV_BUF_INITIAL, RECV_BUF_MAX)
    }
    pub fn bounded(initial: usize, max: usize) -> Self {
        RecvBuf { buf: Vec::new(), start: 0, end: 0, initial: initial.max(1), max: max.max(initial) }
    }
    /// Undecoded bytes.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.shrink();
        }
    }
    fn shrink(&mut self) {
        if self.buf.len() > self.initial {
            self.buf = vec![0; self.initial];
        }
    }
    /// Give the memory back if nothing is held (a connection going idle); the next `spare`
    /// allocates again.
    pub fn release(&mut self) {
        if self.start == self.end {
            self.buf = Vec::new();
            self.start = 0;
            self.end = 0;
        }
    }
    /// Free space to read into: compacts, or grows when full; `None` past the limit.
    pub fn spare(&mut self) -> Option<&mut [u8]> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.is_empty() {
                self.buf = vec![0; self.initial];
            } else if self.buf.len() < self.max {
                self.buf.resize((self.buf.len() * 2).min(self.max), 0);
            } else {
                return None;
            }
        }
        Some(&mut self.buf[self.end..])
    }
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }
    /// Copy `data` in (growing as needed); returns how much fitted under the limit.
    pub fn append(&mut self, data: &[u8]) -> usize {
        let mut done = 0;
        while done < data.len() {
            let Some(room) = self.spare() else { break };
            let n = room.len().min(data.len() - done);
            room[..n].copy_from_slice(&data[done..done + n]);
            self.end += n;
            done += n;
        }
        done
    }
    /// Forget everything (the connection ended); returns how many bytes were left undecoded.
    pub fn reset(&mut self) -> usize {
        let left = self.end - self.start;
        self.start = 0;
        self.end = 0;
        self.shrink();
        left
    }
    /// Bytes held now (the buffer's size, not its contents).
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
}

impl Default for RecvBuf {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recv_buf_compacts_then_grows() {
        let mut b = RecvBuf::new();
        let n = b.spare().unwrap().len();
        b.filled(n);
        b.consume(10);
        assert_eq!(b.spare().unwrap().len(), 10);
        b.filled(10);
        assert_eq!(b.spare().unwrap().len(), RECV_BUF_INITIAL);
        assert_eq!(b.data().len(), RECV_BUF_INITIAL);
        assert_eq!(b.reset(), RECV_BUF_INITIAL);
        assert!(b.data().is_empty());
    }

    #[test]
    fn recv_buf_shrinks_back_after_a_large_message_and_stops_at_its_limit() {
        let mut b = RecvBuf::bounded(4, 16);
        for _ in 0..2 {
            let n = b.spare().unwrap().len();
            b.filled(n);
        }
        assert_eq!(b.capacity(), 8);
        let n = b.spare().unwrap().len();
        b.filled(n);
        assert_eq!(b.capacity(), 16);
        assert!(b.spare().is_none(), "a message over the limit");
        b.consume(16);
        assert_eq!(b.capacity(), 4);
    }
}
