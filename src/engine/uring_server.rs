//! The raw io_uring server loop: one pinned thread per core, one ring, every connection the
//! shared server connection machine ([`ServerConn`]) driven by completions — as the `uring`
//! client engine drives [`super::conn::Conn`].
//!
//! Per core: a **multishot accept** per listener; per connection a **multishot receive** with
//! buffers from the core's provided-buffer ring (a quiet connection holds no buffer; an idle
//! one gives its own back, [`ServerConn::release_if_idle`]); answers as one send SQE per
//! connection per loop, all of a loop's sends submitted with its one `io_uring_enter`. Bytes that
//! arrive while a send is in flight wait in the machine ([`ServerConn::arrived`]) until the
//! send is done, so the answer buffer is never touched while the kernel reads it. `--delay`'s
//! held answers wait in a timer heap; a scan every [`DEADLINE_SCAN`] fires the connections'
//! deadlines (head, idle, heartbeat, write); a connection closes after its receive is
//! cancelled and has ended.

use super::bufring::BufRing;
use super::serve_conn::ServerConn;
use super::uring::{cancel, push, receive};
use super::{AsyncServerCore, ServerStart, ServerTally};
use crate::proto::ServerCodec;
use io_uring::{IoUring, cqueue, opcode, types};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest wait in the kernel (the stop flag is looked at this often).
const TICK: Duration = Duration::from_millis(20);
/// How often every connection's deadlines are looked at (a scan of them all: thousands of
/// connections in each of many processes make a frequent scan the machine's main work).
const DEADLINE_SCAN: Duration = Duration::from_millis(50);
/// Buffers of the provided-buffer ring, and their size.
const RING_BUFFERS: u16 = 1024;
const RING_BUFFER_SIZE: usize = 4 * 1024;
/// Accepted sockets stay blocking: io_uring tries each operation without waiting first either
/// way, and the non-blocking variant measured worse here (9.3-9.4 against 8.4-8.9 µs per
/// request at 40,000/s, and a write timeout that no longer closed a client that never reads).
const ACCEPT_FLAGS: i32 = libc::SOCK_CLOEXEC;
const KIND_BITS: u64 = 3;
const OP_ACCEPT: u64 = 0;
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_CANCEL: u64 = 3;

fn user_data(index: usize, kind: u64) -> u64 {
    ((index as u64) << KIND_BITS) | kind
}

/// One accepted connection.
struct Slot<S> {
    conn: ServerConn<S>,
    fd: RawFd,
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
}

impl<S: ServerCodec> Slot<S> {
    /// Its answers are held (`--delay`) past `now`.
    fn held(&self, now: Instant) -> bool {
        self.conn.hold().is_some_and(|until| until > now)
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

/// Start a built-in server on `cores` (see [`super::start_server_threads`]).
pub fn start_server<S>(
    listeners: Vec<(std::net::SocketAddr, S)>,
    cores: &[usize],
    limits: super::serve_conn::ServerLimits,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<super::ServerHandle, super::EngineError>
where
    S: ServerCodec + Send + 'static,
{
    super::start_server_threads(listeners, cores, limits, stop, server_core::<S>)
}

fn server_core<S: ServerCodec + Send + 'static>(start: ServerStart<S>) -> ServerTally {
    let cpu = start.cpu;
    let failed = |start: &ServerStart<S>, source: io::Error| {
        let _ = start.ready.send(Err(super::EngineError::Executor { cpu, source }));
        ServerTally { core: cpu, ..Default::default() }
    };
    if let Err(e) = super::pin_current_thread(cpu) {
        let _ = start.ready.send(Err(e));
        return ServerTally { core: cpu, ..Default::default() };
    }
    let mut ring = match super::uring::ring(4096) {
        Ok(r) => r,
        Err(e) => return failed(&start, e),
    };
    let mut bufs = match BufRing::register(&ring, 0, RING_BUFFERS, RING_BUFFER_SIZE) {
        Ok(b) => b,
        Err(e) => return failed(&start, io::Error::new(e.kind(), format!("provided-buffer ring: {e}"))),
    };
    let core = AsyncServerCore::open(&start);
    let mut slots: Vec<Option<Slot<S>>> = Vec::new();
    let result = serve(&mut ring, &mut bufs, &start, &core, &mut slots);
    for slot in slots.iter_mut().flatten() {
        // SAFETY: our sockets; the ring (and whatever it still has in flight) goes next.
        unsafe { libc::close(slot.fd) };
    }
    drop(ring);
    if result.is_err() {
        // An operation may have been in flight into the buffers when the ring failed.
        std::mem::forget(bufs);
    }
    drop(slots);
    core.close()
}

fn serve<S: ServerCodec>(
    ring: &mut IoUring,
    bufs: &mut BufRing,
    start: &ServerStart<S>,
    core: &std::rc::Rc<AsyncServerCore>,
    slots: &mut Vec<Option<Slot<S>>>,
) -> io::Result<()> {
    for (l, (listener, _)) in start.listeners.iter().enumerate() {
        let sqe = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
            .flags(ACCEPT_FLAGS)
            .build()
            .user_data(user_data(l, OP_ACCEPT));
        push(ring, &sqe)?;
    }
    let mut free: Vec<usize> = Vec::new();
    let mut completions: Vec<(u64, i32, u32)> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    let mut next_scan = Instant::now() + DEADLINE_SCAN;
    let mut held = Timers::new();
    let mut unix = (super::unix_secs(), Instant::now());
    while !start.stop.load(Ordering::Relaxed) {
        // One completion wakes the loop. Tried and dropped: io_uring's min-wait coalescing
        // (sleep until 64 completions, or 20-50 µs once one is in): 11.2-11.8 µs per request
        // at 40,000/s against 8.7-9.9 without it, the timer's wake-ups costing more than the
        // ones they saved.
        let wait = held.peek().map_or(TICK, |std::cmp::Reverse((until, _))| {
            until.saturating_duration_since(Instant::now()).min(TICK)
        });
        let ts = types::Timespec::from(wait);
        match ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts)) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if now.duration_since(unix.1) >= Duration::from_millis(100) {
            unix = (super::unix_secs(), now);
        }
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        let mut tally = core.tally.borrow_mut();
        for &(data, result, flags) in &completions {
            let (i, kind) = ((data >> KIND_BITS) as usize, data & ((1 << KIND_BITS) - 1));
            match kind {
                OP_ACCEPT => {
                    let (listener, prototype) = &start.listeners[i];
                    if !cqueue::more(flags) {
                        // Ended (out of descriptors, say): armed again after a pause.
                        std::thread::sleep(Duration::from_millis(1));
                        let sqe = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
                            .flags(ACCEPT_FLAGS)
                            .build()
                            .user_data(user_data(i, OP_ACCEPT));
                        push(ring, &sqe)?;
                    }
                    if result < 0 {
                        continue;
                    }
                    let fd = result;
                    // Admission and the codec's seed keep their own books in the tally.
                    drop(tally);
                    let admitted = core.admit().map(|a| (a, core.codec(prototype)));
                    tally = core.tally.borrow_mut();
                    let Some((admitted, codec)) = admitted else {
                        refuse(fd, &super::serve_conn::busy_answer(prototype));
                        continue;
                    };
                    set_nodelay(fd);
                    let slot = Slot {
                        conn: ServerConn::new(codec, core.limits, now),
                        fd,
                        _admitted: admitted,
                        armed: false,
                        sending: None,
                        send_cancelled: false,
                        ended: false,
                        closing: false,
                    };
                    let index = match free.pop() {
                        Some(index) => {
                            slots[index] = Some(slot);
                            index
                        }
                        None => {
                            slots.push(Some(slot));
                            slots.len() - 1
                        }
                    };
                    arm(ring, slots[index].as_mut().expect("just placed"), index, bufs.group)?;
                }
                OP_RECV => {
                    let Some(slot) = slots.get_mut(i).and_then(Option::as_mut) else { continue };
                    if !cqueue::more(flags) {
                        slot.armed = false;
                    }
                    if let Some(bid) = cqueue::buffer_select(flags) {
                        let data = bufs.data(bid, result.max(0) as usize);
                        // Answered where it lies when the connection is free to answer;
                        // kept for later while a send or a held answer is pending.
                        let free = slot.sending.is_none() && !slot.held(now) && !slot.conn.closing();
                        let fits = if free {
                            slot.conn.serve_from(data, now, unix.0, &mut tally)
                        } else {
                            slot.conn.arrived(data, &mut tally)
                        };
                        if free {
                            time_hold(slot, i, &mut held, now);
                        }
                        slot.ended |= result > 0 && !fits;
                        bufs.give_back(bid);
                    }
                    match result {
                        1.. => {}
                        e if e == -libc::ENOBUFS => {}
                        _ => slot.ended = true, // 0: the client closed; else an error or our cancel
                    }
                    if !slot.armed && !slot.ended && !slot.closing {
                        arm(ring, slot, i, bufs.group)?;
                    }
                    touched.push(i);
                }
                OP_SEND => {
                    let Some(slot) = slots.get_mut(i).and_then(Option::as_mut) else { continue };
                    let Some((off, deadline)) = slot.sending.take() else { continue };
                    if slot.send_cancelled {
                        tally.timeouts += 1;
                        slot.ended = true;
                    } else if result <= 0 || slot.ended {
                        slot.ended = true;
                    } else if off + result as usize >= slot.conn.to_write().len() {
                        slot.conn.written(now, &mut tally);
                    } else {
                        slot.sending = Some((off + result as usize, deadline));
                        send(ring, slot, i)?;
                    }
                    touched.push(i);
                }
                _ => {}
            }
        }
        while let Some(std::cmp::Reverse((until, i))) = held.peek().copied() {
            if until > now {
                break;
            }
            held.pop();
            touched.push(i);
        }
        // Deadlines, once a scan.
        if now >= next_scan {
            next_scan = now + DEADLINE_SCAN;
            for (i, slot) in slots.iter_mut().enumerate() {
                let Some(slot) = slot else { continue };
                match slot.sending {
                    Some((_, deadline)) if now >= deadline && !slot.send_cancelled => {
                        slot.send_cancelled = true;
                        stop_socket(slot.fd);
                    }
                    Some(_) => {}
                    None if slot.held(now) => {}
                    None if now >= slot.conn.deadline() && !slot.ended => {
                        slot.conn.deadline_passed(now, &mut tally);
                        touched.push(i);
                    }
                    None => slot.conn.release_if_idle(now),
                }
            }
        }
        // Every connection something happened to: answer, send, or close.
        touched.sort_unstable();
        touched.dedup();
        for i in touched.drain(..) {
            let Some(slot) = slots.get_mut(i).and_then(Option::as_mut) else { continue };
            if slot.sending.is_some() {
                // Its completion comes back here; a connection that is over does not wait
                // for a send the client may never let finish.
                if slot.ended && !slot.send_cancelled {
                    slot.send_cancelled = true;
                    stop_socket(slot.fd);
                }
                continue;
            }
            if !slot.ended && !slot.held(now) && slot.conn.has_arrived() && !slot.conn.closing() {
                slot.conn.serve_arrived(now, unix.0, &mut tally);
                time_hold(slot, i, &mut held, now);
            }
            if slot.held(now) {
                continue;
            }
            if !slot.ended && !slot.conn.to_write().is_empty() {
                slot.sending = Some((0, now + slot.conn.write_timeout()));
                send(ring, slot, i)?;
                continue;
            }
            if slot.ended || slot.conn.closing() {
                if slot.armed {
                    if !slot.closing {
                        slot.closing = true;
                        cancel(ring, user_data(i, OP_RECV), user_data(i, OP_CANCEL))?;
                    }
                    continue;
                }
                let slot = slots[i].take().expect("present");
                close_gracefully(slot.fd);
                free.push(i);
            }
        }
    }
    Ok(())
}

fn arm<S>(ring: &mut IoUring, slot: &mut Slot<S>, i: usize, group: u16) -> io::Result<()> {
    slot.armed = true;
    receive(ring, slot.fd, group, user_data(i, OP_RECV))
}

/// Send what is left of the connection's answers.
fn send<S: ServerCodec>(ring: &mut IoUring, slot: &mut Slot<S>, i: usize) -> io::Result<()> {
    let off = slot.sending.map_or(0, |(off, _)| off);
    let out = &slot.conn.to_write()[off..];
    let sqe = opcode::Send::new(types::Fd(slot.fd), out.as_ptr(), out.len().min(u32::MAX as usize) as u32)
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(user_data(i, OP_SEND));
    push(ring, &sqe)
}

/// End a send that the client does not let finish: a cancel does not reliably stop a send
/// blocked in a kernel worker (it may return the bytes moved, and one already resubmitted
/// slips past it), a shutdown ends every operation on the socket at once.
fn stop_socket(fd: RawFd) {
    // SAFETY: our socket; the connection is over.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

fn set_nodelay(fd: RawFd) {
    // SAFETY: our socket, open for the duration of this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let _ = socket2::SockRef::from(&fd).set_tcp_nodelay(true);
}

/// A connection over the limit: its busy answer if the socket takes it at once, then closed.
fn refuse(fd: RawFd, answer: &[u8]) {
    if !answer.is_empty() {
        // SAFETY: our socket, a valid buffer; non-blocking, best effort.
        unsafe {
            libc::send(fd, answer.as_ptr().cast(), answer.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        };
    }
    close_gracefully(fd);
}

/// Close after saying so (FIN), reading off what the client already sent so the close is not
/// a reset (bounded: what is queued now).
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
