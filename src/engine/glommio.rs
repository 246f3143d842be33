//! The glommio engine: one pinned `LocalExecutor` per core, one task per connection.
//!
//! glommio's sockets try the syscall first (`send`/`recv` straight away) and fall back to an
//! io_uring poll when the socket is not ready, so a request/response costs one `send` and one
//! or two `recv`s plus a shared `io_uring_enter` per loop of the executor. Byte counts are taken
//! from the return values of those reads and writes.

use super::sys::{add_tcp_info, thread_cpu_time};
use super::{ClientJob, ClientRun, EngineError, RecvBuf, ServerTally};
use crate::proto::{ClientCodec, Decoded, ErrorClass, Outcome, ServerCodec};
use crate::stats::{CoreRecorder, Traffic};
use crate::workload::{Budget, Pacer, split_ops};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

/// glommio registers this much memory with io_uring for file I/O, which we never do; the
/// minimum keeps locked memory (`ulimit -l`, 8 MiB by default) free for many threads.
const IO_MEMORY: usize = 64 * 1024;
/// Locked memory one executor needs: its registered buffer in three rings, and glommio's own
/// check that the limit is at least 512 KiB.
pub const LOCKED_MEMORY_PER_THREAD: u64 = 3 * IO_MEMORY as u64;
pub const LOCKED_MEMORY_MIN: u64 = 512 * 1024;
/// Pause after a failed connect or a failed connection before trying again, so that a dead
/// server costs a bounded number of attempts per second.
const RETRY_PAUSE: Duration = Duration::from_millis(20);
/// How often each core publishes its operation count for the progress line.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

fn executor(cpu: usize, name: &str) -> Result<glommio::LocalExecutor, EngineError> {
    LocalExecutorBuilder::new(Placement::Fixed(cpu))
        .io_memory(IO_MEMORY)
        .name(name)
        .make()
        .map_err(|e| EngineError::Executor { cpu, source: std::io::Error::other(e.to_string()) })
}

/// What every connection task of one core shares (single-threaded, hence `Rc`).
struct CoreCtx<C> {
    job: ClientJob,
    prototype: C,
    rec: RefCell<CoreRecorder>,
}

/// Run the client side of `job` with one codec clone per connection; returns each core's
/// recorder and the instant its last connection finished.
pub fn run_client<C>(job: &ClientJob, prototype: C) -> Result<ClientRun, EngineError>
where
    C: ClientCodec + Send + 'static,
{
    let start = Arc::new(OnceLock::<Instant>::new());
    let barrier = Arc::new(Barrier::new(job.cores.len()));
    let cores = job.cores.len();
    let mut threads = Vec::new();
    let mut first_conn = 0;
    for (index, &cpu) in job.cores.iter().enumerate() {
        let conns = split_ops(job.connections as u64, cores, index) as usize;
        let conn_range = first_conn..first_conn + conns;
        first_conn += conns;
        let (job, prototype, start, barrier) =
            (job.clone(), prototype.clone(), start.clone(), barrier.clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-client-{cpu}"))
            .spawn(move || -> Result<(CoreRecorder, Instant), EngineError> {
                let ex = executor(cpu, "wirebench-client");
                barrier.wait();
                let ex = ex?;
                let start = *start.get_or_init(Instant::now);
                Ok(ex.run(client_core(job, prototype, cpu, index, conn_range, start)))
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    let ends: Vec<(CoreRecorder, Instant)> = threads
        .into_iter()
        .map(|(cpu, h)| h.join().map_err(|_| EngineError::Panicked { cpu })?)
        .collect::<Result<_, _>>()?;
    let start = *start.get_or_init(Instant::now);
    let finished = ends.iter().map(|(_, end)| *end).max().unwrap_or(start);
    Ok(ClientRun {
        measure_from: start + job.warmup,
        finished,
        cores: ends.into_iter().map(|(rec, _)| rec).collect(),
    })
}

async fn client_core<C: ClientCodec + 'static>(
    job: ClientJob,
    prototype: C,
    cpu: usize,
    index: usize,
    conns: std::ops::Range<usize>,
    start: Instant,
) -> (CoreRecorder, Instant) {
    let cpu_before = thread_cpu_time();
    let wall_before = Instant::now();
    let measure_from = start + job.warmup;
    let deadline = measure_from + job.duration;
    let ctx = Rc::new(CoreCtx { job, prototype, rec: RefCell::new(CoreRecorder::new(cpu)) });
    let tasks: Vec<_> = conns
        .map(|i| {
            let ops = ctx.job.ops.map(|n| split_ops(n, ctx.job.connections, i));
            let budget = Budget { ops, deadline, measure_from };
            glommio::spawn_local(drive_connection(ctx.clone(), budget)).detach()
        })
        .collect();
    let publisher = {
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            loop {
                glommio::timer::sleep(PROGRESS_EVERY).await;
                ctx.job.progress[index].store(ctx.rec.borrow().ops, Ordering::Relaxed);
            }
        })
        .detach()
    };
    for t in tasks {
        t.await;
    }
    publisher.cancel();
    let finished = Instant::now();
    let mut rec = ctx.rec.borrow().clone();
    ctx.job.progress[index].store(rec.ops, Ordering::Relaxed);
    rec.cpu = thread_cpu_time().saturating_sub(cpu_before);
    rec.wall = finished - wall_before;
    (rec, finished)
}

/// An operation sent and not yet answered.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    intended: Instant,
    traffic: Traffic,
}

/// How a connection's session ended.
enum End {
    /// No more work for this connection.
    Done,
    /// The server closed (or asked to): open a new connection if work remains.
    Reconnect,
    /// Counted under `class`, with a message for the summary.
    Failed(ErrorClass, String),
}

/// One connection's state that survives reconnects.
struct Conn<C> {
    codec: C,
    pacer: Pacer,
    budget: Budget,
    recv: RecvBuf,
    send: Vec<u8>,
    control: Vec<u8>,
    inflight: VecDeque<InFlight>,
    /// Measured operations sent so far (against `budget.ops`).
    sent: u64,
}

impl<C> Conn<C> {
    /// No new operation may be sent (deadline, quota or Ctrl-C).
    fn stopped(&self, now: Instant, stop: &AtomicBool) -> bool {
        now >= self.budget.deadline
            || self.budget.ops.is_some_and(|n| self.sent >= n)
            || stop.load(Ordering::Relaxed)
    }
}

async fn drive_connection<C: ClientCodec>(ctx: Rc<CoreCtx<C>>, budget: Budget) {
    let job = &ctx.job;
    let mut conn = Conn {
        codec: ctx.prototype.clone(),
        pacer: job.workload.pacer(),
        budget,
        recv: RecvBuf::new(),
        send: Vec::with_capacity(1024),
        control: Vec::new(),
        inflight: VecDeque::with_capacity(job.depth),
        sent: 0,
    };
    if budget.ops == Some(0) {
        return;
    }
    loop {
        if conn.stopped(Instant::now(), &job.stop) {
            return;
        }
        let stream = match TcpStream::connect_timeout(job.addr, job.timeout).await {
            Ok(s) => s,
            Err(e) => {
                ctx.rec.borrow_mut().error(ErrorClass::Connect, || io_text(&e.into()));
                glommio::timer::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        ctx.rec.borrow_mut().connects += 1;
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(job.timeout));
        let _ = stream.set_write_timeout(Some(job.timeout));
        let mut stream = stream;
        let end = session(&ctx, &mut stream, &mut conn).await;
        {
            let mut rec = ctx.rec.borrow_mut();
            add_tcp_info(stream.as_raw_fd(), &mut rec.kernel);
            rec.rx.add(Traffic::Control, conn.recv.reset() as u64);
        }
        conn.inflight.clear();
        conn.codec = ctx.prototype.clone();
        drop(stream);
        match end {
            End::Done => return,
            End::Reconnect => ctx.rec.borrow_mut().reconnects += 1,
            End::Failed(class, message) => {
                ctx.rec.borrow_mut().error(class, || message);
                glommio::timer::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset by the server".into(),
        std::io::ErrorKind::TimedOut => "timed out".into(),
        std::io::ErrorKind::BrokenPipe => "broken pipe (the server closed)".into(),
        _ => e.to_string(),
    }
}

/// Write all of `buf`, counting each write's bytes as `traffic`.
async fn write_counted(
    stream: &mut TcpStream,
    buf: &[u8],
    traffic: Traffic,
    rec: &RefCell<CoreRecorder>,
) -> Result<(), End> {
    let mut off = 0;
    while off < buf.len() {
        match stream.write(&buf[off..]).await {
            Ok(0) => return Err(End::Failed(ErrorClass::Write, "wrote 0 bytes".into())),
            Ok(n) => {
                rec.borrow_mut().tx.add(traffic, n as u64);
                off += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(End::Failed(ErrorClass::Timeout, "write timed out".into()));
            }
            Err(e) => return Err(End::Failed(ErrorClass::Write, io_text(&e))),
        }
    }
    Ok(())
}

/// Read once into the receive buffer. `Ok(0)` is end of stream.
async fn read_some(stream: &mut TcpStream, recv: &mut RecvBuf) -> Result<usize, End> {
    let Some(spare) = recv.spare() else {
        return Err(End::Failed(ErrorClass::Protocol, "message larger than the receive limit".into()));
    };
    match stream.read(spare).await {
        Ok(n) => {
            recv.filled(n);
            Ok(n)
        }
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            Err(End::Failed(ErrorClass::Timeout, "no response within the timeout".into()))
        }
        Err(e) => Err(End::Failed(ErrorClass::Read, io_text(&e))),
    }
}

async fn session<C: ClientCodec>(ctx: &CoreCtx<C>, stream: &mut TcpStream, conn: &mut Conn<C>) -> End {
    match exchange(ctx, stream, conn).await {
        Ok(end) | Err(end) => end,
    }
}

async fn exchange<C: ClientCodec>(
    ctx: &CoreCtx<C>,
    stream: &mut TcpStream,
    conn: &mut Conn<C>,
) -> Result<End, End> {
    let job = &ctx.job;
    let rec = &ctx.rec;
    // Per-connection set-up.
    conn.send.clear();
    conn.codec.handshake(&mut conn.send);
    if !conn.send.is_empty() {
        write_counted(stream, &conn.send, Traffic::Handshake, rec).await?;
        loop {
            match conn.codec.decode_handshake(conn.recv.data()) {
                Ok(Decoded::Partial) => {}
                Ok(Decoded::Done { consumed, .. }) => {
                    rec.borrow_mut().rx.add(Traffic::Handshake, consumed as u64);
                    conn.recv.consume(consumed);
                    break;
                }
                Err(e) => return Err(End::Failed(ErrorClass::Protocol, format!("handshake: {e}"))),
            }
            if read_some(stream, &mut conn.recv).await? == 0 {
                return Err(End::Failed(ErrorClass::Read, "server closed during the handshake".into()));
            }
        }
    }
    loop {
        // Send what the workload allows: fill free slots, one write per batch. A batch holds
        // operations of one traffic class only (warm-up or measured), so each write's bytes
        // belong to exactly one class.
        conn.send.clear();
        let mut batch_traffic = None;
        loop {
            let now = Instant::now();
            if conn.inflight.len() >= job.depth || conn.stopped(now, &job.stop) {
                break;
            }
            let intended = conn.pacer.next_due(now);
            if intended > now {
                break; // paced workloads: not yet due
            }
            let traffic = if intended < conn.budget.measure_from { Traffic::WarmupOp } else { Traffic::Op };
            if batch_traffic.is_some_and(|t| t != traffic) {
                break;
            }
            batch_traffic = Some(traffic);
            conn.codec.encode_op(&mut conn.send);
            conn.inflight.push_back(InFlight { intended, traffic });
            if traffic == Traffic::Op {
                conn.sent += 1;
            }
        }
        if let Some(traffic) = batch_traffic
            && let Err(end) = write_counted(stream, &conn.send, traffic, rec).await
        {
            return Err(salvage(ctx, stream, conn, end).await);
        }
        if conn.inflight.is_empty() {
            if conn.stopped(Instant::now(), &job.stop) {
                goodbye(ctx, stream, conn).await;
                return Ok(End::Done);
            }
            if let Some(wait) = conn.pacer.idle_wait() {
                glommio::timer::sleep(wait).await;
            }
            continue;
        }
        // Receive and decode every whole message.
        let n = read_some(stream, &mut conn.recv).await?;
        let now = Instant::now();
        if n == 0 {
            let decoded = conn.codec.decode_eof(conn.recv.data());
            return match decoded {
                Ok(Decoded::Done { consumed, outcome }) => {
                    complete(ctx, conn, consumed, outcome, now)?;
                    Ok(End::Reconnect)
                }
                Ok(Decoded::Partial) if conn.inflight.is_empty() => Ok(End::Reconnect),
                Ok(Decoded::Partial) => Err(End::Failed(
                    ErrorClass::Read,
                    "server closed the connection with operations in flight".into(),
                )),
                Err(e) => Err(End::Failed(ErrorClass::Protocol, e.to_string())),
            };
        }
        conn.control.clear();
        loop {
            match conn.codec.decode_op(conn.recv.data(), &mut conn.control) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed, outcome }) => {
                    complete(ctx, conn, consumed, outcome, now)?;
                    if conn.codec.peer_closing() {
                        break;
                    }
                }
                Err(e) => return Err(End::Failed(ErrorClass::Protocol, e.to_string())),
            }
        }
        // Replies the codec asked for (pong, NOP, the answer to a WebSocket close).
        if !conn.control.is_empty() {
            write_counted(stream, &conn.control, Traffic::Control, rec).await?;
        }
        if conn.codec.peer_closing() {
            return Ok(End::Reconnect);
        }
    }
}

/// How long a connection waits for the server's answer to its goodbye, and how many reads.
const GOODBYE_WAIT: Duration = Duration::from_secs(1);
const GOODBYE_READS: usize = 16;

/// The run is over for this connection: say goodbye if the protocol has one (WebSocket Close
/// 1000) and wait, bounded, for the server's answer. Best effort: nothing here is an error.
async fn goodbye<C: ClientCodec>(ctx: &CoreCtx<C>, stream: &mut TcpStream, conn: &mut Conn<C>) {
    conn.send.clear();
    if !conn.codec.goodbye(&mut conn.send)
        || write_counted(stream, &conn.send, Traffic::Control, &ctx.rec).await.is_err()
    {
        return;
    }
    let _ = stream.set_read_timeout(Some(GOODBYE_WAIT));
    for _ in 0..GOODBYE_READS {
        while let Ok(Decoded::Done { consumed, .. }) =
            conn.codec.decode_op(conn.recv.data(), &mut conn.control)
        {
            conn.recv.consume(consumed);
            ctx.rec.borrow_mut().rx.add(Traffic::Control, consumed as u64);
            if conn.codec.peer_closing() {
                return;
            }
        }
        if !matches!(read_some(stream, &mut conn.recv).await, Ok(n) if n > 0) {
            return;
        }
    }
}

/// How long a failed write waits for the server's last words.
const SALVAGE_WAIT: Duration = Duration::from_millis(100);

/// A write failed because the server closed: it often said why first (an NSQ `E_BAD_MESSAGE`
/// frame, an HTTP 413). Read what is already there, briefly, and count those answers; only if
/// there are none is the failure a plain write error.
async fn salvage<C: ClientCodec>(
    ctx: &CoreCtx<C>,
    stream: &mut TcpStream,
    conn: &mut Conn<C>,
    end: End,
) -> End {
    if !matches!(end, End::Failed(ErrorClass::Write, _)) {
        return end;
    }
    let _ = stream.set_read_timeout(Some(SALVAGE_WAIT));
    if !matches!(read_some(stream, &mut conn.recv).await, Ok(n) if n > 0) {
        return end;
    }
    let now = Instant::now();
    let mut answered = false;
    conn.control.clear();
    while let Ok(Decoded::Done { consumed, outcome }) =
        conn.codec.decode_op(conn.recv.data(), &mut conn.control)
    {
        if complete(ctx, conn, consumed, outcome, now).is_err() {
            break;
        }
        answered = true;
    }
    if answered { End::Reconnect } else { end }
}

/// Account one whole message from the server.
fn complete<C>(
    ctx: &CoreCtx<C>,
    conn: &mut Conn<C>,
    consumed: usize,
    outcome: Outcome,
    now: Instant,
) -> Result<(), End> {
    let mut rec = ctx.rec.borrow_mut();
    conn.recv.consume(consumed);
    if outcome == Outcome::Control {
        rec.rx.add(Traffic::Control, consumed as u64);
        return Ok(());
    }
    if outcome == Outcome::OpPart {
        let Some(op) = conn.inflight.front() else {
            rec.rx.add(Traffic::Control, consumed as u64);
            return Err(End::Failed(ErrorClass::Protocol, "response with no request in flight".into()));
        };
        rec.rx.add(op.traffic, consumed as u64);
        return Ok(());
    }
    let Some(op) = conn.inflight.pop_front() else {
        rec.rx.add(Traffic::Control, consumed as u64);
        return Err(End::Failed(ErrorClass::Protocol, "response with no request in flight".into()));
    };
    rec.rx.add(op.traffic, consumed as u64);
    if op.traffic != Traffic::Op {
        return Ok(());
    }
    match outcome {
        Outcome::OpFailed(failure) => rec.failure(failure),
        _ => {
            rec.ops += 1;
            rec.record_latency(now.saturating_duration_since(op.intended).as_nanos() as u64);
        }
    }
    Ok(())
}

/// A running built-in server: its addresses, and how to stop it and collect its tally.
pub struct ServerHandle {
    /// One per listener, in the order given.
    pub addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    threads: Vec<(usize, std::thread::JoinHandle<ServerTally>)>,
}

impl ServerHandle {
    /// The first listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }
    /// Stop and wait for every core; returns their tallies.
    pub fn stop(self) -> Result<Vec<ServerTally>, EngineError> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().map(|(cpu, h)| h.join().map_err(|_| EngineError::Panicked { cpu })).collect()
    }
}

/// How often a server core looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Start a built-in server on `cores`: on each core, one `SO_REUSEPORT` listener per entry of
/// `listeners`, answered by a clone of its codec (port 0 picks one free port, the same on every
/// core). Returns once every core is listening.
pub fn start_server<S>(
    listeners: Vec<(SocketAddr, S)>,
    cores: &[usize],
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle, EngineError>
where
    S: ServerCodec + Send + 'static,
{
    // Reserve each port first so every core binds the same one: a bound, non-listening socket
    // in the same SO_REUSEPORT group receives no connections.
    let mut reserved = Vec::new();
    let mut bound = Vec::new();
    for (listen, codec) in listeners {
        let reserve = socket2::Socket::new(socket2::Domain::for_address(listen), socket2::Type::STREAM, None)
            .and_then(|s| {
                s.set_reuse_port(true)?;
                s.bind(&listen.into())?;
                Ok(s)
            })
            .map_err(|source| EngineError::Listen { addr: listen, source })?;
        let addr = reserve.local_addr().ok().and_then(|a| a.as_socket()).ok_or_else(|| {
            EngineError::Listen { addr: listen, source: std::io::Error::other("no local address") }
        })?;
        reserved.push(reserve);
        bound.push((addr, codec));
    }
    let addrs: Vec<SocketAddr> = bound.iter().map(|(a, _)| *a).collect();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), EngineError>>();
    let mut threads = Vec::new();
    for &cpu in cores {
        let (listeners, stop, ready) = (bound.clone(), stop.clone(), ready_tx.clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-serve-{cpu}"))
            .spawn(move || match executor(cpu, "wirebench-serve") {
                Ok(ex) => ex.run(server_core(listeners, cpu, stop, ready)),
                Err(e) => {
                    let _ = ready.send(Err(e));
                    ServerTally { core: cpu, ..Default::default() }
                }
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    drop(ready_tx);
    let handle = ServerHandle { addrs, stop: stop.clone(), threads };
    for _ in cores {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = handle.stop();
                return Err(e);
            }
            Err(_) => break,
        }
    }
    drop(reserved);
    Ok(handle)
}

async fn server_core<S: ServerCodec + 'static>(
    listeners: Vec<(SocketAddr, S)>,
    cpu: usize,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<Result<(), EngineError>>,
) -> ServerTally {
    let tally = Rc::new(RefCell::new(ServerTally { core: cpu, ..Default::default() }));
    let mut bound = Vec::new();
    for (addr, codec) in listeners {
        match TcpListener::bind(addr) {
            Ok(l) => bound.push((l, codec)),
            Err(e) => {
                let source = std::io::Error::other(e.to_string());
                let _ = ready.send(Err(EngineError::Listen { addr, source }));
                return tally.take();
            }
        }
    }
    let _ = ready.send(Ok(()));
    for (listener, prototype) in bound {
        let tally = tally.clone();
        glommio::spawn_local(async move {
            loop {
                let Ok(stream) = listener.accept().await else {
                    // Out of file descriptors and the like: back off instead of spinning.
                    glommio::timer::sleep(STOP_POLL).await;
                    continue;
                };
                tally.borrow_mut().connections += 1;
                let _ = stream.set_nodelay(true);
                glommio::spawn_local(serve_connection(stream, prototype.clone(), tally.clone())).detach();
            }
        })
        .detach();
    }
    while !stop.load(Ordering::Relaxed) {
        glommio::timer::sleep(STOP_POLL).await;
    }
    // Accept loops and open connections are dropped with the executor, closing their sockets.
    tally.take()
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

async fn serve_connection<S: ServerCodec>(
    mut stream: TcpStream,
    mut codec: S,
    tally: Rc<RefCell<ServerTally>>,
) {
    let mut recv = RecvBuf::new();
    let mut out = Vec::with_capacity(4096);
    // Servers that speak unprompted (nsqd's heartbeats) wake on a read timeout when one is due.
    let mut interval = codec.heartbeat_interval();
    let mut next_beat = interval.map(|i| Instant::now() + i);
    loop {
        if let Some(due) = next_beat {
            let _ = stream.set_read_timeout(Some(
                due.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)),
            ));
        }
        let Some(spare) = recv.spare() else { return };
        let n = match stream.read(spare).await {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut && next_beat.is_some() => {
                if !codec.heartbeat(&mut out) {
                    return;
                }
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                tally.borrow_mut().tx += out.len() as u64;
                out.clear();
                next_beat = next_beat.zip(interval).map(|(due, i)| due + i);
                continue;
            }
            Err(_) => return,
        };
        recv.filled(n);
        codec.set_unix_time(unix_secs());
        let served = codec.serve(recv.data(), &mut out);
        recv.consume(served.consumed);
        {
            let mut t = tally.borrow_mut();
            t.rx += n as u64;
            t.requests += served.requests;
            t.messages += served.messages;
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            tally.borrow_mut().tx += out.len() as u64;
            out.clear();
        }
        if served.close {
            let _ = stream.close().await;
            return;
        }
        // A busy connection never waits long enough for the read timeout: beat on schedule
        // anyway, as nsqd's ticker does.
        if next_beat.is_some_and(|due| Instant::now() >= due) {
            if !codec.heartbeat(&mut out) || stream.write_all(&out).await.is_err() {
                return;
            }
            tally.borrow_mut().tx += out.len() as u64;
            out.clear();
            next_beat = next_beat.zip(interval).map(|(due, i)| due + i);
        }
        // IDENTIFY may change or disable the heartbeat; nsqd restarts its ticker then.
        let now_interval = codec.heartbeat_interval();
        if now_interval != interval {
            interval = now_interval;
            next_beat = interval.map(|i| Instant::now() + i);
            if interval.is_none() {
                let _ = stream.set_read_timeout(None);
            }
        }
    }
}
