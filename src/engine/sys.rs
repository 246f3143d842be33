//! The few raw syscalls the engines need beside their I/O: the kernel's own byte counters of a
//! closing socket (`TCP_INFO`, the send queue), a thread's CPU time, and resource limits.

use crate::stats::NetCounters;
use crate::stats::{Inexact, KernelSocket, SocketAudit};
use std::os::fd::RawFd;
use std::time::Duration;

/// Offsets in Linux's `struct tcp_info` (include/uapi/linux/tcp.h), stable ABI since 4.2 for
/// these fields: 8 single-byte fields, 24 `u32`, two `u64` pacing rates, then these.
const TCPI_STATE: usize = 0;
const TCPI_TOTAL_RETRANS: usize = 100;
const TCPI_BYTES_ACKED: usize = 120;
const TCPI_BYTES_RECEIVED: usize = 128;
const TCPI_SEGS_OUT: usize = 136;
const TCPI_SEGS_IN: usize = 140;
const TCPI_NEEDED: usize = 144;
/// TCP states (include/net/tcp_states.h). In these a FIN from the peer has been counted.
const TCP_TIME_WAIT: u8 = 6;
const TCP_CLOSE_WAIT: u8 = 8;
const TCP_LAST_ACK: u8 = 9;
const TCP_CLOSING: u8 = 11;
/// Closed by a reset: a FIN may or may not have come before it.
const TCP_CLOSE: u8 = 7;
/// At most this much is read off a closing socket; a peer still sending after that leaves the
/// socket's count unsettled rather than the close unbounded.
const CLOSE_DRAIN_MAX: u64 = 1 << 20;
/// Snapshots tried before a socket whose counters keep moving is called unsettled.
const CLOSE_TRIES: usize = 4;

/// One consistent reading of a socket's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Snapshot {
    state: u8,
    acked: u64,
    received: u64,
    segs_out: u64,
    segs_in: u64,
    retrans: u64,
}

/// Read the kernel's counts of a connected socket about to be closed, after reading off
/// whatever the peer sent that the connection did not read (so that closing sends a FIN, not
/// a reset, and those bytes are counted). Returns the bytes so drained and the socket's
/// counts in application bytes, or why they cannot be exact.
///
/// The kernel counts sequence space: the SYN it sent is one "byte acked" and a FIN it received
/// one "byte received"; neither is a byte the application wrote or read, so both are taken
/// off. A FIN is known from the state (`CLOSE_WAIT` and later); a socket closed by a reset
/// (`CLOSE`) may have had a FIN before it, which shows as exactly one byte more than was read
/// (`app_rx`: what the application read on this socket before the drain). Bytes written but
/// not yet acknowledged (a peer that stopped reading) are in the send queue, added back.
///
/// The counters and the drain are read as counters, drain, counters: when both readings agree,
/// nothing arrived in between and every byte the kernel counted was read. A peer that keeps
/// sending through four attempts (`CLOSE_TRIES`) leaves the socket [`Inexact::Unsettled`].
///
/// `sent_fin`: the engine shut the socket down for writing (to stop a write it could not
/// cancel), so the kernel counted one FIN in what was written.
pub fn close_audit(fd: RawFd, app_rx: u64, sent_fin: bool) -> (u64, SocketAudit) {
    let mut drained = 0;
    for _ in 0..CLOSE_TRIES {
        let Some(before) = snapshot(fd) else { return unreadable(fd, drained) };
        let (n, more) = drain(fd, CLOSE_DRAIN_MAX.saturating_sub(drained));
        drained += n;
        let queued = send_queue(fd);
        let Some(after) = snapshot(fd) else { return (drained, Err(Inexact::Unreadable)) };
        let settled =
            (before.state, before.acked, before.received) == (after.state, after.acked, after.received);
        if settled && !more {
            let read = app_rx + drained;
            let fin = match after.state {
                TCP_CLOSE_WAIT | TCP_LAST_ACK | TCP_CLOSING | TCP_TIME_WAIT => 1,
                TCP_CLOSE => u64::from(after.received == read + 1),
                _ => 0,
            };
            return (
                drained,
                Ok(KernelSocket {
                    tx: (after.acked + queued).saturating_sub(1 + u64::from(sent_fin)),
                    unacked: queued,
                    rx: after.received.saturating_sub(fin),
                    segs_out: after.segs_out,
                    segs_in: after.segs_in,
                    retrans: after.retrans,
                }),
            );
        }
        if more {
            break;
        }
    }
    (drained, Err(Inexact::Unsettled))
}

/// A socket without `TCP_INFO`: a Unix or a UDP socket (the kernel keeps no byte counts for
/// either) is drained as a TCP one would be, and said to be one; any other could not be read.
fn unreadable(fd: RawFd, drained: u64) -> (u64, SocketAudit) {
    let why = match (socket_option(fd, libc::SO_DOMAIN), socket_option(fd, libc::SO_TYPE)) {
        (Some(libc::AF_UNIX), _) => Inexact::Unix,
        (_, Some(libc::SOCK_DGRAM)) => Inexact::Udp,
        _ => return (drained, Err(Inexact::Unreadable)),
    };
    // A UDP socket's datagrams counted whole, however long (`MSG_TRUNC`).
    let flags = if why == Inexact::Udp { libc::MSG_TRUNC } else { 0 };
    let (n, _) = drain_with(fd, CLOSE_DRAIN_MAX.saturating_sub(drained), flags);
    (drained + n, Err(why))
}

/// A socket's integer option at `SOL_SOCKET` (`SO_DOMAIN`, `SO_TYPE`).
fn socket_option(fd: RawFd, name: libc::c_int) -> Option<i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid out-pointer and its length.
    let rc = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, name, (&mut value as *mut libc::c_int).cast(), &mut len)
    };
    (rc == 0).then_some(value)
}

/// Make the socket's close a reset (`SO_LINGER` on, 0 s: `--close-reset`): no FIN exchange and
/// no `TIME_WAIT` on this side, as neper's and netperf's clients close. Best effort.
pub fn reset_on_close(fd: RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: plain setsockopt on a descriptor of ours with a linger struct.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// A non-blocking stream socket connected to the Unix socket `addr`, for the async engines:
/// a Unix connect completes at once or fails (a listener whose queue is full says
/// `WouldBlock`), so it is made here and its descriptor handed to the runtime, whose reads
/// and writes work on any stream socket.
pub fn unix_connect(addr: &socket2::SockAddr) -> std::io::Result<std::os::fd::OwnedFd> {
    let socket =
        socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM.nonblocking().cloexec(), None)?;
    match socket.connect(addr) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(std::io::Error::new(
            e.kind(),
            "the Unix socket's accept queue is full (the server accepts slower than connections come)",
        )),
        Err(e) => Err(e),
        Ok(()) => Ok(socket.into()),
    }
}

/// `TCP_INFO` until two reads in a row agree: the kernel reads the state before it locks the
/// socket for the counters, so a FIN arriving in between makes a torn snapshot.
fn snapshot(fd: RawFd) -> Option<Snapshot> {
    let mut previous = None;
    for _ in 0..CLOSE_TRIES {
        let buf = read_tcp_info(fd)?;
        if previous == Some(buf) {
            break;
        }
        previous = Some(buf);
    }
    let buf = previous?;
    let u64_at = |o: usize| u64::from_ne_bytes(buf[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u64::from(u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4 bytes")));
    Some(Snapshot {
        state: buf[TCPI_STATE],
        acked: u64_at(TCPI_BYTES_ACKED),
        received: u64_at(TCPI_BYTES_RECEIVED),
        segs_out: u32_at(TCPI_SEGS_OUT),
        segs_in: u32_at(TCPI_SEGS_IN),
        retrans: u32_at(TCPI_TOTAL_RETRANS),
    })
}

fn read_tcp_info(fd: RawFd) -> Option<[u8; TCPI_NEEDED]> {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for `len` bytes and outlives the call; the kernel writes at most len.
    let rc =
        unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) };
    if rc != 0 || (len as usize) < TCPI_NEEDED {
        return None;
    }
    buf[..TCPI_NEEDED].try_into().ok()
}

/// Read whatever is waiting, without blocking, up to `limit` bytes; returns the bytes read and
/// whether the limit stopped it with more waiting.
fn drain(fd: RawFd, limit: u64) -> (u64, bool) {
    drain_with(fd, limit, 0)
}

/// [`drain`] with more `recv` flags.
fn drain_with(fd: RawFd, limit: u64, flags: libc::c_int) -> (u64, bool) {
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0;
    while total < limit {
        // SAFETY: buf is valid for its length; the socket is ours and has no read in flight.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT | flags) };
        if n <= 0 {
            return (total, false); // end of stream, nothing waiting, or an error: all read
        }
        total += n as u64;
    }
    (total, true)
}

/// Bytes written to the socket and not yet acknowledged by the peer (`SIOCOUTQ`).
fn send_queue(fd: RawFd) -> u64 {
    let mut queued: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (= SIOCOUTQ) writes one int.
    if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) } != 0 {
        return 0;
    }
    queued.max(0) as u64
}

/// CPU time (user + system) of the calling thread. `CLOCK_THREAD_CPUTIME_ID` is the same
/// quantity as `getrusage(RUSAGE_THREAD)`, to the nanosecond rather than the scheduler tick.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Time the hypervisor ran something else while CPU `cpu` wanted to run (`steal` in
/// `/proc/stat`); `None` where the kernel does not say. Tick resolution (10 ms at 100 Hz).
pub fn cpu_steal(cpu: usize) -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let name = format!("cpu{cpu} ");
    let line = stat.lines().find(|l| l.starts_with(&name))?;
    // user nice system idle iowait irq softirq steal
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    // (Not procfs's ticks_per_second: it crashes the process under valgrind.)
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_millis(ticks.saturating_mul(1000) / hz))
}

/// A thread's CPU time and wall time since a start: what an engine core's busy % and CPU per
/// operation are made of.
pub struct ThreadClock {
    cpu: Duration,
    wall: crate::clock::Instant,
}

impl ThreadClock {
    pub fn start() -> ThreadClock {
        ThreadClock { cpu: thread_cpu_time(), wall: crate::clock::Instant::now() }
    }

    /// (CPU time, wall time) from the start until `until` (the calling thread's CPU).
    pub fn since(&self, until: crate::clock::Instant) -> (Duration, Duration) {
        (thread_cpu_time().saturating_sub(self.cpu), until.saturating_duration_since(self.wall))
    }
}

/// The machine's network counters now ([`NetCounters`]; `None`: not readable here).
pub fn read_net_counters() -> Option<NetCounters> {
    let softnet = std::fs::read_to_string("/proc/net/softnet_stat").ok()?;
    let backlog_drops = softnet
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).and_then(|d| u64::from_str_radix(d, 16).ok()))
        .sum();
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let at = names.split_whitespace().position(|n| n == "RetransSegs")?;
    let retransmits = values.split_whitespace().nth(at)?.parse().ok()?;
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().unwrap_or_default(), udp.next().unwrap_or_default());
    let field = |name: &str| {
        let at = names.split_whitespace().position(|n| n == name)?;
        values.split_whitespace().nth(at)?.parse().ok()
    };
    let (udp_in, udp_out, udp_drops) = (
        field("InDatagrams").unwrap_or(0),
        field("OutDatagrams").unwrap_or(0),
        field("RcvbufErrors").unwrap_or(0),
    );
    Some(NetCounters { backlog_drops, retransmits, udp_in, udp_out, udp_drops })
}

/// A resource limit that could not be raised far enough.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error(
        "{wanted} open files are needed but this process may hold at most {hard} (its hard limit, which only a privileged process can raise: `ulimit -Hn`, limits.conf, fs.nr_open); lower --connections to {most} or fewer per process, or run several generator processes together (the same --start-at; `wirebench merge` adds their results)",
        most = hard.saturating_sub(SPARE_FILES)
    )]
    Files { wanted: u64, hard: u64 },
    #[error(
        "io_uring needs {wanted} bytes of locked memory but the limit is {hard} (hard limit); run `ulimit -l {kib}` as root (or raise LimitMEMLOCK / memlock in limits.conf)",
        kib = wanted.div_ceil(1024)
    )]
    LockedMemory { wanted: u64, hard: u64 },
}

/// Make sure the soft limit `resource` is at least `wanted`, raising it (and, when privileged,
/// the hard limit) if needed. Returns the old and new soft limits or what stood in the way.
fn ensure_limit(resource: libc::__rlimit_resource_t, wanted: u64) -> Result<(), u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid pointer to an rlimit.
    if unsafe { libc::getrlimit(resource, &mut lim) } != 0 {
        return Err(0);
    }
    if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= wanted {
        return Ok(());
    }
    let raised = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: if lim.rlim_max == libc::RLIM_INFINITY { lim.rlim_max } else { lim.rlim_max.max(wanted) },
    };
    // SAFETY: valid pointer; raising the hard limit only succeeds with CAP_SYS_RESOURCE.
    if unsafe { libc::setrlimit(resource, &raised) } == 0 {
        return Ok(());
    }
    // Not that far: as far as the hard limit goes, at least.
    let most = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
    // SAFETY: valid pointer; a soft limit up to the hard one is always allowed.
    unsafe { libc::setrlimit(resource, &most) };
    Err(lim.rlim_max)
}

/// File descriptors a process needs beyond its sockets (stdio, io_uring rings, eventfds, …).
pub const SPARE_FILES: u64 = 64;

/// No transparent huge pages for this process (`PR_SET_THP_DISABLE`, inherited by its
/// children): on a kernel whose THP mode is `always`, an allocator's large aligned arenas would
/// be backed 2 MiB at a time, and an idle connection would cost what its neighbours' pages
/// weigh (mimalloc with THP: 1.74 KiB a WebSocket connection against 1.35, docs/performance.md).
/// Best effort: a kernel that refuses leaves its own setting.
pub fn no_huge_pages() {
    // SAFETY: a prctl with plain integer arguments, about this process only.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// Raise `RLIMIT_NOFILE` to fit `sockets` sockets, or say how.
pub fn ensure_file_limit(sockets: u64) -> Result<(), LimitError> {
    let wanted = sockets.saturating_add(SPARE_FILES);
    ensure_limit(libc::RLIMIT_NOFILE, wanted).map_err(|hard| LimitError::Files { wanted, hard })
}

/// Raise `RLIMIT_NOFILE` as far as it goes (the hard limit; as root, the kernel's
/// `fs.nr_open`): the `uring` engine's rings each hold a table of direct descriptors that
/// large, so the higher the limit, the fewer rings.
pub fn raise_file_limit() {
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|s| s.trim().parse().ok());
    let _ = ensure_limit(libc::RLIMIT_NOFILE, nr_open.unwrap_or(1 << 20));
}

/// The process's open files (its `/proc/self/fd` entries, at most a million looked at) and
/// its `RLIMIT_NOFILE` soft limit. The `uring` engine's sockets are direct descriptors in its
/// rings' tables, not among these.
pub fn open_files() -> Option<(u64, u64)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.take(1 << 20).count() as u64;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we own.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some((open, lim.rlim_cur))
}

/// Raise `RLIMIT_MEMLOCK` to fit `bytes`, or say how.
pub fn ensure_locked_memory(bytes: u64) -> Result<(), LimitError> {
    ensure_limit(libc::RLIMIT_MEMLOCK, bytes).map_err(|hard| LimitError::LockedMemory { wanted: bytes, hard })
}

/// A one-shot timer to the microsecond (a `timerfd`), for waits the async runtimes' own
/// timers would round up to their millisecond tick: the built-in servers' `--delay`.
pub struct TimerFd(std::os::fd::OwnedFd);

impl TimerFd {
    pub fn new() -> std::io::Result<TimerFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall; the descriptor is owned from here on.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(TimerFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Fire once, `after` from now (at least a nanosecond: zero would disarm it); any expiry
    /// not yet read is cleared first.
    pub fn arm(&self, after: Duration) -> std::io::Result<()> {
        self.clear();
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as _,
            },
        };
        // SAFETY: our descriptor and a valid itimerspec.
        if unsafe { libc::timerfd_settime(self.raw(), 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Read the expiry count, if it fired (non-blocking): `true` if it had.
    pub fn clear(&self) -> bool {
        let mut count = 0u64;
        // SAFETY: 8 bytes into a u64 we own.
        unsafe { libc::read(self.raw(), (&raw mut count).cast(), 8) == 8 }
    }

    fn raw(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }
}

impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.raw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A connected pair on loopback: (client, server).
    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[test]
    fn close_audit_counts_loopback_bytes_and_takes_off_syn_and_fin() {
        use std::os::fd::AsRawFd;
        let (mut client, mut server) = pair();
        client.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        server.read_exact(&mut buf).unwrap();
        server.write_all(b"world!!").unwrap();
        let mut buf = [0u8; 7];
        client.read_exact(&mut buf).unwrap();
        let (drained, k) = close_audit(client.as_raw_fd(), 7, false);
        let k = k.unwrap();
        assert_eq!((drained, k.tx, k.rx, k.unacked), (0, 5, 7, 0));
        drop(server);
        std::thread::sleep(Duration::from_millis(50)); // let the FIN arrive
        let (_, k) = close_audit(client.as_raw_fd(), 7, false);
        let k = k.unwrap();
        assert_eq!((k.tx, k.rx), (5, 7));
        assert!(k.segs_out >= 2 && k.segs_in >= 2);
    }

    #[test]
    fn bytes_never_read_are_drained_and_counted() {
        use std::os::fd::AsRawFd;
        let (client, mut server) = pair();
        server.write_all(b"unread answer").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let (drained, k) = close_audit(client.as_raw_fd(), 0, false);
        assert_eq!((drained, k.unwrap().rx), (13, 13));
    }

    #[test]
    fn a_reset_after_a_fin_is_told_apart_from_one_byte_more() {
        use std::os::fd::AsRawFd;
        let (mut client, mut server) = pair();
        client.write_all(b"x").unwrap();
        server.read_exact(&mut [0u8; 1]).unwrap();
        // FIN, then a reset when the client writes again to the closed socket.
        drop(server);
        std::thread::sleep(Duration::from_millis(50));
        let _ = client.write_all(b"y");
        std::thread::sleep(Duration::from_millis(50));
        let mut buf = [0u8; 1];
        assert_eq!(client.read(&mut buf).unwrap(), 0, "the FIN is read as end of stream");
        let (_, k) = close_audit(client.as_raw_fd(), 0, false);
        assert_eq!(k.unwrap().rx, 0, "the FIN before the reset is not a byte");
    }

    #[test]
    fn unacknowledged_bytes_count_as_written() {
        use std::os::fd::AsRawFd;
        let (mut client, server) = pair();
        client.set_nonblocking(true).unwrap();
        // The server never reads: the client's writes fill both buffers, then stop.
        let chunk = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        for _ in 0..1000 {
            match client.write(&chunk) {
                Ok(n) => written += n as u64,
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        let (_, k) = close_audit(client.as_raw_fd(), 0, false);
        let k = k.unwrap();
        assert_eq!(k.tx, written);
        assert!(k.unacked > 0, "{k:?}");
        drop(server);
    }

    #[test]
    fn thread_cpu_time_advances() {
        let a = thread_cpu_time();
        let spin = crate::clock::Instant::now();
        while spin.elapsed() < Duration::from_millis(5) {
            std::hint::black_box(spin.elapsed());
        }
        assert!(thread_cpu_time() > a);
    }
}
