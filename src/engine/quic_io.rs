//! UDP on io_uring for HTTP/3 (`h3://`): the first QUIC engine. One thread per core, pinned;
//! each connection its own connected UDP socket (the kernel demultiplexes by address, and an
//! ICMP "port unreachable" comes back as an error on that socket alone; `--bind` picks its
//! source address), one receive and one send in flight per socket, one quinn-proto endpoint per core ([`super::quic`]: the sans-IO
//! connections). Timers are quinn's deadlines, slept on in the ring's wait.
//!
//! What an operation is: a request stream, completed by its response ([`super::quic`]).
//! Its bytes are QUIC's: every UDP payload byte a connection sends or receives is counted when
//! the socket takes it or gives it — before the handshake is done as `handshake`, after it as
//! the operations' (warm-up or measured by the time it moved; failed operations' bytes are not
//! told apart: QUIC packets carry several streams' frames), the close as `control`. The kernel
//! keeps no per-socket UDP counts to audit them against (a packet capture does:
//! `tests/capture.rs`).
//!
//! A send carries up to 10 datagrams of one size with GSO (`UDP_SEGMENT`), as quinn's
//! `poll_transmit` batches them; a socket whose kernel refuses it sends one at a time after.
//!
//! Connections are driven when something happened to them — a datagram, a send's end, a
//! timer of theirs in the core's heap — not all on every turn: an idle connection costs
//! nothing, and a paced run's wake-ups touch only the connections due.
//!
//! Receives are multishot `recvmsg`s into one provided-buffer ring a core (`Receiving`),
//! with GRO (`UDP_GRO`): a burst of one flow's datagrams comes as one completion, cut back
//! into datagrams for quinn ([`super::udp`]). `serve h3` sends and receives the same way on
//! its one socket a core.

use super::quic::{ClientConn, Completed, Lost};
use super::udp::{self, DATAGRAM, GRO_BYTES, GSO_DATAGRAMS, Msg};
use super::{CoreBooks, CoreStart, EngineError};
use crate::clock::Instant;
use crate::outcome::ErrorClass;
use crate::proto::Outcome;
use crate::proto::h3::client::H3Client;
use crate::stats::{CoreRecorder, Traffic};
use bytes::BytesMut;
use io_uring::{IoUring, opcode, types};
use quinn_proto::{ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection lost waits before it connects again.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// After the run's end, how long connections get to finish the requests in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// The longest the loop sleeps without looking (the window, Ctrl-C).
const TICK: Duration = Duration::from_millis(20);

const RECV: u64 = 0;
const SEND: u64 = 1;
/// The tag of a cancel's own completion (ignored).
const CANCELLING: u64 = u64::MAX;

/// quinn-proto keeps `std::time::Instant`s; the engine reads [`Instant`]. Both are the same
/// monotonic clock, so one pair read together maps either to the other for the whole run.
#[derive(Clone, Copy)]
struct Clocks {
    ours: Instant,
    std: std::time::Instant,
}

impl Clocks {
    fn new() -> Clocks {
        Clocks { std: std::time::Instant::now(), ours: Instant::now() }
    }
    fn to_std(self, t: Instant) -> std::time::Instant {
        if t >= self.ours {
            self.std + (t - self.ours)
        } else {
            self.std.checked_sub(self.ours - t).unwrap_or(self.std)
        }
    }
    fn to_ours(self, t: std::time::Instant) -> Instant {
        match t.checked_duration_since(self.std) {
            Some(d) => self.ours + d,
            None => self.ours.checked_sub(self.std - t).unwrap_or(self.ours),
        }
    }
}

/// The hasher of the engine's maps, whose keys are ids this side made (stream ids, quinn's
/// connection handles), not a peer's: a multiply spreads them over the table's bits, where
/// SipHash's defence against chosen keys would only cost time.
type Ids = std::hash::BuildHasherDefault<IdHasher>;

#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A request in flight: when it was due (latency counts from there), when it went (its
/// timeout, and a paced run's uncorrected latency, count from there), its class and kind.
#[derive(Debug, Clone, Copy)]
struct Op {
    intended: Instant,
    sent: Instant,
    traffic: Traffic,
    kind: u16,
}

/// What one client core is given per target: the HTTP/3 client (its requests), the QUIC
/// configuration (TLS inside), and the server's name for TLS.
#[derive(Clone)]
pub struct Target {
    pub h3: H3Client,
    pub config: quinn_proto::ClientConfig,
    pub server_name: String,
}

/// Run `job` over HTTP/3 on every core.
pub fn run_client(
    job: &crate::plan::ClientJob,
    targets: Vec<Target>,
) -> Result<super::ClientRun, EngineError> {
    super::run_client_threads(job, targets, client_core)
}

/// One connection's state on this core.
struct Slot {
    target: usize,
    remote: SocketAddr,
    /// Its source address (`--bind`), if given.
    source: Option<std::net::IpAddr>,
    sock: Option<OwnedFd>,
    conn: Option<ClientConn>,
    /// The buffers the ring's operations point into (boxed: they do not move).
    send: Box<Msg>,
    recv_armed: bool,
    send_busy: bool,
    /// The send in flight: its class, length and datagrams, counted once the socket took it.
    sending: (Traffic, u64, u64),
    /// The kernel takes several datagrams in one send (GSO) on this socket; off after a send
    /// it refused.
    gso: bool,
    /// Requests in flight: (stream, intended, sent, traffic, kind).
    ops: HashMap<u64, Op, Ids>,
    /// When this connection's operations are due (`--rate`; now, in a closed loop), and
    /// when its next one is (for the loop's sleep).
    pacer: crate::workload::Pacer,
    next_due: Option<Instant>,
    /// This connection's share of `-n` left (`None`: no count).
    left: Option<u64>,
    settled: bool,
    connected_at: Option<Instant>,
    started: Instant,
    retry_at: Option<Instant>,
    closing: bool,
    /// Once closed, open another (a GOAWAY), not done.
    reconnect: bool,
    done: bool,
    /// This connection's first request went (before it, its datagrams end the handshake).
    requested: bool,
    /// `--requests`: the order this connection picks the entries in, and an entry picked that
    /// could not go yet.
    picker: Option<crate::requests::Picker>,
    unsent_pick: Option<(usize, usize)>,
    /// UDP payload bytes of this socket's life, for the audit's "not checkable" line; the
    /// connection ended and its socket's last operations are still in the ring (the audit
    /// waits for them: bytes they move are the socket's too).
    life: (u64, u64),
    audit_due: bool,
    /// Connections in a row that answered nothing (a server refusing every one, or saying
    /// GOAWAY at once), and whether the current one has answered.
    futile: u32,
    answered: bool,
    /// When this slot next needs a turn with nothing arriving, the time of its live entry in
    /// the core's timers (never later than `wake`: a wake that moves later leaves the entry,
    /// which then finds it moved), and whether it is in this turn's list already.
    wake: Option<Instant>,
    armed: Option<Instant>,
    queued: bool,
}

fn client_core(start: CoreStart, targets: Vec<Target>) -> Result<(CoreRecorder, Instant), EngineError> {
    let CoreStart { job, cpu, index, conns, gate } = start;
    let pinned = super::pin_current_thread(cpu);
    let entries = (2 * conns.len() as u32 + 8).next_power_of_two().max(64);
    let ring = super::rings::ring(entries, entries);
    let started = gate.wait();
    pinned?;
    let mut ring = ring.map_err(|source| EngineError::Executor { cpu, source })?;
    let mut receiving =
        Receiving::new(&ring, conns.len()).map_err(|source| EngineError::Executor { cpu, source })?;
    let books = CoreBooks::open(&job, cpu, index);
    let mut rec = job.recorder(cpu);
    let mut slots: Vec<Slot> = conns
        .map(|i| Slot {
            target: i % targets.len(),
            remote: job.addrs[i % job.addrs.len()],
            source: (!job.bind.is_empty()).then(|| job.bind[i % job.bind.len()]),
            sock: None,
            conn: None,
            send: Msg::new(GSO_DATAGRAMS * DATAGRAM),
            recv_armed: false,
            send_busy: false,
            sending: (Traffic::Control, 0, 0),
            gso: true,
            ops: HashMap::default(),
            left: job.shape.ops.map(|n| crate::workload::split_ops(n, job.shape.connections, i)),
            pacer: job.shape.workload.pacer(i, job.shape.connections),
            next_due: None,
            settled: false,
            connected_at: None,
            started,
            retry_at: Some(started),
            closing: false,
            reconnect: false,
            done: false,
            requested: false,
            life: (0, 0),
            audit_due: false,
            futile: 0,
            answered: false,
            picker: job
                .picks
                .as_ref()
                .map(|p| p.picker(job.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))),
            unsent_pick: None,
            wake: None,
            armed: None,
            queued: false,
        })
        .collect();
    let result = run_loop(&mut ring, &mut slots, &mut receiving, &targets, &job, &books, &mut rec, started);
    for slot in &mut slots {
        slot.audit(&mut rec);
    }
    // The ring's operations point into the slots and the receive buffers: cancel and wait
    // for them before those go; if some never complete, they are leaked rather than freed
    // under them.
    if !drain_ring(&mut ring, &mut slots) {
        std::mem::forget(slots);
        std::mem::forget(receiving);
    } else {
        drop(ring); // before the buffers it was given
    }
    result.map_err(|source| EngineError::Executor { cpu, source })?;
    Ok(books.close(rec))
}

/// A core's receiving: every socket's one multishot receive (`recvmsg`, armed once, a
/// completion per datagram — or per GRO batch of them) takes its buffer from one provided-
/// buffer ring, so a connection waiting holds no buffer of its own; each is copied out for
/// quinn and given straight back.
struct Receiving {
    bufs: super::bufring::BufRing,
    /// The header every receive is armed with: no address (the sockets are connected), room
    /// for GRO's control message.
    hdr: Box<libc::msghdr>,
}

/// Room in a receive buffer before its datagrams: the kernel's `io_uring_recvmsg_out` and the
/// control message.
const RECV_HEAD: usize = 128;
const RECV_CONTROL: usize = 64;

impl Receiving {
    fn new(ring: &IoUring, conns: usize) -> std::io::Result<Receiving> {
        // A buffer for each socket's burst, up to 256 (16 MiB) a core.
        let count = (2 * conns).next_power_of_two().clamp(16, 256) as u16;
        let bufs = super::bufring::BufRing::register(ring, 0, count, GRO_BYTES + RECV_HEAD)?;
        // SAFETY: all-zero is a valid msghdr.
        let mut hdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        hdr.msg_controllen = RECV_CONTROL;
        Ok(Receiving { bufs, hdr })
    }
}

/// What the loop keeps for the whole core.
struct Core<'a> {
    endpoint: Endpoint,
    receiving: &'a mut Receiving,
    handles: HashMap<ConnectionHandle, usize, Ids>,
    targets: &'a [Target],
    job: &'a crate::plan::ClientJob,
    started: Instant,
    /// When the measured window opened plus warm-up, and the run's end.
    measure_from: Option<Instant>,
    deadline: Option<Instant>,
    clocks: Clocks,
    /// The slots to drive this turn (a datagram came, a send ended, a timer fell due), and
    /// the slots' timers: (when, slot), an entry stale unless it is the slot's `armed` one.
    ready: Vec<usize>,
    timers: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
}

impl Core<'_> {
    /// Give slot `i` a turn this time round (once).
    fn ready(&mut self, slots: &mut [Slot], i: usize) {
        if let Some(slot) = slots.get_mut(i)
            && !std::mem::replace(&mut slot.queued, true)
        {
            self.ready.push(i);
        }
    }

    /// After its turn: when slot `i` needs its next one with nothing arriving — quinn's
    /// timers (loss detection, ACK delay, idle), a retry, its next paced request, its oldest
    /// request's `--timeout`, its handshake's.
    fn schedule(&mut self, slots: &mut [Slot], i: usize) {
        let slot = &mut slots[i];
        let timeout = self.job.shape.timeout;
        let clocks = self.clocks;
        let wake = if slot.done {
            None
        } else {
            let quic = slot.conn.as_mut().and_then(ClientConn::poll_timeout).map(|at| clocks.to_ours(at));
            let oldest = slot.ops.values().map(|op| op.sent + timeout).min();
            // A socket still waiting for its cancel: that completion gives the turn.
            let retry = slot.retry_at.filter(|_| slot.conn.is_some() || slot.sock.is_none());
            let handshake =
                (slot.conn.is_some() && slot.connected_at.is_none()).then(|| slot.started + timeout);
            [quic, retry, slot.next_due, oldest, handshake].into_iter().flatten().min()
        };
        slot.wake = wake;
        // A busy connection's wake moves later each turn (its ACK and idle timers): its
        // earlier entry stays, and finds it moved when it falls due. Only an earlier wake
        // needs an entry.
        if let Some(at) = wake
            && slot.armed.is_none_or(|armed| at < armed)
        {
            slot.armed = Some(at);
            self.timers.push(std::cmp::Reverse((at, i)));
            // Entries superseded by earlier ones wait for their time: past a bound, the
            // heap is built again from the live ones.
            if self.timers.len() > 4 * slots.len() + 64 {
                self.timers = slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| Some(std::cmp::Reverse((s.armed?, i))))
                    .collect();
            }
        }
    }

    /// Move the slots whose timers fell due by `now` to the turn's list (a slot whose wake
    /// moved later is armed again for it).
    fn due(&mut self, slots: &mut [Slot], now: Instant) {
        while let Some(&std::cmp::Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let slot = &mut slots[i];
            if slot.armed != Some(at) {
                continue; // superseded
            }
            slot.armed = None;
            match slot.wake {
                Some(wake) if wake > now => {
                    slot.armed = Some(wake);
                    self.timers.push(std::cmp::Reverse((wake, i)));
                }
                Some(_) => self.ready(slots, i),
                None => {}
            }
        }
    }

    /// The earliest live timer (it may find its slot's wake moved later: a turn of the
    /// loop for nothing, then the right one).
    fn next_timer(&mut self, slots: &[Slot]) -> Option<Instant> {
        while let Some(&std::cmp::Reverse((at, i))) = self.timers.peek() {
            if slots[i].armed == Some(at) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }
}

#[allow(clippy::too_many_arguments)]
fn run_loop(
    ring: &mut IoUring,
    slots: &mut [Slot],
    receiving: &mut Receiving,
    targets: &[Target],
    job: &crate::plan::ClientJob,
    books: &CoreBooks,
    rec: &mut CoreRecorder,
    started: Instant,
) -> std::io::Result<()> {
    let mut core = Core {
        endpoint: Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None),
        receiving,
        handles: HashMap::default(),
        targets,
        job,
        started,
        measure_from: None,
        deadline: None,
        clocks: Clocks::new(),
        ready: Vec::with_capacity(slots.len()),
        timers: std::collections::BinaryHeap::new(),
    };
    let mut done = Vec::new();
    let mut turn = Vec::with_capacity(slots.len());
    // What the whole core was at the last turn (the window open, the run over, the drain
    // given up): each change gives every slot a turn. Slots are otherwise driven only when
    // something happened to them — a datagram, a send's end, a timer — so an idle
    // connection costs nothing and a paced run's wake-ups touch only the connections due.
    let mut phase = None;
    let mut finished = 0;
    // Bounded: the run ends by its deadline (or `-n`), then the drain limit.
    loop {
        let now = Instant::now();
        let stopping = job.stop.load(std::sync::atomic::Ordering::Relaxed);
        if core.measure_from.is_none()
            && let Some(at) = job.window.opened(now, started)
        {
            let from = at + job.shape.warmup;
            core.measure_from = Some(from);
            core.deadline = Some(from + job.shape.duration);
        }
        let over = stopping || core.deadline.is_some_and(|d| now >= d);
        let gave_up = core.deadline.is_some_and(|d| now >= d + DRAIN_LIMIT) || stopping;
        if phase != Some((core.measure_from.is_some(), over, gave_up)) {
            phase = Some((core.measure_from.is_some(), over, gave_up));
            for i in 0..slots.len() {
                core.ready(slots, i);
            }
        }
        core.due(slots, now);
        std::mem::swap(&mut turn, &mut core.ready);
        for &i in &turn {
            slots[i].queued = false;
            let was_done = slots[i].done;
            drive(ring, &mut slots[i], i, &mut core, now, over, gave_up, rec, &mut done)?;
            finished += usize::from(slots[i].done && !was_done);
            core.schedule(slots, i);
        }
        turn.clear();
        books.publish(now, rec);
        if finished == slots.len() {
            return Ok(());
        }
        // Sleep until a slot's timer, the window's next edge, or a tick.
        let edges = [core.deadline, core.deadline.map(|d| d + DRAIN_LIMIT)];
        let edge = edges.into_iter().flatten().filter(|&at| at > now).min();
        let next = [core.next_timer(slots), edge].into_iter().flatten().min();
        // (Nothing is ready here: slots become ready before the turn, or from completions.)
        let wait = next.map_or(TICK, |at| at.saturating_duration_since(now)).min(TICK);
        let ts = types::Timespec::new().sec(wait.as_secs()).nsec(wait.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        for c in ring.completion() {
            let (data, result) = (c.user_data(), c.result());
            if data == CANCELLING {
                continue;
            }
            let (i, kind) = ((data >> 1) as usize, data & 1);
            core.ready(slots, i);
            let Some(slot) = slots.get_mut(i) else { continue };
            if kind == SEND {
                slot.send_busy = false;
                // Counted once the socket took it (a failed send is QUIC's to retransmit).
                let (class, len, datagrams) = std::mem::replace(&mut slot.sending, (Traffic::Control, 0, 0));
                if result > 0 {
                    rec.tx.add(class, len);
                    rec.datagrams.tx += datagrams;
                    slot.life.0 += len;
                } else if datagrams > 1 && udp::refused_gso(result) {
                    slot.gso = false; // this kernel or device will not segment: one at a time
                }
                continue;
            }
            // A multishot receive stays armed while it says more will come.
            let flags = c.flags();
            if !io_uring::cqueue::more(flags) {
                slot.recv_armed = false;
            }
            let Some(bid) = io_uring::cqueue::buffer_select(flags) else {
                continue; // an error (ICMP unreachable, no buffer free), a cancel: re-armed
            };
            let bufs = &mut core.receiving.bufs;
            let got = io_uring::types::RecvMsgOut::parse(
                bufs.data(bid, result.max(0) as usize),
                &core.receiving.hdr,
            )
            .ok()
            .map(|m| {
                (BytesMut::from(m.payload_data()), udp::gro_size(m.control_data()), m.is_payload_truncated())
            });
            bufs.give_back(bid);
            let Some((data, size, truncated)) = got else { continue };
            if truncated {
                // Past the buffer (GRO's bound is 64 KiB, the buffer's): what came is counted,
                // not handed on cut; QUIC resends what it lacks.
                rec.rx.add(Traffic::Control, data.len() as u64);
                rec.datagrams.rx += 1;
                continue;
            }
            let n = data.len() as u64;
            let batch = udp::datagrams(data, size);
            if slot.conn.is_none() {
                // After the connection's end (its receive not yet cancelled): counted, unread.
                rec.rx.add(Traffic::Control, n);
                rec.datagrams.rx += batch.count() as u64;
                slot.life.1 += n;
                continue;
            }
            rec.rx.add(slot.class(&core, now), n);
            slot.life.1 += n;
            // Each datagram of a GRO batch to quinn on its own.
            let mut scratch = Vec::new();
            let remote = slot.remote;
            for datagram in batch {
                rec.datagrams.rx += 1;
                if let Some(DatagramEvent::ConnectionEvent(handle, event)) =
                    core.endpoint.handle(core.clocks.to_std(now), remote, None, None, datagram, &mut scratch)
                    && let Some(&at) = core.handles.get(&handle)
                    && let Some(conn) = slots[at].conn.as_mut()
                {
                    conn.handle_event(event);
                    core.ready(slots, at);
                }
            }
        }
    }
}

impl Slot {
    /// The socket's bytes to the audit, once its connection ended (not checkable against the
    /// kernel: UDP keeps no per-socket counts).
    fn audit(&mut self, rec: &mut CoreRecorder) {
        if std::mem::take(&mut self.audit_due) {
            let (tx, rx) = std::mem::take(&mut self.life);
            rec.audit.add(tx, rx, Err(crate::stats::Inexact::Udp));
        }
    }

    /// The class of a datagram this connection moves now.
    fn class(&self, core: &Core<'_>, now: Instant) -> Traffic {
        match &self.conn {
            Some(c) if !c.connected() || !self.requested => Traffic::Handshake,
            _ if self.closing => Traffic::Control,
            _ if core.measure_from.is_some_and(|from| now >= from) => Traffic::Op,
            _ => Traffic::WarmupOp,
        }
    }
}

/// One connection's turn: connect when due, let quinn act, complete answered requests, time
/// out late ones, send new ones, close at the end (or on a GOAWAY, to open another), send what
/// quinn has, keep a receive armed.
#[allow(clippy::too_many_arguments)]
fn drive(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    over: bool,
    gave_up: bool,
    rec: &mut CoreRecorder,
    done: &mut Vec<Completed>,
) -> std::io::Result<()> {
    if slot.done {
        return Ok(());
    }
    if slot.conn.is_none() {
        // A socket whose connection ended is kept until the ring is done with it (its receive
        // cancelled, its send completed): its operations point into this slot.
        if slot.sock.is_some() {
            if slot.recv_armed || slot.send_busy {
                return Ok(());
            }
            slot.sock = None;
            slot.audit(rec);
        }
        // With `-n`, a server that answers nothing ends this connection's work (as the TCP
        // engines' give-up rule).
        if slot.left.is_some() && slot.futile >= crate::engine::conn::GIVE_UP_AFTER {
            slot.done = true;
            slot.retry_at = None;
            rec.sample(|| {
                format!("gave up: {} connections in a row got no answer", crate::engine::conn::GIVE_UP_AFTER)
            });
            if !slot.settled {
                slot.settled = true;
                core.job.window.settle(now);
            }
            return Ok(());
        }
        // Nothing (more) to send: a share of `-n` of 0, or the run is over.
        if over || slot.left == Some(0) {
            slot.done = true;
            slot.retry_at = None;
            if !slot.settled {
                slot.settled = true;
                core.job.window.settle(now);
            }
            return Ok(());
        }
        match slot.retry_at {
            Some(at) if now >= at => {}
            _ => return Ok(()),
        }
        // A paced connection per operation opens when its operation is due.
        if core.job.shape.per_op
            && core.job.shape.workload != crate::workload::Workload::ClosedLoop
            && let Some(from) = core.measure_from
        {
            slot.pacer.start(from.checked_sub(core.job.shape.warmup).unwrap_or(from));
            let due = slot.pacer.due(now);
            if due > now {
                slot.retry_at = Some(due);
                return Ok(());
            }
        }
        slot.retry_at = None;
        open(slot, i, core, now, rec);
        if slot.conn.is_none() {
            return Ok(());
        }
    }
    let timeout = core.job.shape.timeout;
    let conn = slot.conn.as_mut().expect("a connection");
    let qnow = core.clocks.to_std(now);
    if conn.poll_timeout().is_some_and(|at| at <= qnow) {
        conn.handle_timeout(qnow);
    }
    conn.drive(qnow, &mut core.endpoint, done);
    if conn.connected() && slot.connected_at.is_none() {
        slot.connected_at = Some(now);
        rec.phases.handshake(now.saturating_duration_since(slot.started));
        if !slot.settled {
            slot.settled = true;
            core.job.window.settle(now);
        }
    }
    for c in done.drain(..) {
        complete(slot, c, now, core, rec);
    }
    // A handshake past `--timeout` is lost as a timeout.
    if slot.connected_at.is_none()
        && !slot.closing
        && now >= slot.started + timeout
        && let Some(conn) = slot.conn.as_mut()
    {
        conn.close(qnow);
        let lost = Lost { class: ErrorClass::Timeout, reason: "the QUIC handshake timed out".into() };
        lose(ring, slot, i, core, now, &lost, rec)?;
        return Ok(());
    }
    if !slot.closing
        && let Some(lost) = slot.conn.as_ref().and_then(ClientConn::lost).cloned()
    {
        lose(ring, slot, i, core, now, &lost, rec)?;
        return Ok(());
    }
    expire(slot, core, now, timeout, rec);
    if !over && !slot.closing {
        request(slot, core, now, rec);
    } else {
        slot.next_due = None;
    }
    let conn = slot.conn.as_mut().expect("a connection");
    // The end: once nothing is in flight (or the drain limit passed), close; a GOAWAY with
    // nothing left in flight: close, and open another (a reconnect).
    let finished = over || slot.left == Some(0);
    if !slot.closing && finished && (conn.in_flight() == 0 || gave_up) {
        slot.closing = true;
        conn.close(qnow);
        fail_all(slot, now, core, ErrorClass::Timeout, "no answer by the end of the drain", rec);
    } else if !slot.closing && core.job.shape.per_op && slot.requested && conn.in_flight() == 0 {
        // Its one operation is done: close, and the next opens a new connection (as planned:
        // no reconnect counted).
        slot.closing = true;
        slot.reconnect = true;
        conn.close(qnow);
    } else if !slot.closing && conn.going_away() {
        slot.closing = true;
        slot.reconnect = true;
        rec.reconnects += 1;
        conn.close(qnow);
    }
    transmit(ring, slot, i, core, now)?;
    if slot.closing && !slot.send_busy {
        // Its CONNECTION_CLOSE went (or could not): the connection is over.
        end_life(ring, slot, i, core, rec)?;
        if std::mem::take(&mut slot.reconnect) {
            slot.closing = false;
            // Straight to the next connection — unless this one answered nothing (a server
            // saying GOAWAY at once): then after a pause, as after a failure.
            slot.retry_at = Some(if slot.futile > 0 { now + RETRY_PAUSE } else { now });
        } else {
            slot.done = true;
            // A paced connection's operations that came due before the end (or Ctrl-C) and
            // never went; none once its share of `-n` went.
            if let (Some(from), Some(end)) = (core.measure_from, core.deadline)
                && slot.left != Some(0)
            {
                rec.due_unsent += slot.pacer.due_before(from, end.min(now));
            }
        }
        return Ok(());
    }
    if !slot.recv_armed
        && let Some(sock) = &slot.sock
    {
        let hdr: &libc::msghdr = &core.receiving.hdr;
        let sqe = opcode::RecvMsgMulti::new(types::Fd(sock.as_raw_fd()), hdr, core.receiving.bufs.group)
            .build()
            .user_data((i as u64) << 1 | RECV);
        push(ring, &sqe)?;
        slot.recv_armed = true;
    }
    Ok(())
}

/// Requests past `--timeout`: reset, and failed as `timeout`; those above a GOAWAY's last id:
/// never to be answered, failed as `closed`.
fn expire(slot: &mut Slot, core: &Core<'_>, now: Instant, timeout: Duration, rec: &mut CoreRecorder) {
    let Some(conn) = slot.conn.as_mut() else { return };
    let late: Vec<u64> =
        slot.ops.iter().filter(|(_, op)| now >= op.sent + timeout).map(|(id, _)| *id).collect();
    let refused = conn.refused();
    for (streams, class) in [(late, ErrorClass::Timeout), (refused, ErrorClass::Closed)] {
        for stream in streams {
            conn.cancel(stream);
            if let Some(Op { traffic: Traffic::Op, .. }) = slot.ops.remove(&stream) {
                rec.ops_failed(class, 1);
                rec.series_errors(core.measure_from.unwrap_or(core.started), now, 1);
                rec.sample(|| format!("{}: HTTP/3 request stream {stream}", class.name()));
                // `-n` counts answered operations: a lost one is sent again.
                if let Some(left) = &mut slot.left {
                    *left += 1;
                }
            }
        }
    }
}

/// New requests, as the workload allows: up to `--depth` in flight, none before the window
/// opens (every connection sets up first), none past this connection's share of `-n`.
fn request(slot: &mut Slot, core: &Core<'_>, now: Instant, rec: &mut CoreRecorder) {
    let Some(conn) = slot.conn.as_mut() else { return };
    // A connection per operation (`--no-keepalive`): one, whose time began before its
    // connect.
    let per_op = core.job.shape.per_op;
    let depth = if per_op { 1 } else { core.job.shape.depth };
    let paced = core.job.shape.workload != crate::workload::Workload::ClosedLoop;
    slot.next_due = None;
    // Paced (`--rate`): the schedule starts at the window's opening (not before: asked for
    // its next due time earlier, it would start at this connection's connect, and its first
    // operations would fall before the window, sent uncounted); an operation goes once due,
    // its latency counted from then, however late it goes.
    let Some(from) = core.measure_from else { return };
    slot.pacer.start(from.checked_sub(core.job.shape.warmup).unwrap_or(from));
    while conn.connected() && conn.in_flight() < depth && slot.left != Some(0) && !(per_op && slot.requested)
    {
        let due = slot.pacer.due(now);
        if due > now {
            slot.next_due = Some(due);
            break;
        }
        let intended = if per_op { due.min(slot.started) } else { due };
        let traffic = if intended >= from { Traffic::Op } else { Traffic::WarmupOp };
        if paced && traffic == Traffic::Op {
            rec.record_lag(now.saturating_duration_since(intended));
        }
        // The entry it sends (`--requests`); one picked but not sent (no stream could open)
        // goes next time, so the order holds.
        let (entry, kind) = match slot.unsent_pick.take() {
            Some(pick) => pick,
            None => slot.picker.as_mut().map_or((0, 0), crate::requests::Picker::pick),
        };
        let Some(stream) = conn.request(entry) else {
            slot.unsent_pick = slot.picker.is_some().then_some((entry, kind));
            break;
        };
        if traffic == Traffic::Op {
            rec.sent += 1;
            rec.share_sent(slot.target, kind);
            if let Some(left) = &mut slot.left {
                *left -= 1;
            }
        }
        slot.ops.insert(stream, Op { intended, sent: now, traffic, kind: kind as u16 });
        slot.pacer.taken();
        slot.requested = true;
    }
    // Stopped for any reason but a due time ahead (in flight to the depth, no stream free,
    // its share sent): no timer — an answer or the peer's stream credit gives the next turn,
    // where a due time already past would give one every turn of the loop.
}

/// A new QUIC connection: its socket (connected to the target) and quinn's connection.
fn open(slot: &mut Slot, i: usize, core: &mut Core<'_>, now: Instant, rec: &mut CoreRecorder) {
    let target = &core.targets[slot.target];
    let sock = match udp::connected(slot.remote, slot.source) {
        Ok(s) => s,
        Err(e) => {
            rec.conn_error(ErrorClass::Connect, || format!("UDP socket: {e}"));
            slot.retry_at = Some(now + RETRY_PAUSE);
            return;
        }
    };
    match ClientConn::connect(
        &mut core.endpoint,
        core.clocks.to_std(now),
        target.config.clone(),
        slot.remote,
        &target.server_name,
        target.h3.clone(),
    ) {
        Ok(conn) => {
            core.handles.insert(conn.handle(), i);
            slot.sock = Some(sock);
            slot.conn = Some(conn);
            slot.started = now;
            slot.connected_at = None;
            rec.connects += 1;
        }
        Err(e) => {
            rec.conn_error(ErrorClass::Connect, || format!("QUIC connect: {e}"));
            slot.retry_at = Some(now + RETRY_PAUSE);
        }
    }
}

/// Send what quinn has, one datagram at a time (the socket's one send in flight); its bytes
/// are counted when the socket took them.
fn transmit(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &Core<'_>,
    now: Instant,
) -> std::io::Result<()> {
    if slot.send_busy {
        return Ok(());
    }
    let class = slot.class(core, now);
    let (Some(conn), Some(sock)) = (slot.conn.as_mut(), &slot.sock) else { return Ok(()) };
    let batch = if slot.gso { GSO_DATAGRAMS } else { 1 };
    let send = &mut slot.send;
    send.buf.clear();
    let Some(t) = conn.poll_transmit(core.clocks.to_std(now), batch, &mut send.buf) else { return Ok(()) };
    let datagrams = t.segment_size.map_or(1, |seg| t.size.div_ceil(seg.max(1))) as u64;
    slot.sending = (class, t.size as u64, datagrams);
    send.for_send(t.size, None, t.segment_size.filter(|_| datagrams > 1));
    let sqe = opcode::SendMsg::new(types::Fd(sock.as_raw_fd()), &send.hdr)
        .build()
        .user_data((i as u64) << 1 | SEND);
    push(ring, &sqe)?;
    slot.send_busy = true;
    Ok(())
}

/// A request's answer: its latency and outcome recorded.
fn complete(slot: &mut Slot, c: Completed, now: Instant, core: &Core<'_>, rec: &mut CoreRecorder) {
    let Some(Op { intended, sent, traffic, kind }) = slot.ops.remove(&c.stream) else { return };
    slot.answered = true;
    slot.futile = 0;
    if traffic != Traffic::Op {
        return;
    }
    if core.job.shape.workload != crate::workload::Workload::ClosedLoop {
        rec.record_uncorrected(now.nanos_since(sent));
    }
    if let Some(answer) = c.answer {
        rec.answered(answer);
    }
    let from = core.measure_from.unwrap_or(core.started);
    match c.outcome {
        Outcome::OpFailed(failure) => {
            rec.refused(failure);
            rec.series_errors(from, now, 1);
        }
        _ => {
            rec.ops += 1;
            let ns = now.nanos_since(intended);
            rec.record_latency(ns);
            rec.share_completed(slot.target, usize::from(kind), ns, 0, 0);
            rec.series_op(from, now, ns);
            rec.record_phases(now.saturating_duration_since(intended), None);
        }
    }
}

/// Every measured request in flight fails with `class`.
fn fail_all(
    slot: &mut Slot,
    now: Instant,
    core: &Core<'_>,
    class: ErrorClass,
    why: &str,
    rec: &mut CoreRecorder,
) {
    let lost = slot.ops.drain().filter(|(_, op)| op.traffic == Traffic::Op).count() as u64;
    // `-n` counts answered operations: lost ones are sent again.
    if let Some(left) = &mut slot.left {
        *left += lost;
    }
    if lost > 0 {
        rec.ops_failed(class, lost);
        rec.series_errors(core.measure_from.unwrap_or(core.started), now, lost);
        rec.sample(|| format!("{}: {why}", class.name()));
    }
}

/// The connection was lost: its requests fail with the loss's class (`timeout` for QUIC's
/// idle timeout, `tls` for a refused handshake, `protocol` for this side's HTTP/3 error,
/// `closed` for the peer's close), a close of this side's own goes out if the socket is free,
/// and a new connection opens after a pause.
fn lose(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    lost: &Lost,
    rec: &mut CoreRecorder,
) -> std::io::Result<()> {
    fail_all(slot, now, core, lost.class, &lost.reason, rec);
    rec.conn_error(lost.class, || format!("QUIC: {}", lost.reason));
    // This side's CONNECTION_CLOSE (its HTTP/3 error, its timeout), best effort.
    transmit(ring, slot, i, core, now)?;
    end_life(ring, slot, i, core, rec)?;
    if !slot.settled {
        slot.settled = true;
        core.job.window.settle(now);
    }
    slot.retry_at = Some(now + RETRY_PAUSE);
    Ok(())
}

/// A connection's life is over: its layers and its bytes (not checkable against the kernel:
/// UDP) go to the core's figures, the endpoint forgets it, and its socket's receive is
/// cancelled (the socket goes once the ring is done with it).
fn end_life(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    rec: &mut CoreRecorder,
) -> std::io::Result<()> {
    if let Some(c) = slot.conn.take() {
        core.handles.remove(&c.handle());
        if !c.is_drained() {
            // Dropped before quinn drained it: its connection ids go from the endpoint.
            let _ = core.endpoint.handle_event(c.handle(), quinn_proto::EndpointEvent::drained());
        }
        crate::stats::layers_merge_into(&mut rec.layers, Some(c.h3().layers()));
    }
    // Audited once the ring is done with the socket (`Slot::audit`).
    slot.audit_due = true;
    if !std::mem::take(&mut slot.answered) {
        slot.futile += 1;
    }
    slot.requested = false;
    slot.connected_at = None;
    if slot.recv_armed {
        let cancel = opcode::AsyncCancel::new((i as u64) << 1 | RECV).build().user_data(CANCELLING);
        push(ring, &cancel)?;
    }
    Ok(())
}

/// Queue one operation, submitting first if the queue is full.
fn push(ring: &mut IoUring, sqe: &io_uring::squeue::Entry) -> std::io::Result<()> {
    // SAFETY: the buffers it points into live in the slots, which outlive the ring's
    // operations (`drain_ring` waits for them before the slots go).
    unsafe {
        if ring.submission().push(sqe).is_err() {
            ring.submit()?;
            ring.submission().push(sqe).map_err(|_| std::io::Error::other("submission queue full"))?;
        }
    }
    Ok(())
}

/// Cancel every operation in flight and wait for the ring to settle, so no operation still
/// points into the slots when they go.
fn drain_ring(ring: &mut IoUring, slots: &mut [Slot]) -> bool {
    for (i, s) in slots.iter().enumerate() {
        for (busy, kind) in [(s.recv_armed, RECV), (s.send_busy, SEND)] {
            if busy {
                let cancel = opcode::AsyncCancel::new((i as u64) << 1 | kind).build().user_data(CANCELLING);
                let _ = push(ring, &cancel);
            }
        }
    }
    // Bounded: a cancelled operation completes at once; 100 waits of 10 ms at most.
    for _ in 0..100 {
        if slots.iter().all(|s| !s.recv_armed && !s.send_busy) {
            break;
        }
        let ts = types::Timespec::new().nsec(10_000_000);
        let _ = ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
        for c in ring.completion() {
            let (i, kind) = ((c.user_data() >> 1) as usize, c.user_data() & 1);
            if c.user_data() == CANCELLING {
                continue;
            }
            if let Some(s) = slots.get_mut(i) {
                if kind == SEND {
                    s.send_busy = false;
                } else if !io_uring::cqueue::more(c.flags()) {
                    s.recv_armed = false; // a multishot receive's last completion
                }
            }
        }
    }
    slots.iter().all(|s| !s.recv_armed && !s.send_busy)
}

// ---- The built-in HTTP/3 server (`serve h3`) ----

/// Sends and receives a server core keeps in flight at once (each its own buffer and header):
/// a burst of datagrams is read as fast as it comes, not one per turn of the loop.
const SERVER_SENDS: usize = 32;
const SERVER_RECVS: usize = 32;
/// Tags of a server core's operations: the send slots' indexes, then the receives'.
const SERVER_RECV: u64 = 1 << 32;

/// Start the built-in HTTP/3 server on `addr` (UDP), a core each on `cores` sharing the port
/// (`SO_REUSEPORT`: the kernel keeps each client's datagrams on one core), until `stop`, each
/// core within `bounds`.
pub fn start_server(
    addr: SocketAddr,
    cores: &[usize],
    config: quinn_proto::ServerConfig,
    bounds: super::quic::ServerBounds,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<super::ServerHandle, EngineError> {
    let listen = udp::bound;
    let first = super::unclaimed(addr, socket2::Type::DGRAM)
        .and_then(|()| listen(addr))
        .map_err(|source| EngineError::Listen { addr, source })?;
    let bound = first.local_addr().map_err(|source| EngineError::Listen { addr, source })?;
    let mut sockets = vec![first];
    for _ in 1..cores.len() {
        sockets.push(listen(bound).map_err(|source| EngineError::Listen { addr: bound, source })?);
    }
    let config = Arc::new(config);
    let mut threads = Vec::new();
    for (&cpu, sock) in cores.iter().zip(sockets) {
        let (stop, config) = (stop.clone(), config.clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-serve-h3-{cpu}"))
            .spawn(move || {
                super::catching(
                    cpu,
                    || {},
                    || {
                        super::pin_current_thread(cpu)?;
                        serve_core(cpu, sock, (*config).clone(), bounds, &stop)
                            .map_err(|source| EngineError::Executor { cpu, source })
                    },
                )
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    Ok(super::ServerHandle { addrs: vec![bound], stop, threads })
}

/// One server core: its socket's datagrams to the endpoint, the endpoint's to the socket,
/// quinn's deadlines slept on, until `stop`.
fn serve_core(
    cpu: usize,
    sock: std::net::UdpSocket,
    config: quinn_proto::ServerConfig,
    bounds: super::quic::ServerBounds,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<crate::stats::ServerTally> {
    let clock = super::sys::ThreadClock::start();
    let mut ring = super::rings::ring(256, 256)?;
    let mut endpoint = super::quic::ServerEndpoint::new(config, bounds);
    let mut tally = crate::stats::ServerTally { core: cpu, ..Default::default() };
    let fd = types::Fd(sock.as_raw_fd());
    // A receive takes a GRO batch (64 KiB); a send, a GSO one (10 datagrams) — or one at a
    // time after the kernel refused to segment one.
    let mut recvs: Vec<Box<Msg>> = (0..SERVER_RECVS).map(|_| Msg::new(GRO_BYTES)).collect();
    let mut sends: Vec<Box<Msg>> = (0..SERVER_SENDS).map(|_| Msg::new(GSO_DATAGRAMS * DATAGRAM)).collect();
    let mut segmented = [false; SERVER_SENDS];
    let mut gso = true;
    let mut free: Vec<usize> = (0..SERVER_SENDS).collect();
    let mut idle: Vec<usize> = (0..SERVER_RECVS).collect();
    let clocks = Clocks::new();
    // Bounded: until `stop`, then a few turns to send every connection's close.
    let mut closing_turns: Option<u32> = None;
    let result = (|| -> std::io::Result<()> {
        while closing_turns.is_none_or(|n| n > 0) {
            let now = clocks.to_std(Instant::now());
            match &mut closing_turns {
                None if stop.load(std::sync::atomic::Ordering::Relaxed) => {
                    // Stopping: every connection told (CONNECTION_CLOSE, H3_NO_ERROR).
                    endpoint.close_all(now);
                    closing_turns = Some(20);
                }
                Some(n) => *n -= 1,
                None => {}
            }
            endpoint.handle_timeout(now);
            endpoint.drive(now);
            // As many datagrams as there are free send slots.
            while let Some(&slot) = free.last() {
                let m = &mut sends[slot];
                m.buf.clear();
                let Some(t) = endpoint.poll_transmit(now, if gso { GSO_DATAGRAMS } else { 1 }, &mut m.buf)
                else {
                    break;
                };
                segmented[slot] = t.segment_size.is_some_and(|s| s < t.size);
                m.for_send(t.size, Some(t.destination), t.segment_size);
                let sqe = opcode::SendMsg::new(fd, &m.hdr).build().user_data(slot as u64);
                push(&mut ring, &sqe)?;
                free.pop();
            }
            while let Some(r) = idle.pop() {
                recvs[r].for_receive(true);
                let sqe =
                    opcode::RecvMsg::new(fd, &mut recvs[r].hdr).build().user_data(SERVER_RECV + r as u64);
                push(&mut ring, &sqe)?;
            }
            let tick = if closing_turns.is_some() { Duration::from_millis(1) } else { TICK };
            let wait =
                endpoint.poll_timeout(now).map_or(tick, |at| at.saturating_duration_since(now)).min(tick);
            let ts = types::Timespec::new().sec(wait.as_secs()).nsec(wait.subsec_nanos());
            match ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts)) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                    ) => {}
                Err(e) => return Err(e),
            }
            let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
            let now = clocks.to_std(Instant::now());
            for (data, result) in done {
                if let Some(r) =
                    data.checked_sub(SERVER_RECV).map(|r| r as usize).filter(|&r| r < SERVER_RECVS)
                {
                    idle.push(r);
                    // (A receive cut short — past 64 KiB, GRO's bound — is counted, not read.)
                    if result > 0
                        && let Some(from) = recvs[r].source()
                        && recvs[r].hdr.msg_flags & libc::MSG_TRUNC == 0
                    {
                        tally.rx += result as u64;
                        let got = &recvs[r];
                        let data = BytesMut::from(&got.buf[..result as usize]);
                        for datagram in udp::datagrams(data, got.gro_size()) {
                            endpoint.datagram(now, from, datagram);
                        }
                    }
                } else if (data as usize) < SERVER_SENDS {
                    if result > 0 {
                        tally.tx += result as u64;
                    } else if segmented[data as usize] && udp::refused_gso(result) {
                        gso = false; // this kernel will not segment: one at a time
                    }
                    free.push(data as usize);
                }
            }
        }
        Ok(())
    })();
    // Every operation points into `recvs` and `sends`: cancel them and wait before they go.
    let busy = (SERVER_RECVS - idle.len()) + (SERVER_SENDS - free.len());
    if busy > 0 {
        for r in (0..SERVER_RECVS).filter(|r| !idle.contains(r)) {
            let _ = push(
                &mut ring,
                &opcode::AsyncCancel::new(SERVER_RECV + r as u64).build().user_data(u64::MAX),
            );
        }
        let mut left = busy;
        for _ in 0..100 {
            if left == 0 {
                break;
            }
            let ts = types::Timespec::new().nsec(10_000_000);
            let _ = ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            left -= ring.completion().filter(|c| c.user_data() != u64::MAX).count().min(left);
        }
        if left > 0 {
            // Operations that never completed still point into these: leaked, not freed.
            std::mem::forget(recvs);
            std::mem::forget(sends);
        }
    }
    result?;
    tally.requests = endpoint.answered;
    tally.connections = endpoint.accepted;
    tally.refused = endpoint.refused;
    (tally.cpu, tally.wall) = clock.since(Instant::now());
    Ok(tally)
}
