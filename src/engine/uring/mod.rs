//! The raw io_uring engine: one pinned thread per core, every connection a state machine
//! ([`Conn`]) driven by completions.
//!
//! Per loop: every connection that can move pushes its next operation (connect, send) as an
//! SQE; one `io_uring_enter` submits them all and waits for completions (rings set up with
//! `SINGLE_ISSUER | DEFER_TASKRUN`, so completions run in this thread, in batches). With many
//! connections a request costs a fraction of a syscall: the send is an SQE, not a syscall.
//!
//! Sockets are **direct descriptors** where the kernel has them ([`super::rings`]): the ring
//! makes each one in its own table (`socket`, `TCP_NODELAY`, `bind`, `connect` as one linked
//! chain of SQEs), every operation names it by its index there (no file lookup per
//! operation), and it becomes a file again only at the close, for the audit's `TCP_INFO`. So a
//! thread holds more connections than the process may open files: those beyond one table go
//! to more rings.
//!
//! Receiving is one **multishot receive** per socket, armed at the connect, with buffers from a
//! shared provided-buffer ring ([`super::bufring`]): each completion's bytes are copied into the
//! connection's machine (kept undecoded until it asks for them: [`Conn::arrived`]) and the
//! buffer goes straight back. No receive is submitted per answer, and a connection waiting for
//! bytes holds no buffer. Timeouts: the deadlines of connects, sends and reads sit on a timing
//! wheel ([`super::deadlines`]); one that comes due cancels its connect or send (`ASYNC_CANCEL`) or
//! fails its read; before a socket is closed its receive is cancelled and its end awaited.

use super::bufring::BufRing;
use super::conn::{Conn, Want};
use super::deadlines::Deadlines;
use super::rings::{self, Layout, Owned, Rings, Sock, cancel, receive, sqe};
use super::sys::close_audit;
use super::{ClientJob, ClientRun, CoreBooks, CoreStart, EngineError};
use crate::clock::Instant;
use crate::proto::ClientCodec;
use crate::stats::{CoreRecorder, Inexact};
use io_uring::{cqueue, opcode, squeue, types};
use socket::{close_fixed, direct_connect, plain_socket, setup_error};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::IntoRawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

mod gather;
mod socket;
mod wakes;
use wakes::Wakes;

/// Longest wait in `io_uring_enter`; also how often sleepers are looked at.
const TICK: Duration = Duration::from_millis(5);
/// With `--slack`, how long after a completion the engine stays awake for the next (see
/// [`Driver::wait`]). Measured at 20,000 requests/s, 64 connections, `--slack 1ms` against
/// `serve http` (two rounds side by side): CPU per request 18.2-20.8 µs without, 10.2-10.3 with
/// 25 µs, 10.7-10.9 with 50, 11.7-12.4 with 100; voluntary context switches 48,000-53,000
/// without, 4,700 with 25 µs. Without `--slack` it costs more than it saves (31 -> 49 µs: with
/// no batch of sends, answers come one at a time and the poll never ends).
const ANSWER_POLL: Duration = Duration::from_micros(25);
/// Connections woken all at once (the window's opening, the run's end, Ctrl-C) that one loop
/// drives at most (the rest wait for the next loops, in order): a window opening on a million
/// connections would otherwise hold every answer and every send due behind a tenth of a
/// second of drives.
const BACKLOG_PER_LOOP: usize = 1024;
/// The most completions a gathered wait asks for (`--gather`; one a connection otherwise),
/// and the fewest connections a thread gathers for: a few connections' completions are too
/// few to gather (and a run of one or two measures latency).
const MAX_GATHERED: usize = 1024;
const LEAST_GATHERED: usize = 8;
/// Steps one drive of a connection takes at most (a connection's usual turn takes two or
/// three: read what arrived, send the next operation).
const MAX_STEPS: usize = 64;
/// Operation kinds, in the low bits of an SQE's user data (the slot index above them).
const KIND_BITS: u64 = 3;
/// Completions not looked at: cancels, closes of direct descriptors.
const OP_QUIET: u64 = 0;
const OP_CONNECT: u64 = 1;
const OP_SEND: u64 = 2;
const OP_RECV: u64 = 3;
/// The links of a direct socket's set-up before its connect: they complete only if they fail.
const OP_SOCKET: u64 = 4;
const OP_BIND: u64 = 5;
/// A direct descriptor handed back as a file for the close's audit.
const OP_INSTALL: u64 = 6;
/// A set-up link: the next SQE runs only if this one succeeds, and a success posts nothing.
const LINK_QUIET: squeue::Flags = squeue::Flags::IO_LINK.union(squeue::Flags::SKIP_SUCCESS);
/// The value of the boolean socket options set by SQE (it must outlive the SQE).
static ONE: libc::c_int = 1;

/// Run the client side of `job` with the raw io_uring engine.
pub fn run_client<C>(job: &ClientJob, prototypes: Vec<C>) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    super::run_client_threads(job, prototypes, client_core::<C>)
}

/// Buffers in a core's provided-buffer ring, and their size: a completion carries at most one
/// buffer of bytes, so larger messages take several completions. Running out (a burst from
/// more connections at once than there are buffers) ends a receive with `ENOBUFS`; it is armed
/// again once the buffers are back.
const RING_BUFFERS_MAX: u16 = 1024;
const RING_BUFFER_SIZE: usize = 4 * 1024;
/// The same where connections are UDP (`udp://`): a datagram is received whole into one
/// buffer or cut short, so each holds the largest (65,507 bytes of payload).
const DATAGRAM_BUFFER_SIZE: usize = 64 * 1024;
/// Every ring's provided buffers are its group 0.
const GROUP: u16 = 0;

/// The addresses connections connect to and bind to, kept for the run: SQEs point at them.
struct Addrs {
    targets: Vec<socket2::SockAddr>,
    /// Per target, whether its connections are UDP sockets (each send one datagram).
    datagrams: Vec<bool>,
    sources: Vec<socket2::SockAddr>,
}

/// One connection's slot: its machine, its socket, the operation in flight and its receive.
struct Slot<C> {
    conn: Conn<C>,
    sock: Option<Sock>,
    /// The connect or send in flight (its kind) and when it times out.
    busy: Option<(u64, Instant)>,
    cancelled: bool,
    done: bool,
    /// The socket's multishot receive is armed.
    armed: bool,
    /// The machine waits for bytes until then (no SQE: the receive is always armed).
    reading: Option<Instant>,
    /// Bytes came while it waited to read: the drive decodes them before it asks the machine
    /// again ([`Conn::take_answers`]), which would only have asked to read once more.
    woke_reading: bool,
    /// How the socket's stream ended, not yet told to the machine: 0 (the peer closed) or an
    /// error (negative errno).
    end: Option<i32>,
    /// The machine asked to close: the receive is being cancelled first.
    closing: bool,
    /// A direct socket is being handed back as a file for the audit.
    installing: bool,
    /// Its source address (`--bind`): an index into [`Addrs::sources`].
    source: Option<u32>,
    /// The link of a direct socket's set-up that failed before the connect: its kind and errno.
    setup_failed: Option<(u64, i32)>,
    /// The loop round whose `io_uring_enter` submitted its send (see `wrote_at` below).
    send_round: u64,
    /// Its entry on the deadlines' wheel.
    timer: Option<Instant>,
}

impl<C> Slot<C> {
    /// The next instant something of this slot times out.
    fn deadline(&self) -> Option<Instant> {
        let busy = self.busy.filter(|_| !self.cancelled).map(|(_, at)| at);
        match (self.reading, busy) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// What waits for a time: connections asleep (a paced workload's next operation, a retry
/// pause) and the deadlines of operations in flight.
struct Timers {
    sleepers: BinaryHeap<Reverse<(Instant, usize)>>,
    deadlines: Deadlines,
}

/// Whether this kernel lets the engine make its sockets direct descriptors (and bind them to
/// source addresses, with `bind`).
pub fn direct_sockets(bind: bool) -> bool {
    let support = rings::support();
    support.direct && (!bind || support.bind)
}

fn client_core<C: ClientCodec>(
    CoreStart { job, cpu, index, conns, gate }: CoreStart,
    prototypes: Vec<C>,
) -> Result<(CoreRecorder, Instant), EngineError> {
    let pinned = super::pin_current_thread(cpu);
    let layout = Layout::new(conns.len(), direct_sockets(!job.bind.is_empty()), rings::file_limit());
    let buffers = (2 * conns.len()).clamp(64, usize::from(RING_BUFFERS_MAX)).next_power_of_two() as u16;
    let buffer =
        if job.addrs.iter().any(|a| a.is_datagram()) { DATAGRAM_BUFFER_SIZE } else { RING_BUFFER_SIZE };
    let rings = Rings::open(layout, conns.len(), buffers, buffer);
    let start = gate.wait();
    pinned?;
    let rings = rings.map_err(|source| EngineError::Executor { cpu, source })?;
    let addrs = Addrs {
        targets: job
            .addrs
            .iter()
            .map(|a| a.sockaddr())
            .collect::<io::Result<_>>()
            .map_err(|source| EngineError::Executor { cpu, source })?,
        datagrams: job.addrs.iter().map(|a| a.is_datagram()).collect(),
        sources: job
            .bind
            .iter()
            .map(|&ip| socket2::SockAddr::from(std::net::SocketAddr::new(ip, 0)))
            .collect(),
    };
    let books = CoreBooks::open(&job, cpu, index);
    let mut rec = job.recorder(cpu);
    let prototypes: Vec<std::rc::Rc<C>> = prototypes.into_iter().map(std::rc::Rc::new).collect();
    let slots: Vec<Slot<C>> = conns
        .map(|i| {
            let conn =
                super::new_conn(&job, &prototypes, i, start).woken_by_the_engine().small_receive_buffer();
            Slot {
                conn,
                sock: None,
                busy: None,
                cancelled: false,
                done: false,
                armed: false,
                reading: None,
                woke_reading: false,
                end: None,
                closing: false,
                installing: false,
                source: (!job.bind.is_empty()).then(|| (i % job.bind.len()) as u32),
                setup_failed: None,
                send_round: 0,
                timer: None,
            }
        })
        .collect();
    // The rings own what their operations point into (the slots' buffers, the addresses):
    // however the loop ends, even in a panic, those outlive every operation.
    let mut owned = Owned::new(rings, (slots, addrs));
    let (rings, (slots, addrs)) = owned.parts();
    let result = run_loop(rings, slots, addrs, &job, &books, &mut rec, start);
    if result.is_err() {
        close_plain_sockets(slots);
    }
    drop(owned);
    result.map_err(|source| EngineError::Executor { cpu, source })?;
    Ok(books.close(rec))
}

/// Drive every slot until all are done. Returns early only when a ring fails.
fn run_loop<C: ClientCodec>(
    rings: &mut Rings,
    slots: &mut [Slot<C>],
    addrs: &Addrs,
    job: &ClientJob,
    books: &CoreBooks,
    rec: &mut CoreRecorder,
    start: Instant,
) -> io::Result<()> {
    let n = slots.len();
    let mut driver = Driver {
        rings,
        slots,
        addrs,
        rec,
        ready: Vec::new(),
        backlog: (0..n).collect(),
        remaining: n,
        // The sleepers' heap sized for every connection at once (the window's opening puts
        // them all in): growing a heap of a million entries stalls the loop while it copies.
        timers: Timers { sleepers: BinaryHeap::with_capacity(n), deadlines: Deadlines::new() },
        now: Instant::now(),
        round: 0,
        completions: Vec::with_capacity(n.min(1 << 16) + 64),
        spin: job.spin,
        slack: job.slack,
        poll_until: start,
        reset_close: job.reset_close,
        gather: gather::Gather::new(job.gather, start),
    };
    let mut wakes = Wakes::default();
    loop {
        let stopping = job.stop.load(Ordering::Relaxed);
        let drove = driver.drive_ready(stopping)?;
        if driver.remaining == 0 {
            return Ok(());
        }
        let submitted = driver.wait(drove)?;
        let mut completions = std::mem::take(&mut driver.completions);
        for &(data, result, flags) in &completions {
            driver.completed(data, result, flags, submitted)?;
        }
        completions.clear();
        driver.completions = completions;
        if wakes.all_now(job, start, driver.now, driver.rec.in_flight()) {
            // Every connection, in order (a paced schedule's order too): draining a heap of a
            // million one by one took the loop a third of a second. A connection that had
            // something else to do meanwhile finds it again when driven.
            driver.timers.sleepers.clear();
            driver.backlog.clear();
            driver.backlog.extend(0..driver.slots.len());
        }
        driver.due()?;
        books.publish(driver.now, driver.rec);
    }
}

/// A core's loop state: its rings and connections, and which of them to drive next.
struct Driver<'a, C> {
    rings: &'a mut Rings,
    slots: &'a mut [Slot<C>],
    addrs: &'a Addrs,
    rec: &'a mut CoreRecorder,
    /// Connections an event moved or whose sleep is over (all of them driven each loop).
    ready: Vec<usize>,
    /// Connections woken all at once (`BACKLOG_PER_LOOP` driven each loop).
    backlog: std::collections::VecDeque<usize>,
    /// Connections not done yet.
    remaining: usize,
    timers: Timers,
    /// One clock read per loop, taken after the wait: on a machine whose clock has no vDSO
    /// fast path each read is a syscall. The connections driven at the top of the next loop
    /// use it.
    now: Instant,
    round: u64,
    completions: Vec<rings::Completion>,
    /// `--spin`: a paced send due within this is waited for awake.
    spin: Duration,
    /// `--slack`: how late a sleeper may be woken, to wake once for several.
    slack: Duration,
    /// With `--slack`: until when the thread stays awake for more completions (the last
    /// one's time plus [`ANSWER_POLL`]).
    poll_until: Instant,
    /// `--close-reset`: each socket closed with a reset.
    reset_close: bool,
    /// `--gather`: a closed loop's wake-ups gathered.
    gather: gather::Gather,
}

impl<C: ClientCodec> Driver<'_, C> {
    /// Drive the ready connections and the next part of the backlog; whether there were any.
    fn drive_ready(&mut self, stopping: bool) -> io::Result<bool> {
        let drove = !self.ready.is_empty() || !self.backlog.is_empty();
        let woken = self.backlog.len().min(BACKLOG_PER_LOOP);
        // A drive adds nothing to `ready` (only completions and timers do).
        let mut ready = std::mem::take(&mut self.ready);
        for &i in &ready {
            self.drive_counted(i, stopping)?;
        }
        ready.clear();
        self.ready = ready;
        for _ in 0..woken {
            let Some(i) = self.backlog.pop_front() else { break };
            self.drive_counted(i, stopping)?;
        }
        Ok(drove)
    }

    fn drive_counted(&mut self, i: usize, stopping: bool) -> io::Result<()> {
        let done = self.slots[i].done;
        self.drive(i, stopping)?;
        if self.slots[i].done && !done {
            self.remaining -= 1;
        }
        Ok(())
    }

    /// Submit what the drives pushed and wait for completions: until the next tick, or sooner
    /// for a paced connection's next operation or a deadline. Returns when the submit was.
    fn wait(&mut self, drove: bool) -> io::Result<Instant> {
        let now = self.now;
        let wait = if self.backlog.is_empty() { TICK } else { Duration::ZERO };
        // `--slack`: the sleepers' wake-up put off by it, so that one wake sends every
        // operation that came due meanwhile (late by up to that much: the lag says how late).
        let slack = self.slack;
        let wait = self
            .timers
            .sleepers
            .peek()
            .map_or(wait, |Reverse((until, _))| (*until + slack).saturating_duration_since(now).min(wait))
            .min(self.timers.deadlines.wait(now, wait));
        // A sleep and its wake-up cost more CPU than a short spin (tens of µs on a VM), and
        // the wake comes late: a paced operation due within `--spin` is waited for awake.
        let spin = wait < self.spin && slack.is_zero();
        let want = if spin && !self.rings.ready_now() { 0 } else { 1 };
        // A send that fits the socket buffer is issued inline by the submit, before the wait:
        // when its completion comes back from that same call, the bytes left at `submitted`,
        // not when this thread woke to read the completion. Stamped at the wake instead, a
        // wake delayed by the host shortened the answer's `waiting` (to 0 in a batch that
        // also carries the answer).
        self.round += 1;
        let submitted = Instant::now();
        let (mut polled, mut idle_poll) = (Duration::ZERO, Duration::ZERO);
        let until = self.poll_until.min(now + wait);
        if want == 1 && !slack.is_zero() && submitted < until {
            // `--slack`: a tick's answers come back spread over tens of µs, and a thread that
            // sleeps between them wakes once for each (a VM exit here, dearer than the
            // answer). For ANSWER_POLL after its last completion the thread stays awake,
            // looking at the rings' flags in user space, so the rest are read in one wake
            // and stamped as they come, not when a wake-up lets them be seen.
            self.rings.enter(0, Duration::ZERO, Duration::ZERO)?;
            let mut at = Instant::now();
            while at < until && !self.rings.pending() {
                std::hint::spin_loop();
                at = Instant::now();
            }
            polled = at.saturating_duration_since(submitted);
            if at >= until {
                // A poll that found nothing: awake by choice (the report tells it apart).
                idle_poll = polled;
            }
        }
        // (The wait's end stays where it was: a poll does not put the next send off.)
        // `--gather`: nothing came yet; wake once for what comes within the window.
        // Asked for: a completion a connection with operations out (at most), each held at
        // most the window; the report gives the longest window a wait was given.
        let out = (self.rec.in_flight() as usize).min(self.remaining);
        let (want, gather) = match want == 1 && out >= LEAST_GATHERED && !self.rings.pending() {
            true => (out.min(MAX_GATHERED), self.gather.window(now, self.rec)),
            false => (want, Duration::ZERO),
        };
        let gathered = self.rings.enter(want, wait.saturating_sub(polled), gather)?;
        self.rec.gathered = self.rec.gathered.max(gathered);
        let woke = Instant::now();
        self.completions.clear();
        self.rings.reap(&mut self.completions)?;
        self.rec.spin += idle_poll;
        if !self.completions.is_empty() {
            self.poll_until = woke + ANSWER_POLL;
        }
        // A spin that found nothing: awake by choice, not load (the report tells them apart).
        if want == 0 && !drove && self.completions.is_empty() {
            self.rec.spin += woke.saturating_duration_since(now);
        }
        self.now = woke;
        Ok(submitted)
    }

    /// One completion: its connection told, and driven next if it can move.
    fn completed(&mut self, data: u64, result: i32, flags: u32, submitted: Instant) -> io::Result<()> {
        let (i, kind) = ((data >> KIND_BITS) as usize, data & ((1 << KIND_BITS) - 1));
        let (now, rings, rec) = (self.now, &mut *self.rings, &mut *self.rec);
        let slot = &mut self.slots[i];
        match kind {
            OP_QUIET => return Ok(()),
            OP_RECV => return self.received(i, result, flags),
            OP_SOCKET | OP_BIND => {
                // Its connect comes back cancelled, and fails with this.
                slot.setup_failed.get_or_insert((kind, result));
                return Ok(());
            }
            OP_INSTALL => {
                self.installed(i, result)?;
                self.ready.push(i);
                return Ok(());
            }
            _ => {}
        }
        let cancelled = std::mem::take(&mut slot.cancelled);
        slot.busy = None;
        let error = |r: i32| {
            if cancelled && r == -libc::ECANCELED {
                io::Error::new(io::ErrorKind::TimedOut, "timed out")
            } else {
                io::Error::from_raw_os_error(-r)
            }
        };
        match kind {
            OP_CONNECT if result >= 0 => {
                arm(rings, slot, i)?;
                slot.conn.connected(now, rec)
            }
            OP_CONNECT => {
                let e = match slot.setup_failed.take() {
                    Some((step, errno)) if !cancelled => setup_error(step, errno, slot.source, self.addrs),
                    _ => error(result),
                };
                match slot.sock.take() {
                    Some(Sock::Fixed(index)) => rings.push(i, &close_fixed(index, i))?,
                    // SAFETY: our socket, no operation in flight on it.
                    Some(Sock::Fd(fd)) => unsafe {
                        libc::close(fd);
                    },
                    None => {}
                }
                slot.conn.connect_failed(&e, now, rec)
            }
            OP_SEND if result >= 0 => {
                // A UDP socket's send is one datagram, whole.
                rec.datagrams.tx += u64::from(self.addrs.datagrams[slot.conn.target()]);
                let wrote_at = if slot.send_round == self.round { submitted } else { now };
                slot.conn.wrote(result as usize, wrote_at, rec)
            }
            _ => slot.conn.write_failed(&error(result), rec),
        }
        self.ready.push(i);
        Ok(())
    }

    /// Sleepers whose time has come, ahead of any backlog (a paced send due now does not wait
    /// for a million connections to be woken); deadlines that came up: a read past its
    /// deadline fails, a connect or send past its own is cancelled; what is not due yet is
    /// looked at again when it is.
    fn due(&mut self) -> io::Result<()> {
        let now = self.now;
        while let Some(Reverse((until, i))) = self.timers.sleepers.peek().copied() {
            if until > now {
                break;
            }
            self.timers.sleepers.pop();
            self.ready.push(i);
        }
        while let Some((at, i)) = self.timers.deadlines.pop_due(now) {
            let slot = &mut self.slots[i];
            Deadlines::came_up(at, &mut slot.timer);
            if let Some(deadline) = slot.reading
                && now >= deadline
            {
                slot.reading = None;
                slot.conn.read_failed(&io::Error::new(io::ErrorKind::TimedOut, "timed out"), now, self.rec);
                self.ready.push(i);
            }
            if let Some((kind, deadline)) = slot.busy
                && now >= deadline
                && !slot.cancelled
            {
                slot.cancelled = true;
                self.rings.push(i, &cancel(user_data(i, kind), user_data(i, OP_QUIET)))?;
            }
            if let Some(next) = slot.deadline().filter(|next| *next > now) {
                self.timers.deadlines.ensure(i, next, &mut slot.timer);
            }
        }
        Ok(())
    }

    /// Ask slot `i`'s machine what to do until it is waiting on an operation, asleep or done.
    fn drive(&mut self, i: usize, stopping: bool) -> io::Result<()> {
        let now = self.now;
        {
            let slot = &self.slots[i];
            // Woken twice in one batch (two completions): the first wake already acted.
            if slot.busy.is_some() || slot.reading.is_some() || slot.installing {
                return Ok(());
            }
        }
        if std::mem::take(&mut self.slots[i].woke_reading) {
            self.slots[i].conn.take_answers(now, self.rec);
        }
        // Bounded: a machine that kept asking for steps that finish at once would hold the
        // loop; past this many it is looked at again in the next loop.
        for _ in 0..MAX_STEPS {
            let slot = &mut self.slots[i];
            match slot.conn.next(now, stopping, self.rec) {
                Want::Done => {
                    slot.done = true;
                    return Ok(());
                }
                Want::Sleep(until) => {
                    self.timers.sleepers.push(Reverse((until, i)));
                    return Ok(());
                }
                Want::Connect(timeout) => {
                    if self.connect(i, timeout)? {
                        return Ok(());
                    }
                }
                Want::Write(timeout) => {
                    let Some(sock) = slot.sock else {
                        slot.conn.write_failed(&io::Error::other("no connection"), self.rec);
                        continue;
                    };
                    let buf = slot.conn.to_write();
                    let (ptr, len) = (buf.as_ptr(), buf.len().min(u32::MAX as usize) as u32);
                    let sqe = sqe!(sock, |s| opcode::Send::new(s, ptr, len)
                        .flags(libc::MSG_NOSIGNAL)
                        .build()
                        .user_data(user_data(i, OP_SEND)));
                    slot.busy = Some((OP_SEND, now + timeout));
                    self.timers.deadlines.ensure(i, now + timeout, &mut slot.timer);
                    slot.send_round = self.round + 1; // submitted by the next enter
                    return self.rings.push(i, &sqe);
                }
                // What arrived goes in first, then how the stream ended; a poll that finds
                // neither is done, a read waits (its receive is armed already).
                want @ (Want::Read(_) | Want::Poll) => {
                    if slot.conn.has_arrived() {
                        slot.conn.take_arrived(now, self.rec);
                    } else if let Some(end) = slot.end.take() {
                        let e = match end {
                            0 => {
                                slot.conn.read(0, now, self.rec);
                                continue;
                            }
                            e if e == -libc::EMSGSIZE => {
                                io::Error::other("message larger than the receive limit")
                            }
                            e => io::Error::from_raw_os_error(-e),
                        };
                        slot.conn.read_failed(&e, now, self.rec);
                    } else if slot.sock.is_none() {
                        slot.conn.read_failed(&io::Error::other("no connection"), now, self.rec);
                    } else if let Want::Read(timeout) = want {
                        slot.reading = Some(now + timeout);
                        self.timers.deadlines.ensure(i, now + timeout, &mut slot.timer);
                        return Ok(());
                    } else {
                        slot.conn.polled(now);
                    }
                }
                Want::Close if slot.armed => {
                    if !slot.closing {
                        slot.closing = true;
                        self.rings.push(i, &cancel(user_data(i, OP_RECV), user_data(i, OP_QUIET)))?;
                    }
                    return Ok(());
                }
                Want::Close => {
                    if self.close(i)? {
                        return Ok(());
                    }
                }
            }
        }
        self.timers.sleepers.push(Reverse((now, i)));
        Ok(())
    }

    /// A completion of slot `i`'s receive: its bytes into the machine, the buffer back; the
    /// receive armed again if it ended for want of buffers; the machine woken if it waits.
    fn received(&mut self, i: usize, result: i32, flags: u32) -> io::Result<()> {
        let (rings, slot) = (&mut *self.rings, &mut self.slots[i]);
        if !cqueue::more(flags) {
            slot.armed = false;
        }
        if result > 0 && self.addrs.datagrams[slot.conn.target()] {
            self.rec.datagrams.rx += 1; // a UDP socket's receive is one datagram
        }
        if let Some(bid) = cqueue::buffer_select(flags) {
            let bufs: &mut BufRing = rings.bufs(i);
            if result > 0 && !slot.conn.arrived(bufs.data(bid, result as usize)) {
                slot.end.get_or_insert(-libc::EMSGSIZE);
            }
            bufs.give_back(bid);
        }
        match result {
            1.. => {}
            // An empty datagram: nothing for the machine (a stream's 0 is its end).
            0 if self.addrs.datagrams[slot.conn.target()] => self.rec.datagrams.rx += 1,
            0 => {
                slot.end.get_or_insert(0);
            }
            e if e == -libc::ENOBUFS => {}
            e if e == -libc::ECANCELED && slot.closing => {}
            e => {
                slot.end.get_or_insert(e);
            }
        }
        if !slot.armed && !slot.closing && slot.end.is_none() {
            arm(rings, slot, i)?;
        }
        // The machine hears of it if it waits for bytes, or for the receive's end to close.
        if slot.reading.take().is_some() {
            slot.woke_reading = true;
            self.ready.push(i);
        } else if slot.closing && !slot.armed {
            self.ready.push(i);
        }
        Ok(())
    }

    /// Slot `i`'s direct socket came back as file `result` (or could not: a negative errno):
    /// the audit reads its counts through it, then both are closed and the machine told.
    fn installed(&mut self, i: usize, result: i32) -> io::Result<()> {
        let slot = &mut self.slots[i];
        slot.installing = false;
        let (drained, audit) = if result >= 0 {
            let audit = close_audit(result, slot.conn.socket_rx(), false);
            if self.reset_close {
                super::sys::reset_on_close(result);
            }
            // SAFETY: the file just installed for us; the direct descriptor still holds the socket.
            unsafe { libc::close(result) };
            audit
        } else {
            // The process is out of descriptors: the socket's counts cannot be read.
            (0, Err(Inexact::Unreadable))
        };
        if let Some(Sock::Fixed(index)) = slot.sock.take() {
            self.rings.push(i, &close_fixed(index, i))?;
        }
        slot.conn.closed(drained, Some(audit), self.now, self.rec);
        Ok(())
    }

    /// Slot `i`'s machine asks for a connection: a socket made (by the ring's SQEs for a
    /// direct one) and its connect pushed. Whether it now waits (false: making the socket
    /// failed, the machine was told, and goes on).
    fn connect(&mut self, i: usize, timeout: Duration) -> io::Result<bool> {
        let now = self.now;
        let slot = &mut self.slots[i];
        let target = &self.addrs.targets[slot.conn.target()];
        let datagrams = self.addrs.datagrams[slot.conn.target()];
        let source = slot.source.map(|s| &self.addrs.sources[s as usize]);
        slot.end = None;
        slot.setup_failed = None;
        slot.busy = Some((OP_CONNECT, now + timeout));
        self.timers.deadlines.ensure(i, now + timeout, &mut slot.timer);
        if self.rings.layout().direct {
            let sock = self.rings.fixed(i);
            let Sock::Fixed(index) = sock else { unreachable!("a direct layout's socket") };
            slot.sock = Some(sock);
            self.rings.push_chain(i, &direct_connect(i, index, (target, datagrams), source))?;
            return Ok(true);
        }
        let socket = match plain_socket((target, datagrams), source) {
            Ok(s) => s,
            Err(e) => {
                slot.busy = None;
                slot.conn.connect_failed(&e, now, self.rec);
                return Ok(false);
            }
        };
        let fd = socket.into_raw_fd();
        slot.sock = Some(Sock::Fd(fd));
        let sqe = opcode::Connect::new(types::Fd(fd), target.as_ptr().cast(), target.len())
            .build()
            .user_data(user_data(i, OP_CONNECT));
        self.rings.push(i, &sqe)?;
        Ok(true)
    }

    /// Slot `i`'s machine asks to close and its receive has ended: the socket audited and
    /// closed, the machine told. Whether it now waits (true: a direct socket is first handed
    /// back as a file for the audit, [`OP_INSTALL`]).
    fn close(&mut self, i: usize) -> io::Result<bool> {
        let slot = &mut self.slots[i];
        slot.closing = false;
        slot.end = None;
        let audit = match slot.sock {
            // The audit reads the counts through a file: the ring hands one back first.
            Some(Sock::Fixed(index)) => {
                slot.installing = true;
                let sqe = opcode::FixedFdInstall::new(types::Fixed(index), 0)
                    .build()
                    .user_data(user_data(i, OP_INSTALL));
                self.rings.push(i, &sqe)?;
                return Ok(true);
            }
            Some(Sock::Fd(fd)) => {
                let audit = close_audit(fd, slot.conn.socket_rx(), false);
                if self.reset_close {
                    super::sys::reset_on_close(fd);
                }
                // SAFETY: our socket; no operation is in flight on it (we only get here
                // between operations).
                unsafe { libc::close(fd) };
                Some(audit)
            }
            None => None,
        };
        slot.sock = None;
        let drained = audit.as_ref().map_or(0, |(n, _)| *n);
        slot.conn.closed(drained, audit.map(|(_, a)| a), self.now, self.rec);
        Ok(false)
    }
}

/// Arm slot `i`'s multishot receive on its socket.
fn arm<C>(rings: &mut Rings, slot: &mut Slot<C>, i: usize) -> io::Result<()> {
    let Some(sock) = slot.sock else { return Ok(()) };
    slot.armed = true;
    rings.push(i, &receive(sock, GROUP, user_data(i, OP_RECV)))
}

fn user_data(slot: usize, kind: u64) -> u64 {
    ((slot as u64) << KIND_BITS) | kind
}

/// The loop failed: the plain sockets still open are closed (the rings then end whatever
/// is in flight on them).
fn close_plain_sockets<C>(slots: &mut [Slot<C>]) {
    for slot in slots.iter_mut() {
        if let Some(Sock::Fd(fd)) = slot.sock.take() {
            // SAFETY: our sockets.
            unsafe { libc::close(fd) };
        }
    }
}
