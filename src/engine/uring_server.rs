//! The raw io_uring server loop: one pinned thread per core, every connection the shared
//! server connection machine ([`ServerConn`]) driven by completions — as the `uring` client
//! engine drives [`super::conn::Conn`].
//!
//! Per core: accepts on every listener; per connection a **multishot receive** with buffers
//! from its ring's provided-buffer ring (a quiet connection holds no buffer; an idle one gives
//! its own back, [`ServerConn::release_if_idle`]); answers as one send SQE per connection per
//! loop, all of a loop's sends submitted with its one `io_uring_enter`. Bytes that arrive while
//! a send is in flight wait in the machine ([`ServerConn::arrived`]) until the send is done, so
//! the answer buffer is never touched while the kernel reads it. `--delay`'s held answers wait
//! in a timer heap; the connections' deadlines (head, idle, heartbeat, write, and when an idle
//! one gives its buffers back) on a timing wheel ([`super::deadlines`]); a connection closes
//! after its receive is cancelled and has ended. A client that pipelines requests without
//! reading its answers is read no further once [`PILE_LIMIT`] of them wait (`Slot::paused`).
//! The rings own what their operations point into ([`Owned`]): the connections, the drain
//! buffer, the refusals.
//!
//! Sockets are **direct descriptors** where the kernel has them ([`super::rings`]): accepted
//! straight into a ring's table, named by their index there, shut down and closed by SQE. A
//! multishot accept cannot be told how much room a table has left (a burst would fill it and
//! the kernel would close what it could not place), so a direct core keeps a few single
//! accepts in flight per listener, each into a table index it has set aside; when a ring's
//! table is full the next ring takes the accepts, and a new ring is opened when all are.
//! Without direct descriptors: one multishot accept per listener, plain descriptors.

use super::deadlines::Deadlines;
use super::rings::{self, Layout, Owned, Rings, Sock, cancel, receive, sqe};
use super::serve_conn::ServerConn;
use super::{AsyncServerCore, ServerStart};
use crate::clock::Instant;
use crate::proto::ServerCodec;
use crate::stats::ServerTally;
use io_uring::{cqueue, opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The longest wait in the kernel (the stop flag is looked at this often).
const TICK: Duration = Duration::from_millis(20);
/// Buffers of a ring's provided-buffer ring, and their size.
const RING_BUFFERS: u16 = 1024;
const RING_BUFFER_SIZE: usize = 4 * 1024;
/// Every ring's provided buffers are its group 0.
const GROUP: u16 = 0;
/// Single accepts a direct core keeps in flight per listener: connections arriving together
/// beyond these wait in the listen backlog for the next loop.
const ACCEPTS_AHEAD: usize = 16;
/// Accepted sockets stay blocking: io_uring tries each operation without waiting first either
/// way, and the non-blocking variant measured worse here (9.3-9.4 against 8.4-8.9 µs per
/// request at 40,000/s, and a write timeout that no longer closed a client that never reads).
/// (A direct descriptor takes no flags: close-on-exec means nothing for it.)
const ACCEPT_FLAGS: i32 = libc::SOCK_CLOEXEC;
/// Unanswered requests a connection may pile up while its answers wait to be written; then
/// it stops reading until they are (a client that pipelines without reading held up to 80 MiB
/// per connection before). What the loop's completions already brought when it stopped comes
/// on top: at most the ring's provided buffers, 4 MiB shared by all its connections.
pub const PILE_LIMIT: usize = super::serve_conn::SERVE_AT_ONCE;
/// Bytes read off a closing connection so that its close is a FIN, not a reset.
const DRAIN: usize = 64 * 1024;
const KIND_BITS: u64 = 3;
const OP_ACCEPT: u64 = 0;
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
/// Completions not looked at: cancels, and the links of a direct close or refusal (they post
/// only if they fail).
const OP_QUIET: u64 = 3;
/// A direct descriptor closed: its table index is free again (not before: an accept into it
/// would race the close's links, which run after the SQEs submitted with them).
const OP_CLOSED: u64 = 4;
/// Links of a close: each runs whether the one before it failed or not, and a success posts
/// nothing.
const HARDLINK_QUIET: squeue::Flags = squeue::Flags::IO_HARDLINK.union(squeue::Flags::SKIP_SUCCESS);

fn user_data(index: usize, kind: u64) -> u64 {
    ((index as u64) << KIND_BITS) | kind
}

/// One accepted connection.
struct Slot<S> {
    conn: ServerConn<S>,
    sock: Sock,
    _admitted: super::Admitted,
    /// The multishot receive is armed.
    armed: bool,
    /// A send is in flight: how much of `to_write()` went so far, and its deadline.
    sending: Option<(usize, Instant)>,
    /// The send passed its deadline and is being cancelled: whatever it returns (a cancelled
    /// blocking send reports the bytes it moved), the connection is over.
    send_cancelled: bool,
    /// The client closed or the socket failed: answer nothing more, close.
    ended: bool,
    /// The receive is being cancelled so the socket can close.
    closing: bool,
    /// Reading stopped: answers are waiting to be written and [`PILE_LIMIT`] of requests
    /// already wait behind them (a client pipelining without reading its answers).
    paused: bool,
    /// Its entry on the deadlines' wheel.
    timer: Option<Instant>,
}

impl<S: ServerCodec> Slot<S> {
    /// Its answers are held (`--delay`) past `now`.
    fn held(&self, now: Instant) -> bool {
        self.conn.hold().is_some_and(|until| until > now)
    }

    /// When it must be looked at next (held answers have their own timers).
    fn next_look(&self) -> Instant {
        match self.sending {
            Some((_, deadline)) => deadline,
            None => {
                let deadline = self.conn.deadline();
                self.conn.release_at().map_or(deadline, |at| at.min(deadline))
            }
        }
    }
}

/// Held answers (`--delay`), soonest first: the connection is looked at again then.
type Timers = std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>;

/// After serving slot `i`: if its answers are held, look at it again when they are due.
fn time_hold<S: ServerCodec>(slot: &Slot<S>, i: usize, timers: &mut Timers, now: Instant) {
    if let Some(until) = slot.conn.hold().filter(|until| *until > now) {
        timers.push(std::cmp::Reverse((until, i)));
    }
}

/// Where a core's connections live, and which places are free.
enum Places {
    /// Plain descriptors: slot indices reused from a free list.
    Plain { free: Vec<usize> },
    /// Direct descriptors: slot `r * per_ring + k` is index `k` of ring `r`'s table. Per ring
    /// its free indices (the last taken first); per listener the accepts in flight.
    Direct { free: Vec<Vec<u32>>, in_flight: Vec<usize> },
}

/// Start a built-in server on `cores` (see [`super::start_server_threads`]).
pub fn start_server<S>(
    listeners: Vec<(crate::plan::Endpoint, S)>,
    cores: &[usize],
    limits: super::serve_conn::ServerLimits,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<super::ServerHandle, super::EngineError>
where
    S: ServerCodec + Send + 'static,
{
    super::start_server_threads(listeners, cores, limits, stop, server_core::<S>)
}

fn server_core<S: ServerCodec + Send + 'static>(
    start: ServerStart<S>,
) -> Result<ServerTally, super::EngineError> {
    let cpu = start.cpu;
    let failed = |start: &ServerStart<S>, source: io::Error| {
        let _ = start.ready.send(Err(super::EngineError::Executor { cpu, source }));
        Ok(ServerTally { core: cpu, ..Default::default() })
    };
    if let Err(e) = super::pin_current_thread(cpu) {
        let _ = start.ready.send(Err(e));
        return Ok(ServerTally { core: cpu, ..Default::default() });
    }
    // A table holds what the file limit allows, and need not hold much more than the core's
    // share of the connection limit (refused connections pass through it too).
    let table = rings::file_limit().min(start.limits.max_conns.saturating_mul(2).saturating_add(64));
    let layout = Layout::new(table, rings::support().direct, table);
    let rings = match Rings::open(layout, 4096, RING_BUFFERS, RING_BUFFER_SIZE) {
        Ok(r) => r,
        Err(e) => return failed(&start, e),
    };
    let core = AsyncServerCore::open(&start);
    // What the rings' operations point into, owned with them: however the loop ends, even in
    // a panic, it outlives every operation.
    let held = Held {
        slots: Vec::new(),
        drain: vec![0u8; DRAIN].into_boxed_slice(),
        busy: start.listeners.iter().map(|(_, p)| super::serve_conn::busy_answer(p)).collect(),
    };
    let mut owned = Owned::new(rings, held);
    let (rings, held) = owned.parts();
    let result = serve(rings, &start, &core, held);
    for slot in held.slots.iter_mut().flatten() {
        if let Sock::Fd(fd) = slot.sock {
            // SAFETY: our sockets; the rings end whatever is still in flight on them.
            unsafe { libc::close(fd) };
        }
    }
    drop(owned);
    result.map_err(|source| super::EngineError::Executor { cpu, source })?;
    core.close()
}

/// What a core's operations point into: its connections (their answers), the buffer closes
/// read off what is left into, and what a refused client is told (per listener).
struct Held<S> {
    slots: Vec<Option<Slot<S>>>,
    drain: Box<[u8]>,
    busy: Vec<Vec<u8>>,
}

/// A core's loop until the stop flag is set: each turn waits for completions (or the next
/// deadline), handles them, then settles every connection something happened to.
fn serve<S: ServerCodec>(
    rings: &mut Rings,
    start: &ServerStart<S>,
    core: &std::rc::Rc<AsyncServerCore>,
    held: &mut Held<S>,
) -> io::Result<()> {
    let direct = rings.layout().direct;
    let per_ring = rings.layout().per_ring;
    let listeners = start.listeners.len();
    // Rings a direct core opens at most: room for its share of the connection limit, the
    // accepts in flight and the refused on their way out (a flood of refusals waits in the
    // listen backlog rather than growing rings without end).
    let max_rings =
        start.limits.max_conns.saturating_add(2 * ACCEPTS_AHEAD * listeners + 1024).div_ceil(per_ring).max(1);
    let places = if direct {
        Places::Direct { free: vec![(0..per_ring as u32).rev().collect()], in_flight: vec![0; listeners] }
    } else {
        for (l, (listener, _)) in start.listeners.iter().enumerate() {
            rings.push(0, &accept_many(listener.as_raw_fd(), l))?;
        }
        Places::Plain { free: Vec::new() }
    };
    let mut core_loop = Loop {
        rings,
        start,
        core,
        held,
        places,
        per_ring,
        max_rings,
        completions: Vec::new(),
        touched: Touched::default(),
        again: Vec::new(),
        timers: Timers::new(),
        deadlines: Deadlines::new(),
        unix: (super::unix_secs(), Instant::now()),
        now: Instant::now(),
    };
    while !start.stop.load(Ordering::Relaxed) {
        core_loop.turn()?;
    }
    Ok(())
}

/// The connections something happened to this turn, each once, in the order first touched: a
/// mark per slot index. (The list sorted and deduplicated each turn instead cost ~100
/// instructions a request at 64 connections, a tenth of the server's.)
#[derive(Default)]
struct Touched {
    list: Vec<usize>,
    marked: Vec<bool>,
}

impl Touched {
    fn push(&mut self, i: usize) {
        if i >= self.marked.len() {
            self.marked.resize(i + 1, false);
        }
        if !std::mem::replace(&mut self.marked[i], true) {
            self.list.push(i);
        }
    }
}

/// A core's loop state: its rings, what they point into, and the connections to look at.
struct Loop<'a, S> {
    rings: &'a mut Rings,
    start: &'a ServerStart<S>,
    core: &'a std::rc::Rc<AsyncServerCore>,
    held: &'a mut Held<S>,
    places: Places,
    per_ring: usize,
    max_rings: usize,
    completions: Vec<rings::Completion>,
    /// Connections something happened to this turn.
    touched: Touched,
    /// Connections with whole requests left after a batch and nothing to write: next turn.
    again: Vec<usize>,
    timers: Timers,
    deadlines: Deadlines,
    /// The Unix time in seconds (for `Date` headers), read again every 100 ms.
    unix: (u64, Instant),
    /// The clock, read once a turn after the wait.
    now: Instant,
}

impl<S: ServerCodec> Loop<'_, S> {
    fn turn(&mut self) -> io::Result<()> {
        if let Places::Direct { free, in_flight } = &mut self.places {
            accept_ahead(self.rings, self.start, free, in_flight, self.per_ring, self.max_rings)?;
        }
        // One completion wakes the loop. Tried and dropped: io_uring's min-wait coalescing
        // (sleep until 64 completions, or 20-50 µs once one is in): 11.2-11.8 µs per request
        // at 40,000/s against 8.7-9.9 without it, the timer's wake-ups costing more than the
        // ones they saved.
        let idle = self.again.is_empty();
        let wait = if idle {
            // How long to sleep, from the last turn's clock read: the deadlines fire up to a
            // tick of their wheel late anyway, and the turn since took microseconds. A held
            // answer (`--delay`) is due to the microsecond: then the clock is read again.
            // (Two reads a turn were 0.4 % of the server's CPU at 80,000 requests a second.)
            let before = if self.timers.is_empty() { self.now } else { Instant::now() };
            self.timers
                .peek()
                .map_or(TICK, |std::cmp::Reverse((until, _))| {
                    until.saturating_duration_since(before).min(TICK)
                })
                .min(self.deadlines.wait(before, TICK))
        } else {
            Duration::ZERO
        };
        self.rings.enter(usize::from(idle), wait, Duration::ZERO)?;
        let now = Instant::now();
        self.now = now;
        if now.duration_since(self.unix.1) >= Duration::from_millis(100) {
            self.unix = (super::unix_secs(), now);
        }
        let mut completions = std::mem::take(&mut self.completions);
        completions.clear();
        self.rings.reap(&mut completions)?;
        for i in self.again.drain(..) {
            self.touched.push(i);
        }
        let core = self.core;
        for &(data, result, flags) in &completions {
            let (i, kind) = ((data >> KIND_BITS) as usize, data & ((1 << KIND_BITS) - 1));
            match kind {
                OP_ACCEPT => self.accepted(i, result, flags, now)?,
                OP_RECV => self.received(i, result, flags, now, &mut core.tally.borrow_mut())?,
                OP_CLOSED => free_place(&mut self.places, i, (i % self.per_ring) as u32, self.per_ring),
                OP_SEND => self.sent(i, result, now, &mut core.tally.borrow_mut())?,
                _ => {}
            }
        }
        self.completions = completions;
        let mut tally = core.tally.borrow_mut();
        self.due(now, &mut tally)?;
        // Every connection something happened to: answer, send, or close. (`settle` adds to
        // `again`, never to `touched`.)
        let mut touched = std::mem::take(&mut self.touched.list);
        for i in touched.drain(..) {
            self.touched.marked[i] = false;
            self.settle(i, now, &mut tally)?;
        }
        self.touched.list = touched;
        Ok(())
    }

    /// An accept completed: the connection is admitted and armed, or refused.
    fn accepted(&mut self, i: usize, result: i32, flags: u32, now: Instant) -> io::Result<()> {
        let (start, per_ring) = (self.start, self.per_ring);
        // Plain: `i` is the listener, its multishot accept goes on. Direct: `i` is the slot
        // set aside times the listeners, plus the listener.
        let (l, index, sock) = match &mut self.places {
            Places::Plain { free } => {
                if !cqueue::more(flags) {
                    // Ended (out of descriptors, say): armed again after a pause.
                    std::thread::sleep(Duration::from_millis(1));
                    self.rings.push(0, &accept_many(start.listeners[i].0.as_raw_fd(), i))?;
                }
                if result < 0 {
                    return Ok(());
                }
                (i, free.pop().unwrap_or(self.held.slots.len()), Sock::Fd(result))
            }
            Places::Direct { free, in_flight } => {
                let listeners = start.listeners.len();
                let (index, l) = (i / listeners, i % listeners);
                in_flight[l] -= 1;
                if result < 0 {
                    free[index / per_ring].push((index % per_ring) as u32);
                    if result != -libc::ECANCELED {
                        // Failing (out of memory, say): tried again after a pause.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    return Ok(());
                }
                (l, index, self.rings.fixed(index))
            }
        };
        let prototype = &start.listeners[l].1;
        let Some(admitted) = self.core.admit() else {
            let Held { drain, busy, .. } = &mut *self.held;
            return refuse(self.rings, &mut self.places, sock, index, &busy[l], drain, per_ring);
        };
        let slot = Slot {
            conn: ServerConn::new(self.core.codec(prototype), self.core.limits, now),
            sock,
            _admitted: admitted,
            armed: false,
            sending: None,
            send_cancelled: false,
            ended: false,
            closing: false,
            paused: false,
            timer: None,
        };
        let slots = &mut self.held.slots;
        if index >= slots.len() {
            slots.resize_with(index + 1, || None);
        }
        let slot = slots[index].insert(slot);
        arm(self.rings, slot, index)?;
        self.deadlines.ensure(index, slot.next_look(), &mut slot.timer);
        Ok(())
    }

    /// Bytes (or the end) arrived on connection `i`.
    fn received(
        &mut self,
        i: usize,
        result: i32,
        flags: u32,
        now: Instant,
        tally: &mut ServerTally,
    ) -> io::Result<()> {
        let Some(slot) = self.held.slots.get_mut(i).and_then(Option::as_mut) else { return Ok(()) };
        if !cqueue::more(flags) {
            slot.armed = false;
        }
        if let Some(bid) = cqueue::buffer_select(flags) {
            let bufs = self.rings.bufs(i);
            let data = bufs.data(bid, result.max(0) as usize);
            // Answered where it lies when the connection is free to answer; kept for later
            // while a send or a held answer is pending.
            let free = slot.sending.is_none() && !slot.held(now) && !slot.conn.closing();
            let fits = if free {
                slot.conn.serve_from(data, now, self.unix.0, tally)
            } else {
                slot.conn.arrived(data, tally)
            };
            if free {
                time_hold(slot, i, &mut self.timers, now);
            }
            slot.ended |= result > 0 && !fits;
            bufs.give_back(bid);
            // Answers wait and a pile of requests behind them: stop reading until they are
            // written (the kernel's buffer, then TCP, hold the rest back), as nginx does.
            if !free && slot.conn.unanswered() >= PILE_LIMIT && slot.armed && !slot.paused {
                slot.paused = true;
                self.rings.push(i, &cancel(user_data(i, OP_RECV), user_data(i, OP_QUIET)))?;
            }
        }
        match result {
            1.. => {}
            e if e == -libc::ENOBUFS => {}
            e if e == -libc::ECANCELED && slot.paused && !slot.closing => {}
            _ => slot.ended = true, // 0: the client closed; else an error or our cancel
        }
        if !slot.armed && !slot.ended && !slot.closing && !slot.paused {
            arm(self.rings, slot, i)?;
        }
        self.touched.push(i);
        Ok(())
    }

    /// A send on connection `i` completed: done, more to send, or the connection is over.
    fn sent(&mut self, i: usize, result: i32, now: Instant, tally: &mut ServerTally) -> io::Result<()> {
        let Some(slot) = self.held.slots.get_mut(i).and_then(Option::as_mut) else { return Ok(()) };
        let Some((off, deadline)) = slot.sending.take() else { return Ok(()) };
        if slot.send_cancelled {
            tally.timeouts += 1;
            slot.ended = true;
        } else if result <= 0 || slot.ended {
            slot.ended = true;
        } else if off + result as usize >= slot.conn.to_write().len() {
            slot.conn.written(now, tally);
        } else {
            slot.sending = Some((off + result as usize, deadline));
            send(self.rings, slot, i)?;
        }
        self.touched.push(i);
        Ok(())
    }

    /// Held answers and deadlines that came up: a send past its own is stopped, a client past
    /// its head, idle or heartbeat deadline is told so, an idle connection gives its buffers
    /// back.
    fn due(&mut self, now: Instant, tally: &mut ServerTally) -> io::Result<()> {
        while let Some(std::cmp::Reverse((until, i))) = self.timers.peek().copied() {
            if until > now {
                break;
            }
            self.timers.pop();
            self.touched.push(i);
        }
        while let Some((at, i)) = self.deadlines.pop_due(now) {
            let Some(slot) = self.held.slots.get_mut(i).and_then(Option::as_mut) else { continue };
            Deadlines::came_up(at, &mut slot.timer);
            match slot.sending {
                Some((_, deadline)) if now >= deadline && !slot.send_cancelled => {
                    slot.send_cancelled = true;
                    stop_socket(self.rings, slot.sock, i)?;
                }
                Some(_) => {}
                None if slot.held(now) => {}
                None if now >= slot.conn.deadline() && !slot.ended => {
                    slot.conn.deadline_passed(now, tally);
                    self.touched.push(i);
                }
                None => slot.conn.release_if_idle(now),
            }
            // What is not due yet is looked at when it is; what is due now went to `touched`
            // (or waits on its held answer), which enters it again once handled.
            if !slot.send_cancelled && slot.next_look() > now {
                self.deadlines.ensure(i, slot.next_look(), &mut slot.timer);
            }
        }
        Ok(())
    }

    /// Connection `i` after what happened to it: answer what arrived, send, or close.
    fn settle(&mut self, i: usize, now: Instant, tally: &mut ServerTally) -> io::Result<()> {
        let Some(slot) = self.held.slots.get_mut(i).and_then(Option::as_mut) else { return Ok(()) };
        if slot.sending.is_some() {
            // Its completion comes back here; a connection that is over does not wait for a
            // send the client may never let finish.
            if slot.ended && !slot.send_cancelled {
                slot.send_cancelled = true;
                stop_socket(self.rings, slot.sock, i)?;
            }
            return Ok(());
        }
        if !slot.ended && !slot.held(now) && slot.conn.has_arrived() && !slot.conn.closing() {
            let more = slot.conn.serve_arrived(now, self.unix.0, tally);
            time_hold(slot, i, &mut self.timers, now);
            if more && slot.conn.to_write().is_empty() {
                self.again.push(i); // answered nothing to write: the next batch next turn
            }
        }
        // Reading goes on once the pile is below its limit, or nothing waits to be written
        // (a request larger than the limit must be read whole to be answered).
        let waiting = !slot.conn.to_write().is_empty() || slot.held(now);
        if slot.paused && (slot.conn.unanswered() < PILE_LIMIT || !waiting) {
            slot.paused = false;
            if !slot.armed && !slot.ended && !slot.closing {
                arm(self.rings, slot, i)?;
            }
        }
        if slot.held(now) {
            return Ok(());
        }
        if !slot.ended && !slot.conn.to_write().is_empty() {
            slot.sending = Some((0, now + slot.conn.write_timeout()));
            send(self.rings, slot, i)?;
            self.deadlines.ensure(i, slot.next_look(), &mut slot.timer);
            return Ok(());
        }
        if slot.ended || slot.conn.closing() {
            if slot.armed {
                if !slot.closing {
                    slot.closing = true;
                    self.rings.push(i, &cancel(user_data(i, OP_RECV), user_data(i, OP_QUIET)))?;
                }
                return Ok(());
            }
            let slot = self.held.slots[i].take().expect("present");
            let drain = &mut self.held.drain;
            return close(self.rings, &mut self.places, slot.sock, i, drain, self.per_ring);
        }
        // Its deadlines moved with what happened (a later one costs nothing).
        self.deadlines.ensure(i, slot.next_look(), &mut slot.timer);
        Ok(())
    }
}

/// A plain core's multishot accept on listener `l`.
fn accept_many(listener: RawFd, l: usize) -> squeue::Entry {
    opcode::AcceptMulti::new(types::Fd(listener))
        .flags(ACCEPT_FLAGS)
        .build()
        .user_data(user_data(l, OP_ACCEPT))
}

/// A direct core's accepts in flight topped up to [`ACCEPTS_AHEAD`] per listener, each into
/// a free index of the first ring that has one (a new ring when none has, up to `max_rings`).
fn accept_ahead<S>(
    rings: &mut Rings,
    start: &ServerStart<S>,
    free: &mut Vec<Vec<u32>>,
    in_flight: &mut [usize],
    per_ring: usize,
    max_rings: usize,
) -> io::Result<()> {
    let listeners = start.listeners.len();
    for (l, (listener, _)) in start.listeners.iter().enumerate() {
        while in_flight[l] < ACCEPTS_AHEAD {
            let ring = match free.iter().position(|f| !f.is_empty()) {
                Some(r) => r,
                // Every table is full: another ring (if one cannot be opened, the accepts
                // wait until a connection closes).
                None if rings.len() >= max_rings => return Ok(()),
                None => match rings.add_ring() {
                    Ok(r) => {
                        free.push((0..per_ring as u32).rev().collect());
                        r
                    }
                    Err(_) => return Ok(()),
                },
            };
            let index = free[ring].pop().expect("a free index");
            let slot = ring * per_ring + index as usize;
            let target = types::DestinationSlot::try_from_slot_target(index).expect("a table index");
            let sqe = opcode::Accept::new(
                types::Fd(listener.as_raw_fd()),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .file_index(Some(target))
            .build()
            .user_data(user_data(slot * listeners + l, OP_ACCEPT));
            rings.push(slot, &sqe)?;
            in_flight[l] += 1;
        }
    }
    Ok(())
}

fn arm<S>(rings: &mut Rings, slot: &mut Slot<S>, i: usize) -> io::Result<()> {
    slot.armed = true;
    rings.push(i, &receive(slot.sock, GROUP, user_data(i, OP_RECV)))
}

/// Send what is left of the connection's answers.
fn send<S: ServerCodec>(rings: &mut Rings, slot: &mut Slot<S>, i: usize) -> io::Result<()> {
    let off = slot.sending.map_or(0, |(off, _)| off);
    let out = &slot.conn.to_write()[off..];
    let (ptr, len) = (out.as_ptr(), out.len().min(u32::MAX as usize) as u32);
    let sqe = sqe!(slot.sock, |s| opcode::Send::new(s, ptr, len)
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(user_data(i, OP_SEND)));
    rings.push(i, &sqe)
}

/// End a send that the client does not let finish: a cancel does not reliably stop a send
/// blocked in a kernel worker (it may return the bytes moved, and one already resubmitted
/// slips past it), a shutdown ends every operation on the socket at once.
fn stop_socket(rings: &mut Rings, sock: Sock, i: usize) -> io::Result<()> {
    match sock {
        Sock::Fixed(k) => rings.push(
            i,
            &opcode::Shutdown::new(types::Fixed(k), libc::SHUT_RDWR)
                .build()
                .user_data(user_data(i, OP_QUIET)),
        ),
        Sock::Fd(fd) => {
            // SAFETY: our socket; the connection is over.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            Ok(())
        }
    }
}

/// A connection over the limit: its busy answer if the socket takes it at once, then closed.
fn refuse(
    rings: &mut Rings,
    places: &mut Places,
    sock: Sock,
    i: usize,
    answer: &[u8],
    drain: &mut [u8],
    per_ring: usize,
) -> io::Result<()> {
    match sock {
        // One chain with the close: a chain split over two submissions would not stay in order.
        Sock::Fixed(k) => {
            let mut chain = Vec::with_capacity(4);
            if !answer.is_empty() {
                chain.push(
                    opcode::Send::new(types::Fixed(k), answer.as_ptr(), answer.len() as u32)
                        .flags(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                        .build()
                        .flags(HARDLINK_QUIET)
                        .user_data(user_data(i, OP_QUIET)),
                );
            }
            chain.extend(close_chain(k, i, drain));
            rings.push_chain(i, &chain)?;
        }
        Sock::Fd(fd) => {
            if !answer.is_empty() {
                // SAFETY: our socket, a valid buffer; non-blocking, best effort.
                unsafe {
                    libc::send(
                        fd,
                        answer.as_ptr().cast(),
                        answer.len(),
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
            }
            close_gracefully(fd);
            free_place(places, i, 0, per_ring);
        }
    }
    Ok(())
}

/// Close after saying so (FIN), reading off what the client already sent so the close is not
/// a reset (bounded: what is queued now); its place is free again (a direct one once the
/// close is done: [`OP_CLOSED`]).
fn close(
    rings: &mut Rings,
    places: &mut Places,
    sock: Sock,
    i: usize,
    drain: &mut [u8],
    per_ring: usize,
) -> io::Result<()> {
    match sock {
        Sock::Fixed(k) => rings.push_chain(i, &close_chain(k, i, drain))?,
        Sock::Fd(fd) => {
            close_gracefully(fd);
            free_place(places, i, 0, per_ring);
        }
    }
    Ok(())
}

/// The SQEs of [`close`] for direct descriptor `k` of slot `i`: shut down for writing, read
/// off what is queued (never waiting), close — each whether the one before failed or not;
/// only the close posts, as [`OP_CLOSED`].
fn close_chain(k: u32, i: usize, drain: &mut [u8]) -> [squeue::Entry; 3] {
    let fixed = types::Fixed(k);
    let quiet = user_data(i, OP_QUIET);
    [
        opcode::Shutdown::new(fixed, libc::SHUT_WR).build().flags(HARDLINK_QUIET).user_data(quiet),
        opcode::Recv::new(fixed, drain.as_mut_ptr(), drain.len() as u32)
            .flags(libc::MSG_DONTWAIT)
            .build()
            .flags(HARDLINK_QUIET)
            .user_data(quiet),
        opcode::Close::new(fixed).build().user_data(user_data(i, OP_CLOSED)),
    ]
}

/// Slot `i` (direct: index `k` of its ring's table) is free again.
fn free_place(places: &mut Places, i: usize, k: u32, per_ring: usize) {
    match places {
        Places::Direct { free, .. } => free[i / per_ring].push(k),
        Places::Plain { free } => free.push(i),
    }
}

/// [`close`] for a plain descriptor.
fn close_gracefully(fd: RawFd) {
    let mut buf = [0u8; 4096];
    // SAFETY: our socket; plain syscalls on a stack buffer.
    unsafe {
        libc::shutdown(fd, libc::SHUT_WR);
        for _ in 0..16 {
            let n = libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT);
            if n <= 0 {
                break;
            }
        }
        libc::close(fd);
    }
}
