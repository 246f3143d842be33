//! The raw io_uring engine: one pinned thread per core, one ring per thread, every connection
//! a state machine ([`Conn`]) driven by completions.
//!
//! Per loop: every connection that can move pushes its next operation (connect, send) as an
//! SQE; one `io_uring_enter` submits them all and waits for completions (ring set up with
//! `SINGLE_ISSUER | DEFER_TASKRUN`, so completions run in this thread, in batches). With many
//! connections a request costs a fraction of a syscall: the send is an SQE, not a syscall.
//!
//! Receiving is one **multishot receive** per socket, armed at the connect, with buffers from a
//! shared provided-buffer ring ([`super::bufring`]): each completion's bytes are copied into the
//! connection's machine (kept undecoded until it asks for them: [`Conn::arrived`]) and the
//! buffer goes straight back. No receive is submitted per answer, and a connection waiting for
//! bytes holds no buffer. Timeouts: a periodic scan cancels connects and sends past their
//! deadline (`ASYNC_CANCEL`) and fails reads past theirs; before a socket is closed its
//! receive is cancelled and its end awaited.

use super::bufring::BufRing;
use super::conn::{Conn, Want};
use super::sys::close_audit;
use super::{ClientJob, ClientRun, CoreBooks, CoreStart, EngineError};
use crate::proto::ClientCodec;
use crate::stats::CoreRecorder;
use io_uring::{IoUring, cqueue, opcode, types};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{IntoRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Longest wait in `io_uring_enter`; also how often sleepers are looked at.
const TICK: Duration = Duration::from_millis(5);
/// How often every connection's deadline is looked at: a scan of all of a core's connections,
/// so not every tick (18,000 connections scanned every 5 ms in each of 56 processes took the
/// machine); timeouts fire up to this late.
const DEADLINE_SCAN: Duration = Duration::from_millis(50);
/// A paced operation due sooner than this is waited for without sleeping (see `run_loop`).
pub const SPIN: Duration = Duration::from_micros(30);
/// Operation kinds, in the low bits of an SQE's user data (the slot index above them).
const KIND_BITS: u64 = 2;
const OP_CANCEL: u64 = 0;
const OP_CONNECT: u64 = 1;
const OP_SEND: u64 = 2;
const OP_RECV: u64 = 3;

/// Run the client side of `job` with the raw io_uring engine.
pub fn run_client<C>(job: &ClientJob, prototypes: Vec<C>) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    super::run_client_threads(job, prototypes, client_core::<C>)
}

/// A ring for `entries` operations, with the single-issuer and deferred-task-run flags where
/// the kernel knows them (6.1+), without them otherwise.
pub fn ring(entries: u32) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        // Deferred completions run only in an enter that asks for events: with this flag the
        // ring says when some wait, and an enter that does not wait (the paced loop's spin)
        // asks for them too. Without it the spin never saw an answer come in: at 40,000
        // paced requests/s the generator spun at 100 % and answers waited for its next sleep
        // (p50 1.13 ms instead of tens of µs).
        .setup_taskrun_flag()
        .build(entries)
        .or_else(|_| IoUring::builder().build(entries))
}

/// Buffers in a core's provided-buffer ring, and their size: a completion carries at most one
/// buffer of bytes, so larger messages take several completions. Running out (a burst from
/// more connections at once than there are buffers) ends a receive with `ENOBUFS`; it is armed
/// again once the buffers are back.
const RING_BUFFERS_MAX: u16 = 1024;
const RING_BUFFER_SIZE: usize = 4 * 1024;

/// One connection's slot: its machine, its socket, the operation in flight and its receive.
struct Slot<C> {
    conn: Conn<C>,
    fd: Option<RawFd>,
    /// The connect or send in flight (its kind) and when it times out.
    busy: Option<(u64, Instant)>,
    cancelled: bool,
    done: bool,
    addr: socket2::SockAddr,
    /// The socket's multishot receive is armed.
    armed: bool,
    /// The machine waits for bytes until then (no SQE: the receive is always armed).
    reading: Option<Instant>,
    /// How the socket's stream ended, not yet told to the machine: 0 (the peer closed) or an
    /// error (negative errno).
    end: Option<i32>,
    /// The machine asked to close: the receive is being cancelled first.
    closing: bool,
    /// Its source address (`--bind`), if any.
    source: Option<std::net::IpAddr>,
    /// The loop round whose `io_uring_enter` submitted its send (see `wrote_at` below).
    send_round: u64,
}

fn client_core<C: ClientCodec>(
    CoreStart { job, cpu, index, conns, gate }: CoreStart,
    prototypes: Vec<C>,
) -> Result<(CoreRecorder, Instant), EngineError> {
    let pinned = super::pin_current_thread(cpu);
    let entries = (2 * conns.len() + 64).next_power_of_two().min(32_768) as u32;
    let buffers = (2 * conns.len()).clamp(64, usize::from(RING_BUFFERS_MAX)).next_power_of_two() as u16;
    let ring = ring(entries);
    let start = gate.wait();
    pinned?;
    let mut ring = ring.map_err(|source| EngineError::Executor { cpu, source })?;
    let mut bufs = BufRing::register(&ring, 0, buffers, RING_BUFFER_SIZE).map_err(|e| EngineError::Executor {
        cpu,
        source: io::Error::new(
            e.kind(),
            format!("provided-buffer ring: {e} (the uring engine needs Linux 6.0 or later; use --engine tokio-uring)"),
        ),
    })?;
    let books = CoreBooks::open(&job, cpu, index);
    let mut rec = job.recorder(cpu);
    let mut slots: Vec<Slot<C>> = conns
        .map(|i| {
            let conn = super::new_conn(&job, &prototypes, i, start)
                .woken_when_the_window_opens()
                .small_receive_buffer();
            let addr = socket2::SockAddr::from(job.addrs[conn.target()]);
            Slot {
                conn,
                fd: None,
                busy: None,
                cancelled: false,
                done: false,
                addr,
                armed: false,
                reading: None,
                end: None,
                closing: false,
                source: (!job.bind.is_empty()).then(|| job.bind[i % job.bind.len()]),
                send_round: 0,
            }
        })
        .collect();
    // Every error of the loop comes back here, where the slots and buffers are abandoned
    // before the ring: operations may still point into them.
    if let Err(source) = run_loop(&mut ring, &mut bufs, &mut slots, &job, &books, &mut rec, start) {
        abandon(slots);
        std::mem::forget(bufs);
        return Err(EngineError::Executor { cpu, source });
    }
    // The ring goes first: the kernel may use the buffers until then.
    drop(ring);
    drop(bufs);
    Ok(books.close(rec))
}

/// Drive every slot until all are done. Returns early only when the ring fails; the caller
/// must then abandon the slots (SQEs may still point into them).
#[allow(clippy::too_many_arguments)]
fn run_loop<C: ClientCodec>(
    ring: &mut IoUring,
    bufs: &mut BufRing,
    slots: &mut [Slot<C>],
    job: &ClientJob,
    books: &CoreBooks,
    rec: &mut CoreRecorder,
    start: Instant,
) -> io::Result<()> {
    // The connections set up before the others sleep until the window opens: woken here.
    let mut window_open = false;
    let mut ready: Vec<usize> = (0..slots.len()).collect();
    let mut remaining = slots.len();
    // Connections waiting for a time (a paced workload's next operation, a retry pause).
    let mut sleepers: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    // One clock read per loop, taken after the wait: on a machine whose clock has no vDSO fast
    // path each read is a syscall. The connections driven at the top of the next loop use it.
    let mut now = Instant::now();
    let mut round: u64 = 0;
    let mut next_tick = now + TICK;
    let mut completions: Vec<(u64, i32, u32)> = Vec::with_capacity(slots.len() + 64);
    loop {
        let stopping = job.stop.load(Ordering::Relaxed);
        let drove = !ready.is_empty();
        for i in ready.drain(..) {
            drive(ring, slots, &mut sleepers, i, (now, round), stopping, job, rec)?;
            if slots[i].done {
                remaining -= 1;
            }
        }
        if remaining == 0 {
            return Ok(());
        }
        // Wake for the next tick, or sooner for a paced connection's next operation.
        let wait = sleepers
            .peek()
            .map_or(TICK, |Reverse((until, _))| until.saturating_duration_since(now).min(TICK));
        // A sleep and its wake-up cost more CPU than a short spin (tens of µs on a VM), and
        // the wake comes late: a paced operation due within SPIN is waited for awake.
        let want = if wait < SPIN && !ready_now(ring) { 0 } else { 1 };
        let ts = types::Timespec::from(wait);
        // A send that fits the socket buffer is issued inline by the submit, before the wait:
        // when its completion comes back from that same call, the bytes left at `submitted`,
        // not when this thread woke to read the completion. Stamped at the wake instead, a
        // wake delayed by the host shortened the answer's `waiting` (to 0 in a batch that
        // also carries the answer).
        round += 1;
        let submitted = Instant::now();
        match ring.submitter().submit_with_args(want, &types::SubmitArgs::new().timespec(&ts)) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let woke = Instant::now();
        // Taken off the queue first: handling one may push SQEs (a receive armed again).
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        // A spin that found nothing: awake by choice, not load (the report tells them apart).
        if want == 0 && !drove && completions.is_empty() {
            rec.spin += woke.saturating_duration_since(now);
        }
        now = woke;
        for &(data, result, flags) in &completions {
            let (i, kind) = ((data >> KIND_BITS) as usize, data & ((1 << KIND_BITS) - 1));
            if kind == OP_CANCEL {
                continue;
            }
            let slot = &mut slots[i];
            if kind == OP_RECV {
                received(ring, bufs, slot, i, result, flags, &mut ready)?;
                continue;
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
                    arm(ring, slot, i, bufs.group)?;
                    slot.conn.connected(now, rec)
                }
                OP_CONNECT => {
                    if let Some(fd) = slot.fd.take() {
                        // SAFETY: our socket, no operation in flight on it.
                        unsafe { libc::close(fd) };
                    }
                    slot.conn.connect_failed(&error(result), now, rec)
                }
                OP_SEND if result >= 0 => {
                    let wrote_at = if slot.send_round == round { submitted } else { now };
                    slot.conn.wrote(result as usize, wrote_at, rec)
                }
                _ => slot.conn.write_failed(&error(result), rec),
            }
            ready.push(i);
        }
        // Sleepers whose time has come (all of them on Ctrl-C, so they notice, and when the
        // measured window opens).
        let mut wake_all = job.stop.load(Ordering::Relaxed);
        if !window_open && job.window.opened(now, start).is_some() {
            window_open = true;
            wake_all = true; // once
        }
        while let Some(Reverse((until, i))) = sleepers.peek().copied() {
            if until > now && !wake_all {
                break;
            }
            sleepers.pop();
            ready.push(i);
        }
        if now >= next_tick {
            next_tick = now + DEADLINE_SCAN;
            for (i, slot) in slots.iter_mut().enumerate() {
                if let Some(deadline) = slot.reading
                    && now >= deadline
                {
                    slot.reading = None;
                    slot.conn.read_failed(&io::Error::new(io::ErrorKind::TimedOut, "timed out"), rec);
                    ready.push(i);
                }
                if let Some((kind, deadline)) = slot.busy
                    && now >= deadline
                    && !slot.cancelled
                {
                    slot.cancelled = true;
                    cancel(ring, user_data(i, kind), user_data(i, OP_CANCEL))?;
                }
            }
        }
        books.publish(now, rec.ops);
    }
}

/// Bind a socket to a source address, its port left to the connect (`IP_BIND_ADDRESS_NO_PORT`:
/// a port is then unique per destination, not per source address, so one address serves more
/// than the ephemeral range's worth of connections to several targets).
fn bind_source(socket: &socket2::Socket, source: std::net::IpAddr) -> io::Result<()> {
    if source.is_ipv4() {
        let one: libc::c_int = 1;
        // SAFETY: our socket and a valid option value (Linux 4.2+; harmless if unknown).
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(socket),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    socket.bind(&std::net::SocketAddr::new(source, 0).into())
}

/// Arm slot `i`'s multishot receive on its socket.
fn arm<C>(ring: &mut IoUring, slot: &mut Slot<C>, i: usize, group: u16) -> io::Result<()> {
    let Some(fd) = slot.fd else { return Ok(()) };
    slot.armed = true;
    receive(ring, fd, group, user_data(i, OP_RECV))
}

/// A completion of slot `i`'s receive: its bytes into the machine, the buffer back; the
/// receive armed again if it ended for want of buffers; the machine woken if it waits.
fn received<C: ClientCodec>(
    ring: &mut IoUring,
    bufs: &mut BufRing,
    slot: &mut Slot<C>,
    i: usize,
    result: i32,
    flags: u32,
    ready: &mut Vec<usize>,
) -> io::Result<()> {
    if !cqueue::more(flags) {
        slot.armed = false;
    }
    if let Some(bid) = cqueue::buffer_select(flags) {
        if result > 0 && !slot.conn.arrived(bufs.data(bid, result as usize)) {
            slot.end.get_or_insert(-libc::EMSGSIZE);
        }
        bufs.give_back(bid);
    }
    match result {
        1.. => {}
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
        arm(ring, slot, i, bufs.group)?;
    }
    // The machine hears of it if it waits for bytes, or for the receive's end to close.
    if slot.reading.take().is_some() || (slot.closing && !slot.armed) {
        ready.push(i);
    }
    Ok(())
}

/// Completions are waiting already.
fn ready_now(ring: &mut IoUring) -> bool {
    !ring.completion().is_empty()
}

fn user_data(slot: usize, kind: u64) -> u64 {
    ((slot as u64) << KIND_BITS) | kind
}

/// Push an SQE, submitting first if the queue is full.
///
/// Both raw io_uring loops keep one rule for the buffers their SQEs point at: they stay put
/// and untouched until the operation completes (the client's slot vector never grows; the
/// server's only buffer is a connection's answer, on the heap, freed with no send in flight).
pub(super) fn push(ring: &mut IoUring, sqe: &io_uring::squeue::Entry) -> io::Result<()> {
    // SAFETY: the rule above.
    if unsafe { ring.submission().push(sqe) }.is_err() {
        ring.submit()?;
        // SAFETY: as above.
        unsafe { ring.submission().push(sqe) }.map_err(|_| io::Error::other("submission queue full"))?;
    }
    Ok(())
}

/// Arm one multishot receive on `fd`, its buffers from provided-buffer group `group`, its
/// completions tagged `tag`: it stays armed until a completion comes without `MORE`.
pub(super) fn receive(ring: &mut IoUring, fd: RawFd, group: u16, tag: u64) -> io::Result<()> {
    push(ring, &opcode::RecvMulti::new(types::Fd(fd), group).build().user_data(tag))
}

/// Cancel the operation tagged `target`; the cancel's own completion is tagged `tag`.
pub(super) fn cancel(ring: &mut IoUring, target: u64, tag: u64) -> io::Result<()> {
    push(ring, &opcode::AsyncCancel::new(target).build().user_data(tag))
}

/// Ask slot `i`'s machine what to do until it is waiting on an operation, asleep or done.
#[allow(clippy::too_many_arguments)]
fn drive<C: ClientCodec>(
    ring: &mut IoUring,
    slots: &mut [Slot<C>],
    sleepers: &mut BinaryHeap<Reverse<(Instant, usize)>>,
    i: usize,
    (now, round): (Instant, u64),
    stopping: bool,
    job: &ClientJob,
    rec: &mut CoreRecorder,
) -> io::Result<()> {
    let slot = &mut slots[i];
    // Woken twice in one batch (two completions): the first wake already acted.
    if slot.busy.is_some() || slot.reading.is_some() {
        return Ok(());
    }
    loop {
        match slot.conn.next(now, stopping, rec) {
            Want::Done => {
                slot.done = true;
                return Ok(());
            }
            Want::Sleep(until) => {
                sleepers.push(Reverse((until, i)));
                return Ok(());
            }
            Want::Connect(timeout) => {
                let socket = socket2::Socket::new(
                    socket2::Domain::for_address(job.addrs[slot.conn.target()]),
                    socket2::Type::STREAM.nonblocking().cloexec(),
                    None,
                );
                let socket = match socket {
                    Ok(s) => s,
                    Err(e) => {
                        slot.conn.connect_failed(&e, now, rec);
                        continue;
                    }
                };
                let _ = socket.set_tcp_nodelay(true);
                if let Some(source) = slot.source
                    && let Err(e) = bind_source(&socket, source)
                {
                    let e = io::Error::new(e.kind(), format!("binding the source address {source}: {e}"));
                    slot.conn.connect_failed(&e, now, rec);
                    continue;
                }
                let fd = socket.into_raw_fd();
                slot.fd = Some(fd);
                slot.end = None;
                let sqe = opcode::Connect::new(types::Fd(fd), slot.addr.as_ptr().cast(), slot.addr.len())
                    .build()
                    .user_data(user_data(i, OP_CONNECT));
                slot.busy = Some((OP_CONNECT, now + timeout));
                return push(ring, &sqe);
            }
            Want::Write(timeout) => {
                let Some(fd) = slot.fd else {
                    slot.conn.write_failed(&io::Error::other("no connection"), rec);
                    continue;
                };
                let buf = slot.conn.to_write();
                let sqe =
                    opcode::Send::new(types::Fd(fd), buf.as_ptr(), buf.len().min(u32::MAX as usize) as u32)
                        .flags(libc::MSG_NOSIGNAL)
                        .build()
                        .user_data(user_data(i, OP_SEND));
                slot.busy = Some((OP_SEND, now + timeout));
                slot.send_round = round + 1; // submitted by the next enter
                return push(ring, &sqe);
            }
            // What arrived goes in first, then how the stream ended; a poll that finds
            // neither is done, a read waits (its receive is armed already).
            want @ (Want::Read(_) | Want::Poll) => {
                if slot.conn.has_arrived() {
                    slot.conn.take_arrived(now, rec);
                } else if let Some(end) = slot.end.take() {
                    match end {
                        0 => slot.conn.read(0, now, rec),
                        e if e == -libc::EMSGSIZE => slot
                            .conn
                            .read_failed(&io::Error::other("message larger than the receive limit"), rec),
                        e => slot.conn.read_failed(&io::Error::from_raw_os_error(-e), rec),
                    }
                } else if slot.fd.is_none() {
                    slot.conn.read_failed(&io::Error::other("no connection"), rec);
                } else if let Want::Read(timeout) = want {
                    slot.reading = Some(now + timeout);
                    return Ok(());
                } else {
                    slot.conn.polled(now);
                }
            }
            Want::Close if slot.armed => {
                if !slot.closing {
                    slot.closing = true;
                    cancel(ring, user_data(i, OP_RECV), user_data(i, OP_CANCEL))?;
                }
                return Ok(());
            }
            Want::Close => {
                slot.closing = false;
                slot.end = None;
                let audit = slot.fd.take().map(|fd| {
                    let audit = close_audit(fd, slot.conn.socket_rx(), false);
                    // SAFETY: our socket; no operation is in flight on it (we only get here
                    // between operations).
                    unsafe { libc::close(fd) };
                    audit
                });
                let drained = audit.as_ref().map_or(0, |(n, _)| *n);
                slot.conn.closed(drained, audit.map(|(_, a)| a), now, rec);
            }
        }
    }
}

/// The ring failed under us: operations may still point into the slots' buffers, so the
/// slots are leaked rather than freed (and their sockets closed) before the ring goes.
fn abandon<C>(mut slots: Vec<Slot<C>>) {
    for slot in slots.iter_mut() {
        if let Some(fd) = slot.fd.take() {
            // SAFETY: our sockets.
            unsafe { libc::close(fd) };
        }
    }
    std::mem::forget(slots);
}
