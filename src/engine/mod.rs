//! I/O drivers: sockets, buffers, pinning, time. One file per driver.
//!
//! An engine runs one thread per core, pinned, each owning its share of the connections and its
//! own [`CoreRecorder`](crate::stats::CoreRecorder). It does not know which protocol it carries:
//! it moves bytes between sockets and a [`ClientCodec`](crate::proto::ClientCodec) or
//! [`ServerCodec`](crate::proto::ServerCodec), and counts every byte where the syscall returned
//! it. The command layer picks protocol × engine with one `match`; the loops below are generic.

pub mod bufring;
pub mod conn;
pub mod deadlines;
pub mod glommio;
pub mod listen;
pub mod quic;
pub mod quic_io;
pub mod rings;
pub mod serve_conn;
pub mod sys;
pub mod tokio_uring;
pub mod udp;
pub mod udp_server;
pub mod uring;
pub mod uring_server;

use crate::plan::{ClientJob, Endpoint, EngineKind};
use crate::stats::ServerTally;
pub use listen::unclaimed;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

/// Raise the process limits `engine` needs for `sockets` sockets on `threads` threads
/// (open files; locked memory for glommio's registered buffers: io_uring's own rings are
/// charged to the memory cgroup on the kernels these engines need), or say how. `bind`:
/// the sockets bind source addresses (`--bind`).
///
/// The `uring` engine's sockets are direct descriptors where the kernel has them
/// ([`rings`]): they need no room in the process's descriptor table, however many, and
/// the limit is only raised as far as it goes (each ring's table is that large).
pub fn ensure_limits(
    engine: EngineKind,
    sockets: u64,
    threads: usize,
    bind: bool,
) -> Result<(), sys::LimitError> {
    if engine == EngineKind::Uring && uring::direct_sockets(bind) {
        sys::raise_file_limit();
    } else {
        sys::ensure_file_limit(sockets)?;
    }
    if engine == EngineKind::Glommio {
        let per_thread = glommio::LOCKED_MEMORY_PER_THREAD * threads as u64;
        sys::ensure_locked_memory(per_thread + glommio::LOCKED_MEMORY_MIN)?;
    }
    Ok(())
}

/// Run the client side of `job` on `engine`: the one place a protocol's codec meets an
/// engine; everything below is generic over the codec (no `dyn` in the hot loop).
/// `codecs`: one per target of `job.addrs`, in the same order.
pub fn run_client<C>(engine: EngineKind, job: &ClientJob, codecs: Vec<C>) -> Result<ClientRun, EngineError>
where
    C: crate::proto::ClientCodec + Send + 'static,
{
    match engine {
        EngineKind::Glommio => glommio::run_client(job, codecs),
        EngineKind::TokioUring => tokio_uring::run_client(job, codecs),
        EngineKind::Uring => uring::run_client(job, codecs),
    }
}

/// Start built-in servers on `engine`.
pub fn start_server<S>(
    engine: EngineKind,
    listeners: Vec<(Endpoint, S)>,
    cores: &[usize],
    limits: serve_conn::ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle, EngineError>
where
    S: crate::proto::ServerCodec + Send + 'static,
{
    // The async runtimes' accepts want an IP peer address (tokio-uring drops a connection
    // without one): their servers listen on TCP alone.
    if engine != EngineKind::Uring
        && let Some((addr, _)) = listeners.iter().find(|(addr, _)| addr.is_unix())
    {
        let why =
            format!("--engine {} serves TCP only: a Unix socket is served by --engine uring", engine.name());
        return Err(EngineError::Listen { addr: addr.clone(), source: std::io::Error::other(why) });
    }
    match engine {
        EngineKind::Glommio => glommio::start_server(listeners, cores, limits, stop),
        EngineKind::TokioUring => tokio_uring::start_server(listeners, cores, limits, stop),
        EngineKind::Uring => uring_server::start_server(listeners, cores, limits, stop),
    }
}

/// What the engine threads of one client run recorded.
#[derive(Debug)]
pub struct ClientRun {
    /// Start of the measured window (every connection set up, plus warm-up).
    pub measure_from: crate::clock::Instant,
    /// How long after the start every connection was set up (`None`: not waited for).
    pub set_up_in: Option<Duration>,
    /// When the last connection of the last core finished.
    pub finished: crate::clock::Instant,
    pub cores: Vec<crate::stats::CoreRecorder>,
    /// The machine's network drops and retransmits over the run.
    pub net: Option<crate::stats::NetCounters>,
}

impl ClientRun {
    /// The run's report over its measured window: from its opening (plus warm-up) to the end
    /// of the last measured operation (when the last socket closed, if none ended).
    pub fn report(self) -> crate::stats::Report {
        let end = self.cores.iter().filter_map(|c| c.last_end).max().unwrap_or(self.finished);
        let elapsed = end.saturating_duration_since(self.measure_from);
        let mut report = crate::stats::Report::merge(self.cores, elapsed);
        report.set_up_in = self.set_up_in;
        report.net = self.net;
        report
    }
}

/// How often each core publishes its operation count for the progress line.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// How often, at most, a core reads its CPU clock while operations keep ending (a syscall):
/// the measured window's CPU is known to this much.
const WINDOW_CPU_EVERY: Duration = Duration::from_millis(5);

/// How often, at most, a core reads the machine's network counters while operations keep
/// ending (two small files of `/proc`): the window's drops are known to this much.
const WINDOW_NET_EVERY: Duration = Duration::from_millis(100);

/// A reading of a thread's CPU clock, when it was taken, and the operations done by then;
/// the machine's network counters, read less often.
#[derive(Debug, Clone, Copy)]
struct CpuReading {
    cpu: Duration,
    at: crate::clock::Instant,
    ops: u64,
    net: Option<(crate::stats::NetCounters, crate::clock::Instant)>,
}

/// What every engine core keeps besides its connections, whatever drives them: its CPU clock,
/// its operation count published for the progress line a few times a second (no task or
/// timer of its own: the core publishes as it goes), and its closing of the books.
///
/// Its CPU and wall time are the measured window's: from the window's opening (plus warm-up)
/// to the last operation that ended, read as the core goes. Setting up a million connections
/// takes the better part of a minute and closing them half a minute, and neither is the
/// work the window measures; a core that saw no window keeps its whole life's figures.
pub struct CoreBooks {
    clock: sys::ThreadClock,
    /// The CPU's steal time when the books opened.
    steal: Option<Duration>,
    slots: Arc<[AtomicU64]>,
    /// `--metrics-listen`: where the core's figures are copied now and then.
    live: Option<crate::stats::live::Live>,
    index: usize,
    next: std::cell::Cell<crate::clock::Instant>,
    window: Arc<crate::workload::Window>,
    warmup: Duration,
    /// The CPU clock when the window opened, and at the latest operation ended after it.
    opened: std::cell::Cell<Option<CpuReading>>,
    latest: std::cell::Cell<Option<CpuReading>>,
}

impl CoreBooks {
    pub fn open(job: &ClientJob, cpu: usize, index: usize) -> CoreBooks {
        let clock = sys::ThreadClock::start();
        let steal = sys::cpu_steal(cpu);
        let next = std::cell::Cell::new(crate::clock::Instant::now() + PROGRESS_EVERY);
        CoreBooks {
            clock,
            steal,
            slots: job.progress.clone(),
            live: job.live.clone(),
            index,
            next,
            window: job.window.clone(),
            warmup: job.shape.warmup,
            opened: std::cell::Cell::new(None),
            latest: std::cell::Cell::new(None),
        }
    }

    /// Publish the core's count (and, for `--metrics-listen`, a copy of its figures) if the
    /// last publication is old enough, and read the CPU clock at the window's opening and as
    /// operations end; cheap enough to call per operation.
    pub fn publish(&self, now: crate::clock::Instant, rec: &mut crate::stats::CoreRecorder) {
        let ops = rec.ops;
        if now >= self.next.get() {
            self.next.set(now + PROGRESS_EVERY);
            self.slots[self.index].store(ops, std::sync::atomic::Ordering::Relaxed);
            self.copy_live(rec, now);
        }
        match self.latest.get() {
            None => {
                if self.window.opened_at().is_some_and(|at| now >= at + self.warmup) {
                    let net = sys::read_net_counters().map(|n| (n, now));
                    let reading = Some(CpuReading { cpu: sys::thread_cpu_time(), at: now, ops, net });
                    self.opened.set(reading);
                    self.latest.set(reading);
                }
            }
            Some(last) if ops != last.ops && now >= last.at + WINDOW_CPU_EVERY => {
                let net = match last.net {
                    Some((_, at)) if now < at + WINDOW_NET_EVERY => last.net,
                    _ => sys::read_net_counters().map(|n| (n, now)).or(last.net),
                };
                self.latest.set(Some(CpuReading { cpu: sys::thread_cpu_time(), at: now, ops, net }));
            }
            Some(_) => {}
        }
    }

    /// The core's figures, copied for `--metrics-listen` (nothing without it).
    fn copy_live(&self, rec: &mut crate::stats::CoreRecorder, now: crate::clock::Instant) {
        if let Some(slot) = self.live.as_ref().and_then(|live| live.get(self.index)) {
            rec.live_epoch = rec.live_epoch.wrapping_add(1);
            let copy = crate::stats::live::LiveCore::of(rec, sys::thread_cpu_time(), now);
            *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(copy);
        }
    }

    /// The core's work is over: its final count, and its CPU and wall time over the window.
    pub fn close(
        &self,
        mut rec: crate::stats::CoreRecorder,
    ) -> (crate::stats::CoreRecorder, crate::clock::Instant) {
        let finished = crate::clock::Instant::now();
        self.slots[self.index].store(rec.ops, std::sync::atomic::Ordering::Relaxed);
        self.copy_live(&mut rec, finished);
        (rec.cpu, rec.wall) = match (self.opened.get(), self.latest.get()) {
            (Some(a), Some(b)) if b.ops > a.ops => {
                (b.cpu.saturating_sub(a.cpu), b.at.saturating_duration_since(a.at))
            }
            _ => self.clock.since(finished),
        };
        if let (Some(a), Some(b)) = (self.opened.get(), self.latest.get()) {
            rec.window_net = a.net.zip(b.net).map(|((a, _), (b, _))| (a, b));
        }
        rec.steal = self.steal.zip(sys::cpu_steal(rec.core)).map(|(a, b)| b.saturating_sub(a));
        (rec, finished)
    }
}

/// What the connection tasks of one core of an async engine share (single-threaded, hence
/// `RefCell` behind an `Rc`).
pub struct AsyncCore<C> {
    pub job: ClientJob,
    /// One codec per target (each connection holds a reference to its own).
    pub prototypes: Vec<std::rc::Rc<C>>,
    pub rec: std::cell::RefCell<crate::stats::CoreRecorder>,
    books: CoreBooks,
}

impl<C: crate::proto::ClientCodec> AsyncCore<C> {
    pub fn new(job: ClientJob, prototypes: Vec<C>, cpu: usize, index: usize) -> std::rc::Rc<Self> {
        let books = CoreBooks::open(&job, cpu, index);
        let rec = std::cell::RefCell::new(job.recorder(cpu));
        let prototypes = prototypes.into_iter().map(std::rc::Rc::new).collect();
        std::rc::Rc::new(AsyncCore { job, prototypes, rec, books })
    }

    /// Publish the core's count for the progress line (now and then).
    pub fn publish(&self, now: crate::clock::Instant) {
        self.books.publish(now, &mut self.rec.borrow_mut());
    }

    /// The state machine of connection `index` of the job.
    pub fn conn(&self, index: usize, start: crate::clock::Instant) -> conn::Conn<C> {
        new_conn(&self.job, &self.prototypes, index, start)
    }

    /// Whether Ctrl-C asked connections to stop.
    pub fn stopping(&self) -> bool {
        self.job.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn close(&self) -> (crate::stats::CoreRecorder, crate::clock::Instant) {
        self.books.close(self.rec.borrow().clone())
    }
}

/// Lines the engine threads of a run up so their clocks start together: every thread calls
/// [`wait`](Self::wait) exactly once, after building its runtime, even if that failed.
pub struct StartGate {
    barrier: Arc<std::sync::Barrier>,
    start: Arc<std::sync::OnceLock<crate::clock::Instant>>,
    window: Arc<crate::workload::Window>,
}

impl StartGate {
    /// Wait for every core; returns the run's common start instant. A window with nothing
    /// to wait for (a connection per operation) opens here, on every engine alike.
    pub fn wait(self) -> crate::clock::Instant {
        self.barrier.wait();
        let start = *self.start.get_or_init(crate::clock::Instant::now);
        self.window.opened(start, start);
        start
    }
}

/// The per-core body of a client run: (job, codec, cpu, core index, connection indices, gate).
pub type CoreFn<C> =
    fn(CoreStart, Vec<C>) -> Result<(crate::stats::CoreRecorder, crate::clock::Instant), EngineError>;

/// What one engine thread of a client run is given: the job, its CPU, its index among the
/// cores, its share of the connections, and the gate that starts every core together.
pub struct CoreStart {
    pub job: ClientJob,
    pub cpu: usize,
    pub index: usize,
    pub conns: std::ops::Range<usize>,
    pub gate: StartGate,
}

/// Spawn one thread per core of `job`, each running `core` on its share of the connections;
/// join them and assemble the run. Shared by every engine.
pub fn run_client_threads<C>(
    job: &ClientJob,
    prototypes: Vec<C>,
    core: CoreFn<C>,
) -> Result<ClientRun, EngineError>
where
    C: Clone + Send + 'static,
{
    let start = Arc::new(std::sync::OnceLock::new());
    let job = &ClientJob { window: ClientJob::fresh_window(&job.shape, job.cores.len()), ..job.clone() };
    let net = sys::read_net_counters();
    let barrier = Arc::new(std::sync::Barrier::new(job.cores.len()));
    let cores = job.cores.len();
    let mut threads = Vec::new();
    let mut first_conn = 0;
    for (index, &cpu) in job.cores.iter().enumerate() {
        let conns = crate::workload::split_ops(job.shape.connections as u64, cores, index) as usize;
        let range = first_conn..first_conn + conns;
        first_conn += conns;
        let gate = StartGate { barrier: barrier.clone(), start: start.clone(), window: job.window.clone() };
        let (job, prototypes) = (job.clone(), prototypes.clone());
        let stop = job.stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-client-{cpu}"))
            .spawn(move || {
                // A core that panics stops the run: the others end at once, not at the
                // run's end, and the run fails saying so.
                let on_panic = move || stop.store(true, std::sync::atomic::Ordering::Relaxed);
                catching(cpu, on_panic, || {
                    core(CoreStart { job, cpu, index, conns: range, gate }, prototypes)
                })
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    let ends: Vec<(crate::stats::CoreRecorder, crate::clock::Instant)> = threads
        .into_iter()
        .map(|(cpu, h)| h.join().map_err(|payload| EngineError::panicked(cpu, payload.as_ref()))?)
        .collect::<Result<_, _>>()?;
    let start = *start.get_or_init(crate::clock::Instant::now);
    let finished = ends.iter().map(|(_, end)| *end).max().unwrap_or(start);
    Ok(ClientRun {
        measure_from: job.window.opened_at().or(job.window.not_before()).unwrap_or(start).max(start)
            + job.shape.warmup,
        // A connection per operation sets up inside each one: nothing was waited for.
        set_up_in: job
            .window
            .opened_at()
            .filter(|_| !job.shape.per_op)
            .map(|at| at.saturating_duration_since(start)),
        finished,
        cores: ends.into_iter().map(|(rec, _)| rec).collect(),
        net: net.zip(sys::read_net_counters()).map(|(before, after)| after.since(before)),
    })
}

/// The state machine of connection `index` of `job` (its share of `-n`, the run's deadline),
/// on target `index % targets` (connections spread round-robin over them).
pub fn new_conn<C: crate::proto::ClientCodec>(
    job: &ClientJob,
    prototypes: &[std::rc::Rc<C>],
    index: usize,
    start: crate::clock::Instant,
) -> conn::Conn<C> {
    // `--start-at` moves the start of a connection-per-operation run (whose window is not
    // waited for) and the earliest opening of the others'.
    let start_at = job.window.not_before().map_or(start, |at| at.max(start));
    let measure_from = start_at + job.shape.warmup;
    let budget = crate::workload::Budget {
        ops: job.shape.ops.map(|n| crate::workload::split_ops(n, job.shape.connections, index)),
        deadline: measure_from + job.shape.duration,
        measure_from,
    };
    let seed = job.seed ^ (index as u64 + 1).wrapping_mul(conn::SEED_STEP);
    let target = index % prototypes.len();
    let conn = conn::Conn::new(
        &prototypes[target],
        job.shape.workload.pacer(index, job.shape.connections),
        budget,
        job.shape.depth,
        job.shape.timeout,
        seed,
    );
    let first = if job.shape.per_op { start_at } else { start };
    let conn = conn
        .first_connect_at(first + job.shape.connect_after(index))
        .on_target(target)
        .with_picks(job.picks.as_ref())
        .with_tls(job.tls.get(target).cloned().flatten())
        .with_preamble(job.preamble(target, index));
    if job.shape.per_op {
        conn.one_op_per_connection()
    } else {
        let ramp = job.shape.ramp_expected(job.cores.len());
        conn.measured_once_set_up(
            job.window.clone(),
            (start, (start + ramp).max(start_at)),
            job.shape.warmup,
            job.shape.duration,
        )
    }
}

/// [`conn::Want::Poll`], the same in every engine: read what socket `fd` holds now, without
/// waiting (`MSG_DONTWAIT`), and tell the machine. Only asked between operations, when no other
/// operation is in flight on the socket.
pub fn poll_socket<C: crate::proto::ClientCodec>(
    conn: &mut conn::Conn<C>,
    fd: std::os::fd::RawFd,
    now: crate::clock::Instant,
    rec: &mut crate::stats::CoreRecorder,
) {
    let Some(buf) = conn.read_buf() else {
        return conn.read_failed(&std::io::Error::other("message larger than the receive limit"), now, rec);
    };
    // SAFETY: `buf` is writable for its length; `fd` is the connection's open socket.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    match usize::try_from(n) {
        Ok(n) => conn.read(n, now, rec),
        Err(_) => match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::WouldBlock => conn.polled(now),
            e if e.kind() == std::io::ErrorKind::Interrupted => conn.polled(now),
            e => conn.read_failed(&e, now, rec),
        },
    }
}

/// What every core of an async server engine keeps (single-threaded, behind an `Rc`): its
/// limits, its tally, its count of connections against its share of the connection limit,
/// and its CPU clock. The engines keep only what differs: their sockets, accept and spawn.
pub struct AsyncServerCore {
    pub limits: serve_conn::ServerLimits,
    pub tally: std::cell::RefCell<ServerTally>,
    active: std::cell::Cell<usize>,
    clock: sys::ThreadClock,
    cpu: usize,
    /// A connection's task panicked: its message (the core then stops, and says so).
    panicked: std::cell::RefCell<Option<String>>,
}

/// A connection admitted under the limit; dropping it (when the connection ends) frees its place.
pub struct Admitted(std::rc::Rc<AsyncServerCore>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
    }
}

impl AsyncServerCore {
    /// The core's books, opened as it starts serving (and says so to the thread starting it).
    pub fn open<S>(start: &ServerStart<S>) -> std::rc::Rc<Self> {
        let _ = start.ready.send(Ok(()));
        std::rc::Rc::new(AsyncServerCore {
            limits: start.limits,
            tally: std::cell::RefCell::new(ServerTally { core: start.cpu, ..Default::default() }),
            active: std::cell::Cell::new(0),
            clock: sys::ThreadClock::start(),
            cpu: start.cpu,
            panicked: std::cell::RefCell::new(None),
        })
    }

    /// A connection's task, watched: if it panics, the core notes it and stops serving.
    pub async fn guard(self: std::rc::Rc<Self>, serving: impl std::future::Future<Output = ()>) {
        use futures_lite::FutureExt;
        if let Err(payload) = std::panic::AssertUnwindSafe(serving).catch_unwind().await {
            let EngineError::Panicked { message, .. } = EngineError::panicked(self.cpu, payload.as_ref())
            else {
                return;
            };
            self.panicked.borrow_mut().get_or_insert(message);
        }
    }

    /// A connection's task panicked: the core must stop.
    pub fn failed(&self) -> bool {
        self.panicked.borrow().is_some()
    }

    /// A new connection: admitted (counted) under the core's share of the limit, or refused
    /// (counted; the engine answers it with the codec's busy answer and closes it).
    pub fn admit(self: &std::rc::Rc<Self>) -> Option<Admitted> {
        let mut tally = self.tally.borrow_mut();
        if self.active.get() >= self.limits.max_conns {
            tally.refused += 1;
            return None;
        }
        tally.connections += 1;
        self.active.set(self.active.get() + 1);
        Some(Admitted(self.clone()))
    }

    /// The codec of an admitted connection: the listener's prototype, seeded apart (Socket.IO
    /// session ids differ between connections).
    pub fn codec<S: crate::proto::ServerCodec>(&self, prototype: &S) -> S {
        let tally = self.tally.borrow();
        let mut codec = prototype.clone();
        crate::proto::Hooks::seed(
            &mut codec,
            ((tally.core as u64) << 40) ^ tally.connections.wrapping_mul(conn::SEED_STEP),
        );
        codec
    }

    /// The core's tally, with its CPU and wall time; or how it failed.
    pub fn close(&self) -> Result<ServerTally, EngineError> {
        if let Some(message) = self.panicked.borrow_mut().take() {
            return Err(EngineError::Panicked { cpu: self.cpu, message });
        }
        let mut t = self.tally.take();
        (t.cpu, t.wall) = self.clock.since(crate::clock::Instant::now());
        Ok(t)
    }
}

/// How often a server core looks at its stop flag, and how long an accept that failed (out of
/// file descriptors and the like) backs off before trying again.
pub const SERVER_POLL: Duration = Duration::from_millis(20);
/// How long a refused connection is given to read its refusal before it is closed.
pub const REFUSE_WAIT: Duration = Duration::from_secs(1);
/// How long a server connection that ends (a refusal, an HTTP/2 GOAWAY, `Connection: close`)
/// reads and drops what the client still sends after our last words, and how many reads at
/// most: a socket closed with bytes unread is reset by the kernel, and what was not sent yet
/// is dropped with it — a GOAWAY queued behind the answers to a flood never reached the client.
pub const LINGER: Duration = Duration::from_secs(1);
pub const LINGER_READS: usize = 512;
/// The buffer a lingering connection reads into (512 reads of it: 2 MiB dropped at most).
pub const LINGER_BUF: usize = 4 << 10;

/// A running built-in server: its addresses, and how to stop it and collect its tally.
pub struct ServerHandle {
    /// One per listener, in the order given.
    pub addrs: Vec<Endpoint>,
    stop: Arc<AtomicBool>,
    threads: Vec<(usize, std::thread::JoinHandle<Result<ServerTally, EngineError>>)>,
}

impl ServerHandle {
    /// The first IP listener's address (`0.0.0.0:0` for a server on Unix sockets alone).
    pub fn addr(&self) -> SocketAddr {
        self.addrs.iter().find_map(Endpoint::ip).unwrap_or_else(|| ([0, 0, 0, 0], 0).into())
    }

    /// Whether every core still serves: a core whose thread ended before it was asked to
    /// stop (a ring that failed, a panic) leaves a server that answers only part of its
    /// clients, or none — never something to go on measuring. The first such core's error.
    pub fn check(&mut self) -> Result<(), EngineError> {
        if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let Some(at) = self.threads.iter().position(|(_, h)| h.is_finished()) else { return Ok(()) };
        let (cpu, handle) = self.threads.remove(at);
        Err(match handle.join() {
            Ok(Err(e)) => e,
            Ok(Ok(_)) => EngineError::Stopped { cpu },
            Err(payload) => EngineError::panicked(cpu, payload.as_ref()),
        })
    }

    /// No listener, no core yet: for servers all started apart ([`merge`](Self::merge)).
    pub fn empty(stop: Arc<AtomicBool>) -> ServerHandle {
        ServerHandle { addrs: Vec::new(), stop, threads: Vec::new() }
    }

    /// Take `other`'s listeners and cores (servers started apart, on the same stop flag): one
    /// handle checks and stops them all.
    pub fn merge(&mut self, other: ServerHandle) {
        self.addrs.extend(other.addrs);
        self.threads.extend(other.threads);
    }

    /// Stop and wait for every core; returns their tallies. Its Unix sockets' files go.
    pub fn stop(self) -> Result<Vec<ServerTally>, EngineError> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for addr in &self.addrs {
            if let Endpoint::Unix(path) = addr {
                let _ = std::fs::remove_file(path);
            }
        }
        let mut first_error = None;
        let mut tallies = Vec::new();
        for (cpu, h) in self.threads {
            match h.join() {
                Ok(Ok(t)) => tallies.push(t),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(payload) => {
                    first_error.get_or_insert(EngineError::panicked(cpu, payload.as_ref()));
                }
            }
        }
        first_error.map_or(Ok(tallies), Err)
    }
}

/// The per-core body of a server.
pub type ServerCoreFn<S> = fn(ServerStart<S>) -> Result<ServerTally, EngineError>;

/// Run an engine thread's body; a panic in it becomes an error saying so (the panic's own
/// message and place are printed by Rust's hook as it happens), after `on_panic` (telling the
/// other threads of the run to stop).
fn catching<T>(
    cpu: usize,
    on_panic: impl FnOnce(),
    body: impl FnOnce() -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => {
            on_panic();
            Err(EngineError::panicked(cpu, payload.as_ref()))
        }
    }
}

/// What one core of a built-in server is given: its listeners with their codecs, its CPU, its
/// share of the limits, the stop flag, and where to say it is ready (or why it is not).
pub struct ServerStart<S> {
    pub listeners: Vec<(std::net::TcpListener, S)>,
    pub cpu: usize,
    pub limits: serve_conn::ServerLimits,
    pub stop: Arc<AtomicBool>,
    pub ready: std::sync::mpsc::Sender<Result<(), EngineError>>,
}

/// Start a built-in server: on each core, a listener per entry of `listeners` (an
/// `SO_REUSEPORT` one per core for TCP, port 0 picking one free port for all; a Unix socket
/// shared), answered by clones of its codec, on a thread running `core`. Returns once every
/// core is serving. Shared by every engine.
pub fn start_server_threads<S>(
    listeners: Vec<(Endpoint, S)>,
    cores: &[usize],
    limits: serve_conn::ServerLimits,
    stop: Arc<AtomicBool>,
    core: ServerCoreFn<S>,
) -> Result<ServerHandle, EngineError>
where
    S: crate::proto::ServerCodec + Send + 'static,
{
    // Bind every core's sockets here, so that a busy port is one clear error before any thread.
    let mut per_core: Vec<Vec<(std::net::TcpListener, S)>> = cores.iter().map(|_| Vec::new()).collect();
    let mut addrs = Vec::new();
    for (listen, codec) in listeners {
        let (sockets, bound) = listen::listeners_for(&listen, cores.len())
            .map_err(|source| EngineError::Listen { addr: listen.clone(), source })?;
        for (core, l) in per_core.iter_mut().zip(sockets) {
            core.push((l, codec.clone()));
        }
        addrs.push(bound);
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), EngineError>>();
    let mut threads = Vec::new();
    // The connection limit is shared out: each core serves its part.
    let core_limits =
        serve_conn::ServerLimits { max_conns: limits.max_conns.div_ceil(cores.len().max(1)), ..limits };
    for (&cpu, listeners) in cores.iter().zip(per_core) {
        let (stop, ready) = (stop.clone(), ready_tx.clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-serve-{cpu}"))
            .spawn(move || {
                // A core that panics ends its thread; the handle's `check` sees it and the
                // command stops the server (a listener that answers nothing must not linger).
                catching(
                    cpu,
                    || {},
                    || core(ServerStart { listeners, cpu, limits: core_limits, stop, ready }),
                )
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    drop(ready_tx);
    let handle = ServerHandle { addrs, stop, threads };
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
    Ok(handle)
}

/// Pin the calling thread to `cpu` (the engines without a placement API of their own).
pub fn pin_current_thread(cpu: usize) -> Result<(), EngineError> {
    // Timers of an engine thread fire when asked: Linux lets a thread's timed waits run up to
    // its timer slack late (50 µs by default), which a paced schedule would see as lag.
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(EngineError::Executor { cpu, source: std::io::Error::other("cannot pin the thread to this CPU") })
    }
}

/// Wall-clock Unix seconds, for the codecs' `Date` headers.
pub fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Errors an engine can meet before its loops start; during a run failures are only counted.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot start the engine thread on CPU {cpu}: {source}")]
    Executor { cpu: usize, source: std::io::Error },
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: Endpoint, source: std::io::Error },
    #[error(
        "the engine thread on CPU {cpu} panicked: {message} (a wirebench bug: please report it with the lines above)"
    )]
    Panicked { cpu: usize, message: String },
    #[error("the engine thread on CPU {cpu} stopped before it was asked to")]
    Stopped { cpu: usize },
}

impl EngineError {
    /// A panic's payload, as the error saying so.
    fn panicked(cpu: usize, payload: &(dyn std::any::Any + Send)) -> EngineError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        EngineError::Panicked { cpu, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_ends_with_the_last_operation_not_the_last_close() {
        let t0 = crate::clock::Instant::now();
        let mut a = crate::stats::CoreRecorder::new(0);
        a.series_op(t0, t0 + Duration::from_secs(3), 1);
        let mut b = crate::stats::CoreRecorder::new(1);
        b.series_errors(t0, t0 + Duration::from_secs(5), 1);
        b.series_errors(t0, t0 + Duration::from_secs(9), 0); // no operation ended there
        let run = ClientRun {
            measure_from: t0 + Duration::from_secs(1),
            set_up_in: None,
            finished: t0 + Duration::from_secs(40), // the sockets took long to close
            cores: vec![a, b],
            net: None,
        };
        assert_eq!(run.report().elapsed, Duration::from_secs(4));
        let none = ClientRun {
            measure_from: t0,
            set_up_in: None,
            finished: t0 + Duration::from_secs(2),
            cores: vec![crate::stats::CoreRecorder::new(0)],
            net: None,
        };
        assert_eq!(none.report().elapsed, Duration::from_secs(2), "no operation: until the close");
    }
}
