//! A thread's io_uring instances, driven as one, for the raw io_uring loops (client and
//! server): its sockets as **direct descriptors** — files in a ring's own table, not in the
//! process's descriptor table — spread over as many rings as the file limit makes them need.
//!
//! Why several rings: the kernel lets a ring's file table hold at most `RLIMIT_NOFILE` files
//! (it checks the table's size against the limit when the table is registered), but every ring
//! has a table of its own. A process that may open 20,000 files (these machines' hard limit,
//! which nothing here can raise) holds a million sockets in 50 rings of 20,000, with about 50
//! descriptors of its own (the rings). On a machine with a higher limit one ring holds up to
//! [`MAX_TABLE`] (the kernel's own cap) and a thread has one ring, as before.
//!
//! One ring, the first, is the one the thread sleeps on. The others wake it through one
//! eventfd they are all registered with and the first ring polls; their notifications are
//! enabled only while the thread sleeps (`IORING_CQ_EVENTFD_DISABLED` otherwise), so a busy
//! thread pays nothing for them. Every ring is single-issuer with deferred task work: its
//! completions run in this thread, in the `io_uring_enter` that asks for them
//! ([`Rings::reap`]).
//!
//! Without direct descriptors — kernels before 6.8 cannot hand one back as a file, which the
//! audit's `TCP_INFO` needs (6.11 for the `--bind` path) — sockets are plain descriptors in
//! one ring, as many as the file limit allows (the command layer says so before a run).

use super::bufring::BufRing;
use io_uring::{IoUring, cqueue, opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;

/// The largest file table the kernel registers for one ring (`IORING_MAX_FIXED_FILES`).
pub const MAX_TABLE: usize = 1 << 20;
/// Submission queue entries of a ring at most: pushing into a full queue submits it first, so
/// this bounds memory (64 bytes an entry, per ring), not connections.
const MAX_SUBMISSIONS: u32 = 4096;
/// Completion queue entries of a ring at most (16 bytes each); a burst beyond it waits in the
/// kernel's overflow list, nothing is lost.
const MAX_COMPLETIONS: u32 = 32_768;
/// The first ring's poll of the other rings' eventfd is tagged with this.
const POLL_TAG: u64 = u64::MAX;

/// A completion: its user data, result and flags.
pub type Completion = (u64, i32, u32);

/// A connection's socket as its SQEs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sock {
    /// A direct descriptor: this index in its ring's table.
    Fixed(u32),
    /// A file descriptor of the process.
    Fd(RawFd),
}

/// Build an SQE for an opcode that takes the socket, whichever kind of [`Sock`] it is:
/// `sqe!(sock, |s| opcode::Send::new(s, ptr, len).build())`.
macro_rules! sqe {
    ($sock:expr, |$s:ident| $build:expr) => {
        match $sock {
            $crate::engine::rings::Sock::Fixed(i) => {
                let $s = io_uring::types::Fixed(i);
                $build
            }
            $crate::engine::rings::Sock::Fd(fd) => {
                let $s = io_uring::types::Fd(fd);
                $build
            }
        }
    };
}
pub(crate) use sqe;

/// What the running kernel's io_uring can do for sockets as direct descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Sockets made straight into a ring's table, set up with socket commands (6.7), and
    /// handed back as files for the audit (`FIXED_FD_INSTALL`, 6.8).
    pub direct: bool,
    /// `bind` on a direct descriptor (6.11), for `--bind`.
    pub bind: bool,
}

/// What this kernel supports (probed once, with a small ring, on a thread of its own: a
/// closing ring's exit work signals every task that used it, and a blocking socket read with
/// a timeout in the probing thread — the TLS pre-flight's — would fail with `EINTR`).
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT
        .get_or_init(|| std::thread::spawn(probe).join().unwrap_or(Support { direct: false, bind: false }))
}

fn probe() -> Support {
    let none = Support { direct: false, bind: false };
    let Ok(ring) = IoUring::new(8) else { return none };
    let mut probe = io_uring::Probe::new();
    if ring.submitter().register_probe(&mut probe).is_err() {
        return none;
    }
    let direct = [opcode::Socket::CODE, opcode::FixedFdInstall::CODE, opcode::UringCmd16::CODE]
        .iter()
        .all(|&op| probe.is_supported(op));
    Support { direct, bind: direct && probe.is_supported(opcode::Bind::CODE) }
}

/// The soft limit on open files now (what a ring's table may hold).
pub fn file_limit() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid pointer to an rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

/// How a thread's sockets are laid out over its rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Sockets are direct descriptors.
    pub direct: bool,
    /// Sockets (slots) per ring: slot `i` lives in ring `i / per_ring`, at index
    /// `i % per_ring` of its table.
    pub per_ring: usize,
    /// Rings to start with.
    pub rings: usize,
}

impl Layout {
    /// For `slots` sockets, a table per ring of at most `table` (the file limit): direct
    /// descriptors when `direct`, else one ring of plain descriptors.
    pub fn new(slots: usize, direct: bool, table: usize) -> Layout {
        if !direct {
            return Layout { direct, per_ring: usize::MAX, rings: 1 };
        }
        let per_ring = slots.min(table).clamp(1, MAX_TABLE);
        Layout { direct, per_ring, rings: slots.div_ceil(per_ring).max(1) }
    }
}

/// One ring and its provided buffers.
pub struct Shard {
    pub ring: IoUring,
    pub bufs: BufRing,
}

/// A thread's rings (see the module's comment).
pub struct Rings {
    shards: Vec<Shard>,
    layout: Layout,
    /// Per ring: submission entries; provided buffers of all rings (shared out) and their size.
    entries: u32,
    buffers: (u16, usize),
    /// Signalled by every ring but the first, polled by the first; made with the second ring.
    eventfd: Option<OwnedFd>,
    poll_armed: bool,
    /// The kernel can gather a wait's completions (`min_wait_usec`, Linux 6.12's
    /// `IORING_FEAT_MIN_TIMEOUT`): see [`Rings::enter`].
    gathers: bool,
}

/// A ring for `entries` submissions, single-issuer with deferred task run where the kernel
/// knows them (6.1+), plain otherwise.
pub fn ring(entries: u32, completions: u32) -> io::Result<IoUring> {
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
        .setup_cqsize(completions.max(2 * entries))
        .build(entries)
        .or_else(|_| IoUring::builder().build(entries))
}

/// Errors a ring reports that are not failures: a timed wait that ran out, a signal, a
/// completion queue that must be reaped first.
fn benign(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY))
}

impl Rings {
    /// Open `layout.rings` rings for `slots_per_ring` sockets each at most, with `buffers`
    /// provided buffers of `size` bytes apiece (fewer per ring when there are many).
    pub fn open(layout: Layout, slots_per_ring: usize, buffers: u16, size: usize) -> io::Result<Rings> {
        let slots = slots_per_ring.min(layout.per_ring);
        let entries = (2 * slots + 64).next_power_of_two().min(MAX_SUBMISSIONS as usize) as u32;
        let mut rings = Rings {
            shards: Vec::with_capacity(layout.rings),
            layout,
            entries,
            buffers: (buffers.max(1), size),
            eventfd: None,
            poll_armed: false,
            gathers: false,
        };
        for _ in 0..layout.rings {
            rings.add_ring()?;
        }
        Ok(rings)
    }

    /// One more ring (a server growing past its rings' tables); returns its index.
    pub fn add_ring(&mut self) -> io::Result<usize> {
        let completions = (2 * self.layout.per_ring.min(MAX_COMPLETIONS as usize) + 64)
            .next_power_of_two()
            .min(MAX_COMPLETIONS as usize) as u32;
        let ring = ring(self.entries, completions)?;
        if self.shards.is_empty() {
            self.gathers = ring.params().is_feature_min_timeout();
        }
        if self.layout.direct {
            ring.submitter().register_files_sparse(self.layout.per_ring as u32).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("a table of {} direct descriptors: {e}", self.layout.per_ring),
                )
            })?;
        }
        // Many rings share out what one would have (at least 64 each): a ring's buffers are in
        // flight only between a completion and its handling.
        let total = usize::from(self.buffers.0);
        let count =
            (total / self.layout.rings.max(self.shards.len() + 1)).max(64).next_power_of_two().min(total);
        let bufs = BufRing::register(&ring, 0, count as u16, self.buffers.1).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("provided-buffer ring: {e} (the uring engine needs Linux 6.0 or later; use --engine tokio-uring)"),
            )
        })?;
        if !self.shards.is_empty() {
            let efd = match &self.eventfd {
                Some(fd) => fd.as_raw_fd(),
                None => {
                    // SAFETY: plain syscall; the descriptor is owned from here on.
                    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
                    if fd < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // SAFETY: just made, ours alone.
                    self.eventfd = Some(unsafe { OwnedFd::from_raw_fd(fd) });
                    fd
                }
            };
            ring.submitter().register_eventfd(efd)?;
        }
        let mut ring = ring;
        if !self.shards.is_empty() {
            ring.completion().disable_eventfd();
        }
        self.shards.push(Shard { ring, bufs });
        Ok(self.shards.len() - 1)
    }

    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Operations may still point into the buffers: each ring goes and its buffers are
    /// leaked.
    fn abandon(self) {
        for Shard { ring, bufs } in self.shards {
            drop(ring);
            std::mem::forget(bufs);
        }
    }

    /// End every operation still in flight in every ring, and wait until the kernel is done
    /// with them (a synchronous cancel of any request, Linux 6.0+), at most `within` per ring.
    /// `true`: nothing is in flight any more and no operation will touch a buffer again;
    /// `false`: the kernel could not say so (a cancel that timed out, an older kernel).
    fn quiesce(&mut self, within: Duration) -> bool {
        self.shards.iter_mut().all(|s| {
            // Only what was submitted can be cancelled: what waits in the queue goes first.
            if s.ring.submit().is_err() {
                return false;
            }
            let ts = types::Timespec::from(within);
            // Bounded: each round cancels everything then in flight; a few rounds cover
            // operations a cancelled link started.
            for _ in 0..8 {
                match s.ring.submitter().register_sync_cancel(Some(ts), types::CancelBuilder::any()) {
                    Ok(()) => continue,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
                    Err(_) => return false,
                }
            }
            false
        })
    }

    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The ring slot `slot` lives in.
    #[inline]
    pub fn ring_of(&self, slot: usize) -> usize {
        // A compare before the division: most runs have one ring, and a 64-bit division
        // costs tens of cycles twice a request (a send pushed, a receive's buffer given back).
        if slot < self.layout.per_ring { 0 } else { slot / self.layout.per_ring }
    }

    /// Slot `slot`'s socket as a direct descriptor (its index in its ring's table).
    pub fn fixed(&self, slot: usize) -> Sock {
        Sock::Fixed((slot % self.layout.per_ring) as u32)
    }

    /// The provided buffers of slot `slot`'s ring (group 0 in every ring).
    pub fn bufs(&mut self, slot: usize) -> &mut BufRing {
        let r = self.ring_of(slot);
        &mut self.shards[r].bufs
    }

    pub fn shard(&mut self, ring: usize) -> &mut Shard {
        &mut self.shards[ring]
    }

    /// Push an SQE for slot `slot` into its ring.
    pub fn push(&mut self, slot: usize, sqe: &squeue::Entry) -> io::Result<()> {
        let r = self.ring_of(slot);
        push(&mut self.shards[r].ring, sqe)
    }

    /// Push SQEs linked to run in order (`IO_LINK` on all but the last, set by the caller)
    /// into slot `slot`'s ring, all in one submission: a chain cut by a full queue would run
    /// its tail unlinked.
    pub fn push_chain(&mut self, slot: usize, sqes: &[squeue::Entry]) -> io::Result<()> {
        let r = self.ring_of(slot);
        let ring = &mut self.shards[r].ring;
        let room = {
            let sq = ring.submission();
            sq.capacity() - sq.len()
        };
        if room < sqes.len() {
            ring.submit()?;
        }
        // SAFETY: the buffers the SQEs point at stay put until they complete (the rule of
        // [`push`]).
        unsafe { ring.submission().push_multiple(sqes) }
            .map_err(|_| io::Error::other("submission queue full"))
    }

    /// Completions are waiting in some ring already (or deferred ones wait to run).
    pub fn ready_now(&mut self) -> bool {
        self.shards
            .iter_mut()
            .enumerate()
            .any(|(r, s)| !s.ring.completion().is_empty() || (r > 0 && s.ring.submission().taskrun()))
    }

    /// Something came to some ring: completions, or deferred ones waiting to run (the ring's
    /// `IORING_SQ_TASKRUN` flag) — read in user space, no syscall.
    pub fn pending(&mut self) -> bool {
        self.shards.iter_mut().any(|s| !s.ring.completion().is_empty() || s.ring.submission().taskrun())
    }

    /// Submit every ring's SQEs (sends go out inline, before any wait) and wait up to `wait`
    /// for `want` completions (0: do not wait) on the first ring, which the others wake.
    /// With `gather` (where the kernel can: Linux 6.12), a wait that has some completions
    /// after `gather` ends then, with fewer than `want`; one that has none by then ends at
    /// the first — so no completion is kept waiting longer than `gather`, and none is waited
    /// for in vain past it.
    /// Returns the window the wait was given (zero: none).
    pub fn enter(&mut self, want: usize, wait: Duration, gather: Duration) -> io::Result<Duration> {
        let mut want = want;
        let (home, others) = self.shards.split_first_mut().expect("a thread has a ring");
        for s in others.iter_mut() {
            if wants_enter(&mut s.ring, true) {
                match s.ring.submitter().submit_and_wait(0) {
                    Err(e) if !benign(&e) => return Err(e),
                    _ => {}
                }
            }
            if !s.ring.completion().is_empty() {
                want = 0;
            }
        }
        let sleeping = want > 0 && !others.is_empty();
        if sleeping {
            if !self.poll_armed {
                let efd = self.eventfd.as_ref().expect("made with the second ring").as_raw_fd();
                let poll = opcode::PollAdd::new(types::Fd(efd), libc::POLLIN as u32).multi(true).build();
                push(&mut home.ring, &poll.user_data(POLL_TAG))?;
                self.poll_armed = true;
            }
            for s in others.iter_mut() {
                s.ring.completion().enable_eventfd();
            }
            // Work that came in before the notifications were on would not wake us: look.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            if others.iter_mut().any(|s| s.ring.submission().taskrun() || !s.ring.completion().is_empty()) {
                want = 0;
            }
        }
        let ts = types::Timespec::from(wait);
        let mut args = types::SubmitArgs::new().timespec(&ts);
        // Whole µs, the kernel's unit: a window under one is none.
        let us = gather.min(wait).as_micros().min(u128::from(u32::MAX)) as u32;
        let mut gather = Duration::from_micros(u64::from(us));
        if want > 1 && self.gathers && us > 0 {
            args = args.min_wait_usec(us);
        } else {
            (want, gather) = (want.min(1), Duration::ZERO);
        }
        let entered = home.ring.submitter().submit_with_args(want, &args);
        if sleeping {
            for s in others.iter_mut() {
                s.ring.completion().disable_eventfd();
            }
        }
        match entered {
            Err(e) if !benign(&e) => Err(e),
            _ => Ok(gather),
        }
    }

    /// Whether this kernel's rings gather a wait's completions (see [`Rings::enter`]).
    pub fn gather_here() -> bool {
        ring(8, 16).is_ok_and(|r| r.params().is_feature_min_timeout())
    }

    /// Take every ring's completions into `out` (the other rings' deferred ones run first).
    pub fn reap(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        for (r, s) in self.shards.iter_mut().enumerate() {
            if r > 0 && wants_enter(&mut s.ring, false) {
                match s.ring.submitter().submit_and_wait(0) {
                    Err(e) if !benign(&e) => return Err(e),
                    _ => {}
                }
            }
            for c in s.ring.completion() {
                if r == 0 && c.user_data() == POLL_TAG {
                    self.poll_armed &= cqueue::more(c.flags());
                    continue;
                }
                out.push((c.user_data(), c.result(), c.flags()));
            }
        }
        Ok(())
    }
}

/// How long a thread's rings wait, each, for the kernel to finish the operations they cancel
/// when they are let go ([`Owned`]).
const QUIESCE_WAIT: Duration = Duration::from_secs(1);

/// A thread's rings together with everything their operations point into (the connections'
/// send buffers, the addresses they connect to, a drain buffer), let go in an order that is
/// safe on every path — the loop's normal end, an error of a ring, a panic unwinding through
/// it: every operation still in flight is cancelled and waited for, the rings close, and
/// only then do the buffers go. When the kernel cannot say that nothing is in flight any
/// more, the buffers are leaked instead of freed: an operation may still write into them.
pub struct Owned<T> {
    rings: std::mem::ManuallyDrop<Rings>,
    held: std::mem::ManuallyDrop<T>,
}

impl<T> Owned<T> {
    pub fn new(rings: Rings, held: T) -> Owned<T> {
        Owned { rings: std::mem::ManuallyDrop::new(rings), held: std::mem::ManuallyDrop::new(held) }
    }

    /// The rings and what their operations point into, to drive them.
    pub fn parts(&mut self) -> (&mut Rings, &mut T) {
        (&mut self.rings, &mut self.held)
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: both fields are taken or dropped exactly once, here, and never used again.
        let mut rings = unsafe { std::mem::ManuallyDrop::take(&mut self.rings) };
        if rings.quiesce(QUIESCE_WAIT) {
            drop(rings);
            // SAFETY: as above; no operation points into it any more.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.held) };
        } else {
            rings.abandon();
        }
    }
}

/// The ring has deferred completions to run or overflowed ones to flush (or, with
/// `submissions`, SQEs to submit): only an `io_uring_enter` does that.
fn wants_enter(ring: &mut IoUring, submissions: bool) -> bool {
    let sq = ring.submission();
    (submissions && !sq.is_empty()) || sq.taskrun() || sq.cq_overflow()
}

/// Push an SQE, submitting first if the queue is full.
///
/// Both raw io_uring loops keep one rule for the buffers their SQEs point at: they stay put
/// and untouched until the operation completes (the client's slot vector never grows; a
/// server connection's answer is on the heap, freed with no send in flight), and they are
/// owned with the rings ([`Owned`]), which outlive every operation on every path.
pub fn push(ring: &mut IoUring, sqe: &squeue::Entry) -> io::Result<()> {
    // SAFETY: the rule above.
    if unsafe { ring.submission().push(sqe) }.is_err() {
        ring.submit()?;
        // SAFETY: as above.
        unsafe { ring.submission().push(sqe) }.map_err(|_| io::Error::other("submission queue full"))?;
    }
    Ok(())
}

/// An SQE that arms one multishot receive on `sock`, its buffers from provided-buffer group
/// `group`, its completions tagged `tag`: it stays armed until a completion comes without
/// `MORE`.
pub fn receive(sock: Sock, group: u16, tag: u64) -> squeue::Entry {
    sqe!(sock, |s| opcode::RecvMulti::new(s, group).build().user_data(tag))
}

/// An SQE that cancels the operation tagged `target`; the cancel's own completion is `tag`.
pub fn cancel(target: u64, tag: u64) -> squeue::Entry {
    opcode::AsyncCancel::new(target).build().user_data(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_spreads_sockets_over_tables_the_file_limit_allows() {
        assert_eq!(
            Layout::new(1_000_000, true, 20_000),
            Layout { direct: true, per_ring: 20_000, rings: 50 }
        );
        assert_eq!(Layout::new(1_000, true, 256), Layout { direct: true, per_ring: 256, rings: 4 });
        assert_eq!(Layout::new(64, true, 20_000), Layout { direct: true, per_ring: 64, rings: 1 });
        assert_eq!(Layout::new(3_000_000, true, usize::MAX).per_ring, MAX_TABLE);
        assert_eq!(Layout::new(0, true, 20_000).rings, 1);
        assert_eq!(
            Layout::new(50_000, false, 20_000),
            Layout { direct: false, per_ring: usize::MAX, rings: 1 }
        );
    }

    /// The first ring sleeps; a completion on another ring wakes it through the eventfd.
    #[test]
    fn a_completion_on_another_ring_wakes_the_sleeping_first() {
        let layout = Layout { direct: false, per_ring: 1, rings: 3 };
        let mut rings = Rings::open(layout, 1, 64, 4096).expect("rings");
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        let group = 0;
        rings.push(2, &receive(Sock::Fd(a.as_raw_fd()), group, 42)).expect("push");
        rings.enter(0, Duration::ZERO, Duration::ZERO).expect("submit");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::io::Write::write_all(&mut &b, b"hi").expect("write");
            std::thread::sleep(Duration::from_millis(500));
        });
        let began = crate::clock::Instant::now();
        rings.enter(1, Duration::from_secs(5), Duration::ZERO).expect("wait");
        let woke = began.elapsed();
        let mut out = Vec::new();
        rings.reap(&mut out).expect("reap");
        assert!(woke < Duration::from_secs(2), "slept {woke:?} through a completion on another ring");
        assert!(out.iter().any(|&(tag, result, _)| tag == 42 && result == 2), "{out:?}");
        drop(writer);
    }

    /// A gathered wait holds a completion until its window ends (where the kernel gathers),
    /// never past it, and one with nothing in its window ends at the first completion after.
    #[test]
    fn a_gathered_wait_ends_with_its_window_or_at_the_first_completion_after() {
        let layout = Layout { direct: false, per_ring: 1, rings: 1 };
        let mut rings = Rings::open(layout, 1, 64, 4096).expect("rings");
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        rings.push(0, &receive(Sock::Fd(a.as_raw_fd()), 0, 42)).expect("push");
        rings.enter(0, Duration::ZERO, Duration::ZERO).expect("submit");
        let writer = std::thread::spawn(move || {
            // At 50 ms and at 700 ms.
            for after in [50, 650] {
                std::thread::sleep(Duration::from_millis(after));
                std::io::Write::write_all(&mut &b, b"hi").expect("write");
            }
            std::thread::sleep(Duration::from_millis(500));
        });
        let mut out = Vec::new();
        // A completion at 50 ms, in a window of 300: held to its end, 8 never come.
        let began = crate::clock::Instant::now();
        rings.enter(8, Duration::from_secs(5), Duration::from_millis(300)).expect("wait");
        let woke = began.elapsed();
        rings.reap(&mut out).expect("reap");
        assert!(woke < Duration::from_secs(2), "waited {woke:?} past the window");
        if rings.gathers {
            assert!(woke >= Duration::from_millis(250), "woke at {woke:?}, in the window");
        }
        assert_eq!(out.len(), 1, "{out:?}");
        // Nothing in a window of 100 ms: the wait ends at the completion ~400 ms later.
        let began = crate::clock::Instant::now();
        rings.enter(8, Duration::from_secs(5), Duration::from_millis(100)).expect("wait");
        let woke = began.elapsed();
        rings.reap(&mut out).expect("reap");
        assert!(
            (Duration::from_millis(250)..Duration::from_secs(2)).contains(&woke),
            "woke at {woke:?}, not at the completion"
        );
        assert_eq!(out.len(), 2, "{out:?}");
        drop(writer);
    }
}
