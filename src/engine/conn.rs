//! One client connection's life as a state machine, shared by every engine (quinn-proto's
//! split, one level up): it decides what the socket should do next ([`Want`]) and digests what
//! the socket did (`connected`, `wrote`, `read`, …), driving the codec, the workload's pacer and
//! the core's recorder. An engine only performs the I/O it is asked for and reports the
//! results, so the connection logic exists once, whatever drives the sockets.
//!
//! Life of a connection: connect → handshake (written, answer decoded) → running (batches of
//! operations written, responses decoded, control replies written) → goodbye (WebSocket Close,
//! bounded wait) → close (the engine reads `TCP_INFO`, then closes) → reconnect, pause and
//! retry after a failure, or done.

use crate::proto::{ClientCodec, Decoded, ErrorClass, Outcome};
use crate::stats::{CoreRecorder, Traffic};
use crate::workload::{Budget, Pacer};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::RecvBuf;

/// Pause after a failed connect or a failed connection before trying again, so that a dead
/// server costs a bounded number of attempts per second.
pub const RETRY_PAUSE: Duration = Duration::from_millis(20);
/// How long a failed write waits for the server's last words (an NSQ error frame, an HTTP 413).
pub const SALVAGE_WAIT: Duration = Duration::from_millis(100);
/// Once the run is over, how long answers to operations still in flight are waited for; after
/// that they count as timeouts.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// How long a connection waits for the answer to its goodbye, and how many reads at most.
pub const GOODBYE_WAIT: Duration = Duration::from_secs(1);
const GOODBYE_READS: u32 = 16;

/// What the engine should do next with this connection's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Open a connection (with the run's timeout), then call `connected` or `connect_failed`.
    Connect,
    /// Write `to_write()` (or part of it), then call `wrote` or `write_failed`.
    Write,
    /// Read into `read_buf()` with this timeout, then call `read` or `read_failed`.
    Read(Duration),
    /// Nothing to do until then (a paced workload, a retry pause); then ask again.
    Sleep(Instant),
    /// Read the socket's `TCP_INFO` into the recorder, close it, then call `closed`.
    Close,
    /// This connection's work is over.
    Done,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    Done,
    Reconnect,
    Failed(ErrorClass, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    Handshake,
    Running,
    /// A write failed: one bounded read for the server's answer; else end as given.
    Salvage(End),
    Goodbye(u32),
    Closing(End),
    Retry(Instant),
    Done,
}

/// An operation sent and not yet answered.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// When the workload meant it to go (latency is measured from here)…
    intended: Instant,
    /// …and when it went (the uncorrected latency of paced workloads).
    sent: Instant,
    traffic: Traffic,
}

/// One connection, across its reconnects.
pub struct Conn<C> {
    prototype: C,
    codec: C,
    pacer: Pacer,
    budget: Budget,
    depth: usize,
    timeout: Duration,
    recv: RecvBuf,
    send: Vec<u8>,
    sent_off: usize,
    send_traffic: Traffic,
    control: Vec<u8>,
    inflight: VecDeque<InFlight>,
    /// Measured operations sent so far (against `budget.ops`).
    sent: u64,
    phase: Phase,
}

impl<C: ClientCodec> Conn<C> {
    pub fn new(prototype: &C, pacer: Pacer, budget: Budget, depth: usize, timeout: Duration) -> Self {
        Conn {
            prototype: prototype.clone(),
            codec: prototype.clone(),
            pacer,
            budget,
            depth,
            timeout,
            recv: RecvBuf::new(),
            send: Vec::with_capacity(1024),
            sent_off: 0,
            send_traffic: Traffic::Op,
            control: Vec::new(),
            inflight: VecDeque::with_capacity(depth),
            sent: 0,
            phase: if budget.ops == Some(0) { Phase::Done } else { Phase::Idle },
        }
    }

    /// No new operation may be sent (deadline, quota or Ctrl-C).
    fn stopped(&self, now: Instant, stop: &AtomicBool) -> bool {
        now >= self.budget.deadline
            || self.budget.ops.is_some_and(|n| self.sent >= n)
            || stop.load(Ordering::Relaxed)
    }

    /// How long a read may wait: the run's timeout, but never past [`DRAIN_LIMIT`] after the
    /// run's end, so that a silent server cannot stretch the run.
    fn read_timeout(&self, now: Instant) -> Duration {
        (self.budget.deadline + DRAIN_LIMIT)
            .saturating_duration_since(now)
            .clamp(Duration::from_millis(1), self.timeout)
    }

    /// Bytes to write now.
    pub fn to_write(&self) -> &[u8] {
        &self.send[self.sent_off..]
    }

    /// Where to read into; `None` when a message outgrew the receive limit (the next `next()`
    /// will fail the connection).
    pub fn read_buf(&mut self) -> Option<&mut [u8]> {
        self.recv.spare()
    }

    fn close(&mut self, end: End) {
        self.phase = Phase::Closing(end);
    }

    fn fail(&mut self, class: ErrorClass, message: impl Into<String>) {
        self.close(End::Failed(class, message.into()));
    }

    /// What to do next.
    pub fn next(&mut self, now: Instant, stop: &AtomicBool) -> Want {
        loop {
            match &self.phase {
                Phase::Done => return Want::Done,
                // Replies queued before closing (a WebSocket close's echo) go out first.
                Phase::Closing(_) if self.sent_off < self.send.len() => return Want::Write,
                Phase::Closing(_) => return Want::Close,
                Phase::Idle | Phase::Retry(_) if self.stopped(now, stop) => {
                    self.phase = Phase::Done;
                    return Want::Done;
                }
                Phase::Retry(at) if now < *at => return Want::Sleep(*at),
                Phase::Idle | Phase::Retry(_) => {
                    self.phase = Phase::Connecting;
                    return Want::Connect;
                }
                Phase::Connecting => return Want::Connect,
                _ if self.sent_off < self.send.len() => return Want::Write,
                Phase::Salvage(_) => return Want::Read(SALVAGE_WAIT),
                Phase::Goodbye(_) => return Want::Read(GOODBYE_WAIT.min(self.read_timeout(now))),
                Phase::Handshake => return Want::Read(self.read_timeout(now)),
                Phase::Running => {}
            }
            // Running, nothing left to write: send what the workload allows, one batch per
            // write. A batch holds operations of one traffic class only (warm-up or measured),
            // so each write's bytes belong to exactly one class.
            self.send.clear();
            self.sent_off = 0;
            let mut batch = None;
            while self.inflight.len() < self.depth && !self.stopped(now, stop) {
                let intended = self.pacer.due(now);
                if intended > now {
                    break; // paced workloads: not yet due
                }
                let traffic =
                    if intended < self.budget.measure_from { Traffic::WarmupOp } else { Traffic::Op };
                if batch.is_some_and(|t| t != traffic) {
                    break;
                }
                batch = Some(traffic);
                self.pacer.taken();
                self.codec.encode_op(&mut self.send);
                self.inflight.push_back(InFlight { intended, sent: now, traffic });
                if traffic == Traffic::Op {
                    self.sent += 1;
                }
            }
            if let Some(traffic) = batch {
                self.send_traffic = traffic;
                return Want::Write;
            }
            if !self.inflight.is_empty() {
                return Want::Read(self.read_timeout(now));
            }
            if self.stopped(now, stop) {
                // Say goodbye if the protocol has one, else close.
                if self.codec.goodbye(&mut self.send) {
                    self.send_traffic = Traffic::Control;
                    self.phase = Phase::Goodbye(0);
                    continue;
                }
                self.close(End::Done);
                continue;
            }
            // Nothing in flight and nothing due yet (a paced workload): wait for its time.
            let due = self.pacer.due(now);
            return if due > now {
                Want::Sleep(due.min(self.budget.deadline))
            } else {
                Want::Read(self.read_timeout(now))
            };
        }
    }

    pub fn connected(&mut self, rec: &mut CoreRecorder) {
        rec.connects += 1;
        self.send.clear();
        self.sent_off = 0;
        self.codec.handshake(&mut self.send);
        self.send_traffic = Traffic::Handshake;
        self.phase = Phase::Handshake;
        if self.send.is_empty() {
            self.phase = Phase::Running;
        } else {
            // A codec whose handshake needs no answer is done at once.
            self.decode_handshake(rec);
        }
    }

    pub fn connect_failed(&mut self, error: &std::io::Error, now: Instant, rec: &mut CoreRecorder) {
        rec.error(ErrorClass::Connect, || io_text(error));
        self.phase = Phase::Retry(now + RETRY_PAUSE);
    }

    pub fn wrote(&mut self, n: usize, rec: &mut CoreRecorder) {
        if n == 0 {
            return self
                .write_failed(&std::io::Error::new(std::io::ErrorKind::WriteZero, "wrote 0 bytes"), rec);
        }
        rec.tx.add(self.send_traffic, n as u64);
        self.sent_off += n;
        if self.sent_off == self.send.len() {
            self.send.clear();
            self.sent_off = 0;
        }
    }

    pub fn write_failed(&mut self, error: &std::io::Error, _rec: &mut CoreRecorder) {
        let class = if error.kind() == std::io::ErrorKind::TimedOut {
            ErrorClass::Timeout
        } else {
            ErrorClass::Write
        };
        let end = End::Failed(
            class,
            if class == ErrorClass::Timeout { "write timed out".into() } else { io_text(error) },
        );
        self.send.clear();
        self.sent_off = 0;
        self.phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
            // The server closed on us: it often said why first. Read what is there, briefly.
            Phase::Running if class == ErrorClass::Write => Phase::Salvage(end),
            Phase::Goodbye(_) => Phase::Closing(End::Done),
            // A best-effort flush before closing: the reason for closing stands.
            Phase::Closing(first) => Phase::Closing(first),
            _ => Phase::Closing(end),
        };
    }

    pub fn read_failed(&mut self, error: &std::io::Error, _rec: &mut CoreRecorder) {
        let timed_out = error.kind() == std::io::ErrorKind::TimedOut;
        let end = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Salvage(end) => end,
            Phase::Goodbye(_) => End::Done,
            _ if timed_out => End::Failed(ErrorClass::Timeout, "no response within the timeout".into()),
            _ => End::Failed(ErrorClass::Read, io_text(error)),
        };
        self.close(end);
    }

    /// `n` bytes arrived in `read_buf()` (0: the server closed its side).
    pub fn read(&mut self, n: usize, now: Instant, rec: &mut CoreRecorder) {
        if n == 0 {
            return self.eof(now, rec);
        }
        self.recv.filled(n);
        match self.phase.clone() {
            Phase::Handshake => self.decode_handshake(rec),
            Phase::Running => {
                self.decode_ops(now, rec);
            }
            Phase::Salvage(end) => {
                self.phase = Phase::Running;
                let answered = self.decode_ops(now, rec);
                self.close(if answered > 0 { End::Reconnect } else { end });
            }
            Phase::Goodbye(reads) => {
                while let Ok(Decoded::Done { consumed, .. }) =
                    self.codec.decode_op(self.recv.data(), &mut self.control)
                {
                    self.recv.consume(consumed);
                    rec.rx.add(Traffic::Control, consumed as u64);
                    if self.codec.peer_closing() {
                        return self.close(End::Done);
                    }
                }
                self.control.clear(); // no replies after goodbye
                if reads + 1 >= GOODBYE_READS {
                    self.close(End::Done);
                } else {
                    self.phase = Phase::Goodbye(reads + 1);
                }
            }
            _ => {}
        }
    }

    fn eof(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let end = match self.phase.clone() {
            Phase::Salvage(end) => end,
            Phase::Goodbye(_) => End::Done,
            Phase::Handshake => End::Failed(ErrorClass::Read, "server closed during the handshake".into()),
            _ => match self.codec.decode_eof(self.recv.data()) {
                Ok(Decoded::Done { consumed, outcome }) => match self.complete(consumed, outcome, now, rec) {
                    Ok(()) => End::Reconnect,
                    Err(end) => end,
                },
                Ok(Decoded::Partial) if self.inflight.is_empty() => End::Reconnect,
                Ok(Decoded::Partial) => End::Failed(
                    ErrorClass::Read,
                    "server closed the connection with operations in flight".into(),
                ),
                Err(e) => End::Failed(ErrorClass::Protocol, e.to_string()),
            },
        };
        self.close(end);
    }

    fn decode_handshake(&mut self, rec: &mut CoreRecorder) {
        match self.codec.decode_handshake(self.recv.data()) {
            Ok(Decoded::Partial) => {}
            Ok(Decoded::Done { consumed, .. }) => {
                rec.rx.add(Traffic::Handshake, consumed as u64);
                self.recv.consume(consumed);
                self.phase = Phase::Running;
            }
            Err(e) => self.fail(ErrorClass::Protocol, format!("handshake: {e}")),
        }
    }

    /// Decode every whole message; queue the codec's control replies; returns how many
    /// messages were decoded.
    fn decode_ops(&mut self, now: Instant, rec: &mut CoreRecorder) -> usize {
        let mut decoded = 0;
        self.control.clear();
        loop {
            match self.codec.decode_op(self.recv.data(), &mut self.control) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed, outcome }) => {
                    decoded += 1;
                    if let Err(end) = self.complete(consumed, outcome, now, rec) {
                        self.close(end);
                        return decoded;
                    }
                    if self.codec.peer_closing() {
                        break;
                    }
                }
                Err(e) => {
                    self.fail(ErrorClass::Protocol, e.to_string());
                    return decoded;
                }
            }
        }
        if self.codec.peer_closing() {
            // The replies (a WebSocket close's echo) are flushed first, best effort.
            self.close(End::Reconnect);
        }
        if !self.control.is_empty() {
            std::mem::swap(&mut self.send, &mut self.control);
            self.sent_off = 0;
            self.send_traffic = Traffic::Control;
        }
        decoded
    }

    /// Account one whole message from the server.
    fn complete(
        &mut self,
        consumed: usize,
        outcome: Outcome,
        now: Instant,
        rec: &mut CoreRecorder,
    ) -> Result<(), End> {
        self.recv.consume(consumed);
        let no_request = || End::Failed(ErrorClass::Protocol, "response with no request in flight".into());
        match outcome {
            Outcome::Control => {
                rec.rx.add(Traffic::Control, consumed as u64);
                Ok(())
            }
            Outcome::OpPart => {
                let op = self.inflight.front().ok_or_else(no_request)?;
                rec.rx.add(op.traffic, consumed as u64);
                Ok(())
            }
            Outcome::Op | Outcome::OpFailed(_) => {
                let Some(op) = self.inflight.pop_front() else {
                    rec.rx.add(Traffic::Control, consumed as u64);
                    return Err(no_request());
                };
                rec.rx.add(op.traffic, consumed as u64);
                if op.traffic == Traffic::Op {
                    match outcome {
                        Outcome::OpFailed(failure) => rec.failure(failure),
                        _ => {
                            rec.ops += 1;
                            rec.record_latency(now.saturating_duration_since(op.intended).as_nanos() as u64);
                            if self.pacer.paced() {
                                rec.record_uncorrected(
                                    now.saturating_duration_since(op.sent).as_nanos() as u64
                                );
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The engine read `TCP_INFO` and closed the socket.
    pub fn closed(&mut self, now: Instant, rec: &mut CoreRecorder) {
        rec.rx.add(Traffic::Control, self.recv.reset() as u64);
        self.inflight.clear();
        self.send.clear();
        self.sent_off = 0;
        self.control.clear();
        self.codec = self.prototype.clone();
        let end = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Closing(end) => end,
            _ => End::Reconnect,
        };
        self.phase = match end {
            End::Done => Phase::Done,
            End::Reconnect => {
                rec.reconnects += 1;
                Phase::Idle
            }
            End::Failed(class, message) => {
                rec.error(class, || message);
                Phase::Retry(now + RETRY_PAUSE)
            }
        };
    }
}

pub fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset by the server".into(),
        std::io::ErrorKind::TimedOut => "timed out".into(),
        std::io::ErrorKind::BrokenPipe => "broken pipe (the server closed)".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::http1::{Http1Client, RequestSpec};
    use crate::workload::Workload;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";

    fn conn(ops: u64, depth: usize) -> (Conn<Http1Client>, AtomicBool, Instant) {
        let spec = RequestSpec {
            method: "GET".into(),
            host: "h".into(),
            target: "/".into(),
            headers: vec![],
            body: vec![],
        };
        let now = Instant::now();
        let budget = Budget { ops: Some(ops), deadline: now + Duration::from_secs(60), measure_from: now };
        let c = Conn::new(
            &Http1Client::new(&spec),
            Workload::ClosedLoop.pacer(0, 1),
            budget,
            depth,
            Duration::from_secs(1),
        );
        (c, AtomicBool::new(false), now)
    }

    /// Feed `data` as if the socket had read it.
    fn feed(c: &mut Conn<Http1Client>, data: &[u8], rec: &mut CoreRecorder) {
        c.read_buf().unwrap()[..data.len()].copy_from_slice(data);
        c.read(data.len(), Instant::now(), rec);
    }

    #[test]
    fn a_pipelined_exchange_without_sockets() {
        let (mut c, stop, now) = conn(4, 2);
        let mut rec = CoreRecorder::new(0);
        assert_eq!(c.next(now, &stop), Want::Connect);
        c.connected(&mut rec);
        assert_eq!(c.next(now, &stop), Want::Write);
        let request_len = c.to_write().len() / 2;
        assert_eq!(request_len, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n".len());
        c.wrote(request_len * 2, &mut rec);
        assert_eq!(c.next(now, &stop), Want::Read(Duration::from_secs(1)));
        // Both responses in one read, the second split.
        feed(&mut c, &[OK, &OK[..5]].concat(), &mut rec);
        assert_eq!(rec.ops, 1);
        assert_eq!(c.next(now, &stop), Want::Write); // a slot freed: one more request
        c.wrote(request_len, &mut rec);
        feed(&mut c, &[&OK[5..], OK].concat(), &mut rec);
        assert_eq!(c.next(now, &stop), Want::Write);
        c.wrote(request_len, &mut rec);
        feed(&mut c, OK, &mut rec);
        assert_eq!(rec.ops, 4);
        assert_eq!(c.next(now, &stop), Want::Close); // quota met: close
        c.closed(now, &mut rec);
        assert_eq!(c.next(now, &stop), Want::Done);
        assert_eq!((rec.tx.op, rec.rx.op), (4 * request_len as u64, 4 * OK.len() as u64));
    }

    #[test]
    fn eof_with_operations_in_flight_is_a_read_error_then_a_paused_retry() {
        let (mut c, stop, now) = conn(10, 1);
        let mut rec = CoreRecorder::new(0);
        c.next(now, &stop);
        c.connected(&mut rec);
        c.next(now, &stop);
        let n = c.to_write().len();
        c.wrote(n, &mut rec);
        c.read(0, now, &mut rec);
        assert_eq!(c.next(now, &stop), Want::Close);
        c.closed(now, &mut rec);
        assert_eq!(rec.errors.get(&ErrorClass::Read), Some(&1));
        assert_eq!(c.next(now, &stop), Want::Sleep(now + RETRY_PAUSE));
        assert_eq!(c.next(now + RETRY_PAUSE, &stop), Want::Connect);
        stop.store(true, Ordering::Relaxed);
        c.connect_failed(&std::io::ErrorKind::ConnectionRefused.into(), now, &mut rec);
        assert_eq!(c.next(now + RETRY_PAUSE, &stop), Want::Done, "Ctrl-C ends the retries");
    }

    #[test]
    fn a_failed_write_reads_the_servers_last_words() {
        let (mut c, stop, now) = conn(10, 1);
        let mut rec = CoreRecorder::new(0);
        c.next(now, &stop);
        c.connected(&mut rec);
        c.next(now, &stop);
        c.write_failed(&std::io::ErrorKind::BrokenPipe.into(), &mut rec);
        assert_eq!(c.next(now, &stop), Want::Read(SALVAGE_WAIT));
        feed(&mut c, b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n", &mut rec);
        assert_eq!(c.next(now, &stop), Want::Close);
        c.closed(now, &mut rec);
        assert_eq!(rec.errors.get(&ErrorClass::Status), Some(&1));
        assert_eq!(rec.errors.get(&ErrorClass::Write), None);
        assert_eq!(rec.reconnects, 1);
    }
}
