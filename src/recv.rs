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
/// once emptied shrinks back to its initial size if it grew past [`RECV_BUF_INITIAL`], so one
/// large message does not pin memory for a connection's life; an idle connection gives it back
/// whole ([`RecvBuf::release`]). A buffer that starts smaller (connections that mostly wait)
/// keeps what it grew to within that size while it is busy: shrunk after every read, a batch of
/// pipelined answers (an HTTP/2 connection's ten, 700 octets from nginx) cost an allocation,
/// a copy and a zeroing each time it came.
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
        if self.buf.len() > self.initial.max(RECV_BUF_INITIAL) {
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
        let max = 4 * RECV_BUF_INITIAL;
        let mut b = RecvBuf::bounded(512, max);
        let mut sizes = Vec::new();
        while let Some(room) = b.spare() {
            let n = room.len();
            b.filled(n);
            sizes.push(b.capacity());
        }
        assert_eq!(sizes, [512, 1024, 2048, 4096, 8192, max], "doubling up to the limit");
        assert!(b.spare().is_none(), "a message over the limit");
        b.consume(max);
        assert_eq!(b.capacity(), 512, "past the default size: back to its own");
    }

    #[test]
    fn recv_buf_keeps_what_it_grew_to_within_the_default_size() {
        let mut b = RecvBuf::bounded(512, RECV_BUF_MAX);
        for _ in 0..3 {
            b.append(&[7; 700]);
            assert_eq!(b.data(), [7; 700]);
            b.consume(700);
            assert_eq!(b.capacity(), 1024, "a busy connection's batch: no allocation each time");
        }
        b.release();
        assert_eq!(b.capacity(), 0, "idle: all of it back");
    }
}
