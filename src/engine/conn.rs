//! One client connection's life as a state machine, shared by every engine (quinn-proto's
//! split, one level up): it decides what the socket should do next ([`Want`]) and digests what
//! the socket did (`connected`, `wrote`, `read`, …), driving the codec, the workload's pacer and
//! the core's recorder. An engine only performs the I/O it is asked for and reports the
//! results, so the connection logic exists once, whatever drives the sockets.
//!
//! Life of a connection: connect → handshake (written, answer decoded) → running (batches of
//! operations written, responses decoded, control replies written) → goodbye (WebSocket Close,
//! bounded wait) → close (the engine reads the kernel's counts, then closes) → reconnect, pause
//! and retry after a failure, or done.
//!
//! **Every operation ends once, here.** An operation sent is answered (completed, or refused by
//! the server: a failure of the refusal's class) or it is lost with its connection: each one in
//! flight when a connection ends fails with the class of that end (`closed` when the peer
//! closed, `read`, `write`, `timeout`, `protocol`). So `sent = completed + failed` in every
//! engine, and a failed operation's bytes move out of the operation class into `failed`.
//! `-n N` asks for N answered operations: lost ones are sent again.

use crate::clock::Instant;
use crate::outcome::ErrorClass;
use crate::proto::{ClientCodec, Decoded, Outcome};
use crate::stats::{CoreRecorder, SocketAudit, Traffic};
use crate::tls::options::{ClientTls, TlsStart};
use crate::tls::{Carried, ClientSession};
use crate::workload::{Budget, Pacer, Window};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::recv::RecvBuf;

/// Pause after a failed connect or a failed connection before trying again, so that a dead
/// server costs a bounded number of attempts per second.
pub const RETRY_PAUSE: Duration = Duration::from_millis(20);
/// How long a failed write waits for the server's last words (an NSQ error frame, an HTTP 413).
pub const SALVAGE_WAIT: Duration = Duration::from_millis(100);
/// Once the run is over, how long connects, writes and answers to operations still in flight
/// are waited for; after that they count as timeouts.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// How long a connection waits for the answer to its goodbye, and how many reads at most.
pub const GOODBYE_WAIT: Duration = Duration::from_secs(1);
const GOODBYE_READS: u32 = 16;
/// With `-n`, a connection gives up after this many connections in a row in which the server
/// answered nothing (refused connects included): `-n` counts answered operations, and a server
/// that never answers must not hold the run until its time limit.
pub const GIVE_UP_AFTER: u32 = 20;

/// The first receive buffer of [`Conn::small_receive_buffer`]: a handshake's answer fits.
const SMALL_RECV_BUF: usize = 512;

/// How often a connection the engine wakes at the window's opening looks anyway.
const WINDOW_SAFETY_NET: Duration = Duration::from_secs(1);

/// A connection that will idle at least this long gives its buffers back first (shorter
/// waits keep them: allocating per operation would cost more than it saves).
pub const IDLE_RELEASE: Duration = Duration::from_millis(100);
/// A connection that sat idle this long looks at its socket before it sends again: the
/// server may have closed it meanwhile (an idle timeout), and an operation sent on it would
/// fail as `closed` where a reconnect was all it needed.
pub const LOOK_BEFORE_SENDING_AFTER: Duration = Duration::from_millis(100);
/// The shortest time between two looks at an idle socket for the server's unprompted
/// messages, however soon the protocol says they need an answer (a server announcing a ping
/// timeout of 0 had the connection look without end).
const MIN_LOOK_EVERY: Duration = Duration::from_millis(1);

/// Spreads the seeds of connections and of their successive sockets (the golden ratio's bits).
pub const SEED_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// What the engine should do next with this connection's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Open a connection within this time, then call `connected` or `connect_failed`.
    Connect(Duration),
    /// Write `to_write()` (or part of it) within this time, then call `wrote` or `write_failed`.
    Write(Duration),
    /// Read into `read_buf()` with this timeout, then call `read` or `read_failed`.
    Read(Duration),
    /// Nothing to do until then (a paced workload, a retry pause); then ask again.
    Sleep(Instant),
    /// Read what the socket holds now without waiting ([`super::poll_socket`]): between paced
    /// operations, for messages the server sends unprompted that need an answer in time
    /// (Engine.IO 4's pings, nsqd's heartbeats). Then call `read`, `polled` (nothing there) or
    /// `read_failed`.
    Poll,
    /// Read the socket's counts for the audit ([`super::sys::close_audit`]), close it, then
    /// call `closed`.
    Close,
    /// This connection's work is over.
    Done,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// The run is over for this connection.
    Done,
    /// The peer closed, as a server may (HTTP `Connection: close`, a WebSocket Close, nsqd
    /// after an error frame, an idle keep-alive connection): connect again. Operations still in
    /// flight fail as `closed`.
    PeerClosed,
    /// The connection failed: counted once under the class, and every operation in flight
    /// fails with it.
    Failed(ErrorClass, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    /// The TLS handshake (at connect, or the protocol's upgrade mid-handshake).
    Tls,
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
    /// Its encoded length (on the wire: with TLS, its record), and how much of it the socket
    /// has taken so far.
    tx_len: u64,
    /// Its plaintext, and its answer's so far, with TLS (else 0).
    tx_plain: u64,
    rx_plain: u64,
    tx_written: u64,
    /// Bytes of its answer received so far (WebSocket fragments).
    rx: u64,
    /// When its last byte was written, and when the first byte of its answer arrived.
    written: Option<Instant>,
    first_byte: Option<Instant>,
}

/// What one connection (one socket) carried, for its audit.
#[derive(Debug, Clone, Copy, Default)]
struct Life {
    tx: u64,
    rx: u64,
    /// The server answered at least one operation on it.
    answered: bool,
    /// Operations sent on it (a connection per operation sends one).
    ops_sent: u64,
}

/// One connection, across its reconnects.
pub struct Conn<C> {
    prototype: C,
    codec: C,
    pacer: Pacer,
    budget: Budget,
    depth: usize,
    timeout: Duration,
    /// Until then an operation gets its whole `timeout` (the run's end is further off than
    /// that): [`io_timeout`](Self::io_timeout)'s answer without clock arithmetic, per op.
    full_timeout_until: Option<Instant>,
    recv: RecvBuf,
    /// Bytes to write (on the wire: records, with TLS), and the class of each run of them.
    send: Vec<u8>,
    sent_off: usize,
    send_classes: VecDeque<(Traffic, usize)>,
    /// TLS with this target (`None`: plaintext), and the current socket's session.
    tls: Option<Arc<ClientTls>>,
    session: Option<Box<ClientSession>>,
    /// Bytes in the receive buffer not decoded yet (see [`Conn::arrived`]).
    unread: usize,
    control: Vec<u8>,
    inflight: VecDeque<InFlight>,
    /// Index in `inflight` of the first operation not yet written whole.
    unwritten: usize,
    /// Measured operations in flight, and measured operations answered (toward `budget.ops`).
    measured_inflight: u64,
    answered: u64,
    life: Life,
    /// Connections in a row in which the server answered nothing.
    futile: u32,
    /// This connection's seed for the codec's randomness, and how many sockets it has had.
    seed: u64,
    lives: u64,
    /// When the codec's next unprompted message is due (Engine.IO 3's pings), and when the
    /// server last sent anything (its silence limit counts from there).
    next_beat: Option<Instant>,
    last_rx: Instant,
    /// When the current connect began, and when the connection opened (its set-up phases).
    connect_started: Instant,
    connected_at: Instant,
    /// Since when the connection could take another operation (set up, with room under
    /// `depth`): an operation due before then waited for its connection, not for the generator.
    room_since: Instant,
    /// When the socket was last read or polled (an idle connection looks at least twice per
    /// [`ClientCodec::answer_within`]).
    last_look: Instant,
    phase: Phase,
    /// A connection per operation (`--no-keepalive`).
    per_op: bool,
    /// The first connect waits for this instant (`--connect-rate`).
    not_before: Instant,
    /// Which of the run's targets it loads.
    target: usize,
    /// The run's measured window, while it is not yet open (see [`Window`]).
    pending: Option<PendingWindow>,
    /// This connection told the window it is set up (or failed its first try).
    settled: bool,
    /// The engine wakes this connection when the window opens, and when its core's last
    /// measured operation in flight after the run's end has ended (it need not look).
    woken_by_engine: bool,
    /// A paced schedule's operations that came due and were not sent by the run's end have
    /// been counted ([`CoreRecorder::due_unsent`]).
    schedule_closed: bool,
}

/// A window not yet open, and how the budget follows from its opening.
struct PendingWindow {
    window: std::sync::Arc<Window>,
    start: Instant,
    /// When the connect rate says the last connection opens, and the deadline if the window
    /// opened then: what bounds reads and writes issued before it opens.
    expected_open: Instant,
    expected_deadline: Instant,
    warmup: Duration,
    duration: Duration,
}

impl<C: ClientCodec> Conn<C> {
    pub fn new(
        prototype: &C,
        pacer: Pacer,
        budget: Budget,
        depth: usize,
        timeout: Duration,
        seed: u64,
    ) -> Self {
        let mut codec = prototype.clone();
        codec.seed(seed);
        let mut conn = Conn {
            prototype: prototype.clone(),
            codec,
            pacer,
            budget,
            depth,
            timeout,
            recv: RecvBuf::new(),
            send: Vec::new(),
            sent_off: 0,
            send_classes: VecDeque::new(),
            tls: None,
            session: None,
            unread: 0,
            control: Vec::new(),
            inflight: VecDeque::with_capacity(depth),
            unwritten: 0,
            measured_inflight: 0,
            answered: 0,
            life: Life::default(),
            futile: 0,
            seed,
            lives: 0,
            next_beat: None,
            last_rx: budget.measure_from,
            last_look: budget.measure_from,
            connect_started: budget.measure_from,
            connected_at: budget.measure_from,
            room_since: budget.measure_from,
            phase: if budget.ops == Some(0) { Phase::Done } else { Phase::Idle },
            per_op: false,
            not_before: budget.measure_from,
            target: 0,
            pending: None,
            settled: false,
            woken_by_engine: false,
            full_timeout_until: None,
            schedule_closed: false,
        };
        conn.bound_timeouts();
        conn
    }

    /// Speak TLS with the target ([`crate::tls`]), from the connect or when the protocol asks.
    pub fn with_tls(mut self, tls: Option<Arc<ClientTls>>) -> Self {
        self.tls = tls;
        self
    }

    /// Load target `target` of the run's (their addresses are the engine's).
    pub fn on_target(mut self, target: usize) -> Self {
        self.target = target;
        self
    }

    /// Which of the run's targets it loads.
    pub fn target(&self) -> usize {
        self.target
    }

    /// Open the first connection no earlier than `at` (`--connect-rate`).
    pub fn first_connect_at(mut self, at: Instant) -> Self {
        self.not_before = at;
        self
    }

    /// Measure from when `window` opens (every connection set up) plus `warmup`, for
    /// `duration`; until then every operation is warm-up.
    pub fn measured_once_set_up(
        mut self,
        window: std::sync::Arc<Window>,
        (start, expected_open): (Instant, Instant),
        warmup: Duration,
        duration: Duration,
    ) -> Self {
        // Far enough never to come while the window is shut: it opens within its own bound.
        let never = start + Duration::from_secs(365 * 86_400);
        self.budget.measure_from = never;
        self.budget.deadline = never;
        let expected_deadline = expected_open + warmup + duration;
        self.pending =
            Some(PendingWindow { window, start, expected_open, expected_deadline, warmup, duration });
        self.bound_timeouts();
        self
    }

    /// The engine wakes this connection when the window opens: while it waits it looks only
    /// once a second (a safety net), not at the others' pace — with tens of thousands of
    /// connections waiting, looking costs more than the set-ups it waits for. And at the end
    /// of a timed run it says its goodbye only once no measured operation of its core is in
    /// flight ([`Conn::next`] lingers; the engine wakes it when the last one has ended), so
    /// that a million goodbyes and closes do not crowd the run's last answers: on loopback a
    /// burst of them overflows the kernel's backlog, and an answer caught in it is
    /// retransmitted hundreds of milliseconds, or seconds, later.
    pub fn woken_by_the_engine(mut self) -> Self {
        self.woken_by_engine = true;
        self
    }

    /// Start the receive buffer small (it grows for larger messages): for an engine that
    /// copies what arrived into it rather than reading into it, where thousands of
    /// connections handshaking at once would otherwise each hold a 4 KiB buffer.
    pub fn small_receive_buffer(mut self) -> Self {
        self.recv = RecvBuf::bounded(SMALL_RECV_BUF, crate::recv::RECV_BUF_MAX);
        self
    }

    /// Once the window opened, the budget is known.
    fn refresh_window(&mut self, now: Instant) {
        if let Some(p) = &self.pending
            && let Some(opened) = p.window.opened(now, p.start)
        {
            self.pacer.start(opened);
            self.budget.measure_from = opened + p.warmup;
            self.budget.deadline = self.budget.measure_from + p.duration;
            self.pending = None;
            self.bound_timeouts();
        }
    }

    /// Set-ups are timed in the measured window, and before it while it waits for them
    /// (not during a warm-up).
    fn timing_set_up(&self, now: Instant) -> bool {
        self.pending.is_some() || now >= self.budget.measure_from
    }

    /// Tell the window this connection is set up or failed its first try (once).
    fn settle(&mut self, now: Instant) {
        if !self.settled {
            self.settled = true;
            if let Some(p) = &self.pending {
                p.window.settle(now);
            }
        }
    }

    /// Open a connection per operation: connect, set up, one operation, close; the connect
    /// waits for the operation's time and is timed as part of it.
    pub fn one_op_per_connection(mut self) -> Self {
        self.per_op = true;
        self
    }

    /// No new operation may be sent (deadline, quota or Ctrl-C).
    fn stopped(&self, now: Instant, stopping: bool) -> bool {
        now >= self.budget.deadline
            || stopping
            || self.budget.ops.is_some_and(|n| self.answered + self.measured_inflight >= n)
    }

    /// Done with a timed run while measured operations of its core are still in flight (and
    /// its engine wakes it when they have ended): it waits before its goodbye.
    fn lingers(&self, now: Instant, stopping: bool, rec: &CoreRecorder) -> bool {
        self.woken_by_engine
            && !stopping
            && !self.per_op
            && self.budget.ops.is_none()
            && now >= self.budget.deadline
            && now < self.budget.deadline + DRAIN_LIMIT
            && rec.in_flight() > 0
    }

    /// With a quota, a server that answers nothing ends this connection's work.
    fn gave_up(&self) -> bool {
        self.budget.ops.is_some() && self.futile >= GIVE_UP_AFTER
    }

    /// How long a connect, write or read may take: the run's timeout, but never past
    /// [`DRAIN_LIMIT`] after the run's end, so that a silent server cannot stretch the run.
    /// Before the window opens the deadline is not known: the expected one bounds them, and a
    /// ramp that overran it still gets [`DRAIN_LIMIT`].
    fn io_timeout(&self, now: Instant) -> Duration {
        if self.full_timeout_until.is_some_and(|until| now <= until) {
            return self.timeout;
        }
        let left = match &self.pending {
            None => (self.budget.deadline + DRAIN_LIMIT).saturating_duration_since(now),
            Some(p) => (p.expected_deadline + DRAIN_LIMIT).saturating_duration_since(now).max(DRAIN_LIMIT),
        };
        left.clamp(Duration::from_millis(1), self.timeout)
    }

    /// When [`io_timeout`](Self::io_timeout) starts to cut operations' time short (after the
    /// budget or the window changed): the drain limit's end, less a whole timeout.
    fn bound_timeouts(&mut self) {
        let drain_end = match &self.pending {
            None => self.budget.deadline + DRAIN_LIMIT,
            Some(p) if self.timeout <= DRAIN_LIMIT => p.expected_deadline + DRAIN_LIMIT,
            Some(_) => return self.full_timeout_until = None, // the slow way, then
        };
        self.full_timeout_until = drain_end.checked_sub(self.timeout);
    }

    /// How long a read may wait: [`io_timeout`](Self::io_timeout), and no longer than the
    /// protocol lets the server stay silent.
    fn read_timeout(&self, now: Instant) -> Duration {
        let io = self.io_timeout(now);
        match self.silence_deadline() {
            Some(at) => io.min(at.saturating_duration_since(now).max(Duration::from_millis(1))),
            None => io,
        }
    }

    /// How long a read for an answer may wait: an answer is due within `--timeout` of its
    /// request's send, however it trickles in (each read used to get the whole timeout
    /// afresh, so a server sending a byte a second never timed out).
    fn answer_timeout(&self, now: Instant) -> Duration {
        let read = self.read_timeout(now);
        match self.inflight.front() {
            Some(op) => read
                .min((op.sent + self.timeout).saturating_duration_since(now).max(Duration::from_millis(1))),
            None => read,
        }
    }

    /// How long a read during the set-up may wait: the set-up (the TLS handshake, the
    /// protocol's) must be done within `--timeout` of the connect.
    fn set_up_timeout(&self, now: Instant) -> Duration {
        let left = (self.connected_at + self.timeout).saturating_duration_since(now);
        self.io_timeout(now).min(left.max(Duration::from_millis(1)))
    }

    /// The connection sends no more: a paced schedule's operations that came due before the
    /// run's end (or Ctrl-C) and were never sent are counted, once. wrk2 leaves them out,
    /// and a server that stalls at the end of a run then hides thousands.
    fn close_schedule(&mut self, now: Instant, rec: &mut CoreRecorder) {
        if std::mem::replace(&mut self.schedule_closed, true) || self.pending.is_some() {
            return;
        }
        if self.budget.ops.is_some_and(|n| self.answered + self.measured_inflight >= n) {
            return; // the quota was sent: nothing more was due
        }
        let end = now.min(self.budget.deadline);
        rec.due_unsent += self.pacer.due_before(self.budget.measure_from, end);
    }

    fn silence_deadline(&self) -> Option<Instant> {
        self.codec.silence_limit().map(|limit| self.last_rx + limit)
    }

    /// Bytes to write now.
    pub fn to_write(&self) -> &[u8] {
        &self.send[self.sent_off..]
    }

    /// Where to read into; `None` when a message outgrew the receive limit (the next `next()`
    /// will fail the connection).
    pub fn read_buf(&mut self) -> Option<&mut [u8]> {
        self.in_buf().spare()
    }

    /// Where the socket's bytes land: the TLS session's ciphertext buffer, or the protocol's.
    fn in_buf(&mut self) -> &mut RecvBuf {
        match &mut self.session {
            Some(session) => &mut session.wire_in,
            None => &mut self.recv,
        }
    }

    /// The bytes appended to `send` from `from` on are plaintext of class `traffic`: with TLS,
    /// sealed into records in their place (plaintext and records counted). Returns their length
    /// on the wire.
    fn queue(&mut self, from: usize, traffic: Traffic, rec: &mut CoreRecorder) -> u64 {
        let plain = self.send.len() - from;
        if plain == 0 {
            return 0;
        }
        if let Some(session) = &mut self.session
            && !session.conn.is_handshaking()
        {
            let records = session.seal_tail(&mut self.send, from);
            rec.tls.plain_tx.add(traffic, plain as u64);
            rec.tls.records_tx.add(traffic, records);
        }
        self.tag(from, traffic)
    }

    /// `send[from..]` is of class `traffic` as it is; returns its length.
    fn tag(&mut self, from: usize, traffic: Traffic) -> u64 {
        let len = self.send.len() - from;
        match self.send_classes.back_mut() {
            Some((last, n)) if *last == traffic => *n += len,
            _ if len > 0 => self.send_classes.push_back((traffic, len)),
            _ => {}
        }
        len as u64
    }

    /// Queue what the TLS session has to send (handshake messages, alerts) as `tls` bytes.
    fn flush_tls(&mut self, rec: &mut CoreRecorder) {
        if let Some(session) = &mut self.session {
            let from = self.send.len();
            let records = crate::tls::flush(&mut session.conn, &mut self.send);
            let len = (self.send.len() - from) as u64;
            if session.in_handshake {
                session.handshake_tx += len;
            }
            rec.tls.records_tx.add(Traffic::Tls, records);
            self.tag(from, Traffic::Tls);
        }
    }

    /// Start TLS on this socket: the ClientHello goes out.
    fn start_tls(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let Some(tls) = &self.tls else {
            return self.fail(ErrorClass::Tls, "the protocol asked for TLS, and the URL set up none");
        };
        match ClientSession::new(tls, now) {
            Ok(session) => {
                self.session = Some(Box::new(session));
                self.phase = Phase::Tls;
                self.flush_tls(rec);
            }
            Err(e) => self.fail(ErrorClass::Tls, e.to_string()),
        }
    }

    /// The TLS handshake is over: count it, then the protocol's own set-up (from the connect)
    /// or the rest of it (an upgrade).
    fn tls_established(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let Some(session) = &mut self.session else { return };
        session.in_handshake = false;
        let kind = match session.conn.handshake_kind() {
            Some(rustls::HandshakeKind::Resumed) => &mut rec.tls.resumed,
            _ => &mut rec.tls.full,
        };
        kind.count += 1;
        kind.tx += session.handshake_tx;
        kind.rx += session.handshake_rx;
        let started = session.started;
        if self.timing_set_up(now) {
            rec.phases.tls(now.saturating_duration_since(started));
        }
        if self.tls.as_ref().is_some_and(|t| t.start == TlsStart::AtConnect) {
            self.connected_at = now;
            self.begin_set_up(now, rec);
        } else {
            self.phase = Phase::Handshake;
            // Bytes of the handshake's next step may have come with the last record.
            self.decode_handshake(now, rec);
        }
    }

    /// The wire bytes that carried `plain` consumed bytes.
    fn carried(&mut self, plain: usize) -> Carried {
        match &mut self.session {
            Some(session) => session.carried(plain),
            None => Carried { wire: plain as u64, plain: plain as u64, records: 0 },
        }
    }

    /// Count received bytes the protocol consumed as `traffic` (wire, and with TLS plaintext
    /// and records).
    fn count_rx(&self, traffic: Traffic, c: Carried, rec: &mut CoreRecorder) {
        rec.rx.add(traffic, c.wire);
        if self.session.is_some() {
            rec.tls.plain_rx.add(traffic, c.plain);
            rec.tls.records_rx.add(traffic, c.records);
        }
    }

    /// Bytes the application has read on the current socket (the audit compares them).
    pub fn socket_rx(&self) -> u64 {
        self.life.rx
    }

    fn close(&mut self, end: End) {
        self.phase = Phase::Closing(end);
    }

    fn fail(&mut self, class: ErrorClass, message: impl Into<String>) {
        self.close(End::Failed(class, message.into()));
    }

    /// What to do next; `stopping` is Ctrl-C (no new operation; drain, close).
    pub fn next(&mut self, now: Instant, stopping: bool, rec: &mut CoreRecorder) -> Want {
        self.refresh_window(now);
        loop {
            match &self.phase {
                Phase::Done => return Want::Done,
                // Replies queued before closing (a WebSocket close's echo) go out first.
                Phase::Closing(_) if self.sent_off < self.send.len() => {
                    return Want::Write(self.io_timeout(now));
                }
                Phase::Closing(_) => return Want::Close,
                Phase::Idle | Phase::Retry(_) if self.stopped(now, stopping) || self.gave_up() => {
                    if self.gave_up() {
                        rec.sample(|| format!("gave up: {GIVE_UP_AFTER} connections in a row got no answer"));
                    }
                    self.close_schedule(now, rec);
                    self.phase = Phase::Done;
                    return Want::Done;
                }
                Phase::Retry(at) if now < *at => return Want::Sleep(*at),
                Phase::Idle if self.lives == 0 && now < self.not_before => {
                    return Want::Sleep(self.not_before);
                }
                // A connection per operation opens when its operation is due.
                Phase::Idle if self.per_op && self.pacer.due(now) > now => {
                    return Want::Sleep(self.pacer.due(now));
                }
                Phase::Idle | Phase::Retry(_) => {
                    self.phase = Phase::Connecting;
                    self.connect_started = now;
                    return Want::Connect(self.io_timeout(now));
                }
                Phase::Connecting => return Want::Connect(self.io_timeout(now)),
                _ if self.sent_off < self.send.len() => return Want::Write(self.io_timeout(now)),
                Phase::Tls => return Want::Read(self.set_up_timeout(now)),
                Phase::Salvage(_) => return Want::Read(SALVAGE_WAIT),
                Phase::Goodbye(_) => return Want::Read(GOODBYE_WAIT.min(self.io_timeout(now))),
                Phase::Handshake => return Want::Read(self.set_up_timeout(now)),
                Phase::Running => {}
            }
            // An idle connection looks at its socket before it sends again: a server that
            // closed it meanwhile (its idle timeout) is a reconnect, not a failed operation.
            if self.inflight.is_empty()
                && now >= self.last_look + LOOK_BEFORE_SENDING_AFTER
                && !self.stopped(now, stopping)
                && self.pending.is_none()
                && self.pacer.due(now) <= now
            {
                self.last_look = now;
                return Want::Poll;
            }
            // The protocol's own heartbeat goes out when due, between batches.
            if let (Some(due), Some(interval)) = (self.next_beat, self.codec.heartbeat_interval())
                && now >= due
                && !self.stopped(now, stopping)
            {
                self.clear_send();
                self.codec.heartbeat(&mut self.send);
                self.queue(0, Traffic::Control, rec);
                self.next_beat = Some(now.max(due) + interval);
                if !self.send.is_empty() {
                    return Want::Write(self.io_timeout(now));
                }
            }
            // Running, nothing left to write: send what the workload allows, one batch per
            // write. A batch holds operations of one traffic class only (warm-up or measured).
            self.clear_send();
            let mut batch = None;
            while self.inflight.len() < self.depth
                && self.pending.is_none()
                && !self.stopped(now, stopping)
                && !(self.per_op && self.life.ops_sent > 0)
            {
                // With a connection per operation, its time began before the connect.
                let due = self.pacer.due(now);
                let intended = if self.per_op { due.min(self.connect_started) } else { due };
                if intended > now {
                    break; // paced workloads: not yet due
                }
                let traffic =
                    if intended < self.budget.measure_from { Traffic::WarmupOp } else { Traffic::Op };
                if batch.is_some_and(|t| t != traffic) {
                    break;
                }
                batch = Some(traffic);
                if traffic == Traffic::Op && self.pacer.paced() {
                    if self.room_since <= intended {
                        let start = if self.per_op { self.connect_started } else { now };
                        rec.record_lag(start.saturating_duration_since(intended));
                    } else {
                        rec.due_while_busy += 1;
                    }
                }
                self.pacer.taken();
                self.life.ops_sent += 1;
                let before = self.send.len();
                self.codec.encode_op(&mut self.send);
                let plain = (self.send.len() - before) as u64;
                // With TLS, a record per operation.
                let tx_len = self.queue(before, traffic, rec);
                self.inflight.push_back(InFlight {
                    intended,
                    sent: now,
                    traffic,
                    tx_len,
                    tx_plain: if self.session.is_some() { plain } else { 0 },
                    rx_plain: 0,
                    tx_written: 0,
                    rx: 0,
                    written: None,
                    first_byte: None,
                });
                if traffic == Traffic::Op {
                    self.measured_inflight += 1;
                    rec.sent += 1;
                    rec.target_sent(self.target);
                }
            }
            if batch.is_some() {
                return Want::Write(self.io_timeout(now));
            }
            if !self.inflight.is_empty() {
                return Want::Read(self.answer_timeout(now));
            }
            if self.stopped(now, stopping) {
                self.close_schedule(now, rec);
            }
            if self.stopped(now, stopping) || (self.per_op && self.life.ops_sent > 0) {
                // A timed run's end: the core's last answers first (see `woken_by_the_engine`);
                // they end within DRAIN_LIMIT, answered or timed out.
                if self.lingers(now, stopping, rec) {
                    return Want::Sleep(self.budget.deadline + DRAIN_LIMIT);
                }
                // Say goodbye if the protocol has one, else close (a connection per operation:
                // then the next one opens).
                let awaited = self.codec.goodbye(&mut self.send);
                self.queue(0, Traffic::Control, rec);
                // TLS says goodbye too (`close_notify`), after the protocol's.
                if let Some(session) = &mut self.session {
                    session.conn.send_close_notify();
                    self.flush_tls(rec);
                }
                if awaited {
                    self.phase = Phase::Goodbye(0);
                } else {
                    self.close(End::Done);
                }
                continue;
            }
            // Nothing in flight and nothing due yet (a paced workload): wait for its time, or
            // for the protocol's next heartbeat, looking at the socket meanwhile as often as
            // the server's unprompted messages need an answer.
            // A connection set up before the others waits for the window: until the last one
            // is expected, then as often as the others' pace of settling says.
            let due = match &self.pending {
                Some(p) if self.woken_by_engine => p.expected_open.max(now + WINDOW_SAFETY_NET),
                Some(p) => p.expected_open.max(now + p.window.recheck_in(now, p.start)),
                None => self.pacer.due(now),
            };
            let wake = self.next_beat.map_or(due, |beat| beat.min(due)).min(self.budget.deadline);
            if wake <= now {
                return Want::Read(self.read_timeout(now));
            }
            // (Waiting for the window counts as idle: the others may take long to set up.)
            if self.pending.is_some() || wake.saturating_duration_since(now) >= IDLE_RELEASE {
                self.release_buffers();
            }
            let every = |within: Duration| (within / 2).max(MIN_LOOK_EVERY);
            return match self.codec.answer_within().map(|within| self.last_look + every(within)) {
                Some(look) if look <= now => {
                    self.last_look = now;
                    Want::Poll
                }
                Some(look) => Want::Sleep(wake.min(look)),
                None => Want::Sleep(wake),
            };
        }
    }

    pub fn connected(&mut self, now: Instant, rec: &mut CoreRecorder) {
        rec.connects += 1;
        if self.timing_set_up(now) {
            rec.phases.connect(now.saturating_duration_since(self.connect_started));
        }
        self.connected_at = now;
        self.life = Life::default();
        self.last_rx = now;
        self.last_look = now;
        self.clear_send();
        self.session = None;
        if self.tls.as_ref().is_some_and(|t| t.start == TlsStart::AtConnect) {
            return self.start_tls(now, rec);
        }
        self.begin_set_up(now, rec);
    }

    /// An idle connection holds no buffer: a push-style load of many mostly silent connections
    /// costs little more than their state (an engine that reads with provided buffers, as
    /// `uring` does, needs none to wait for an answer either).
    fn release_buffers(&mut self) {
        if self.sent_off >= self.send.len() {
            self.send = Vec::new();
            self.send_classes = VecDeque::new();
        }
        self.control = Vec::new();
        if self.unread == 0 {
            self.recv.release();
            if let Some(session) = &mut self.session {
                session.wire_in.release();
            }
        }
    }

    fn clear_send(&mut self) {
        self.send.clear();
        self.sent_off = 0;
        self.send_classes.clear();
    }

    /// The protocol's set-up: its handshake goes out (or it has none, and runs at once).
    fn begin_set_up(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let from = self.send.len();
        self.codec.handshake(&mut self.send);
        let written = self.queue(from, Traffic::Handshake, rec);
        self.phase = Phase::Handshake;
        if written == 0 {
            self.phase = Phase::Running;
            self.set_up(now);
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
        rec.conn_error(class, || format!("connect: {}", io_text(error)));
        self.settle(now);
        self.futile += 1;
        self.phase = Phase::Retry(now + RETRY_PAUSE);
    }

    pub fn wrote(&mut self, n: usize, now: Instant, rec: &mut CoreRecorder) {
        if n == 0 {
            return self
                .write_failed(&std::io::Error::new(std::io::ErrorKind::WriteZero, "wrote 0 bytes"), rec);
        }
        self.life.tx += n as u64;
        let mut left = n;
        while left > 0
            && let Some((traffic, len)) = self.send_classes.front_mut()
        {
            let take = left.min(*len);
            let traffic = *traffic;
            rec.tx.add(traffic, take as u64);
            *len -= take;
            left -= take;
            if *len == 0 {
                self.send_classes.pop_front();
            }
            if matches!(traffic, Traffic::Op | Traffic::WarmupOp) {
                self.attribute_written(take as u64, now);
            }
        }
        // Bytes the classes did not cover (none, unless a bug): counted, as control.
        rec.tx.add(Traffic::Control, left as u64);
        self.sent_off += n;
        if self.sent_off >= self.send.len() {
            self.clear_send();
        }
    }

    /// Which operations `n` written bytes belong to, for when one of them fails.
    fn attribute_written(&mut self, n: u64, now: Instant) {
        let mut left = n;
        while left > 0
            && let Some(op) = self.inflight.get_mut(self.unwritten)
        {
            let take = left.min(op.tx_len - op.tx_written);
            op.tx_written += take;
            left -= take;
            if op.tx_written == op.tx_len {
                op.written = Some(now);
                self.unwritten += 1;
            }
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
        self.clear_send();
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
        let silent = timed_out && self.silence_deadline().is_some_and(|at| Instant::now() >= at);
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
            _ if timed_out => End::Failed(ErrorClass::Timeout, "no response within the timeout".into()),
            _ => End::Failed(ErrorClass::Read, io_text(error)),
        };
        self.close(end);
    }

    /// A [`Want::Poll`] found nothing to read.
    pub fn polled(&mut self, now: Instant) {
        self.last_look = now;
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
    fn fill(&mut self, n: usize) {
        self.in_buf().filled(n);
        self.count_in(n);
    }

    /// `n` bytes came off the socket into the receive buffer, not decoded yet.
    fn count_in(&mut self, n: usize) {
        self.life.rx += n as u64;
        self.unread += n;
    }

    /// Bytes that came before the machine asked for them (an engine whose receive is always
    /// armed: multishot): kept, and decoded at the next [`take_arrived`](Self::take_arrived)
    /// — never while a write may still be reading the send buffer. `false`: past the
    /// receive limit (what fitted was kept).
    pub fn arrived(&mut self, data: &[u8]) -> bool {
        let n = self.in_buf().append(data);
        self.count_in(n);
        n == data.len()
    }

    /// Bytes arrived that are not decoded yet.
    pub fn has_arrived(&self) -> bool {
        self.unread > 0
    }

    /// Decode what arrived (by [`read`](Self::read) or [`arrived`](Self::arrived)).
    pub fn take_arrived(&mut self, now: Instant, rec: &mut CoreRecorder) {
        if std::mem::take(&mut self.unread) == 0 {
            return;
        }
        self.last_rx = now;
        self.last_look = now;
        if let Some(session) = &mut self.session {
            match session.received(&mut self.recv) {
                Ok(opened) => {
                    rec.rx.add(Traffic::Tls, opened.tls_bytes);
                    rec.tls.records_rx.add(Traffic::Tls, opened.tls_records);
                    self.flush_tls(rec);
                    if opened.plain > 0 {
                        self.first_byte(now);
                    }
                }
                Err(e) => {
                    let class = if self.phase == Phase::Tls { "TLS handshake" } else { "TLS" };
                    return self.fail(ErrorClass::Tls, format!("{class}: {e}"));
                }
            }
            if self.phase == Phase::Tls {
                if !self.session.as_ref().is_some_and(|s| s.conn.is_handshaking()) {
                    self.tls_established(now, rec);
                }
                return;
            }
        } else {
            self.first_byte(now);
        }
        match self.phase.clone() {
            Phase::Handshake => self.decode_handshake(now, rec),
            Phase::Running => {
                self.decode_ops(now, rec);
            }
            Phase::Salvage(end) => {
                self.phase = Phase::Running;
                let answered = self.decode_ops(now, rec);
                if self.phase == Phase::Running {
                    // Only an answer to an operation explains the failed write (a heartbeat
                    // that happened to arrive does not).
                    self.close(if answered > 0 { End::PeerClosed } else { end });
                }
            }
            Phase::Goodbye(reads) => {
                while let Ok(Decoded::Done { consumed, .. }) =
                    self.codec.decode_op(self.recv.data(), &mut self.control)
                {
                    if consumed == 0 {
                        break; // a decoder that makes no progress must not spin us
                    }
                    self.recv.consume(consumed);
                    let carried = self.carried(consumed);
                    self.count_rx(Traffic::Control, carried, rec);
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

    /// `n` bytes arrived in `read_buf()` after the connection had given up on its read (an
    /// engine that could not cancel the read in time): kept undecoded, counted when it closes.
    pub fn read_after_giving_up(&mut self, n: usize) {
        self.fill(n);
        self.unread = 0;
    }

    fn eof(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let end = match self.phase.clone() {
            Phase::Salvage(end) => end,
            Phase::Goodbye(_) => End::Done,
            Phase::Handshake => End::Failed(ErrorClass::Closed, "server closed during the handshake".into()),
            _ => match self.codec.decode_eof(self.recv.data()) {
                Ok(Decoded::Done { consumed, outcome }) => match self.complete(consumed, outcome, now, rec) {
                    Ok(()) => End::PeerClosed,
                    Err(end) => end,
                },
                Ok(Decoded::Partial) if self.inflight.is_empty() && self.recv.data().is_empty() => {
                    End::PeerClosed
                }
                Ok(Decoded::Partial) => End::Failed(
                    ErrorClass::Closed,
                    "server closed the connection with operations in flight".into(),
                ),
                // Cut off in the middle of an answer: the peer closed on it.
                Err(e @ crate::proto::ProtoError::TruncatedResponse) => {
                    End::Failed(ErrorClass::Closed, e.to_string())
                }
                Err(e) => End::Failed(ErrorClass::Protocol, e.to_string()),
            },
        };
        self.close(end);
    }

    /// A codec's error, with the detail it may have kept (a server's own words).
    fn error_text(&self, e: crate::proto::ProtoError) -> String {
        match self.codec.error_detail() {
            Some(detail) => format!("{e}: {detail}"),
            None => e.to_string(),
        }
    }

    /// Decode the handshake's answers; a step that goes on may queue a reply (handshake bytes).
    fn decode_handshake(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let mut reply = Vec::new();
        loop {
            match self.codec.decode_handshake(self.recv.data(), &mut reply) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed, outcome: Outcome::Handshaking }) => {
                    if consumed == 0 {
                        return self
                            .fail(ErrorClass::Protocol, "the handshake made no progress (a wirebench bug)");
                    }
                    self.recv.consume(consumed);
                    let carried = self.carried(consumed);
                    self.count_rx(Traffic::Handshake, carried, rec);
                    if self.codec.start_tls() && self.session.is_none() {
                        // The upgrade: this step's reply (if any) in plaintext, then TLS.
                        let from = self.send.len();
                        self.send.extend_from_slice(&reply);
                        self.tag(from, Traffic::Handshake);
                        return self.start_tls(now, rec);
                    }
                }
                Ok(Decoded::Done { consumed, .. }) => {
                    self.recv.consume(consumed);
                    let carried = self.carried(consumed);
                    self.count_rx(Traffic::Handshake, carried, rec);
                    if self.timing_set_up(now) {
                        rec.phases.handshake(now.saturating_duration_since(self.connected_at));
                    }
                    self.phase = Phase::Running;
                    self.set_up(now);
                    self.next_beat = self.codec.heartbeat_interval().map(|i| now + i);
                    break;
                }
                Err(e) => {
                    let text = self.error_text(e);
                    let class = if e == crate::proto::ProtoError::TlsRefused {
                        ErrorClass::Tls
                    } else {
                        ErrorClass::Protocol
                    };
                    return self.fail(class, format!("handshake: {text}"));
                }
            }
        }
        if !reply.is_empty() {
            let from = self.send.len();
            self.send.extend_from_slice(&reply);
            self.queue(from, Traffic::Handshake, rec);
        }
    }

    /// Decode every whole message; queue the codec's control replies; returns how many
    /// operations were answered.
    fn decode_ops(&mut self, now: Instant, rec: &mut CoreRecorder) -> usize {
        let mut answered = 0;
        self.control.clear();
        loop {
            match self.codec.decode_op(self.recv.data(), &mut self.control) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed: 0, .. }) => {
                    self.fail(ErrorClass::Protocol, "the decoder made no progress (a wirebench bug)");
                    return answered;
                }
                Ok(Decoded::Done { consumed, outcome }) => {
                    answered += usize::from(matches!(outcome, Outcome::Op | Outcome::OpFailed(_)));
                    if let Err(end) = self.complete(consumed, outcome, now, rec) {
                        self.close(end);
                        return answered;
                    }
                    if self.codec.peer_closing() {
                        break;
                    }
                }
                Err(e) => {
                    let text = self.error_text(e);
                    self.fail(ErrorClass::Protocol, text);
                    return answered;
                }
            }
        }
        // Bytes of the next answer already here: its first byte came with this read.
        if !self.recv.data().is_empty() {
            self.first_byte(now);
        }
        if self.codec.peer_closing() {
            // The replies (a WebSocket close's echo) are flushed first, best effort.
            self.close(End::PeerClosed);
        }
        if !self.control.is_empty() {
            let from = self.send.len();
            self.send.extend_from_slice(&self.control);
            self.control.clear();
            self.queue(from, Traffic::Control, rec);
        }
        answered
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
        let carried = self.carried(consumed);
        let no_request = || End::Failed(ErrorClass::Protocol, "response with no request in flight".into());
        match outcome {
            Outcome::Control | Outcome::Handshaking => {
                self.count_rx(Traffic::Control, carried, rec);
                Ok(())
            }
            Outcome::OpPart => {
                let Some(op) = self.inflight.front_mut() else {
                    self.count_rx(Traffic::Control, carried, rec);
                    return Err(no_request());
                };
                op.rx += carried.wire;
                op.rx_plain += if self.session.is_some() { carried.plain } else { 0 };
                let traffic = op.traffic;
                self.count_rx(traffic, carried, rec);
                Ok(())
            }
            Outcome::Op | Outcome::OpFailed(_) => {
                let Some(op) = self.inflight.pop_front() else {
                    self.count_rx(Traffic::Control, carried, rec);
                    return Err(no_request());
                };
                if self.inflight.len() + 1 == self.depth {
                    self.room_since = now;
                }
                self.unwritten = self.unwritten.saturating_sub(1);
                self.life.answered = true;
                self.futile = 0;
                if op.traffic != Traffic::Op {
                    self.count_rx(op.traffic, carried, rec);
                    return Ok(());
                }
                self.measured_inflight -= 1;
                self.answered += 1;
                if let Some(answer) = self.codec.answer() {
                    rec.answered(answer);
                }
                match outcome {
                    Outcome::OpFailed(failure) => {
                        self.count_rx(Traffic::Failed, carried, rec);
                        Self::file_as_failed(&op, rec);
                        rec.refused(failure);
                        rec.series_errors(self.budget.measure_from, now, 1);
                    }
                    _ => {
                        self.count_rx(Traffic::Op, carried, rec);
                        rec.ops += 1;
                        let ns = now.nanos_since(op.intended);
                        rec.record_latency(ns);
                        rec.target_completed(self.target, ns);
                        rec.series_op(self.budget.measure_from, now, ns);
                        let waiting =
                            op.written.map(|w| op.first_byte.unwrap_or(now).saturating_duration_since(w));
                        rec.record_phases(now.saturating_duration_since(op.sent), waiting);
                        if self.pacer.paced() {
                            rec.record_uncorrected(now.nanos_since(op.sent));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The connection is set up: it has room from now (a connection per operation had it
    /// since its last one closed; its own set-up is part of its operation's time).
    fn set_up(&mut self, now: Instant) {
        self.settle(now);
        if !self.per_op {
            self.room_since = now;
        }
    }

    /// Bytes arrived for the oldest operation in flight: the first byte of its answer, unless
    /// an earlier read brought it.
    fn first_byte(&mut self, now: Instant) {
        if let Some(op) = self.inflight.front_mut()
            && op.first_byte.is_none()
        {
            op.first_byte = Some(now);
        }
    }

    /// A measured operation failed: what it wrote and read so far is `failed` traffic.
    fn file_as_failed(op: &InFlight, rec: &mut CoreRecorder) {
        rec.tx.move_bytes(Traffic::Op, Traffic::Failed, op.tx_written);
        rec.rx.move_bytes(Traffic::Op, Traffic::Failed, op.rx);
        rec.tls.plain_tx.move_bytes(Traffic::Op, Traffic::Failed, op.tx_plain);
        rec.tls.plain_rx.move_bytes(Traffic::Op, Traffic::Failed, op.rx_plain);
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
        for op in self.inflight.drain(..) {
            if op.traffic == Traffic::Op {
                Self::file_as_failed(&op, rec);
                lost += 1;
            }
        }
        rec.ops_failed(class, lost);
        rec.series_errors(self.budget.measure_from, now, lost);
        if lost > 0 && class == ErrorClass::Closed {
            rec.sample(|| "closed: the server closed the connection with operations in flight".into());
        }
        // Bytes that never made a whole message: part of a lost answer, or control.
        let leftover_class = if lost > 0 { Traffic::Failed } else { Traffic::Control };
        let plain_left = self.recv.reset() as u64;
        let leftover = match self.session.take() {
            Some(mut session) => {
                rec.tls.plain_rx.add(leftover_class, plain_left);
                session.leftover()
            }
            None => plain_left,
        } + drained;
        rec.rx.add(leftover_class, leftover);
        self.life.rx += drained;
        if let Some(audit) = audit {
            rec.audit.add(self.life.tx, self.life.rx, audit);
        }
        if !self.life.answered {
            self.futile += 1;
        }
        // A connection per operation that carried its operation ends as planned, whoever
        // closed it (the server may, after `Connection: close`).
        // A first try that ended before its set-up was done (a refused upgrade, a server that
        // closed) counts as settled: the window does not wait for its retries.
        self.settle(now);
        let cycled = self.per_op && lost == 0 && self.life.ops_sent > 0;
        if cycled {
            self.room_since = now;
        }
        self.life = Life::default();
        self.next_beat = None;
        self.measured_inflight = 0;
        self.unwritten = 0;
        self.unread = 0;
        self.clear_send();
        self.control.clear();
        if let Some(code) = self.codec.close_code() {
            rec.answers.add(crate::outcome::Answer::Close(code), 1);
        }
        self.codec = self.prototype.clone();
        self.lives += 1;
        self.codec.seed(self.seed ^ self.lives.wrapping_mul(SEED_STEP));
        self.phase = match end {
            End::Done | End::PeerClosed if cycled => Phase::Idle,
            End::Done => Phase::Done,
            End::PeerClosed => {
                rec.reconnects += 1;
                Phase::Idle
            }
            End::Failed(class, message) => {
                rec.conn_error(class, || message);
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
    use crate::outcome::Failure;
    use crate::proto::http1::{Http1Client, RequestSpec};
    use crate::proto::{Decoded, ProtoError};
    use crate::stats::KernelSocket;
    use crate::workload::Workload;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
    const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nOK";
    /// The request every test connection sends, spelled out.
    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";

    fn conn_with<C: ClientCodec>(codec: &C, ops: Option<u64>, depth: usize) -> (Conn<C>, Instant) {
        let now = Instant::now();
        let budget = Budget { ops, deadline: now + Duration::from_secs(60), measure_from: now };
        let c = Conn::new(codec, Workload::ClosedLoop.pacer(0, 1), budget, depth, Duration::from_secs(1), 0);
        (c, now)
    }

    #[test]
    fn operations_get_the_whole_timeout_until_the_run_end_cuts_it_short() {
        // Deadline at 60 s, a drain limit of 1 s after it, a timeout of 1 s.
        let (c, now) = conn(10, 1);
        let at = |s: f64| c.io_timeout(now + Duration::from_secs_f64(s));
        assert_eq!(at(0.0), Duration::from_secs(1));
        assert_eq!(at(60.0), Duration::from_secs(1), "1 s left of the drain limit");
        assert_eq!(at(60.5), Duration::from_millis(500));
        assert_eq!(at(61.0), Duration::from_millis(1), "never 0: an operation needs some time");
        assert_eq!(at(90.0), Duration::from_millis(1));
    }

    /// The client every test connection uses: `GET /` to host `h`.
    fn get() -> Http1Client {
        let spec = RequestSpec {
            method: "GET".into(),
            host: "h".into(),
            target: "/".into(),
            headers: vec![],
            body: vec![],
        };
        Http1Client::new(&spec)
    }

    fn conn(ops: u64, depth: usize) -> (Conn<Http1Client>, Instant) {
        conn_with(&get(), Some(ops), depth)
    }

    /// Feed `data` as if the socket had read it.
    fn feed<C: ClientCodec>(c: &mut Conn<C>, data: &[u8], rec: &mut CoreRecorder) {
        c.read_buf().unwrap()[..data.len()].copy_from_slice(data);
        c.read(data.len(), Instant::now(), rec);
    }

    /// Close as an engine would, with a kernel that agrees with the app.
    fn close<C: ClientCodec>(c: &mut Conn<C>, tx: u64, now: Instant, rec: &mut CoreRecorder) {
        let rx = c.socket_rx();
        c.closed(0, Some(Ok(KernelSocket { tx, rx, ..Default::default() })), now, rec);
    }

    fn write_all<C: ClientCodec>(c: &mut Conn<C>, now: Instant, rec: &mut CoreRecorder) -> usize {
        assert!(matches!(c.next(now, false, rec), Want::Write(_)));
        let n = c.to_write().len();
        c.wrote(n, Instant::now(), rec);
        n
    }

    #[test]
    fn a_pipelined_exchange_without_sockets() {
        let (mut c, now) = conn(4, 2);
        let mut rec = CoreRecorder::new(0);
        assert_eq!(c.next(now, false, &mut rec), Want::Connect(Duration::from_secs(1)));
        c.connected(now, &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Write(Duration::from_secs(1)));
        assert_eq!(c.to_write(), [GET, GET].concat());
        c.wrote(2 * GET.len(), now, &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Read(Duration::from_secs(1)));
        // Both responses in one read, the second split.
        feed(&mut c, &[OK, &OK[..5]].concat(), &mut rec);
        assert_eq!(rec.ops, 1);
        assert_eq!(write_all(&mut c, now, &mut rec), GET.len()); // a slot freed: one more request
        feed(&mut c, &[&OK[5..], OK].concat(), &mut rec);
        assert_eq!(write_all(&mut c, now, &mut rec), GET.len());
        feed(&mut c, OK, &mut rec);
        assert_eq!(rec.ops, 4);
        assert_eq!(c.next(now, false, &mut rec), Want::Close); // quota met: close
        close(&mut c, 4 * GET.len() as u64, now, &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Done);
        assert_eq!((rec.sent, rec.failed.total()), (4, 0));
        assert_eq!((rec.tx.op, rec.rx.op), (4 * GET.len() as u64, 4 * OK.len() as u64));
        assert!(rec.audit.matches());
    }

    /// The issue's first reproduction, without sockets: depth 4 and a server that answers the
    /// first request with `Connection: close`. Each connection completes one operation and
    /// loses three; `-n 10` still means 10 completed, and every lost one is counted.
    #[test]
    fn operations_lost_to_a_close_are_counted_and_n_means_completed() {
        let (mut c, mut now) = conn(10, 4);
        let mut rec = CoreRecorder::new(0);
        for life in 0..10 {
            assert!(matches!(c.next(now, false, &mut rec), Want::Connect(_)), "life {life}");
            c.connected(now, &mut rec);
            let written = write_all(&mut c, now, &mut rec);
            feed(&mut c, OK_CLOSE, &mut rec);
            assert_eq!(c.next(now, false, &mut rec), Want::Close);
            close(&mut c, written as u64, now, &mut rec);
            now += Duration::from_millis(1);
        }
        assert_eq!(c.next(now, false, &mut rec), Want::Done);
        assert_eq!(rec.ops, 10);
        assert_eq!(rec.failed.get(ErrorClass::Closed), rec.sent - 10);
        assert!(rec.sent > 10);
        assert_eq!(rec.sent, rec.ops + rec.failed.total());
        assert_eq!(rec.conn_errors.total(), 0, "a server may close; that is no connection error");
        // Per-operation bytes are those of the completed operations only.
        assert_eq!(rec.tx.op, 10 * GET.len() as u64);
        assert_eq!(rec.rx.op, 10 * OK_CLOSE.len() as u64);
        assert_eq!(rec.tx.failed, (rec.sent - 10) * GET.len() as u64);
        assert!(rec.audit.matches());
    }

    #[test]
    fn a_reset_fails_every_operation_in_flight_and_the_connection_once() {
        let (mut c, now) = conn(10, 3);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        write_all(&mut c, now, &mut rec);
        c.read_failed(&std::io::ErrorKind::ConnectionReset.into(), &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, 3 * GET.len() as u64, now, &mut rec);
        assert_eq!(rec.failed.get(ErrorClass::Read), 3);
        assert_eq!(rec.conn_errors.get(ErrorClass::Read), 1);
        assert_eq!(c.next(now, false, &mut rec), Want::Sleep(now + RETRY_PAUSE));
        assert!(matches!(c.next(now + RETRY_PAUSE, false, &mut rec), Want::Connect(_)));
        c.connect_failed(&std::io::ErrorKind::ConnectionRefused.into(), now, &mut rec);
        assert_eq!(c.next(now + RETRY_PAUSE, true, &mut rec), Want::Done, "Ctrl-C ends the retries");
        assert_eq!(rec.conn_errors.get(ErrorClass::Connect), 1);
        assert_eq!(rec.sent, rec.ops + rec.failed.total());
    }

    #[test]
    fn eof_with_operations_in_flight_fails_them_as_closed() {
        let (mut c, now) = conn(10, 2);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        write_all(&mut c, now, &mut rec);
        feed(&mut c, &OK[..10], &mut rec);
        c.read(0, now, &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, 2 * GET.len() as u64, now, &mut rec);
        assert_eq!(rec.failed.get(ErrorClass::Closed), 2);
        assert_eq!(rec.conn_errors.get(ErrorClass::Closed), 1);
        assert_eq!(rec.rx.failed, 10, "the partial answer is a failed operation's");
        assert_eq!(rec.rx.op + rec.tx.op, 0);
    }

    #[test]
    fn a_failed_write_reads_the_servers_last_words() {
        let (mut c, now) = conn(10, 1);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        c.next(now, false, &mut rec);
        c.write_failed(&std::io::ErrorKind::BrokenPipe.into(), &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Read(SALVAGE_WAIT));
        feed(&mut c, b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n", &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, 0, now, &mut rec);
        assert_eq!(rec.failed.get(ErrorClass::Status), 1);
        assert_eq!(rec.failures.get(&Failure::Status(413)), Some(&1));
        assert_eq!(rec.conn_errors.total(), 0);
        assert_eq!(rec.reconnects, 1);
    }

    /// A codec answering with a control message (a heartbeat) after every write.
    #[derive(Clone)]
    struct Heartbeats;
    impl ClientCodec for Heartbeats {
        fn handshake(&mut self, _out: &mut Vec<u8>) {}
        fn decode_handshake(&mut self, _input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, ProtoError> {
            Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control })
        }
        fn encode_op(&mut self, out: &mut Vec<u8>) {
            out.extend_from_slice(b"op");
        }
        fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, ProtoError> {
            Ok(match input.first() {
                None => Decoded::Partial,
                Some(b'h') => Decoded::Done { consumed: 1, outcome: Outcome::Control },
                Some(b'0') => Decoded::Done { consumed: 0, outcome: Outcome::Control },
                Some(_) => Decoded::Done { consumed: 1, outcome: Outcome::Op },
            })
        }
    }

    #[test]
    fn a_heartbeat_after_a_failed_write_does_not_hide_the_write_error() {
        let (mut c, now) = conn_with(&Heartbeats, Some(5), 1);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        c.next(now, false, &mut rec);
        c.write_failed(&std::io::ErrorKind::BrokenPipe.into(), &mut rec);
        feed(&mut c, b"h", &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, 0, now, &mut rec);
        assert_eq!(rec.conn_errors.get(ErrorClass::Write), 1);
        assert_eq!(rec.failed.get(ErrorClass::Write), 1);
    }

    #[test]
    fn a_decoder_that_makes_no_progress_fails_the_connection_instead_of_spinning() {
        let (mut c, now) = conn_with(&Heartbeats, Some(5), 1);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        write_all(&mut c, now, &mut rec);
        feed(&mut c, b"0", &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, 2, now, &mut rec);
        assert_eq!(rec.failed.get(ErrorClass::Protocol), 1);
        assert!(rec.error_samples[0].contains("no progress"), "{:?}", rec.error_samples);
    }

    /// A paced connection idle between operations looks at its socket twice per heartbeat
    /// interval, and answers what it finds (nsqd's heartbeat: `NOP`).
    #[test]
    fn an_idle_paced_connection_polls_for_heartbeats() {
        use crate::proto::nsq::{self, NsqClient, PublishSpec};
        let spec = PublishSpec { topic: "t".into(), message: b"m".to_vec(), batch: 1, defer_ms: None };
        let codec = NsqClient::new(&spec, Some(br#"{"heartbeat_interval":1000}"#));
        let start = Instant::now();
        let budget = Budget { ops: None, deadline: start + Duration::from_secs(60), measure_from: start };
        let pacer = Workload::FixedRate { interval: Duration::from_secs(10) }.pacer(0, 1);
        let mut c = Conn::new(&codec, pacer, budget, 1, Duration::from_secs(1), 0);
        let mut rec = CoreRecorder::new(0);
        let frame = |data: &[u8]| {
            let mut f = Vec::new();
            nsq::write_frame(&mut f, nsq::FRAME_RESPONSE, data);
            f
        };
        c.next(start, false, &mut rec);
        c.connected(start, &mut rec);
        write_all(&mut c, start, &mut rec); // magic and IDENTIFY
        feed(&mut c, &frame(b"OK"), &mut rec);
        write_all(&mut c, start, &mut rec); // the first publish, due at once
        feed(&mut c, &frame(b"OK"), &mut rec);
        assert_eq!(rec.ops, 1);
        // The next publish is due in 10 s; the socket is looked at every 500 ms meanwhile.
        let half = Duration::from_millis(500);
        let look = |c: &mut Conn<NsqClient>, rec: &mut CoreRecorder| match c.next(Instant::now(), false, rec)
        {
            Want::Sleep(at) => at,
            other => panic!("{other:?}"),
        };
        let at = look(&mut c, &mut rec);
        assert!(at <= Instant::now() + half, "wakes within half the interval");
        assert_eq!(c.next(at, false, &mut rec), Want::Poll);
        c.polled(at);
        assert_eq!(c.next(at, false, &mut rec), Want::Sleep(at + half));
        assert_eq!(c.next(at + half, false, &mut rec), Want::Poll);
        feed(&mut c, &frame(b"_heartbeat_"), &mut rec);
        assert!(matches!(c.next(at + half, false, &mut rec), Want::Write(_)));
        assert_eq!(c.to_write(), b"NOP\n");
    }

    /// Paced: an operation sent late on a free connection is the generator's lag; one that
    /// came due while its connection still waited for an answer is counted apart.
    #[test]
    fn schedule_lag_is_the_generators_and_a_busy_connection_is_counted_apart() {
        let start = Instant::now();
        let budget = Budget { ops: None, deadline: start + Duration::from_secs(60), measure_from: start };
        let ms = Duration::from_millis;
        let pacer = Workload::FixedRate { interval: ms(10) }.pacer(0, 1);
        let mut c = Conn::new(&get(), pacer, budget, 1, Duration::from_secs(1), 0);
        let mut rec = CoreRecorder::new(0);
        let answer = |c: &mut Conn<Http1Client>, at: Instant, rec: &mut CoreRecorder| {
            c.read_buf().unwrap()[..OK.len()].copy_from_slice(OK);
            c.read(OK.len(), at, rec);
        };
        c.next(start, false, &mut rec);
        c.connected(start, &mut rec);
        // The schedule starts with the first operation, on time; answered at 1 ms.
        write_all(&mut c, start, &mut rec);
        answer(&mut c, start + ms(1), &mut rec);
        // The second, due at 10 ms, goes out at 13 ms on a free connection: 3 ms of lag.
        write_all(&mut c, start + ms(13), &mut rec);
        assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (2, 0));
        assert_eq!(rec.schedule_lag.max() / 1_000_000, 3);
        // Its answer comes at 25 ms: the third (due at 20 ms) waited for the connection.
        answer(&mut c, start + ms(25), &mut rec);
        write_all(&mut c, start + ms(25), &mut rec);
        assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (2, 1));
        // Answered at 26 ms, before the fourth is due (30 ms): not yet, then on time.
        answer(&mut c, start + ms(26), &mut rec);
        assert!(matches!(c.next(start + ms(26), false, &mut rec), Want::Sleep(_)), "not yet due");
        write_all(&mut c, start + ms(30), &mut rec);
        assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (3, 1));
    }

    #[test]
    fn with_a_quota_a_server_that_never_answers_is_given_up_on() {
        let (mut c, mut now) = conn(5, 1);
        let mut rec = CoreRecorder::new(0);
        let mut lives = 0;
        loop {
            match c.next(now, false, &mut rec) {
                Want::Connect(_) => {
                    lives += 1;
                    c.connected(now, &mut rec);
                }
                Want::Write(_) => {
                    let n = c.to_write().len();
                    c.wrote(n, now, &mut rec);
                }
                Want::Read(_) => c.read(0, now, &mut rec),
                Want::Poll => c.polled(now),
                Want::Close => close(&mut c, GET.len() as u64, now, &mut rec),
                Want::Sleep(until) => now = until,
                Want::Done => break,
            }
            assert!(lives <= GIVE_UP_AFTER, "bounded");
        }
        assert_eq!(lives, GIVE_UP_AFTER);
        assert_eq!(rec.failed.get(ErrorClass::Closed), GIVE_UP_AFTER as u64);
        assert_eq!(rec.sent, rec.ops + rec.failed.total());
        assert!(rec.error_samples.iter().any(|s| s.starts_with("gave up")));
    }

    #[test]
    fn partial_writes_are_attributed_to_the_operations_they_carried() {
        let (mut c, now) = conn(10, 3);
        let mut rec = CoreRecorder::new(0);
        c.next(now, false, &mut rec);
        c.connected(now, &mut rec);
        assert!(matches!(c.next(now, false, &mut rec), Want::Write(_)));
        c.wrote(GET.len() + 3, now, &mut rec); // the first request and 3 bytes of the second
        c.write_failed(&std::io::ErrorKind::ConnectionReset.into(), &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Read(SALVAGE_WAIT));
        c.read(0, now, &mut rec); // nothing to salvage: the write's failure stands
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, GET.len() as u64 + 3, now, &mut rec);
        assert_eq!(rec.failed.get(ErrorClass::Write), 3);
        assert_eq!((rec.tx.op, rec.tx.failed), (0, GET.len() as u64 + 3));
    }
}
#[cfg(test)]
mod size {
    /// What an idle connection costs is mostly this struct (its buffers are given back): keep
    /// it small (measured: 824 bytes with a WebSocket codec).
    #[test]
    fn a_connection_machine_stays_under_a_kilobyte() {
        assert!(std::mem::size_of::<super::Conn<crate::proto::ws::WsClient>>() <= 1024);
        assert!(std::mem::size_of::<super::Conn<crate::proto::http1::Http1Client>>() <= 1024);
    }
}
