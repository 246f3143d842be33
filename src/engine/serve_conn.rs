//! One built-in server connection as a state machine, shared by the engines that serve: it
//! takes the bytes a read returned, lets the codec answer them, keeps the heartbeat schedule
//! (nsqd's ticker) and the connection's deadlines, and says what to write and whether to
//! close. The engine reads until [`ServerConn::deadline`], writes `to_write()` within the write
//! timeout, and reports back.
//!
//! The deadlines keep a hostile or broken client from holding a connection for ever: a request
//! head (or handshake) must arrive whole within the head timeout of its first byte, however
//! slowly it trickles (slowloris); between requests, and between the reads of a body, the
//! client may stay silent for the idle timeout; a client that stops reading our answers gets
//! the write timeout.

use crate::clock::Instant;
use crate::codec::{Awaiting, Hooks, ServerCodec};
use crate::recv::RecvBuf;
use crate::stats::ServerTally;
use std::time::Duration;

/// What a built-in server allows its clients, and how long it thinks; every one has a flag
/// on `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A request head or handshake must be whole this long after its first byte.
    pub head_timeout: Duration,
    /// Silence allowed between requests, and between the reads of a body.
    pub idle_timeout: Duration,
    /// An answer must be taken by the client within this long.
    pub write_timeout: Duration,
    /// Connections served at once. `serve --max-conns` gives the server's; each of its C cores
    /// gets ceil(N / C) of them (the kernel spreads connections over the cores by hash, so one
    /// core may refuse while another has room); more are refused (an HTTP 503 where the
    /// protocol has one) and closed.
    pub max_conns: usize,
    /// Think time: the answers to a read's requests are held this long from the read that
    /// completed them (a pipelined batch shares one delay); zero answers at once.
    pub delay: Duration,
}

/// What a built-in server holds at once unless told (`serve --max-conns`), and what the file
/// limit is raised for: a load of tens of thousands of connections — 18,000 WebSocket clients
/// on one core — is served, not refused with 503s that retry until their handshakes time out
/// (16,384 before: 1,616 of 18,000 were refused). What it sizes up front is small: the
/// `uring` server's table of direct descriptors and its free list (8 and 4 octets a slot, as
/// many slots as the file limit allows up to twice a core's share: about 0.8 MiB on one core,
/// where 16,384 took 0.2); a connection's slot and buffers are taken when it comes.
pub const DEFAULT_MAX_CONNS: usize = 65_536;

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(10),
            max_conns: DEFAULT_MAX_CONNS,
            delay: Duration::ZERO,
        }
    }
}

/// A server connection's receive buffer starts this small (idle connections cost little) and
/// grows for large messages, shrinking back once they are consumed.
pub const SERVER_RECV_INITIAL: usize = 4 * 1024;
/// Largest request or message a server buffers whole (the codecs' own limits are lower).
const SERVER_RECV_MAX: usize = 80 * 1024 * 1024;
/// Most input answered in one go from what arrived while the connection was busy. A client
/// that pipelines without reading fills the receive buffer (up to SERVER_RECV_MAX) while its
/// answers wait; answered all at once, 16 MiB of `GET`s held the core for ~0.5 s and every
/// other connection with it. In batches, the next is answered once the last is written.
pub const SERVE_AT_ONCE: usize = 64 * 1024;
/// An answer buffer larger than this is given back once written.
const OUT_KEEP: usize = 64 * 1024;

pub struct ServerConn<S> {
    codec: S,
    limits: ServerLimits,
    recv: RecvBuf,
    out: Vec<u8>,
    interval: Option<Duration>,
    next_beat: Option<Instant>,
    /// When the head now arriving started (`None`: no head pending).
    head_since: Option<Instant>,
    /// The last byte received or answer written, and the last byte received.
    last_activity: Instant,
    last_read: Instant,
    close: bool,
    timed_out: bool,
    awaiting: Awaiting,
    /// Answers are held until then (`--delay`).
    hold: Option<Instant>,
    /// How much of the pending input the codec has looked at without using it: its reader
    /// keeps offsets into those bytes, so the input it is given next is never shorter.
    seen: usize,
}

impl<S: ServerCodec> ServerConn<S> {
    pub fn new(codec: S, limits: ServerLimits, now: Instant) -> Self {
        let interval = codec.heartbeat_interval();
        ServerConn {
            codec,
            limits,
            recv: RecvBuf::bounded(SERVER_RECV_INITIAL, SERVER_RECV_MAX),
            out: Vec::new(),
            interval,
            next_beat: interval.map(|i| now + i),
            head_since: None,
            last_activity: now,
            last_read: now,
            close: false,
            timed_out: false,
            awaiting: Awaiting::Request,
            hold: None,
            seen: 0,
        }
    }

    /// Where to read into; `None` when a request outgrew the receive limit (close).
    pub fn read_buf(&mut self) -> Option<&mut [u8]> {
        self.recv.spare()
    }

    /// The read should give up at this instant: a heartbeat falls due, or the client took too
    /// long (see [`ServerLimits`]).
    pub fn deadline(&self) -> Instant {
        self.next_beat.map_or(self.timeout(), |beat| beat.min(self.timeout()))
    }

    /// When the client will have been too slow: its head unfinished, silent too long between
    /// requests, or silent past the protocol's own limit (nsqd's two heartbeat intervals).
    fn timeout(&self) -> Instant {
        let limit = match self.head_since {
            Some(since) => since + self.limits.head_timeout,
            None => self.last_activity + self.limits.idle_timeout,
        };
        self.codec.silence_limit().map_or(limit, |silence| limit.min(self.last_read + silence))
    }

    /// How long a write may take.
    pub fn write_timeout(&self) -> Duration {
        self.limits.write_timeout
    }

    /// `n` bytes arrived in `read_buf()` (`n > 0`): answer every whole request.
    pub fn received(&mut self, n: usize, now: Instant, unix_secs: u64, tally: &mut ServerTally) {
        self.recv.filled(n);
        tally.rx += n as u64;
        self.serve_arrived(now, unix_secs, tally);
    }

    /// Bytes that came before the engine could answer them (its receive is always armed, and a
    /// write of earlier answers may still be reading `to_write()`): kept, answered by the next
    /// [`serve_arrived`](Self::serve_arrived). `false`: past the receive limit (close).
    pub fn arrived(&mut self, data: &[u8], tally: &mut ServerTally) -> bool {
        let n = self.recv.append(data);
        tally.rx += n as u64;
        n == data.len()
    }

    /// Bytes that arrived and are not answered yet (part of a request, or requests waiting
    /// for earlier answers to be written).
    pub fn unanswered(&self) -> usize {
        self.recv.data().len()
    }

    /// Bytes are waiting to be answered.
    pub fn has_arrived(&self) -> bool {
        !self.recv.data().is_empty()
    }

    /// A connection quiet this long gives its buffers back (see [`ServerConn::release_if_idle`]).
    pub const IDLE_RELEASE: Duration = Duration::from_secs(1);

    /// When [`release_if_idle`](Self::release_if_idle) would give buffers back, if the
    /// connection holds any.
    pub fn release_at(&self) -> Option<Instant> {
        (self.recv.capacity() > 0 || self.out.capacity() > 0)
            .then_some(self.last_activity + Self::IDLE_RELEASE)
    }

    /// Give the buffers back if the connection has been quiet a while with nothing pending.
    pub fn release_if_idle(&mut self, now: Instant) {
        if now.saturating_duration_since(self.last_activity) >= Self::IDLE_RELEASE && self.out.is_empty() {
            self.recv.release();
            self.out = Vec::new();
        }
    }

    /// Answer the whole requests that arrived, about [`SERVE_AT_ONCE`] bytes of them (beat
    /// first if one fell due before they came: a busy connection never waits long enough for
    /// the read deadline, but nsqd's ticker beats anyway). `true`: whole requests may be left;
    /// the engine serves them once this batch's answers are written, or in its next turn if
    /// there were none.
    ///
    /// The codec is shown a view of the input: [`SERVE_AT_ONCE`] bytes, never less than it
    /// has already looked at (its reader's saved offsets point into them), and, while a
    /// request larger than the view uses none of it, twice as much each time until that
    /// request is whole or the input ends. The codecs read incrementally, so the doubling
    /// costs a bounded number of looks per byte; and a large request ends its batch a little
    /// after itself, not after the whole pile behind it.
    pub fn serve_arrived(&mut self, now: Instant, unix_secs: u64, tally: &mut ServerTally) -> bool {
        self.before_serving(now, unix_secs);
        let data = self.recv.data();
        let mut view = data.len().min(SERVE_AT_ONCE.max(self.seen));
        let mut served = self.codec.serve(&data[..view], &mut self.out);
        while served.consumed == 0 && !served.close && !served.start_tls && view < data.len() {
            view = view.saturating_mul(2).min(data.len());
            served = self.codec.serve(&data[..view], &mut self.out);
        }
        let consumed = served.consumed.min(view);
        self.seen = view - consumed;
        let more = view < data.len() && consumed > 0 && !served.close && !served.start_tls;
        self.recv.consume(consumed);
        self.after_serving(served, now, tally);
        more && self.has_arrived()
    }

    /// Answer `data` where it lies (an engine's provided buffer), with nothing arrived before
    /// it waiting: only what no whole request used is copied into the connection's buffer, so
    /// a connection whose requests arrive whole never needs one. `false`: past the receive
    /// limit (close).
    pub fn serve_from(&mut self, data: &[u8], now: Instant, unix_secs: u64, tally: &mut ServerTally) -> bool {
        if self.has_arrived() {
            // Order matters: the earlier bytes first.
            let fits = self.arrived(data, tally);
            self.serve_arrived(now, unix_secs, tally);
            return fits;
        }
        tally.rx += data.len() as u64;
        self.before_serving(now, unix_secs);
        let served = self.codec.serve(data, &mut self.out);
        let rest = &data[served.consumed.min(data.len())..];
        self.seen = rest.len();
        self.after_serving(served, now, tally);
        self.recv.append(rest) == rest.len()
    }

    fn before_serving(&mut self, now: Instant, unix_secs: u64) {
        if self.next_beat.is_some_and(|due| now >= due) {
            self.beat();
        }
        self.last_activity = now;
        self.last_read = now;
        self.codec.set_unix_time(unix_secs);
    }

    fn after_serving(&mut self, served: crate::codec::Served, now: Instant, tally: &mut ServerTally) {
        tally.requests += served.requests;
        tally.messages += served.messages;
        if !self.limits.delay.is_zero() && served.requests + served.messages > 0 && self.hold.is_none() {
            self.hold = Some(now + self.limits.delay);
        }
        self.close |= served.close;
        self.awaiting = served.awaiting;
        self.head_since = match served.awaiting {
            Awaiting::Head => Some(self.head_since.unwrap_or(now)),
            Awaiting::Request | Awaiting::Body => None,
        };
        // IDENTIFY may change or disable the heartbeat; nsqd restarts its ticker then.
        let interval = self.codec.heartbeat_interval();
        if interval != self.interval {
            self.interval = interval;
            self.next_beat = interval.map(|i| now + i);
        }
    }

    /// The read deadline passed with nothing read: a heartbeat is due, or the client is too
    /// slow and the connection closes.
    pub fn deadline_passed(&mut self, now: Instant, tally: &mut ServerTally) {
        if self.next_beat.is_some_and(|due| now >= due) {
            self.beat();
        }
        if now >= self.timeout() && !self.close {
            self.close = true;
            self.timed_out = true;
            tally.timeouts += 1;
        }
    }

    fn beat(&mut self) {
        self.codec.heartbeat(&mut self.out);
        self.next_beat = self.next_beat.zip(self.interval).map(|(due, i)| due + i);
    }

    /// Answers are held until this instant (`--delay`): the engine waits before writing.
    pub fn hold(&self) -> Option<Instant> {
        self.hold.filter(|_| !self.out.is_empty())
    }

    /// Bytes to write now (all of them before the next read).
    pub fn to_write(&self) -> &[u8] {
        &self.out
    }

    /// `to_write()` went out whole.
    pub fn written(&mut self, now: Instant, tally: &mut ServerTally) {
        tally.tx += self.out.len() as u64;
        self.out.clear();
        self.hold = None;
        if self.out.capacity() > OUT_KEEP {
            self.out = Vec::new();
        }
        self.last_activity = now;
    }

    /// What the connection waits for after the last read.
    pub fn awaiting(&self) -> Awaiting {
        self.awaiting
    }

    /// Close once `to_write()` is written.
    pub fn closing(&self) -> bool {
        self.close
    }

    /// The connection was closed because the client was too slow.
    pub fn timed_out(&self) -> bool {
        self.timed_out
    }
}

/// What a refused client reads before its connection is closed (the codec's "busy" answer).
pub fn busy_answer<S: ServerCodec>(codec: &S) -> Vec<u8> {
    let mut out = Vec::new();
    codec.busy(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::http1::{Http1Server, RESPONSE_HELLO};
    use crate::proto::nsq::{NsqServer, SinkLimits};

    fn feed<S: ServerCodec>(c: &mut ServerConn<S>, data: &[u8], now: Instant, tally: &mut ServerTally) {
        c.read_buf().unwrap()[..data.len()].copy_from_slice(data);
        c.received(data.len(), now, 0, tally);
    }

    #[test]
    fn answers_requests_split_across_reads() {
        let now = Instant::now();
        let mut c = ServerConn::new(Http1Server::default(), ServerLimits::default(), now);
        let mut tally = ServerTally::default();
        assert_eq!(c.deadline(), now + Duration::from_secs(60), "idle: the idle timeout");
        feed(&mut c, b"GET / HTTP/1.1\r\n", now, &mut tally);
        assert!(c.to_write().is_empty());
        assert_eq!(c.deadline(), now + Duration::from_secs(10), "a head pending: the head timeout");
        feed(&mut c, b"\r\nGET / HTTP/1.1\r\n\r\n", now, &mut tally);
        assert_eq!(c.to_write(), [RESPONSE_HELLO, RESPONSE_HELLO].concat());
        c.written(now, &mut tally);
        assert_eq!((tally.requests, tally.tx, tally.rx), (2, 100, 36));
        assert!(!c.closing());
    }

    /// A client that pipelines a megabyte while its answers wait is answered a batch at a
    /// time, each after the last is written, not all at once (that held the core ~0.5 s).
    #[test]
    fn requests_that_piled_up_are_answered_a_batch_at_a_time() {
        let now = Instant::now();
        let mut c = ServerConn::new(Http1Server::default(), ServerLimits::default(), now);
        let mut tally = ServerTally::default();
        let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let piled = request.repeat((1 << 20) / request.len());
        assert!(c.arrived(&piled, &mut tally), "within the receive limit");
        let per_batch = SERVE_AT_ONCE / request.len();
        let mut batches = 0;
        while c.serve_arrived(now, 0, &mut tally) {
            batches += 1;
            assert_eq!(c.to_write().len(), per_batch * RESPONSE_HELLO.len(), "batch {batches}");
            c.written(now, &mut tally);
            assert!(batches < 100, "bounded");
        }
        c.written(now, &mut tally);
        assert_eq!(tally.requests as usize, piled.len() / request.len(), "every request answered");
        assert_eq!(batches, piled.len().div_ceil(per_batch * request.len()) - 1);
        assert!(!c.has_arrived());
        // A request larger than a batch is still answered whole, in one go.
        let head = b"POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n";
        let big = [&head[..], &[b'x'; 100_000][..], &request[..]].concat();
        assert!(c.arrived(&big, &mut tally));
        assert!(!c.serve_arrived(now, 0, &mut tally), "nothing whole is left after the GET");
        assert_eq!(c.to_write().len(), crate::proto::http1::RESPONSE_OK.len() + RESPONSE_HELLO.len());
    }

    /// A chunked upload of 400 chunks of 256 bytes (~104 KiB, past a batch) arriving in the
    /// 4 KiB pieces of the engine's provided buffers: answered once, whole. Before, a batch
    /// that used nothing was retried with the whole input, the reader's saved offset moved
    /// past the next 64 KiB view, and the server's core panicked.
    #[test]
    fn a_chunked_upload_past_a_batch_is_answered_however_it_arrives() {
        let body: Vec<u8> =
            (0..400).flat_map(|_| [&b"100\r\n"[..], &[b'x'; 256], b"\r\n"].concat()).collect();
        let upload =
            [&b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"[..], &body, b"0\r\n\r\n"]
                .concat();
        let stream = [&upload[..], b"GET / HTTP/1.1\r\n\r\n"].concat();
        let now = Instant::now();
        for piece in [1, 7, 4096, 65_535, 65_536, 65_537, stream.len()] {
            // Each piece as the engine's receive brings it: answered where it lies when the
            // connection is free, kept when an answer is being written (every other piece).
            let mut c = ServerConn::new(Http1Server::default(), ServerLimits::default(), now);
            let mut tally = ServerTally::default();
            let mut out = Vec::new();
            for (k, chunk) in stream.chunks(piece).enumerate() {
                if k % 2 == 1 && !c.to_write().is_empty() {
                    assert!(c.arrived(chunk, &mut tally));
                    out.extend_from_slice(c.to_write());
                    c.written(now, &mut tally);
                    while c.serve_arrived(now, 0, &mut tally) {
                        out.extend_from_slice(c.to_write());
                        c.written(now, &mut tally);
                    }
                } else {
                    assert!(c.serve_from(chunk, now, 0, &mut tally));
                }
            }
            out.extend_from_slice(c.to_write());
            c.written(now, &mut tally);
            let ok = crate::proto::http1::RESPONSE_OK;
            assert_eq!(out, [ok, RESPONSE_HELLO].concat(), "pieces of {piece}");
            assert_eq!(tally.requests, 2);
        }
    }

    /// A request larger than a batch ends its batch soon after itself: a pile of small
    /// requests behind it is still answered a batch at a time.
    #[test]
    fn a_large_request_does_not_switch_the_batching_off_for_the_pile_behind_it() {
        let now = Instant::now();
        let mut c = ServerConn::new(Http1Server::default(), ServerLimits::default(), now);
        let mut tally = ServerTally::default();
        let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let big = [&b"POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"[..], &[b'x'; 100_000]].concat();
        let pile = [big, request.repeat((4 << 20) / request.len())].concat();
        assert!(c.arrived(&pile, &mut tally));
        assert!(c.serve_arrived(now, 0, &mut tally), "more is left");
        let first = c.to_write().len();
        assert!(first < 256 * 1024, "the first batch answered {first} bytes: the whole pile?");
        c.written(now, &mut tally);
        let mut batches = 1;
        while c.serve_arrived(now, 0, &mut tally) {
            c.written(now, &mut tally);
            batches += 1;
            assert!(batches < 1000, "bounded");
        }
        c.written(now, &mut tally);
        assert!(batches > 50, "{batches} batches");
        assert_eq!(tally.requests as usize, 1 + (4 << 20) / request.len());
    }

    #[test]
    fn a_slow_head_is_cut_off_at_the_head_timeout_however_it_trickles() {
        let t0 = Instant::now();
        let mut c = ServerConn::new(Http1Server::default(), ServerLimits::default(), t0);
        let mut tally = ServerTally::default();
        for (i, byte) in b"GET / HTTP/1.1\r\nX: y".iter().enumerate() {
            let at = t0 + Duration::from_millis(500 * i as u64);
            if at >= c.deadline() {
                break;
            }
            feed(&mut c, &[*byte], at, &mut tally);
        }
        assert_eq!(c.deadline(), t0 + Duration::from_secs(10), "from the head's first byte");
        c.deadline_passed(t0 + Duration::from_secs(10), &mut tally);
        assert!(c.closing() && c.timed_out());
        assert_eq!(tally.timeouts, 1);
    }

    #[test]
    fn heartbeats_on_schedule_busy_or_idle_then_close_after_two_silent_intervals() {
        let now = Instant::now();
        let mut c = ServerConn::new(NsqServer::new(SinkLimits::default()), ServerLimits::default(), now);
        let mut tally = ServerTally::default();
        assert_eq!(c.deadline(), now + Duration::from_secs(30));
        // Busy: a read after the due time beats too.
        let t = now + Duration::from_secs(31);
        feed(&mut c, b"  V2NOP\n", t, &mut tally);
        assert_eq!(c.to_write().len(), 19);
        c.written(t, &mut tally);
        assert_eq!(c.deadline(), now + Duration::from_secs(60));
        // Idle: a heartbeat at 60 s; two intervals after the last byte (31 s), nsqd's read
        // deadline closes the connection.
        c.deadline_passed(now + Duration::from_secs(60), &mut tally);
        assert!(!c.closing());
        assert_eq!(c.deadline(), now + Duration::from_secs(90));
        c.deadline_passed(now + Duration::from_secs(90), &mut tally);
        assert!(!c.closing());
        assert_eq!(c.deadline(), now + Duration::from_secs(91));
        c.deadline_passed(now + Duration::from_secs(91), &mut tally);
        assert!(c.closing() && c.timed_out());
    }
}
