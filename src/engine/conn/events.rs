//! What the socket did, digested: a connect, a write, a read, their failures, the bytes that
//! arrived decoded into answers, and the close with the kernel's counts — the second half of
//! [`Conn`]'s methods (the first, in `mod.rs`, decides what the socket does next).

use super::*;

impl<C: ClientCodec> Conn<C> {
    pub fn connected(&mut self, now: Instant, rec: &mut CoreRecorder) {
        rec.connects += 1;
        if self.schedule.timing_set_up(now) {
            rec.phases.connect(now.saturating_duration_since(self.connect_started));
        }
        self.connected_at = now;
        self.life = Life::default();
        self.beat.heard(now);
        self.send.clear();
        self.carrier.end();
        if let Some(preamble) = &self.preamble {
            // Before TLS: on the socket as it is, counted as set-up.
            let from = self.send.len();
            self.send.buf().extend_from_slice(preamble);
            self.send.tag(from, Traffic::Handshake, None);
        }
        if self.carrier.at_connect() {
            return self.start_tls(now, rec);
        }
        self.begin_set_up(now, rec);
    }

    /// Start TLS on this socket: the ClientHello goes out.
    pub(super) fn start_tls(&mut self, now: Instant, rec: &mut CoreRecorder) {
        match self.carrier.start(now) {
            Ok(()) => {
                self.phase = Phase::Tls;
                self.carrier.flush(&mut self.send, rec);
            }
            Err(e) => self.fail(ErrorClass::Tls, e),
        }
    }

    /// The TLS handshake is over: count it, then the protocol's own set-up (from the connect)
    /// or the rest of it (an upgrade).
    pub(super) fn tls_established(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let Some(started) = self.carrier.established(rec) else { return };
        if self.schedule.timing_set_up(now) {
            rec.phases.tls(now.saturating_duration_since(started));
        }
        if self.carrier.at_connect() {
            self.connected_at = now;
            self.begin_set_up(now, rec);
        } else {
            self.phase = Phase::Handshake;
            // Bytes of the handshake's next step may have come with the last record.
            self.decode_handshake(now, rec);
        }
    }

    /// An idle connection holds no buffer: a push-style load of many mostly silent connections
    /// costs little more than their state (an engine that reads with provided buffers, as
    /// `uring` does, needs none to wait for an answer either).
    pub(super) fn release_buffers(&mut self) {
        self.send.release();
        self.control = Vec::new();
        if self.unread == 0 {
            self.recv.release();
            self.carrier.release();
        }
    }

    /// The protocol's set-up: its handshake goes out (or it has none, and runs at once).
    pub(super) fn begin_set_up(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let from = self.send.len();
        self.codec.handshake(self.send.buf());
        let written = self.queue(from, Traffic::Handshake, rec);
        self.phase = Phase::Handshake;
        if written == 0 {
            self.phase = Phase::Running;
            self.set_up(now, rec);
        } else {
            // A codec whose handshake needs no answer is done at once.
            self.decode_handshake(now, rec);
        }
    }

    pub fn connect_failed(&mut self, error: &std::io::Error, now: Instant, rec: &mut CoreRecorder) {
        let class = if error.kind() == std::io::ErrorKind::TimedOut {
            ErrorClass::Timeout
        } else {
            ErrorClass::Connect
        };
        // The class names the step already (`connect: connection refused`); a timeout's says
        // which step timed out.
        rec.conn_error(class, || match class {
            ErrorClass::Connect => io_text(error),
            _ => format!("connect: {}", io_text(error)),
        });
        if let Some(opener) = &mut rec.opener {
            opener.went_wrong(self.connect_started, now);
        }
        self.schedule.settle(now);
        self.futile += 1;
        self.phase = Phase::Retry(now + RETRY_PAUSE);
    }

    pub fn wrote(&mut self, n: usize, now: Instant, rec: &mut CoreRecorder) {
        if n == 0 {
            let zero = std::io::Error::new(std::io::ErrorKind::WriteZero, "wrote 0 bytes");
            return self.write_failed(&zero, rec);
        }
        self.life.tx += n as u64;
        let ledger = &mut self.ledger;
        self.send.wrote(n, |traffic, op, bytes| {
            rec.tx.add(traffic, bytes);
            if let Some(seq) = op {
                ledger.written(seq, bytes, now);
            }
        });
        // A handshake written whole waits for its answer holding no buffer: thousands of
        // connections set up at once would otherwise each hold one until answered, and the
        // heap they grew stays (later allocations of each connection's life pin it).
        if self.phase == Phase::Handshake {
            self.send.release();
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
        self.phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
            // The server closed on us: it often said why first. Read what is there, briefly.
            Phase::Running if class == ErrorClass::Write => Phase::Salvage(end),
            Phase::Goodbye(_) => Phase::Closing(End::Done),
            // A best-effort flush before closing: the reason for closing stands.
            Phase::Closing(first) => Phase::Closing(first),
            _ => Phase::Closing(end),
        };
    }

    pub fn read_failed(&mut self, error: &std::io::Error, now: Instant, _rec: &mut CoreRecorder) {
        let timed_out = error.kind() == std::io::ErrorKind::TimedOut;
        let silent = timed_out && self.silent_at().is_some_and(|at| now >= at);
        let end = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Salvage(end) => end,
            Phase::Goodbye(_) => End::Done,
            Phase::Handshake if timed_out => {
                End::Failed(ErrorClass::Timeout, "no answer to the handshake within the timeout".into())
            }
            Phase::Tls if timed_out => {
                End::Failed(ErrorClass::Timeout, "no answer to the TLS handshake within the timeout".into())
            }
            Phase::Running if silent => End::Failed(
                ErrorClass::Timeout,
                "the server stayed silent longer than its heartbeat allows (ping interval + timeout)".into(),
            ),
            Phase::Running if timed_out && self.ledger.is_empty() && !self.codec.accepts_ops() => {
                let why = self.codec.idle_reason().unwrap_or("the server accepted no operation");
                End::Failed(ErrorClass::Timeout, format!("nothing could be sent within the timeout: {why}"))
            }
            _ if timed_out => End::Failed(ErrorClass::Timeout, "no response within the timeout".into()),
            _ => End::Failed(ErrorClass::Read, io_text(error)),
        };
        self.close(end);
    }

    /// A [`Want::Poll`] found nothing to read.
    pub fn polled(&mut self, now: Instant) {
        self.beat.last_look = now;
    }

    /// `n` bytes arrived in `read_buf()` (0: the server closed its side).
    pub fn read(&mut self, n: usize, now: Instant, rec: &mut CoreRecorder) {
        if n == 0 {
            return self.eof(now, rec);
        }
        self.fill(n);
        self.take_arrived(now, rec);
    }

    /// `n` bytes were written into `read_buf()`: they are the socket's (counted for the
    /// audit), not decoded yet.
    pub(super) fn fill(&mut self, n: usize) {
        self.carrier.in_buf(&mut self.recv).filled(n);
        self.count_in(n);
    }

    /// `n` bytes came off the socket into the receive buffer, not decoded yet.
    pub(super) fn count_in(&mut self, n: usize) {
        self.life.rx += n as u64;
        self.unread += n;
    }

    /// Bytes that came before the machine asked for them (an engine whose receive is always
    /// armed: multishot): kept, and decoded at the next [`take_arrived`](Self::take_arrived)
    /// — never while a write may still be reading the send buffer. `false`: past the
    /// receive limit (what fitted was kept).
    pub fn arrived(&mut self, data: &[u8]) -> bool {
        let n = self.carrier.in_buf(&mut self.recv).append(data);
        self.count_in(n);
        n == data.len()
    }

    /// Bytes arrived that are not decoded yet.
    pub fn has_arrived(&self) -> bool {
        self.unread > 0
    }

    /// An engine's shortcut for a connection that asked to read and was woken by bytes:
    /// decode them now, without asking [`next`](Self::next) first, which would ask to read
    /// again with nothing changed — unless the time of what it waits for ran out, which
    /// `next` tells first (an answer past its timeout is a timeout, whenever it came).
    pub fn take_answers(&mut self, now: Instant, rec: &mut CoreRecorder) {
        // The run's end as `next` would know it (the window may have opened meanwhile).
        self.learn_run_end(now);
        if self.time_up(now).is_none() {
            self.take_arrived(now, rec);
        }
    }

    /// Decode what arrived (by [`read`](Self::read) or [`arrived`](Self::arrived)).
    pub fn take_arrived(&mut self, now: Instant, rec: &mut CoreRecorder) {
        if std::mem::take(&mut self.unread) == 0 {
            return;
        }
        self.beat.heard(now);
        match self.carrier.received(&mut self.recv, rec) {
            Some(Ok(opened)) => {
                self.carrier.flush(&mut self.send, rec);
                if opened.plain > 0 {
                    self.first_byte(now);
                }
                if matches!(self.phase, Phase::Tls) {
                    if !self.carrier.handshaking() {
                        self.tls_established(now, rec);
                    }
                    return;
                }
            }
            Some(Err(e)) => {
                let class = if matches!(self.phase, Phase::Tls) { "TLS handshake" } else { "TLS" };
                return self.fail(ErrorClass::Tls, format!("{class}: {e}"));
            }
            None => self.first_byte(now),
        }
        // The usual case first, without cloning the phase (a clone and its drop per read).
        if matches!(self.phase, Phase::Running) {
            self.decode_ops(now, rec);
            return;
        }
        match self.phase.clone() {
            Phase::Handshake => {
                self.decode_handshake(now, rec);
                // What came after the handshake's end in the same read (an HTTP/2 server's
                // SETTINGS ACK and WINDOW_UPDATE) is decoded now, not at the next read.
                if matches!(self.phase, Phase::Running) && !self.recv.data().is_empty() {
                    self.decode_ops(now, rec);
                }
            }
            Phase::Salvage(end) => {
                self.phase = Phase::Running;
                let answered = self.decode_ops(now, rec);
                if matches!(self.phase, Phase::Running) {
                    // Only an answer to an operation explains the failed write (a heartbeat
                    // that happened to arrive does not).
                    self.close(if answered > 0 { End::PeerClosed } else { end });
                }
            }
            Phase::Goodbye(reads) => self.read_goodbye(reads, rec),
            _ => {}
        }
    }

    /// `n` bytes arrived in `read_buf()` after the connection had given up on its read (an
    /// engine that could not cancel the read in time): kept undecoded, counted when it closes.
    pub fn read_after_giving_up(&mut self, n: usize) {
        self.fill(n);
        self.unread = 0;
    }

    /// The connection is set up: it has room from now (a connection per operation had it
    /// since its last one closed; its own set-up is part of its operation's time).
    pub(super) fn set_up(&mut self, now: Instant, rec: &mut CoreRecorder) {
        self.life.set_up = true;
        if let Some(opener) = &mut rec.opener {
            opener.set_up(self.connect_started, now);
        }
        self.schedule.settle(now);
        if !self.per_op {
            self.room_since = now;
        }
    }

    /// Bytes arrived for the oldest operation in flight: the first byte of its answer, unless
    /// an earlier read brought it. (Operations answered by id, in any order — HTTP/2 streams —
    /// are stamped when a piece of their own answer is decoded: bytes read may be another's.)
    pub(super) fn first_byte(&mut self, now: Instant) {
        if let Some(op) = self.ledger.get_mut(None)
            && op.first_byte.is_none()
            && op.id.is_none()
        {
            op.first_byte = Some(now);
        }
    }

    /// The engine read the socket's counts and closed it. `drained`: bytes it read off the
    /// socket while closing (they arrived after the connection stopped decoding); `audit`:
    /// the kernel's counts (`None`: there was no socket).
    pub fn closed(&mut self, drained: u64, audit: Option<SocketAudit>, now: Instant, rec: &mut CoreRecorder) {
        let end = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Closing(end) => end,
            _ => End::PeerClosed,
        };
        // Every operation still in flight ends here, with the class of the connection's end.
        let class = match &end {
            End::Failed(class, _) => *class,
            End::Done | End::PeerClosed => ErrorClass::Closed,
        };
        let mut lost = 0;
        for op in self.ledger.drain() {
            if op.traffic == Traffic::Op {
                file_as_failed(&op, rec);
                lost += 1;
            }
        }
        rec.ops_failed(class, lost);
        rec.series_errors(self.schedule.budget().measure_from, now, lost);
        if lost > 0 && class == ErrorClass::Closed {
            rec.sample(|| "closed: the server closed the connection with operations in flight".into());
        }
        // A connection that answered nothing and failed with bytes undecoded: what the
        // server said, kept once for the verdict of a run that completes nothing.
        if !self.life.answered && matches!(end, End::Failed(..)) && rec.first_bytes.is_none() {
            rec.first_bytes(self.recv.data());
        }
        self.account_leftover(drained, lost > 0, audit, rec);
        if !self.life.answered {
            self.futile += 1;
        }
        // A connection per operation that carried its operation ends as planned, whoever
        // closed it (the server may, after `Connection: close`).
        // A first try that ended before its set-up was done (a refused upgrade, a server that
        // closed) counts as settled: the window does not wait for its retries.
        self.schedule.settle(now);
        // A set-up that ended before it was done, by a failure or by the server closing (an
        // overloaded server's accept-then-close), slows the opening down.
        if let (Some(opener), End::Failed(..) | End::PeerClosed, false) =
            (&mut rec.opener, &end, self.life.set_up)
        {
            opener.went_wrong(self.connect_started, now);
        }
        let cycled = self.per_op && lost == 0 && self.life.ops_sent > 0;
        if cycled {
            self.room_since = now;
        }
        self.life = Life::default();
        self.beat.next_beat = None;
        self.unread = 0;
        self.send.clear();
        self.control.clear();
        if let Some(answer) = self.codec.closing_answer() {
            rec.answers.add(answer, 1);
        }
        crate::stats::layers_merge_into(&mut rec.layers, self.codec.take_layers().as_ref());
        self.codec = C::clone(&self.prototype);
        self.lives += 1;
        self.codec.seed(self.seed ^ self.lives.wrapping_mul(SEED_STEP));
        self.phase = match end {
            End::Done | End::PeerClosed if cycled => Phase::Idle,
            End::Done => Phase::Done,
            End::PeerClosed => {
                rec.reconnects += 1;
                // Two connections in a row closed with nothing answered (a server that accepts
                // and closes): the next after a pause, as after a failure.
                if self.futile >= 2 { Phase::Retry(now + RETRY_PAUSE) } else { Phase::Idle }
            }
            End::Failed(class, message) => {
                rec.conn_error(class, || message);
                Phase::Retry(now + RETRY_PAUSE)
            }
        };
    }

    /// Bytes that never made a whole message (part of a lost answer, or control), the
    /// engine's drained ones, and the socket's audit.
    pub(super) fn account_leftover(
        &mut self,
        drained: u64,
        lost: bool,
        audit: Option<SocketAudit>,
        rec: &mut CoreRecorder,
    ) {
        let leftover_class = if lost { Traffic::Failed } else { Traffic::Control };
        let plain_left = self.recv.reset() as u64;
        let leftover = match self.carrier.end() {
            Some(wire_left) => {
                rec.tls.plain_rx.add(leftover_class, plain_left);
                wire_left
            }
            None => plain_left,
        } + drained;
        rec.rx.add(leftover_class, leftover);
        self.life.rx += drained;
        if let Some(audit) = audit {
            rec.audit.add(self.life.tx, self.life.rx, audit);
        }
    }
}
