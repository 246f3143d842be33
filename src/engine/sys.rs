//! The few raw syscalls the engines need beside their I/O: the kernel's own byte counters
//! (`TCP_INFO`), a thread's CPU time (`getrusage(RUSAGE_THREAD)`), and resource limits.

use crate::stats::KernelCounts;
use std::os::fd::RawFd;
use std::time::Duration;

/// Offsets in Linux's `struct tcp_info` (include/uapi/linux/tcp.h), stable ABI since 4.2 for
/// these fields: 8 single-byte fields, 24 `u32`, two `u64` pacing rates, then these.
const TCPI_STATE: usize = 0;
const TCPI_BYTES_ACKED: usize = 120;
/// `TCP_CLOSE_WAIT` in include/net/tcp_states.h.
const TCP_CLOSE_WAIT: u8 = 8;
const TCPI_BYTES_RECEIVED: usize = 128;
const TCPI_SEGS_OUT: usize = 136;
const TCPI_SEGS_IN: usize = 140;
const TCPI_NEEDED: usize = 144;

/// Read the kernel's counters of one connected socket and add them to `into`.
///
/// The kernel counts sequence space: the SYN it sent is one "byte acked", and a FIN it received
/// is one "byte received". Neither is a byte the application wrote or read, so they are taken
/// off here; the FIN is known from the state (we read before closing, so a socket in
/// `CLOSE_WAIT` has received one). A socket whose counters cannot be read is counted as
/// `unreadable`, so the audit says so rather than match by accident.
pub fn add_tcp_info(fd: RawFd, into: &mut KernelCounts) {
    // The kernel reads the state before it locks the socket for the counters: a FIN arriving
    // in between makes a torn snapshot (state ESTABLISHED, FIN counted). Two equal reads in a
    // row are a consistent one.
    let mut previous = None;
    for _ in 0..4 {
        let Some(buf) = read_tcp_info(fd) else {
            into.unreadable += 1;
            return;
        };
        if previous == Some(buf) {
            break;
        }
        previous = Some(buf);
    }
    let Some(buf) = previous else { return };
    let u64_at = |o: usize| u64::from_ne_bytes(buf[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4 bytes"));
    into.bytes_acked += u64_at(TCPI_BYTES_ACKED).saturating_sub(1);
    let fin_received = buf[TCPI_STATE] == TCP_CLOSE_WAIT;
    into.bytes_received += u64_at(TCPI_BYTES_RECEIVED).saturating_sub(u64::from(fin_received));
    into.segs_out += u64::from(u32_at(TCPI_SEGS_OUT));
    into.segs_in += u64::from(u32_at(TCPI_SEGS_IN));
    into.sockets += 1;
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

/// A thread's CPU time and wall time since a start: what an engine core's busy % and CPU per
/// operation are made of.
pub struct ThreadClock {
    cpu: Duration,
    wall: std::time::Instant,
}

impl ThreadClock {
    pub fn start() -> ThreadClock {
        ThreadClock { cpu: thread_cpu_time(), wall: std::time::Instant::now() }
    }

    /// (CPU time, wall time) from the start until `until` (the calling thread's CPU).
    pub fn since(&self, until: std::time::Instant) -> (Duration, Duration) {
        (thread_cpu_time().saturating_sub(self.cpu), until.saturating_duration_since(self.wall))
    }
}

/// A resource limit that could not be raised far enough.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error(
        "{wanted} open files are needed but the limit is {hard} (hard limit); run `ulimit -n {wanted}` as root or lower --connections"
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
    Err(lim.rlim_max)
}

/// File descriptors a process needs beyond its sockets (stdio, io_uring rings, eventfds, …).
pub const SPARE_FILES: u64 = 64;

/// Raise `RLIMIT_NOFILE` to fit `sockets` sockets, or say how.
pub fn ensure_file_limit(sockets: u64) -> Result<(), LimitError> {
    let wanted = sockets + SPARE_FILES;
    ensure_limit(libc::RLIMIT_NOFILE, wanted).map_err(|hard| LimitError::Files { wanted, hard })
}

/// Raise `RLIMIT_MEMLOCK` to fit `bytes`, or say how.
pub fn ensure_locked_memory(bytes: u64) -> Result<(), LimitError> {
    ensure_limit(libc::RLIMIT_MEMLOCK, bytes).map_err(|hard| LimitError::LockedMemory { wanted: bytes, hard })
}

/// The CPUs this process may run on, in order.
pub fn online_cpus() -> Vec<usize> {
    let mut ids: Vec<usize> =
        core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect();
    ids.sort_unstable();
    if ids.is_empty() {
        ids.push(0);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn tcp_info_counts_loopback_bytes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        server.read_exact(&mut buf).unwrap();
        server.write_all(b"world!!").unwrap();
        let mut buf = [0u8; 7];
        client.read_exact(&mut buf).unwrap();
        let mut k = KernelCounts::default();
        use std::os::fd::AsRawFd;
        add_tcp_info(client.as_raw_fd(), &mut k);
        assert_eq!((k.bytes_acked, k.bytes_received, k.sockets), (5, 7, 1));
        drop(server);
        std::thread::sleep(Duration::from_millis(50)); // let the FIN arrive
        let mut k = KernelCounts::default();
        add_tcp_info(client.as_raw_fd(), &mut k);
        assert_eq!((k.bytes_acked, k.bytes_received), (5, 7));
        assert!(k.segs_out >= 2 && k.segs_in >= 2);
    }

    #[test]
    fn thread_cpu_time_advances() {
        let a = thread_cpu_time();
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(5) {
            std::hint::black_box(spin.elapsed());
        }
        assert!(thread_cpu_time() > a);
    }
}
