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
//! Connections open at `--connect-rate`'s pace (connection i at i/N s; with `auto`, each
//! opening — the first and each after a loss — waits its turn at its core's
//! [`Opener`](crate::opener::Opener)), and keep themselves open with a PING after
//! [`KEEP_ALIVE`](super::quic::KEEP_ALIVE) of silence.
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
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

mod server;
mod slot;

pub use server::start_server;
use slot::*;

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

fn client_core(start: CoreStart, targets: Vec<Target>) -> Result<(CoreRecorder, Instant), EngineError> {
    let CoreStart { job, cpu, index, conns, gate } = start;
    let pinned = super::pin_current_thread(cpu);
    let entries = (2 * conns.len() as u32 + 8).next_power_of_two().max(64);
    let ring = super::rings::ring(entries, entries);
    let started = gate.wait();
    pinned?;
    let mut ring = ring.map_err(|source| EngineError::Executor { cpu, source })?;
    // A buffer for each socket's burst, up to 256 (16 MiB) a core.
    let buffers = (2 * conns.len()).next_power_of_two().clamp(16, 256) as u16;
    let mut receiving =
        Receiving::new(&ring, buffers, false).map_err(|source| EngineError::Executor { cpu, source })?;
    let books = CoreBooks::open(&job, cpu, index);
    let mut rec = job.recorder(cpu);
    let remotes = job
        .addrs
        .iter()
        .map(|a| {
            a.ip()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("QUIC cannot reach {a}")))
        })
        .collect::<io::Result<Vec<_>>>()
        .map_err(|source| EngineError::Executor { cpu, source })?;
    let mut slots: Vec<Slot> = conns
        .map(|i| Slot {
            target: i % targets.len(),
            remote: remotes[i % remotes.len()],
            source: (!job.bind.is_empty()).then(|| job.bind[i % job.bind.len()]),
            sock: None,
            conn: None,
            send: Msg::new(GSO_DATAGRAMS * DATAGRAM),
            recv_armed: false,
            send_busy: false,
            send_last: false,
            sending: (Traffic::Control, 0, 0),
            gso: true,
            ops: HashMap::default(),
            left: job.shape.ops.map(|n| crate::workload::split_ops(n, job.shape.connections, i)),
            pacer: job.shape.workload.pacer(i, job.shape.connections),
            next_due: None,
            settled: false,
            connected_at: None,
            started,
            retry_at: Some(started + job.shape.connect_after(i)),
            turn: crate::opener::Turn::default(),
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
/// quinn and given straight back. The client's (connected sockets) and `serve h3`'s (one
/// socket, each datagram's sender named) alike.
struct Receiving {
    bufs: super::bufring::BufRing,
    /// The header every receive is armed with: room for GRO's control message, and for the
    /// sender's address when the socket is not connected.
    hdr: Box<libc::msghdr>,
}

/// What one receive's completion brought: its sender (when asked for), its octets (a GRO
/// batch of datagrams of `gro` octets each, or one), and whether it was cut short.
struct Received {
    from: Option<SocketAddr>,
    data: BytesMut,
    gro: Option<usize>,
    truncated: bool,
}

/// Room in a receive buffer before its datagrams: the kernel's `io_uring_recvmsg_out` and the
/// control message (and the sender's address, when named).
const RECV_HEAD: usize = 128;
const RECV_CONTROL: usize = 64;

impl Receiving {
    /// `count` buffers (a power of two) in group 0 of `ring`; `named`: each receive says its
    /// sender.
    fn new(ring: &IoUring, count: u16, named: bool) -> std::io::Result<Receiving> {
        let name = if named { std::mem::size_of::<libc::sockaddr_storage>() } else { 0 };
        let bufs = super::bufring::BufRing::register(ring, 0, count, GRO_BYTES + RECV_HEAD + name)?;
        // SAFETY: all-zero is a valid msghdr.
        let mut hdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        hdr.msg_namelen = name as libc::socklen_t;
        hdr.msg_controllen = RECV_CONTROL;
        Ok(Receiving { bufs, hdr })
    }

    /// The multishot receive to arm on `fd`, its completions tagged `data`.
    fn arm(&self, fd: types::Fd, data: u64) -> io_uring::squeue::Entry {
        opcode::RecvMsgMulti::new(fd, &*self.hdr, self.bufs.group).build().user_data(data)
    }

    /// A receive's completion unpacked, its buffer given back (`None`: it carried no buffer —
    /// an error, ICMP unreachable, none free, a cancel — or one the kernel's header does not
    /// parse, or a sender asked for and not named).
    fn take(&mut self, result: i32, flags: u32) -> Option<Received> {
        let bid = io_uring::cqueue::buffer_select(flags)?;
        let named = self.hdr.msg_namelen > 0;
        let got = io_uring::types::RecvMsgOut::parse(self.bufs.data(bid, result.max(0) as usize), &self.hdr)
            .ok()
            .and_then(|m| {
                let from = if named { Some(udp::address_from(m.name_data())?) } else { None };
                Some(Received {
                    from,
                    data: BytesMut::from(m.payload_data()),
                    gro: udp::gro_size(m.control_data()),
                    truncated: m.is_payload_truncated(),
                })
            });
        self.bufs.give_back(bid);
        got
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
    /// `--connect-rate auto`: the core's opener paces the openings.
    auto: bool,
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
    fn schedule(&mut self, slots: &mut [Slot], i: usize, now: Instant) {
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
            // A handshake's `--timeout`, and with `--connect-rate auto` the moment it is slow.
            let slow = slot.started + crate::opener::Opener::SLOW;
            let slow = (self.auto && slow > now).then_some(slow);
            let handshake = (slot.conn.is_some() && slot.connected_at.is_none()).then(|| {
                let timeout = slot.started + timeout;
                slow.map_or(timeout, |slow| slow.min(timeout))
            });
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
        auto: rec.opener.is_some(),
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
    // Sends pushed in a turn that carried all quinn had, not yet completed: the wait need not
    // wake for them (each completes once: never more than those in flight, so the wait never
    // waits for a completion that cannot come). A full batch's completion is waited for as any
    // other: quinn may have more to send once its buffer is free (an upload's next datagrams).
    let mut sending = 0usize;
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
            let (was_done, was_sending) = (slots[i].done, slots[i].send_busy);
            drive(ring, &mut slots[i], i, &mut core, now, over, gave_up, rec, &mut done)?;
            sending += usize::from(slots[i].send_busy && !was_sending && slots[i].send_last);
            finished += usize::from(slots[i].done && !was_done);
            core.schedule(slots, i, now);
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
        wait(ring, next.map_or(TICK, |at| at.saturating_duration_since(now)).min(TICK), sending)?;
        let now = Instant::now();
        for c in ring.completion() {
            let (data, result, flags) = (c.user_data(), c.result(), c.flags());
            if data == CANCELLING {
                continue;
            }
            let (i, kind) = ((data >> 1) as usize, data & 1);
            core.ready(slots, i);
            if i >= slots.len() {
                continue;
            }
            if kind == SEND {
                sending -= usize::from(slots[i].send_last && sending > 0);
                sent(&mut slots[i], result, rec);
            } else {
                received(&mut core, slots, i, result, flags, now, rec);
            }
        }
    }
}

/// Submit what is queued and wait, at most `wait`, for a completion that is not one of the
/// `sending` sends in flight (sends whose completion asks nothing of the loop). A UDP send on
/// a socket with room completes inside the submit, so waiting for one completion returned at
/// once with the send's and the loop entered the ring a second time to sleep: `serve h3` at 20,000 paced requests/s entered 1.44 times a request.
/// Waiting for `sending + 1` sleeps in the same enter until something else happens too (a
/// send still in flight only delays the wake-up while it is, bounded by `wait`).
fn wait(ring: &mut IoUring, wait: Duration, sending: usize) -> std::io::Result<()> {
    let ts = types::Timespec::new().sec(wait.as_secs()).nsec(wait.subsec_nanos());
    let args = types::SubmitArgs::new().timespec(&ts);
    match ring.submitter().submit_with_args(sending + 1, &args) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// A slot's send ended: its bytes counted once the socket took them (a failed send is QUIC's
/// to retransmit).
fn sent(slot: &mut Slot, result: i32, rec: &mut CoreRecorder) {
    slot.send_busy = false;
    let (class, len, datagrams) = std::mem::replace(&mut slot.sending, (Traffic::Control, 0, 0));
    if result > 0 {
        rec.tx.add(class, len);
        rec.datagrams.tx += datagrams;
        slot.life.0 += len;
    } else if datagrams > 1 && udp::refused_gso(result) {
        slot.gso = false; // this kernel or device will not segment: one at a time
    }
}

/// A slot's multishot receive gave a (GRO) batch of datagrams: counted, and each handed to
/// quinn on its own; the connection it is for gets a turn.
fn received(
    core: &mut Core<'_>,
    slots: &mut [Slot],
    i: usize,
    result: i32,
    flags: u32,
    now: Instant,
    rec: &mut CoreRecorder,
) {
    let slot = &mut slots[i];
    // A multishot receive stays armed while it says more will come.
    if !io_uring::cqueue::more(flags) {
        slot.recv_armed = false;
    }
    let Some(Received { data, gro: size, truncated, .. }) = core.receiving.take(result, flags) else {
        return; // an error (ICMP unreachable, no buffer free), a cancel: re-armed
    };
    if truncated {
        // Past the buffer (GRO's bound is 64 KiB, the buffer's): what came is counted, not
        // handed on cut; QUIC resends what it lacks.
        rec.rx.add(Traffic::Control, data.len() as u64);
        rec.datagrams.rx += 1;
        return;
    }
    let n = data.len() as u64;
    let batch = udp::datagrams(data, size);
    slot.life.1 += n;
    if slot.conn.is_none() {
        // After the connection's end (its receive not yet cancelled): counted, unread.
        rec.rx.add(Traffic::Control, n);
        rec.datagrams.rx += batch.count() as u64;
        return;
    }
    rec.rx.add(slot.class(core, now), n);
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
