//! One built-in server connection as a state machine, shared by the engines that serve: it
//! takes the bytes a read returned, lets the codec answer them, keeps the heartbeat schedule
//! (nsqd's ticker), and says what to write and whether to close. The engine reads (with the
//! deadline given), writes `to_write()`, and reports back.

use super::{RecvBuf, ServerTally};
use crate::proto::ServerCodec;
use std::time::{Duration, Instant};

pub struct ServerConn<S> {
    codec: S,
    recv: RecvBuf,
    out: Vec<u8>,
    interval: Option<Duration>,
    next_beat: Option<Instant>,
    close: bool,
}

impl<S: ServerCodec> ServerConn<S> {
    pub fn new(codec: S, now: Instant) -> Self {
        let interval = codec.heartbeat_interval();
        ServerConn {
            codec,
            recv: RecvBuf::new(),
            out: Vec::with_capacity(4096),
            interval,
            next_beat: interval.map(|i| now + i),
            close: false,
        }
    }

    /// Where to read into; `None` when a request outgrew the receive limit (close).
    pub fn read_buf(&mut self) -> Option<&mut [u8]> {
        self.recv.spare()
    }

    /// A read should give up at this instant, for a heartbeat; `None`: wait as long as it takes.
    pub fn read_deadline(&self) -> Option<Instant> {
        self.next_beat
    }

    /// `n` bytes arrived (`n > 0`): beat first if one fell due before they came (a busy
    /// connection never waits long enough for the read deadline, but nsqd's ticker beats
    /// anyway), then answer every whole request.
    pub fn received(&mut self, n: usize, now: Instant, unix_secs: u64, tally: &mut ServerTally) {
        if self.next_beat.is_some_and(|due| now >= due) {
            self.beat();
        }
        self.recv.filled(n);
        self.codec.set_unix_time(unix_secs);
        let served = self.codec.serve(self.recv.data(), &mut self.out);
        self.recv.consume(served.consumed);
        tally.rx += n as u64;
        tally.requests += served.requests;
        tally.messages += served.messages;
        self.close |= served.close;
        // IDENTIFY may change or disable the heartbeat; nsqd restarts its ticker then.
        let interval = self.codec.heartbeat_interval();
        if interval != self.interval {
            self.interval = interval;
            self.next_beat = interval.map(|i| now + i);
        }
    }

    /// The read deadline passed with nothing read: a heartbeat is due.
    pub fn deadline_passed(&mut self) {
        self.beat();
    }

    fn beat(&mut self) {
        if !self.codec.heartbeat(&mut self.out) {
            self.close = true;
        }
        self.next_beat = self.next_beat.zip(self.interval).map(|(due, i)| due + i);
    }

    /// Bytes to write now (all of them before the next read).
    pub fn to_write(&self) -> &[u8] {
        &self.out
    }

    /// `to_write()` went out whole.
    pub fn written(&mut self, tally: &mut ServerTally) {
        tally.tx += self.out.len() as u64;
        self.out.clear();
    }

    /// Close once `to_write()` is written.
    pub fn closing(&self) -> bool {
        self.close
    }
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
        let mut c = ServerConn::new(Http1Server, now);
        let mut tally = ServerTally::default();
        assert_eq!(c.read_deadline(), None);
        feed(&mut c, b"GET / HTTP/1.1\r\n", now, &mut tally);
        assert!(c.to_write().is_empty());
        feed(&mut c, b"\r\nGET / HTTP/1.1\r\n\r\n", now, &mut tally);
        assert_eq!(c.to_write(), [RESPONSE_HELLO, RESPONSE_HELLO].concat());
        c.written(&mut tally);
        assert_eq!((tally.requests, tally.tx, tally.rx), (2, 100, 36));
        assert!(!c.closing());
    }

    #[test]
    fn heartbeats_on_schedule_busy_or_idle_then_close_when_unanswered() {
        let now = Instant::now();
        let mut c = ServerConn::new(NsqServer::new(SinkLimits::default()), now);
        let mut tally = ServerTally::default();
        assert_eq!(c.read_deadline(), Some(now + Duration::from_secs(30)));
        // Busy: a read after the due time beats too.
        feed(&mut c, b"  V2NOP\n", now + Duration::from_secs(31), &mut tally);
        assert_eq!(c.to_write().len(), 19);
        c.written(&mut tally);
        assert_eq!(c.read_deadline(), Some(now + Duration::from_secs(60)));
        // Idle: the deadline passes twice without a byte: the sink closes.
        c.deadline_passed();
        assert!(!c.closing());
        c.deadline_passed();
        assert!(c.closing());
    }
}
