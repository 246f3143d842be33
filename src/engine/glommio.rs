//! The glommio engine: one pinned `LocalExecutor` per core, one task per connection.
//!
//! glommio's sockets try the syscall first (`send`/`recv` straight away) and fall back to an
//! io_uring poll when the socket is not ready, so a request/response costs one `send` and one
//! or two `recv`s plus a shared `io_uring_enter` per loop of the executor. Byte counts are taken
//! from the return values of those reads and writes.

use super::conn::{Conn, Want};
use super::serve_conn::ServerConn;
use super::serve_conn::{ServerLimits, busy_answer};
use super::sys::close_audit;
use super::{
    Admitted, AsyncCore, AsyncServerCore, ClientJob, ClientRun, CoreStart, EngineError, LINGER, LINGER_BUF,
    LINGER_READS, REFUSE_WAIT,
};
use super::{SERVER_POLL, ServerHandle, ServerStart};
use crate::clock::Instant;
use crate::plan::Endpoint;
use crate::proto::{ClientCodec, ServerCodec};
use crate::stats::ServerTally;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// glommio registers this much memory with io_uring for file I/O, which we never do; the
/// minimum keeps locked memory (`ulimit -l`, 8 MiB by default) free for many threads.
const IO_MEMORY: usize = 64 * 1024;
/// Locked memory one executor needs: its registered buffer in three rings, and glommio's own
/// check that the limit is at least 512 KiB.
pub const LOCKED_MEMORY_PER_THREAD: u64 = 3 * IO_MEMORY as u64;
pub const LOCKED_MEMORY_MIN: u64 = 512 * 1024;

fn executor(cpu: usize, name: &str) -> Result<glommio::LocalExecutor, EngineError> {
    LocalExecutorBuilder::new(Placement::Fixed(cpu))
        .io_memory(IO_MEMORY)
        .name(name)
        .make()
        .map_err(|e| EngineError::Executor { cpu, source: std::io::Error::other(e.to_string()) })
}

/// Run the client side of `job`, one pinned executor per core, one task per connection.
pub fn run_client<C>(job: &ClientJob, prototypes: Vec<C>) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    super::run_client_threads(job, prototypes, |CoreStart { job, cpu, index, conns, gate }, prototypes| {
        let ex = executor(cpu, "wirebench-client");
        let start = gate.wait();
        Ok(ex?.run(async move {
            let core = AsyncCore::new(job, prototypes, cpu, index);
            let tasks: Vec<_> = conns
                .map(|i| glommio::spawn_local(drive_connection(core.clone(), core.conn(i, start))).detach())
                .collect();
            for t in tasks {
                t.await;
            }
            core.close()
        }))
    })
}

/// A connection to `addr`: TCP through the runtime; a Unix socket, made at once and handed to
/// it (its reads and writes work on any stream socket). Datagrams are the `uring` engine's.
async fn connect(addr: &Endpoint, timeout: std::time::Duration) -> std::io::Result<TcpStream> {
    match addr {
        Endpoint::Ip(ip) => Ok(TcpStream::connect_timeout(*ip, timeout).await?),
        // Refused before the run (`udp://` is the `uring` engine's): never here.
        Endpoint::Udp(_) => Err(std::io::Error::other("udp:// runs on --engine uring")),
        Endpoint::Unix(_) => {
            let fd = super::sys::unix_connect(&addr.sockaddr()?)?;
            // SAFETY: a connected stream socket this function owns, handed over whole.
            Ok(unsafe { TcpStream::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(fd)) })
        }
    }
}

/// Perform what the connection's state machine asks, until it is done.
async fn drive_connection<C: ClientCodec>(ctx: Rc<AsyncCore<C>>, mut conn: Conn<C>) {
    let job = &ctx.job;
    let mut stream: Option<TcpStream> = None;
    for step in 0u64.. {
        // Some steps finish without waiting (a poll, a close): the other connections get
        // their turn now and then, whatever this one's machine asks.
        if step % 64 == 63 {
            glommio::executor().yield_now().await;
        }
        let now = Instant::now();
        ctx.publish(now);
        let want = conn.next(now, ctx.stopping(), &mut ctx.rec.borrow_mut());
        match (want, stream.as_mut()) {
            (Want::Done, _) => return,
            (Want::Connect(timeout), _) => match connect(&job.addrs[conn.target()], timeout).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    stream = Some(s);
                    conn.connected(Instant::now(), &mut ctx.rec.borrow_mut());
                }
                Err(e) => conn.connect_failed(&e, Instant::now(), &mut ctx.rec.borrow_mut()),
            },
            (Want::Sleep(until), _) => {
                glommio::timer::sleep(until.saturating_duration_since(Instant::now())).await
            }
            // glommio's reads and writes are polls before the syscall: a timed-out one has
            // consumed nothing, so nothing is lost by giving up on it.
            (Want::Write(timeout), Some(s)) => {
                let _ = s.set_write_timeout(Some(timeout));
                match s.write(conn.to_write()).await {
                    Ok(n) => conn.wrote(n, Instant::now(), &mut ctx.rec.borrow_mut()),
                    Err(e) => conn.write_failed(&e, &mut ctx.rec.borrow_mut()),
                }
            }
            (Want::Read(timeout), Some(s)) => {
                let _ = s.set_read_timeout(Some(timeout));
                let result = match conn.read_buf() {
                    Some(buf) => s.read(buf).await,
                    None => Err(std::io::Error::other("message larger than the receive limit")),
                };
                match result {
                    Ok(n) => conn.read(n, Instant::now(), &mut ctx.rec.borrow_mut()),
                    Err(e) => conn.read_failed(&e, Instant::now(), &mut ctx.rec.borrow_mut()),
                }
            }
            (Want::Poll, Some(s)) => {
                super::poll_socket(&mut conn, s.as_raw_fd(), Instant::now(), &mut ctx.rec.borrow_mut())
            }
            (Want::Close, Some(s)) => {
                let (drained, audit) = close_audit(s.as_raw_fd(), conn.socket_rx(), false);
                if job.reset_close {
                    super::sys::reset_on_close(s.as_raw_fd());
                }
                stream = None;
                conn.closed(drained, Some(audit), Instant::now(), &mut ctx.rec.borrow_mut());
            }
            (Want::Close, None) => conn.closed(0, None, Instant::now(), &mut ctx.rec.borrow_mut()),
            // Writes and reads always follow a connect; a machine asking otherwise is a bug,
            // reported as a failed read rather than a panic.
            (Want::Write(_) | Want::Read(_) | Want::Poll, None) => conn.read_failed(
                &std::io::Error::other("no connection"),
                Instant::now(),
                &mut ctx.rec.borrow_mut(),
            ),
        }
    }
}

/// Start a built-in server on `cores` (see [`super::start_server_threads`]).
pub fn start_server<S>(
    listeners: Vec<(crate::plan::Endpoint, S)>,
    cores: &[usize],
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle, EngineError>
where
    S: ServerCodec + Send + 'static,
{
    super::start_server_threads(listeners, cores, limits, stop, |start| {
        let (cpu, ready) = (start.cpu, start.ready.clone());
        match executor(cpu, "wirebench-serve") {
            Ok(ex) => ex.run(server_core(start)),
            Err(e) => {
                let _ = ready.send(Err(e));
                Ok(ServerTally { core: cpu, ..Default::default() })
            }
        }
    })
}

async fn server_core<S: ServerCodec + 'static>(start: ServerStart<S>) -> Result<ServerTally, EngineError> {
    let core = AsyncServerCore::open(&start);
    for (listener, prototype) in start.listeners {
        // SAFETY: the descriptor is a listening TCP socket we own and hand over whole.
        let listener = unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) };
        let core = core.clone();
        glommio::spawn_local(async move {
            loop {
                let Ok(stream) = listener.accept().await else {
                    glommio::timer::sleep(SERVER_POLL).await;
                    continue;
                };
                let Some(admitted) = core.admit() else {
                    glommio::spawn_local(refuse(stream, busy_answer(&prototype))).detach();
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let conn = ServerConn::new(core.codec(&prototype), core.limits, Instant::now());
                let serving = serve_connection(stream, conn, core.clone(), admitted);
                glommio::spawn_local(core.clone().guard(serving)).detach();
            }
        })
        .detach();
    }
    while !start.stop.load(Ordering::Relaxed) && !core.failed() {
        glommio::timer::sleep(SERVER_POLL).await;
    }
    // Accept loops and open connections are dropped with the executor, closing their sockets.
    core.close()
}

/// A connection over the limit: say so where the protocol can, then close (bounded).
async fn refuse(mut stream: TcpStream, answer: Vec<u8>) {
    let _ = stream.set_write_timeout(Some(REFUSE_WAIT));
    let _ = stream.write_all(&answer).await;
    linger(&mut stream).await;
}

/// Our side is over: a FIN after what was written (glommio's `close` shuts the write side),
/// then what the client still sends read and dropped until it closes too, within
/// [`LINGER`], so that our close is not a reset that drops our last words.
async fn linger(stream: &mut TcpStream) {
    let _ = stream.close().await;
    let until = Instant::now() + LINGER;
    let mut buf = vec![0u8; LINGER_BUF];
    for _ in 0..LINGER_READS {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        if !matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {
            break;
        }
    }
}

async fn serve_connection<S: ServerCodec>(
    mut stream: TcpStream,
    mut conn: ServerConn<S>,
    core: Rc<AsyncServerCore>,
    _admitted: Admitted,
) {
    let tally = &core.tally;
    let _ = stream.set_write_timeout(Some(conn.write_timeout()));
    loop {
        let timeout = conn.deadline().saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let _ = stream.set_read_timeout(Some(timeout));
        let Some(buf) = conn.read_buf() else { return };
        match stream.read(buf).await {
            Ok(0) => return,
            Ok(n) => conn.received(n, Instant::now(), super::unix_secs(), &mut tally.borrow_mut()),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                conn.deadline_passed(Instant::now(), &mut tally.borrow_mut())
            }
            Err(_) => return,
        }
        if let Some(until) = conn.hold() {
            glommio::timer::sleep(until.saturating_duration_since(Instant::now())).await;
        }
        if !conn.to_write().is_empty() {
            if let Err(e) = stream.write_all(conn.to_write()).await {
                if e.kind() == std::io::ErrorKind::TimedOut {
                    tally.borrow_mut().timeouts += 1;
                }
                return;
            }
            conn.written(Instant::now(), &mut tally.borrow_mut());
        }
        if conn.closing() {
            // A client too slow for its deadline is closed at once (it would hold its place
            // for the linger too, as tokio-uring's does not).
            if conn.timed_out() {
                let _ = stream.close().await;
                return;
            }
            return linger(&mut stream).await;
        }
    }
}
