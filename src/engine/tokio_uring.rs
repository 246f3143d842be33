//! The tokio-uring engine: one pinned current-thread tokio runtime with an io_uring driver per
//! core, one task per connection, driving the shared connection machine ([`Conn`]).
//!
//! tokio-uring submits every read and write as an io_uring operation on owned buffers (no
//! try-the-syscall-first path): each operation is an SQE, flushed when the runtime parks, and
//! completions wake the tasks. The owned-buffer API costs a copy in and out of the machine's
//! buffers per operation; timeouts are tokio timers around the operations.

use super::conn::{Conn, Want};
use super::serve_conn::ServerConn;
use super::serve_conn::{ServerLimits, busy_answer};
use super::sys::close_audit;
use super::{
    Admitted, AsyncCore, AsyncServerCore, ClientJob, ClientRun, EngineError, LINGER, LINGER_BUF,
    LINGER_READS, REFUSE_WAIT,
};
use super::{CoreStart, SERVER_POLL, ServerStart};
use crate::clock::Instant;
use crate::plan::Endpoint;
use crate::proto::{ClientCodec, ServerCodec};
use crate::stats::CoreRecorder;
use crate::stats::ServerTally;
use ::tokio_uring::buf::BoundedBuf;
use ::tokio_uring::net::{TcpListener, TcpStream};
use std::cell::RefCell;
use std::io;

use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn runtime(cpu: usize) -> Result<::tokio_uring::Runtime, EngineError> {
    super::pin_current_thread(cpu)?;
    ::tokio_uring::Runtime::new(&::tokio_uring::builder())
        .map_err(|source| EngineError::Executor { cpu, source })
}

/// Run the client side of `job` with tokio-uring.
pub fn run_client<C>(job: &ClientJob, prototypes: Vec<C>) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    super::run_client_threads(job, prototypes, client_core::<C>)
}

fn client_core<C: ClientCodec + 'static>(
    CoreStart { job, cpu, index, conns, gate }: CoreStart,
    prototypes: Vec<C>,
) -> Result<(CoreRecorder, Instant), EngineError> {
    let rt = runtime(cpu);
    let start = gate.wait();
    Ok(rt?.block_on(async move {
        let core = AsyncCore::new(job, prototypes, cpu, index);
        let tasks: Vec<_> = conns
            .map(|i| ::tokio_uring::spawn(drive_connection(core.clone(), core.conn(i, start))))
            .collect();
        for t in tasks {
            // A connection's task that panicked: its operations are unaccounted for, so the
            // core goes down with it (and the run with the core).
            if let Err(e) = t.await
                && e.is_panic()
            {
                std::panic::resume_unwind(e.into_panic());
            }
        }
        core.close()
    }))
}

async fn with_timeout<T>(
    limit: Duration,
    op: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    tokio::time::timeout(limit, op)
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")))
}

/// tokio-uring cannot cancel an operation: a read or write dropped on a timeout stays in the
/// kernel and may still move bytes that nobody counts. So a timed-out operation is ended by
/// shutting the socket down in its direction, and awaited (at most this long) for what it did.
const UNCANCELLABLE_WAIT: Duration = Duration::from_secs(1);

/// How an operation that may time out ended.
enum Timed<T> {
    Done(T),
    /// It timed out; the socket was shut down and the operation then finished with this.
    Stopped(T),
    /// It did not finish even after the shutdown (not seen in practice; its bytes are lost).
    Abandoned,
}

/// Run `op` until `limit`; past it, `stop` the socket and wait for `op` to finish.
async fn uncancellable<T>(
    limit: Duration,
    op: impl std::future::Future<Output = T>,
    stop: impl FnOnce(),
) -> Timed<T> {
    let mut op = std::pin::pin!(op);
    tokio::select! {
        biased;
        done = &mut op => Timed::Done(done),
        _ = tokio::time::sleep(limit) => {
            stop();
            match tokio::time::timeout(UNCANCELLABLE_WAIT, op).await {
                Ok(done) => Timed::Stopped(done),
                Err(_) => Timed::Abandoned,
            }
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "timed out")
}

/// A connection to `addr`: TCP through the runtime; a Unix socket, made at once and handed to
/// it (its reads and writes work on any stream socket). Datagrams are the `uring` engine's.
async fn connect(addr: &Endpoint) -> io::Result<TcpStream> {
    match addr {
        Endpoint::Ip(ip) => TcpStream::connect(*ip).await,
        // Refused before the run (`udp://` is the `uring` engine's): never here.
        Endpoint::Udp(_) => Err(std::io::Error::other("udp:// runs on --engine uring")),
        Endpoint::Unix(_) => {
            let fd = super::sys::unix_connect(&addr.sockaddr()?)?;
            Ok(TcpStream::from_std(std::net::TcpStream::from(fd)))
        }
    }
}

/// Perform what the connection's state machine asks, until it is done.
async fn drive_connection<C: ClientCodec>(core: Rc<AsyncCore<C>>, mut conn: Conn<C>) {
    let (job, rec) = (&core.job, &core.rec);
    let mut stream: Option<TcpStream> = None;
    // The socket was shut down for writing to stop a write: its FIN is in the kernel's count.
    let mut sent_fin = false;
    // tokio-uring owns the buffers while the kernel uses them; these travel to it and back.
    let mut wbuf: Vec<u8> = Vec::with_capacity(1024);
    let mut rbuf: Vec<u8> = Vec::with_capacity(crate::recv::RECV_BUF_INITIAL);
    for step in 0u64.. {
        // Some steps finish without waiting (a poll, a close): the other connections get
        // their turn now and then, whatever this one's machine asks.
        if step % 64 == 63 {
            tokio::task::yield_now().await;
        }
        let now = Instant::now();
        core.publish(now);
        let want = conn.next(now, core.stopping(), &mut rec.borrow_mut());
        match (want, stream.as_ref()) {
            (Want::Done, _) => return,
            // A connect dropped on its timeout closes its own socket when it completes; no
            // byte has moved on it.
            (Want::Connect(timeout), _) => {
                match with_timeout(timeout, connect(&job.addrs[conn.target()])).await {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        stream = Some(s);
                        sent_fin = false;
                        conn.connected(Instant::now(), &mut rec.borrow_mut());
                    }
                    Err(e) => conn.connect_failed(&e, Instant::now(), &mut rec.borrow_mut()),
                }
            }
            (Want::Sleep(until), _) => {
                tokio::time::sleep(until.saturating_duration_since(Instant::now())).await
            }
            (Want::Write(timeout), Some(s)) => {
                write(s, &mut conn, &mut wbuf, timeout, &mut sent_fin, rec).await
            }
            (Want::Read(timeout), Some(s)) => read(s, &mut conn, &mut rbuf, timeout, rec).await,
            (Want::Poll, Some(s)) => {
                super::poll_socket(&mut conn, s.as_raw_fd(), Instant::now(), &mut rec.borrow_mut())
            }
            (Want::Close, Some(s)) => {
                let (drained, audit) = close_audit(s.as_raw_fd(), conn.socket_rx(), sent_fin);
                if job.reset_close {
                    super::sys::reset_on_close(s.as_raw_fd());
                }
                stream = None;
                conn.closed(drained, Some(audit), Instant::now(), &mut rec.borrow_mut());
            }
            (Want::Close, None) => conn.closed(0, None, Instant::now(), &mut rec.borrow_mut()),
            (Want::Write(_) | Want::Read(_) | Want::Poll, None) => {
                conn.read_failed(&io::Error::other("no connection"), Instant::now(), &mut rec.borrow_mut())
            }
        }
    }
}

/// The machine's bytes written, in one write given `timeout`; a write that does not finish in
/// time is stopped by shutting the socket down for writing (`sent_fin`: its FIN is counted).
/// (The recorder is borrowed only after the await, as in [`read`].)
async fn write<C: ClientCodec>(
    s: &TcpStream,
    conn: &mut Conn<C>,
    wbuf: &mut Vec<u8>,
    timeout: Duration,
    sent_fin: &mut bool,
    rec: &std::cell::RefCell<CoreRecorder>,
) {
    wbuf.clear();
    wbuf.extend_from_slice(conn.to_write());
    let write = s.write(std::mem::take(wbuf)).submit();
    let stop = || *sent_fin = s.shutdown(std::net::Shutdown::Write).is_ok();
    let timed = uncancellable(timeout, write, stop).await;
    let rec = &mut rec.borrow_mut();
    match timed {
        Timed::Done((result, buf)) => {
            *wbuf = buf;
            match result {
                Ok(n) => conn.wrote(n, Instant::now(), rec),
                Err(e) => conn.write_failed(&e, rec),
            }
        }
        Timed::Stopped((result, buf)) => {
            *wbuf = buf;
            if let Ok(n @ 1..) = result {
                conn.wrote(n, Instant::now(), rec);
            }
            conn.write_failed(&timed_out(), rec);
        }
        Timed::Abandoned => {
            *wbuf = Vec::with_capacity(1024);
            conn.write_failed(&timed_out(), rec);
        }
    }
}

/// One read into the machine's buffer, given `timeout`; a read that does not finish in time
/// is stopped by shutting the socket down for reading. (The recorder is borrowed only after the
/// await: the core's other connections use it meanwhile.)
async fn read<C: ClientCodec>(
    s: &TcpStream,
    conn: &mut Conn<C>,
    rbuf: &mut Vec<u8>,
    timeout: Duration,
    rec: &std::cell::RefCell<CoreRecorder>,
) {
    let room = conn.read_buf().map_or(0, |b| b.len());
    if room == 0 {
        let e = io::Error::other("message larger than the receive limit");
        return conn.read_failed(&e, Instant::now(), &mut rec.borrow_mut());
    }
    if rbuf.capacity() > 4 * room.max(crate::recv::RECV_BUF_INITIAL) {
        *rbuf = Vec::new(); // given back after a large message
    }
    rbuf.clear();
    rbuf.reserve(room);
    let read = s.read(std::mem::take(rbuf).slice(..room));
    let stop = || {
        let _ = s.shutdown(std::net::Shutdown::Read);
    };
    match uncancellable(timeout, read, stop).await {
        Timed::Done((result, buf)) => {
            *rbuf = buf.into_inner();
            match result {
                Ok(n) => {
                    if let Some(dst) = conn.read_buf() {
                        dst[..n].copy_from_slice(&rbuf[..n]);
                    }
                    conn.read(n, Instant::now(), &mut rec.borrow_mut());
                }
                Err(e) => conn.read_failed(&e, Instant::now(), &mut rec.borrow_mut()),
            }
        }
        Timed::Stopped((result, buf)) => {
            // Bytes that came with the timeout: counted, not decoded.
            *rbuf = buf.into_inner();
            if let Ok(n @ 1..) = result
                && let Some(dst) = conn.read_buf()
            {
                dst[..n].copy_from_slice(&rbuf[..n]);
                conn.read_after_giving_up(n);
            }
            conn.read_failed(&timed_out(), Instant::now(), &mut rec.borrow_mut());
        }
        Timed::Abandoned => {
            *rbuf = Vec::with_capacity(crate::recv::RECV_BUF_INITIAL);
            conn.read_failed(&timed_out(), Instant::now(), &mut rec.borrow_mut());
        }
    }
}

/// Start a built-in server on `cores` with tokio-uring (see [`super::start_server_threads`]).
pub fn start_server<S>(
    listeners: Vec<(crate::plan::Endpoint, S)>,
    cores: &[usize],
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<super::ServerHandle, EngineError>
where
    S: ServerCodec + Send + 'static,
{
    super::start_server_threads(listeners, cores, limits, stop, |start| {
        let (cpu, ready) = (start.cpu, start.ready.clone());
        let rt = match runtime(cpu) {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready.send(Err(e));
                return Ok(ServerTally { core: cpu, ..Default::default() });
            }
        };
        rt.block_on(server_core(start))
    })
}

async fn server_core<S: ServerCodec + 'static>(start: ServerStart<S>) -> Result<ServerTally, EngineError> {
    let core = AsyncServerCore::open(&start);
    for (listener, prototype) in start.listeners {
        let listener = TcpListener::from_std(listener);
        let core = core.clone();
        ::tokio_uring::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(SERVER_POLL).await;
                    continue;
                };
                let Some(admitted) = core.admit() else {
                    ::tokio_uring::spawn(refuse(stream, busy_answer(&prototype)));
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let conn = ServerConn::new(core.codec(&prototype), core.limits, Instant::now());
                let serving = serve_connection(stream, conn, core.clone(), admitted);
                ::tokio_uring::spawn(core.clone().guard(serving));
            }
        });
    }
    while !start.stop.load(Ordering::Relaxed) && !core.failed() {
        tokio::time::sleep(SERVER_POLL).await;
    }
    core.close()
}

/// A connection over the limit: say so where the protocol can, then close (bounded).
async fn refuse(stream: TcpStream, answer: Vec<u8>) {
    if !answer.is_empty() {
        let write = stream.write_all(answer);
        let _ = uncancellable(REFUSE_WAIT, write, || {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        })
        .await;
    }
    linger(&stream).await;
}

/// Our side is over: a FIN after what was written, then what the client still sends read and
/// dropped until it closes too, within [`LINGER`] (a read in flight then gets its
/// `UNCANCELLABLE_WAIT` to end), so that our close is not a reset that drops our last words.
async fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let until = Instant::now() + LINGER;
    let mut buf = vec![0u8; LINGER_BUF];
    for _ in 0..LINGER_READS {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let stop = || {
            let _ = stream.shutdown(std::net::Shutdown::Read);
        };
        match uncancellable(left, stream.read(buf), stop).await {
            Timed::Done((Ok(n), b)) if n > 0 => buf = b,
            _ => break,
        }
    }
}

async fn serve_connection<S: ServerCodec>(
    stream: TcpStream,
    mut conn: ServerConn<S>,
    core: Rc<AsyncServerCore>,
    _admitted: Admitted,
) {
    let tally = &core.tally;
    // tokio-uring owns the buffers while the kernel uses them; these travel to it and back.
    let mut rbuf: Vec<u8> = Vec::new();
    let mut wbuf: Vec<u8> = Vec::new();
    // `--delay`'s timer, made on first use.
    let mut timer = None;
    // A read stays in flight across deadlines (a heartbeat is written beside it): dropping it
    // would lose the bytes it later takes, since tokio-uring cannot cancel it.
    loop {
        let Some(room) = conn.read_buf().map(|b| b.len()) else { return };
        if rbuf.capacity() > 4 * room {
            rbuf = Vec::new(); // given back after a large message
        }
        rbuf.clear();
        rbuf.reserve(room);
        let mut read = std::pin::pin!(stream.read(std::mem::take(&mut rbuf).slice(..room)));
        let (result, buf) = loop {
            let deadline = conn.deadline();
            tokio::select! {
                biased;
                done = &mut read => break done,
                _ = tokio::time::sleep_until(deadline.into()) => {
                    conn.deadline_passed(Instant::now(), &mut tally.borrow_mut());
                    if conn.closing() {
                        // Too slow: end the read (it cannot be cancelled) and close.
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                        let _ = tokio::time::timeout(UNCANCELLABLE_WAIT, read).await;
                        return;
                    }
                    if !conn.to_write().is_empty() && !write_out(&stream, &mut conn, &mut wbuf, tally).await {
                        let _ = tokio::time::timeout(UNCANCELLABLE_WAIT, read).await;
                        return;
                    }
                }
            }
        };
        rbuf = buf.into_inner();
        let n = match result {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(dst) = conn.read_buf() {
            dst[..n].copy_from_slice(&rbuf[..n]);
        }
        conn.received(n, Instant::now(), super::unix_secs(), &mut tally.borrow_mut());
        if let Some(until) = conn.hold() {
            hold_until(&mut timer, until).await;
        }
        if !conn.to_write().is_empty() && !write_out(&stream, &mut conn, &mut wbuf, tally).await {
            return;
        }
        if conn.closing() {
            return linger(&stream).await;
        }
    }
}

/// Wait until `until` (`--delay`) to the microsecond, on a timerfd the reactor watches:
/// tokio's own timer rounds up to its millisecond tick, 10 % of a 10 ms delay. Falls back to
/// that timer if no timerfd can be had.
async fn hold_until(timer: &mut Option<tokio::io::unix::AsyncFd<super::sys::TimerFd>>, until: Instant) {
    if timer.is_none() {
        *timer = super::sys::TimerFd::new().ok().and_then(|fd| {
            // SAFETY: the TimerFd owns its descriptor and returns the same one for its lifetime.
            unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                .ok()
        });
    }
    let left = until.saturating_duration_since(Instant::now());
    match timer.as_ref() {
        Some(fd) if fd.get_ref().arm(left).is_ok() => {
            // Bounded by the expiry itself; a spurious readiness just loops once more.
            while Instant::now() < until {
                match fd.readable().await {
                    Ok(mut ready) => {
                        if fd.get_ref().clear() {
                            break;
                        }
                        ready.clear_ready();
                    }
                    Err(_) => return tokio::time::sleep_until(until.into()).await,
                }
            }
        }
        _ => tokio::time::sleep_until(until.into()).await,
    }
}

/// Write the connection's answers within its write timeout; `false`: the connection is over.
async fn write_out<S: ServerCodec>(
    stream: &TcpStream,
    conn: &mut ServerConn<S>,
    wbuf: &mut Vec<u8>,
    tally: &RefCell<ServerTally>,
) -> bool {
    wbuf.clear();
    wbuf.extend_from_slice(conn.to_write());
    let write = stream.write_all(std::mem::take(wbuf));
    let stop = || {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    };
    match uncancellable(conn.write_timeout(), write, stop).await {
        Timed::Done((Ok(()), buf)) => {
            *wbuf = buf;
            if wbuf.capacity() > 64 * 1024 {
                *wbuf = Vec::new();
            }
            conn.written(Instant::now(), &mut tally.borrow_mut());
            true
        }
        Timed::Done((Err(_), _)) => false,
        Timed::Stopped(_) | Timed::Abandoned => {
            tally.borrow_mut().timeouts += 1;
            false
        }
    }
}
