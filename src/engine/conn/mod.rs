//! One client connection's life as a state machine, shared by every engine (quinn-proto's
//! split, one level up): it decides what the socket should do next ([`Want`]) and digests what
//! the socket did (`connected`, `wrote`, `read`, …), driving the codec, the workload's pacer and
//! the core's recorder. An engine only performs the I/O it is asked for and reports the
//! results, with the time: the machine never reads a clock.
//!
//! Life of a connection: connect → handshake (written, answer decoded) → running (batches of
//! operations written, responses decoded, control replies written) → goodbye (WebSocket Close,
//! bounded wait) → close (the engine reads the kernel's counts, then closes) → reconnect, pause
//! and retry after a failure, or done.
//!
//! `Conn` composes its parts, each with its own tests: the operation ledger (what is in
//! flight, answered in any order: `ledger.rs`), the bytes to send by class (`send.rs`), what
//! carries them, the socket or TLS (`carrier.rs`), the workload's schedule and the run's window
//! (`schedule.rs`), and its clocks: timeouts and heartbeats (`timing.rs`).
//!
//! **Every operation ends once, here.** An operation sent is answered (completed, or refused by
//! the server: a failure of the refusal's class) or it is lost with its connection: each one in
//! flight when a connection ends fails with the class of that end (`closed` when the peer
//! closed, `read`, `write`, `timeout`, `protocol`). So `sent = completed + failed` in every
//! engine, and a failed operation's bytes move out of the operation class into `failed`.
//! `-n N` asks for N answered operations: lost ones are sent again.

use crate::clock::Instant;
use crate::outcome::ErrorClass;
use crate::proto::ClientCodec;
use crate::recv::RecvBuf;
use crate::stats::{CoreRecorder, SocketAudit, Traffic};
use crate::tls::options::ClientTls;
use crate::workload::{Budget, Pacer, Window};
use std::sync::Arc;
use std::time::Duration;

mod answers;
mod carrier;
mod events;
mod ledger;
mod schedule;
mod send;
mod timing;

use carrier::Carrier;
use ledger::{InFlight, Ledger};
use schedule::Schedule;
use send::SendQueue;
use timing::{Heartbeat, Timeouts};

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

/// A connection that will idle at least this long gives its buffers back first (shorter
/// waits keep them: allocating per operation would cost more than it saves).
pub const IDLE_RELEASE: Duration = Duration::from_millis(100);
/// A connection that sat idle this long looks at its socket before it sends again: the
/// server may have closed it meanwhile (an idle timeout), and an operation sent on it would
/// fail as `closed` where a reconnect was all it needed.
pub const LOOK_BEFORE_SENDING_AFTER: Duration = Duration::from_millis(100);

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
    /// (Engine.IO 4's pings, nsqd's heartbeats), and before sending on a connection that sat
    /// idle (the server may have closed it). Then call `read`, `polled` (nothing there) or
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

/// What one connection (one socket) carried, for its audit.
#[derive(Debug, Clone, Copy, Default)]
struct Life {
    tx: u64,
    rx: u64,
    /// The server answered at least one operation on it.
    answered: bool,
    /// Operations sent on it (a connection per operation sends one).
    ops_sent: u64,
    /// Its set-up is done.
    set_up: bool,
}

/// One connection, across its reconnects.
pub struct Conn<C> {
    /// The codec a new socket starts with: its core's, shared (a connection's own copy of it
    /// was an eighth of an idle WebSocket connection's memory).
    prototype: std::rc::Rc<C>,
    codec: C,
    schedule: Schedule,
    depth: usize,
    timeouts: Timeouts,
    beat: Heartbeat,
    /// Protocol bytes received and not yet decoded, and how many of the socket's bytes are
    /// not decoded yet ([`Conn::arrived`]).
    recv: RecvBuf,
    unread: usize,
    send: SendQueue,
    carrier: Carrier,
    /// The codec's control replies of one decoding pass (pongs, NOPs).
    control: Vec<u8>,
    ledger: Ledger,
    /// Measured operations answered (toward the budget's quota).
    answered: u64,
    life: Life,
    /// Connections in a row in which the server answered nothing.
    futile: u32,
    /// The core's [`live_epoch`](CoreRecorder::live_epoch) when this connection last gave its
    /// codec's layers to the core's figures.
    layers_epoch: u32,
    /// This connection's seed for the codec's randomness, and how many sockets it has had.
    seed: u64,
    lives: u64,
    /// When the current connect began, and when the connection opened (its set-up phases).
    connect_started: Instant,
    connected_at: Instant,
    /// Since when the connection could take another operation (set up, with room under
    /// `depth`): an operation due before then waited for its connection, not the generator.
    room_since: Instant,
    /// When it last queued operations it had no room for another: at its depth, or the codec
    /// took no more (an HTTP/2 server's SETTINGS_MAX_CONCURRENT_STREAMS below `--depth`). The
    /// next answer makes room.
    no_room: bool,
    phase: Phase,
    /// A connection per operation (`--no-keepalive`).
    per_op: bool,
    /// The first connect waits for this instant (`--connect-rate`).
    not_before: Instant,
    /// Sent first on every connection (`--proxy-protocol`'s header).
    preamble: Option<Box<[u8]>>,
    /// Which of the run's targets it loads.
    target: usize,
    /// `--requests`: its way through the entries (kept across its reconnects).
    picker: Option<Box<crate::requests::Picker>>,
    /// `--connect-rate auto`: its place in its core's opener for the opening it waits to
    /// make.
    turn: crate::opener::Turn,
    /// The engine wakes this connection when the window opens, and when its core's last
    /// measured operation in flight after the run's end has ended (it need not look).
    woken_by_engine: bool,
}

impl<C: ClientCodec> Conn<C> {
    pub fn new(
        prototype: &std::rc::Rc<C>,
        pacer: Pacer,
        budget: Budget,
        depth: usize,
        timeout: Duration,
        seed: u64,
    ) -> Self {
        let mut codec = C::clone(prototype);
        codec.seed(seed);
        let start = budget.measure_from;
        Conn {
            prototype: std::rc::Rc::clone(prototype),
            codec,
            schedule: Schedule::new(pacer, budget),
            depth,
            timeouts: Timeouts::new(timeout, budget.deadline, false),
            beat: Heartbeat::new(start),
            recv: RecvBuf::new(),
            unread: 0,
            send: SendQueue::default(),
            carrier: Carrier::default(),
            control: Vec::new(),
            ledger: Ledger::with_capacity(depth),
            answered: 0,
            life: Life::default(),
            futile: 0,
            layers_epoch: 0,
            seed,
            lives: 0,
            connect_started: start,
            preamble: None,
            connected_at: start,
            room_since: start,
            no_room: false,
            phase: if budget.ops == Some(0) { Phase::Done } else { Phase::Idle },
            per_op: false,
            not_before: start,
            target: 0,
            picker: None,
            turn: crate::opener::Turn::default(),
            woken_by_engine: false,
        }
    }

    /// Pick each operation from `--requests`'s entries (`None`: the one operation there is).
    pub fn with_picks(mut self, picks: Option<&crate::requests::Picks>) -> Self {
        self.picker = picks.map(|p| Box::new(p.picker(self.seed)));
        self
    }

    /// `--connect-rate auto`: when to look again if this opening must wait for its turn at its
    /// core's rate (`None`: open now).
    fn opening_wait(&mut self, now: Instant, rec: &mut CoreRecorder) -> Option<Instant> {
        // Its first opening: no socket yet, and no connect that failed (a retry is not paced
        // without `--connect-rate`, as a reopening is not).
        let first = self.lives == 0 && self.futile == 0;
        rec.opener.as_mut().filter(|o| !self.per_op && o.paces(first))?.wait(&mut self.turn, now)
    }

    /// Bytes sent first on every connection, before TLS and the protocol's set-up (a PROXY
    /// protocol header), counted as set-up.
    pub fn with_preamble(mut self, preamble: Option<Vec<u8>>) -> Self {
        self.preamble = preamble.map(Vec::into_boxed_slice);
        self
    }

    /// Speak TLS with the target ([`crate::tls`]), from the connect or when the protocol asks.
    pub fn with_tls(mut self, tls: Option<Arc<ClientTls>>) -> Self {
        self.carrier = Carrier::new(tls);
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
    /// `duration`; until then every operation waits.
    pub fn measured_once_set_up(
        mut self,
        window: Arc<Window>,
        start: (Instant, Instant),
        warmup: Duration,
        duration: Duration,
    ) -> Self {
        self.schedule.open_with(window, start, warmup, duration);
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

    /// Open a connection per operation: connect, set up, one operation, close; the connect
    /// waits for the operation's time and is timed as part of it.
    pub fn one_op_per_connection(mut self) -> Self {
        self.per_op = true;
        self
    }

    /// While the window is shut: whether it opened by `now`, and then the run's end it set.
    fn learn_run_end(&mut self, now: Instant) {
        if self.schedule.waiting() && self.schedule.refresh(now) {
            self.bound_timeouts();
        }
    }

    /// The timeouts follow the run's end (expected, while the window is shut).
    fn bound_timeouts(&mut self) {
        let (end, expected) = self.schedule.run_end();
        self.timeouts.set_run_end(end, expected);
    }

    /// Measured operations answered or in flight (toward the quota).
    fn in_or_done(&self) -> u64 {
        self.answered + self.ledger.measured()
    }

    /// No new operation may be sent (deadline, quota or Ctrl-C).
    fn stopped(&self, now: Instant, stopping: bool) -> bool {
        self.schedule.stopped(now, stopping, self.in_or_done())
    }

    /// Done with a timed run while measured operations of its core are still in flight (and
    /// its engine wakes it when they have ended): it waits before its goodbye.
    fn lingers(&self, now: Instant, stopping: bool, rec: &CoreRecorder) -> bool {
        let deadline = self.schedule.budget().deadline;
        self.woken_by_engine
            && !stopping
            && !self.per_op
            && self.schedule.budget().ops.is_none()
            && now >= deadline
            && now < deadline + DRAIN_LIMIT
            && rec.in_flight() > 0
    }

    /// With a quota, a server that answers nothing ends this connection's work.
    fn gave_up(&self) -> bool {
        self.schedule.budget().ops.is_some() && self.futile >= GIVE_UP_AFTER
    }

    fn silent_at(&self) -> Option<Instant> {
        self.beat.silent_at(self.codec.silence_limit())
    }

    /// Bytes to write now.
    pub fn to_write(&self) -> &[u8] {
        self.send.pending()
    }

    /// Where to read into; `None` when a message outgrew the receive limit (the next `next()`
    /// will fail the connection).
    pub fn read_buf(&mut self) -> Option<&mut [u8]> {
        self.carrier.in_buf(&mut self.recv).spare()
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

    /// Queue the bytes appended to `send` from `from` on as class `traffic` (sealed, with
    /// TLS); returns their length on the wire.
    fn queue(&mut self, from: usize, traffic: Traffic, rec: &mut CoreRecorder) -> u64 {
        self.carrier.seal(&mut self.send, from, (traffic, None), rec)
    }

    /// Queue `bytes` as class `traffic`.
    fn queue_bytes(&mut self, bytes: &[u8], traffic: Traffic, rec: &mut CoreRecorder) {
        let from = self.send.len();
        self.send.buf().extend_from_slice(bytes);
        self.queue(from, traffic, rec);
    }

    /// What to do next; `stopping` is Ctrl-C (no new operation; drain, close).
    pub fn next(&mut self, now: Instant, stopping: bool, rec: &mut CoreRecorder) -> Want {
        // The core copied its figures for the live view since this connection last looked:
        // the layers its codec counted since go to them now, not only when it closes.
        if self.layers_epoch != rec.live_epoch {
            self.layers_epoch = rec.live_epoch;
            crate::stats::layers_merge_into(&mut rec.layers, self.codec.take_layers().as_ref());
        }
        self.learn_run_end(now);
        if let Some(why) = self.time_up(now) {
            self.send.clear();
            self.fail(ErrorClass::Timeout, why);
        }
        loop {
            if let Some(want) = self.next_outside_running(now, stopping, rec) {
                return want;
            }
            // An idle connection looks at its socket before it sends again: a server that
            // closed it meanwhile (its idle timeout) is a reconnect, not a failed operation.
            if self.ledger.is_empty()
                && now >= self.beat.last_look + LOOK_BEFORE_SENDING_AFTER
                && !self.stopped(now, stopping)
                && !self.schedule.waiting()
                && self.schedule.due(now) <= now
            {
                self.beat.last_look = now;
                return Want::Poll;
            }
            // The protocol's own heartbeat goes out when due, between batches.
            if self.beat.next_beat.is_some_and(|due| now >= due)
                && !self.stopped(now, stopping)
                && self.beat.due(self.codec.heartbeat_interval(), now)
            {
                self.send.clear();
                self.codec.heartbeat(self.send.buf());
                self.queue(0, Traffic::Control, rec);
                if !self.send.is_empty() {
                    return Want::Write(self.timeouts.io(now));
                }
            }
            if self.send_batch(now, stopping, rec) {
                return Want::Write(self.timeouts.io(now));
            }
            if let Some(op) = self.ledger.oldest() {
                return Want::Read(self.timeouts.answer(now, op.sent, self.silent_at()));
            }
            if self.stopped(now, stopping) {
                self.schedule.close(now, self.in_or_done(), rec);
            }
            if self.stopped(now, stopping) || (self.per_op && self.life.ops_sent > 0) {
                // A timed run's end: the core's last answers first (see `woken_by_the_engine`);
                // they end within DRAIN_LIMIT, answered or timed out.
                if self.lingers(now, stopping, rec) {
                    return Want::Sleep(self.schedule.budget().deadline + DRAIN_LIMIT);
                }
                self.say_goodbye(rec);
                continue;
            }
            return self.idle(now);
        }
    }

    /// What ran out of time while the peer kept the connection busy: every wait is at least
    /// a millisecond, so bytes that keep coming (empty frames, a body trickled for ever) would
    /// restart the waits without end ([`Timeouts::over`]). An answer is due `--timeout` after
    /// its request, a set-up after its connect, and everything by the run's end plus
    /// [`DRAIN_LIMIT`].
    fn time_up(&self, now: Instant) -> Option<&'static str> {
        match self.phase {
            Phase::Tls if self.timeouts.over(now, self.connected_at) => {
                Some("no answer to the TLS handshake within the timeout")
            }
            Phase::Handshake if self.timeouts.over(now, self.connected_at) => {
                Some("no answer to the handshake within the timeout")
            }
            Phase::Running => match self.ledger.oldest() {
                Some(op) if self.timeouts.over(now, op.sent) => Some("no response within the timeout"),
                None if self.send.has_pending() && self.timeouts.drained(now) => {
                    Some("a write still unfinished a second after the run's end")
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// What every phase but running asks for (`None`: running, decide there).
    fn next_outside_running(&mut self, now: Instant, stopping: bool, rec: &mut CoreRecorder) -> Option<Want> {
        if matches!(self.phase, Phase::Running) && !self.send.has_pending() {
            return None;
        }
        let io = self.timeouts.io(now);
        Some(match &self.phase {
            Phase::Done => Want::Done,
            // Replies queued before closing (a WebSocket close's echo) go out first.
            Phase::Closing(_) if self.send.has_pending() => Want::Write(io),
            Phase::Closing(_) => Want::Close,
            Phase::Idle | Phase::Retry(_) if self.stopped(now, stopping) || self.gave_up() => {
                if self.gave_up() {
                    rec.sample(|| format!("gave up: {GIVE_UP_AFTER} connections in a row got no answer"));
                }
                self.schedule.close(now, self.in_or_done(), rec);
                self.phase = Phase::Done;
                Want::Done
            }
            Phase::Retry(at) if now < *at => Want::Sleep(*at),
            Phase::Idle if self.lives == 0 && now < self.not_before => Want::Sleep(self.not_before),
            // A connection per operation opens when its operation is due.
            Phase::Idle if self.per_op && self.schedule.due(now) > now => Want::Sleep(self.schedule.due(now)),
            Phase::Idle | Phase::Retry(_) => match self.opening_wait(now, rec) {
                Some(wake) => Want::Sleep(wake),
                None => {
                    self.phase = Phase::Connecting;
                    self.connect_started = now;
                    Want::Connect(io)
                }
            },
            Phase::Connecting => Want::Connect(io),
            _ if self.send.has_pending() => Want::Write(io),
            Phase::Tls | Phase::Handshake => Want::Read(self.timeouts.set_up(now, self.connected_at)),
            Phase::Salvage(_) => Want::Read(SALVAGE_WAIT),
            Phase::Goodbye(_) => Want::Read(GOODBYE_WAIT.min(io)),
            Phase::Running => return None,
        })
    }

    /// Queue what the workload allows now: first more of the operations already sent whose
    /// bytes wait for the peer's room ([`ClientCodec::op_more`]), then new operations as one
    /// batch of one traffic class (warm-up or measured); `true` when something is to be
    /// written.
    fn send_batch(&mut self, now: Instant, stopping: bool, rec: &mut CoreRecorder) -> bool {
        self.send.clear();
        let more = self.send_more(rec);
        let mut batch = None;
        while self.ledger.len() < self.depth
            && self.codec.accepts_ops()
            && !self.schedule.waiting()
            && !self.stopped(now, stopping)
            && (!self.per_op || self.life.ops_sent == 0)
        {
            // With a connection per operation, its time began before the connect.
            let due = self.schedule.due(now);
            let intended = if self.per_op { due.min(self.connect_started) } else { due };
            if intended > now {
                break; // paced workloads: not yet due
            }
            let traffic = self.schedule.traffic(intended);
            if batch.is_some_and(|t| t != traffic) {
                break;
            }
            batch = Some(traffic);
            if traffic == Traffic::Op && self.schedule.paced() {
                if self.room_since <= intended {
                    let start = if self.per_op { self.connect_started } else { now };
                    rec.record_lag(start.saturating_duration_since(intended));
                } else {
                    rec.due_while_busy += 1;
                }
            }
            self.schedule.taken();
            self.life.ops_sent += 1;
            let before = self.send.len();
            let (entry, kind) = self.picker.as_mut().map_or((0, 0), |p| p.pick());
            self.codec.encode_op(entry, self.send.buf());
            let plain = (self.send.len() - before) as u64;
            // With TLS, a record per operation.
            let seq = self.ledger.next_seq();
            let tx_len = self.carrier.seal(&mut self.send, before, (traffic, Some(seq)), rec);
            let mut op = InFlight::new(self.codec.op_id(), intended, now, traffic, tx_len);
            op.tx_plain = if self.carrier.active() { plain } else { 0 };
            op.kind = kind as u16;
            op.open = self.codec.op_open();
            self.ledger.push(op);
            if traffic == Traffic::Op {
                // A connection per operation began it with its connect.
                rec.first_sent.get_or_insert(if self.per_op { self.connect_started } else { now });
                rec.sent += 1;
                rec.share_sent(self.target, kind);
            }
        }
        self.no_room = self.ledger.len() >= self.depth || !self.codec.accepts_ops();
        more || batch.is_some()
    }

    /// Queue the pieces of operations in flight the codec can send now (an HTTP/2 body, as
    /// far as the server's windows allow), each as its operation's bytes; `true` if any.
    /// Bounded: each piece is one operation's, and the codec gives at most one per operation
    /// it holds open, so a pass takes at most `depth` of them (the bound counts a few more).
    fn send_more(&mut self, rec: &mut CoreRecorder) -> bool {
        let mut any = false;
        for _ in 0..self.depth + 2 {
            let before = self.send.len();
            let Some((id, last)) = self.codec.op_more(self.send.buf()) else { break };
            any = true;
            let plain = (self.send.len() - before) as u64;
            let Some(op) = self.ledger.get_mut(Some(id)) else {
                // An operation already ended: its stream's last bytes are the connection's.
                self.queue(before, Traffic::Control, rec);
                continue;
            };
            let (traffic, seq, tls) = (op.traffic, op.seq(), self.carrier.active());
            let wire = self.carrier.seal(&mut self.send, before, (traffic, Some(seq)), rec);
            if let Some(op) = self.ledger.get_mut(Some(id)) {
                op.tx_len += wire;
                op.tx_plain += if tls { plain } else { 0 };
                op.open = !last;
            }
        }
        any
    }

    /// The run is over for this connection (or its one operation is done): the protocol's
    /// goodbye if it has one, TLS's after it, then close.
    fn say_goodbye(&mut self, rec: &mut CoreRecorder) {
        let awaited = self.codec.goodbye(self.send.buf());
        self.queue(0, Traffic::Control, rec);
        self.carrier.goodbye(&mut self.send, rec);
        if awaited {
            self.phase = Phase::Goodbye(0);
        } else {
            self.close(End::Done);
        }
    }

    /// Nothing in flight and nothing due yet (a paced workload, or the window still shut):
    /// wait for its time, or for the protocol's next heartbeat, looking at the socket
    /// meanwhile as often as the server's unprompted messages need an answer.
    fn idle(&mut self, now: Instant) -> Want {
        let waiting = self.schedule.window_wait(now, self.woken_by_engine);
        let due = waiting.unwrap_or_else(|| self.schedule.due(now));
        let wake = self.beat.next_beat.map_or(due, |beat| beat.min(due)).min(self.schedule.budget().deadline);
        if wake <= now {
            return Want::Read(self.timeouts.read(now, self.silent_at()));
        }
        // (Waiting for the window counts as idle: the others may take long to set up.)
        if waiting.is_some() || wake.saturating_duration_since(now) >= IDLE_RELEASE {
            self.release_buffers();
        }
        match self.beat.next_look(self.codec.answer_within()) {
            Some(look) if look <= now => {
                self.beat.last_look = now;
                Want::Poll
            }
            Some(look) => Want::Sleep(wake.min(look)),
            None => Want::Sleep(wake),
        }
    }
}

/// A measured operation failed: what it wrote and read so far is `failed` traffic.
fn file_as_failed(op: &InFlight, rec: &mut CoreRecorder) {
    rec.tx.move_bytes(Traffic::Op, Traffic::Failed, op.tx_written);
    rec.rx.move_bytes(Traffic::Op, Traffic::Failed, op.rx);
    rec.tls.plain_tx.move_bytes(Traffic::Op, Traffic::Failed, op.tx_plain);
    rec.tls.plain_rx.move_bytes(Traffic::Op, Traffic::Failed, op.rx_plain);
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
mod tests;
