//! The tokio-uring engine: one pinned current-thread tokio runtime with an io_uring driver per
//! core, one task per connection, driving the shared connection machine ([`Conn`]).
//!
//! tokio-uring submits every read and write as an io_uring operation on owned buffers (no
//! try-the-syscall-first path): each operation is an SQE, flushed when the runtime parks, and
//! completions wake the tasks. The owned-buffer API costs a copy in and out of the machine's
//! buffers per operation; timeouts are tokio timers around the operations.

use super::conn::{Conn, Want};
use super::serve_conn::ServerConn;
use super::sys::{ThreadClock, add_tcp_info};
use super::{ClientJob, ClientRun, EngineError, ServerTally, StartGate};
use crate::proto::{ClientCodec, ServerCodec};
use crate::stats::CoreRecorder;
use ::tokio_uring::buf::BoundedBuf;
use ::tokio_uring::net::{TcpListener, TcpStream};
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn runtime(cpu: usize) -> Result<::tokio_uring::Runtime, EngineError> {
    super::pin_current_thread(cpu)?;
    ::tokio_uring::Runtime::new(&::tokio_uring::builder())
        .map_err(|source| EngineError::Executor { cpu, source })
}

/// Run the client side of `job` with tokio-uring.
pub fn run_client<C>(job: &ClientJob, prototype: C) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    super::run_client_threads(job, prototype, client_core::<C>)
}

fn client_core<C: ClientCodec + 'static>(
    job: ClientJob,
    prototype: C,
    cpu: usize,
    index: usize,
    conns: std::ops::Range<usize>,
    gate: StartGate,
) -> Result<(CoreRecorder, Instant), EngineError> {
    let rt = runtime(cpu);
    let start = gate.wait();
    let rt = rt?;
    Ok(rt.block_on(async move {
        let clock = ThreadClock::start();
        let rec = Rc::new(RefCell::new(CoreRecorder::new(cpu)));
        let job = Rc::new(job);
        let tasks: Vec<_> = conns
            .map(|i| {
                let conn = super::new_conn(&job, &prototype, i, start);
                ::tokio_uring::spawn(drive_connection(job.clone(), rec.clone(), conn))
            })
            .collect();
        let publisher = {
            let (job, rec) = (job.clone(), rec.clone());
            ::tokio_uring::spawn(async move {
                loop {
                    tokio::time::sleep(super::PROGRESS_EVERY).await;
                    job.progress[index].store(rec.borrow().ops, Ordering::Relaxed);
                }
            })
        };
        for t in tasks {
            let _ = t.await;
        }
        publisher.abort();
        let finished = Instant::now();
        let mut rec = rec.borrow().clone();
        job.progress[index].store(rec.ops, Ordering::Relaxed);
        (rec.cpu, rec.wall) = clock.since(finished);
        (rec, finished)
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

/// Perform what the connection's state machine asks, until it is done.
async fn drive_connection<C: ClientCodec>(
    job: Rc<ClientJob>,
    rec: Rc<RefCell<CoreRecorder>>,
    mut conn: Conn<C>,
) {
    let mut stream: Option<TcpStream> = None;
    // tokio-uring owns the buffers while the kernel uses them; these travel to it and back.
    let mut wbuf: Vec<u8> = Vec::with_capacity(1024);
    let mut rbuf: Vec<u8> = Vec::with_capacity(super::RECV_BUF_INITIAL);
    loop {
        match (conn.next(Instant::now(), &job.stop), stream.as_ref()) {
            (Want::Done, _) => return,
            (Want::Connect, _) => match with_timeout(job.timeout, TcpStream::connect(job.addr)).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    stream = Some(s);
                    conn.connected(&mut rec.borrow_mut());
                }
                Err(e) => conn.connect_failed(&e, Instant::now(), &mut rec.borrow_mut()),
            },
            (Want::Sleep(until), _) => {
                tokio::time::sleep(until.saturating_duration_since(Instant::now())).await
            }
            (Want::Write, Some(s)) => {
                wbuf.clear();
                wbuf.extend_from_slice(conn.to_write());
                let write = async {
                    let (result, buf) = s.write(std::mem::take(&mut wbuf)).submit().await;
                    wbuf = buf;
                    result
                };
                match with_timeout(job.timeout, write).await {
                    Ok(n) => conn.wrote(n, &mut rec.borrow_mut()),
                    Err(e) => conn.write_failed(&e, &mut rec.borrow_mut()),
                }
            }
            (Want::Read(timeout), Some(s)) => {
                let room = conn.read_buf().map_or(0, |b| b.len());
                if room == 0 {
                    conn.read_failed(
                        &io::Error::other("message larger than the receive limit"),
                        &mut rec.borrow_mut(),
                    );
                    continue;
                }
                rbuf.clear();
                rbuf.reserve(room);
                let read = async {
                    let (result, buf) = s.read(std::mem::take(&mut rbuf).slice(..room)).await;
                    rbuf = buf.into_inner();
                    result
                };
                match with_timeout(timeout, read).await {
                    Ok(n) => {
                        if let Some(dst) = conn.read_buf() {
                            dst[..n].copy_from_slice(&rbuf[..n]);
                        }
                        conn.read(n, Instant::now(), &mut rec.borrow_mut());
                    }
                    Err(e) => {
                        // A timed-out read's buffer stays with the runtime; start afresh.
                        rbuf = Vec::with_capacity(super::RECV_BUF_INITIAL);
                        conn.read_failed(&e, &mut rec.borrow_mut());
                    }
                }
            }
            (Want::Close, Some(s)) => {
                add_tcp_info(s.as_raw_fd(), &mut rec.borrow_mut().kernel);
                stream = None;
                conn.closed(Instant::now(), &mut rec.borrow_mut());
            }
            (Want::Close, None) => conn.closed(Instant::now(), &mut rec.borrow_mut()),
            (Want::Write | Want::Read(_), None) => {
                conn.read_failed(&io::Error::other("no connection"), &mut rec.borrow_mut())
            }
        }
    }
}

/// How often a server core looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Start a built-in server on `cores` with tokio-uring (see [`super::glommio::start_server`]).
pub fn start_server<S>(
    listeners: Vec<(SocketAddr, S)>,
    cores: &[usize],
    stop: Arc<AtomicBool>,
) -> Result<super::ServerHandle, EngineError>
where
    S: ServerCodec + Send + 'static,
{
    super::start_server_threads(listeners, cores, stop, |listeners, cpu, stop, ready| {
        let rt = match runtime(cpu) {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready.send(Err(e));
                return ServerTally { core: cpu, ..Default::default() };
            }
        };
        rt.block_on(server_core(listeners, cpu, stop, ready))
    })
}

async fn server_core<S: ServerCodec + 'static>(
    listeners: Vec<(std::net::TcpListener, S)>,
    cpu: usize,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<Result<(), EngineError>>,
) -> ServerTally {
    let tally = Rc::new(RefCell::new(ServerTally { core: cpu, ..Default::default() }));
    let clock = ThreadClock::start();
    let _ = ready.send(Ok(()));
    for (listener, prototype) in listeners {
        let listener = TcpListener::from_std(listener);
        let tally = tally.clone();
        ::tokio_uring::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(STOP_POLL).await;
                    continue;
                };
                tally.borrow_mut().connections += 1;
                let _ = stream.set_nodelay(true);
                ::tokio_uring::spawn(serve_connection(stream, prototype.clone(), tally.clone()));
            }
        });
    }
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(STOP_POLL).await;
    }
    let mut t = tally.take();
    (t.cpu, t.wall) = clock.since(Instant::now());
    t
}

async fn serve_connection<S: ServerCodec>(stream: TcpStream, codec: S, tally: Rc<RefCell<ServerTally>>) {
    let mut conn = ServerConn::new(codec, Instant::now());
    // tokio-uring owns the buffers while the kernel uses them; these travel to it and back.
    let mut rbuf: Vec<u8> = Vec::with_capacity(super::RECV_BUF_INITIAL);
    let mut wbuf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let Some(room) = conn.read_buf().map(|b| b.len()) else { return };
        rbuf.clear();
        rbuf.reserve(room);
        let read = stream.read(std::mem::take(&mut rbuf).slice(..room));
        // Servers that speak unprompted (nsqd's heartbeats) stop waiting when one is due.
        let result = match conn.read_deadline() {
            Some(due) => tokio::time::timeout_at(due.into(), read).await.ok(),
            None => Some(read.await),
        };
        match result {
            // A timed-out read's buffer stays with the runtime; start afresh.
            None => {
                rbuf = Vec::with_capacity(super::RECV_BUF_INITIAL);
                conn.deadline_passed();
            }
            Some((result, buf)) => {
                rbuf = buf.into_inner();
                let n = match result {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if let Some(dst) = conn.read_buf() {
                    dst[..n].copy_from_slice(&rbuf[..n]);
                }
                conn.received(n, Instant::now(), super::unix_secs(), &mut tally.borrow_mut());
            }
        }
        if !conn.to_write().is_empty() {
            wbuf.clear();
            wbuf.extend_from_slice(conn.to_write());
            let (result, buf) = stream.write_all(std::mem::take(&mut wbuf)).await;
            wbuf = buf;
            if result.is_err() {
                return;
            }
            conn.written(&mut tally.borrow_mut());
        }
        if conn.closing() {
            let _ = stream.shutdown(std::net::Shutdown::Write);
            return;
        }
    }
}
