//! When each connection's next operation is due: the only thing a workload decides.
//!
//! The engine's connection loop asks its [`Pacer`] for the intended send time of the next
//! operation and sends it then (never earlier). Latency is measured from that intended time, so a
//! paced workload that falls behind shows the queueing it caused (wrk2's correction); in a closed
//! loop the intended time is simply "now". New modes (fixed rate, per-connection interval,
//! connection per operation) belong here and need no second copy of the engine's loop.

use crate::clock::Instant;
use std::time::Duration;

/// How operations are paced; one value for the whole run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// Each connection keeps `depth` operations in flight and sends the next one as soon as a
    /// response frees a slot (wrk, ab, wsbench).
    ClosedLoop,
    /// Each connection sends one operation every `interval` (`--rate` total ops/s split over
    /// the connections), at most `depth` in flight; an operation that cannot go out on time
    /// (slots full, server slow) goes late, and its latency counts from when it was due (wrk2).
    FixedRate { interval: Duration },
    /// The total rate follows `stages` from the measured window's opening (`--rate
    /// 1000:30s,1000..5000:60s`), split evenly over `connections`: each connection's next
    /// operation is due one of its intervals at the rate of the moment after the last.
    Staged { stages: &'static [Stage], connections: usize },
}

/// A stage of a rate schedule: the total rate goes from `from` to `to` operations per second,
/// linearly, over `length` (a step when they are equal).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub from: f64,
    pub to: f64,
    pub length: Duration,
}

impl Stage {
    /// How the stage is written on the command line: `1000/s` or `1000..5000/s`, and its length.
    pub fn label(&self) -> String {
        if self.from == self.to {
            format!("{}/s for {:?}", self.from, self.length)
        } else {
            format!("{}..{}/s over {:?}", self.from, self.to, self.length)
        }
    }
}

/// The total rate `elapsed` into `stages` (after the last: its final rate).
pub fn rate_at(stages: &[Stage], mut elapsed: Duration) -> f64 {
    for s in stages {
        if elapsed < s.length {
            return s.from + (s.to - s.from) * (elapsed.as_secs_f64() / s.length.as_secs_f64());
        }
        elapsed -= s.length;
    }
    stages.last().map_or(0.0, |s| s.to)
}

/// A paced connection's longest interval (a rate schedule's lowest rate is bounded so).
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

impl Workload {
    /// The pacer of connection `index` of `connections`: paced connections start spread over
    /// one interval, so that they do not all send at the same instant.
    pub fn pacer(self, index: usize, connections: usize) -> Pacer {
        let share = index as f64 / connections.max(1) as f64;
        let offset = match self {
            Workload::ClosedLoop => Duration::ZERO,
            Workload::FixedRate { interval } => interval.mul_f64(share),
            Workload::Staged { stages, connections } => {
                interval_at(stages, connections, Duration::ZERO).mul_f64(share)
            }
        };
        Pacer { workload: self, next: None, offset, origin: None }
    }
}

/// A connection's interval `elapsed` into a rate schedule shared by `connections`.
fn interval_at(stages: &[Stage], connections: usize, elapsed: Duration) -> Duration {
    let rate = rate_at(stages, elapsed);
    Duration::try_from_secs_f64(connections as f64 / rate).unwrap_or(MAX_INTERVAL).min(MAX_INTERVAL)
}

/// One connection's schedule.
#[derive(Debug, Clone)]
pub struct Pacer {
    workload: Workload,
    /// When the next operation is due (paced workloads, once started).
    next: Option<Instant>,
    offset: Duration,
    /// A rate schedule's start (the window's opening): where its stages are counted from.
    origin: Option<Instant>,
}

impl Pacer {
    /// The intended send time of the next operation, given the time now (not yet taken).
    pub fn due(&mut self, now: Instant) -> Instant {
        match self.workload {
            Workload::ClosedLoop => now,
            _ => {
                self.origin.get_or_insert(now);
                *self.next.get_or_insert(now + self.offset)
            }
        }
    }

    /// Start the schedule at `at` (the measured window's opening) unless it has started:
    /// the first operation is then due at `at` plus this connection's offset, however late
    /// the engine gets round to asking — an engine waking a million connections at the
    /// window's opening takes a second to reach the last, and a schedule started then would
    /// hide that second from the latency and push operations past the run's end.
    pub fn start(&mut self, at: Instant) {
        if self.workload != Workload::ClosedLoop {
            self.origin.get_or_insert(at);
            self.next.get_or_insert(at + self.offset);
        }
    }

    /// The interval after an operation due at `due`.
    fn interval_after(&self, due: Instant) -> Option<Duration> {
        match self.workload {
            Workload::ClosedLoop => None,
            Workload::FixedRate { interval } => Some(interval),
            Workload::Staged { stages, connections } => {
                let elapsed = due.saturating_duration_since(self.origin.unwrap_or(due));
                Some(interval_at(stages, connections, elapsed))
            }
        }
    }

    /// The operation that was due has been sent: the next one is due an interval later.
    pub fn taken(&mut self) {
        if let Some(next) = self.next
            && let Some(interval) = self.interval_after(next)
        {
            self.next = Some(next + interval);
        }
    }

    /// How many operations of the schedule fall due from the next one until `end` (not
    /// counting those before `from`, the warm-up's): a paced connection's operations that
    /// were due and never sent when the run ended. Zero in a closed loop.
    pub fn due_before(&self, from: Instant, end: Instant) -> u64 {
        if let Workload::Staged { .. } = self.workload {
            return self.staged_due_before(from, end);
        }
        let (Workload::FixedRate { interval }, Some(next)) = (self.workload, self.next) else { return 0 };
        let first = next.max(from);
        if first >= end || interval.is_zero() {
            return 0;
        }
        // Due at next, next + interval, …: those in [first, end).
        let skipped = first.saturating_duration_since(next).as_nanos().div_ceil(interval.as_nanos());
        let total = end.saturating_duration_since(next).as_nanos().div_ceil(interval.as_nanos());
        (total - skipped) as u64
    }

    /// [`due_before`](Self::due_before) on a rate schedule: its due times walked (bounded:
    /// past ten million a connection, the rest is not counted).
    fn staged_due_before(&self, from: Instant, end: Instant) -> u64 {
        let Some(mut due) = self.next else { return 0 };
        let mut count = 0;
        for _ in 0..10_000_000u64 {
            if due >= end {
                break;
            }
            if due >= from {
                count += 1;
            }
            match self.interval_after(due) {
                Some(i) if !i.is_zero() => due += i,
                _ => break,
            }
        }
        count
    }

    /// Whether latency should also be kept from the actual send time (paced workloads, whose
    /// operations can go out later than intended).
    pub fn paced(&self) -> bool {
        self.workload != Workload::ClosedLoop
    }
}

/// The shape of a load: how many connections, how much in flight, how long, how paced. The
/// plan decides it once; the engines drive it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Connections in all, split across cores.
    pub connections: usize,
    /// Operations in flight per connection.
    pub depth: usize,
    /// Answered operations wanted in all, split across connections; `None`: until the deadline.
    pub ops: Option<u64>,
    /// Measured window length; the run also stops at `warmup + duration`.
    pub duration: Duration,
    pub warmup: Duration,
    /// A connect, write or answer that takes longer fails its connection with `timeout`.
    pub timeout: Duration,
    pub workload: Workload,
    /// A connection per operation (`--no-keepalive`): connect, set up, one operation, close.
    pub per_op: bool,
    /// How fast connections open (`--connect-rate`; `None`: each core's first
    /// [`BURST`](crate::opener::Opener::BURST) at once, the rest as `auto`).
    pub connect_rate: Option<ConnectRate>,
    /// The measured window opens at this wall-clock time (`--start-at`), never before.
    pub start_at: Option<std::time::SystemTime>,
    /// Cut the measured window into intervals this long (`--report-every`).
    pub report_every: Option<Duration>,
}

impl Shape {
    /// The connections that connect: only those with operations to send (with `-n` below
    /// `-c`, `n` of them).
    pub fn connecting(&self) -> usize {
        self.ops.map_or(self.connections, |n| self.connections.min(n as usize))
    }

    /// When connection `index` opens after the start (`--connect-rate N`: index / N; otherwise
    /// when its core's [`Opener`](crate::opener::Opener) lets it).
    pub fn connect_after(&self, index: usize) -> Duration {
        match self.connect_rate {
            Some(ConnectRate::Fixed(r)) => Duration::from_secs_f64(index as f64 / r),
            Some(ConnectRate::Auto { .. }) | None => Duration::ZERO,
        }
    }

    /// How long opening the [`connecting`](Self::connecting) connections is expected to take:
    /// the fixed rate's ramp to the last of them, or the soonest the cores' openers could
    /// (with `auto`; without `--connect-rate`, each core's first
    /// [`BURST`](crate::opener::Opener::BURST) at once). Cores hold contiguous runs of the
    /// connections, so the first core opens the most. The window waits on, up to
    /// [`ramp_bound`](Self::ramp_bound).
    pub fn ramp_expected(&self, cores: usize) -> Duration {
        use crate::opener::Opener;
        let cores = cores.max(1);
        let connecting = self.connecting();
        let first_core = connecting.min(self.connections.div_ceil(cores));
        match self.connect_rate {
            Some(ConnectRate::Auto { max }) => {
                Opener::fastest(first_core.saturating_sub(1), 0, max / cores as f64)
            }
            Some(ConnectRate::Fixed(_)) => self.connect_after(connecting.saturating_sub(1)),
            None => Opener::fastest(first_core, Opener::BURST, f64::MAX),
        }
    }

    /// How long opening `connections` over `cores` may take at the slowest (the bound the
    /// window waits for at most): the fixed rate's ramp, or each core's opener at its floor
    /// rate ([`FLOOR`](crate::opener::Opener::FLOOR), a core's) beyond what goes at once.
    /// Cores open in parallel and hold contiguous runs of the connections, so the first core,
    /// which holds the most, bounds it.
    pub fn ramp_bound(&self, connections: usize, cores: usize) -> Duration {
        use crate::opener::Opener;
        let first_core = connections.div_ceil(cores.max(1));
        match self.connect_rate {
            Some(ConnectRate::Auto { .. }) => Duration::from_secs_f64(first_core as f64 / Opener::FLOOR),
            Some(ConnectRate::Fixed(_)) => self.connect_after(connections),
            // A connection per operation opens when its operation is due: nothing is paced.
            None if self.per_op => Duration::ZERO,
            None => Duration::from_secs_f64(
                first_core.saturating_sub(Opener::BURST as usize) as f64 / Opener::FLOOR,
            ),
        }
    }
}

/// `--connect-rate`: how fast connections open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConnectRate {
    /// N per second in all: connection i at i/N s.
    Fixed(f64),
    /// As fast as the set-ups keep up, at most `max` per second in all: each core's
    /// [`Opener`](crate::opener::Opener).
    Auto { max: f64 },
}

/// When a connection stops sending: at a time, after a number of operations, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Operations this connection sends in the measured window (`-n` split across connections).
    pub ops: Option<u64>,
    /// No operation is sent at or after this instant.
    pub deadline: Instant,
    /// Operations intended before this instant are warm-up: sent, audited, not reported.
    pub measure_from: Instant,
}

/// The measured window of a run opens once every connection is set up (its connect and the
/// protocol's handshake done) or has failed its first try — as wsbench starts its clock —
/// and at the latest after `latest_after` from the start, so a target that never answers
/// cannot hold it shut. Shared by every connection of a run, across cores.
/// With `--start-at` it opens at that instant, never before (every host of a fleet measures
/// the same window).
#[derive(Debug)]
pub struct Window {
    connections: usize,
    settled: std::sync::atomic::AtomicUsize,
    /// When the last connection settled.
    all_set: std::sync::OnceLock<Instant>,
    opened: std::sync::OnceLock<Instant>,
    latest_after: Duration,
    not_before: Option<Instant>,
}

impl Window {
    pub fn new(connections: usize, latest_after: Duration, not_before: Option<Instant>) -> Window {
        Window {
            connections,
            settled: std::sync::atomic::AtomicUsize::new(0),
            all_set: std::sync::OnceLock::new(),
            opened: std::sync::OnceLock::new(),
            latest_after,
            not_before,
        }
    }

    /// A connection is set up, or failed its first try (each says so once).
    pub fn settle(&self, now: Instant) {
        let settled = self.settled.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        if settled >= self.connections {
            self.all_set.get_or_init(|| now);
        }
    }

    /// When the window opened, if it has by `now` (runs starting at `start`).
    pub fn opened(&self, now: Instant, start: Instant) -> Option<Instant> {
        if let Some(at) = self.opened.get() {
            return Some(*at);
        }
        let ready = match self.all_set.get() {
            Some(at) => *at,
            // Nothing to wait for (a connection per operation sets up inside each one): open
            // at the start. (It waited out its bound: a 10 s run measured 0 s.)
            None if self.connections == 0 => start,
            None => start + self.latest_after,
        };
        let at = self.not_before.map_or(ready, |t| t.max(ready));
        (now >= at).then(|| *self.opened.get_or_init(|| at))
    }

    /// How long a connection already set up should sleep before looking again: half the
    /// time the others still need at the pace they have been settling (1 ms to 50 ms), so
    /// that thousands of waiting connections wake a few times each, not every millisecond,
    /// and the last ones, near the opening, every millisecond.
    pub fn recheck_in(&self, now: Instant, start: Instant) -> Duration {
        let settled = self.settled.load(std::sync::atomic::Ordering::Acquire);
        if settled == 0 {
            return Duration::from_millis(10);
        }
        let left = self.connections.saturating_sub(settled) as f64 / settled as f64;
        now.saturating_duration_since(start)
            .mul_f64(left / 2.0)
            .clamp(Duration::from_millis(1), Duration::from_millis(50))
    }

    /// The earliest it may open (`--start-at`).
    pub fn not_before(&self) -> Option<Instant> {
        self.not_before
    }

    /// When it opened, once the run is over (`None`: it never had to, or did not).
    pub fn opened_at(&self) -> Option<Instant> {
        self.opened.get().copied()
    }
}

/// Split `total` operations over `parts` connections as evenly as possible (the first
/// `total % parts` get one more).
pub fn split_ops(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts.max(1) as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_started_at_the_window_does_not_move_with_the_first_ask() {
        let open = Instant::now();
        let interval = Duration::from_secs(30);
        let mut p = Workload::FixedRate { interval }.pacer(1, 2);
        p.start(open);
        // Asked a second late: still due 15 s after the opening, and every 30 s from there.
        assert_eq!(p.due(open + Duration::from_secs(1)), open + Duration::from_secs(15));
        p.taken();
        assert_eq!(p.due(open + Duration::from_secs(16)), open + Duration::from_secs(45));
        // A schedule already under way is not restarted.
        p.start(open + Duration::from_secs(100));
        assert_eq!(p.due(open), open + Duration::from_secs(45));
        let mut closed = Workload::ClosedLoop.pacer(0, 1);
        closed.start(open);
        assert_eq!(closed.due(open + interval), open + interval);
    }

    /// The slowest opening is the first core's (cores open in parallel, each at its opener's
    /// floor at the least): with 16 cores a million connections were bounded as if one core
    /// opened them all, 5.5 hours where 21 minutes is the most it can take.
    #[test]
    fn the_ramp_bound_is_the_first_cores_at_its_openers_floor() {
        let shape = |connect_rate| Shape {
            connections: 1_000_000,
            depth: 1,
            ops: None,
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(5),
            workload: Workload::ClosedLoop,
            per_op: false,
            connect_rate,
            start_at: None,
            report_every: None,
        };
        let floor = crate::opener::Opener::FLOOR;
        let burst = crate::opener::Opener::BURST as f64;
        let secs = |d: Duration| d.as_secs_f64();
        let default = shape(None);
        assert_eq!(secs(default.ramp_bound(1_000_000, 1)), (1e6 - burst) / floor);
        assert_eq!(secs(default.ramp_bound(1_000_000, 16)), (62_500.0 - burst) / floor);
        // A core with no more than its burst paces nothing.
        assert_eq!(default.ramp_bound(2048, 2), Duration::ZERO);
        let auto = shape(Some(ConnectRate::Auto { max: 1e6 }));
        assert_eq!(secs(auto.ramp_bound(1_000_000, 16)), 62_500.0 / floor);
        // Three cores of ten connections: the first holds four.
        assert_eq!(secs(auto.ramp_bound(10, 3)), 4.0 / floor);
        // A fixed rate is the run's, whatever the cores.
        let fixed = shape(Some(ConnectRate::Fixed(1000.0)));
        assert_eq!(fixed.ramp_bound(1000, 4), Duration::from_secs(1));
        let per_op = Shape { per_op: true, ..default };
        assert_eq!(per_op.ramp_bound(1_000_000, 1), Duration::ZERO);
    }

    #[test]
    fn waiting_connections_look_again_sooner_as_the_last_ones_settle() {
        let ms = Duration::from_millis;
        let start = Instant::now();
        let w = Window::new(1000, Duration::from_secs(10), None);
        assert_eq!(w.recheck_in(start, start), Duration::from_millis(10), "nobody settled yet");
        for _ in 0..100 {
            w.settle(start);
        }
        // 100 of 1000 in 10 ms: 900 more at that pace take 90 ms; look again in 45.
        assert_eq!(w.recheck_in(start + ms(10), start), Duration::from_millis(45));
        for _ in 0..899 {
            w.settle(start);
        }
        assert_eq!(w.recheck_in(start + ms(100), start), Duration::from_millis(1), "the last one: every ms");
        assert!(w.opened(start + ms(100), start).is_none());
        w.settle(start + ms(101));
        assert_eq!(w.opened(start + ms(101), start), Some(start + ms(101)));
    }

    /// A run with no connection to wait for (a connection per operation) is measured from
    /// its start: it waited out its latest opening, and a 10 s `--no-keepalive` run reported
    /// 0.0 s and two billion operations a second.
    #[test]
    fn a_window_with_nothing_to_wait_for_opens_at_the_start() {
        let start = Instant::now();
        let w = Window::new(0, Duration::from_secs(10), None);
        assert_eq!(w.opened(start, start), Some(start));
        let later = start + Duration::from_secs(3);
        let w = Window::new(0, Duration::from_secs(10), Some(later));
        assert_eq!(w.opened(start, start), None, "--start-at still holds it");
        assert_eq!(w.opened(later, start), Some(later));
    }

    #[test]
    fn operations_due_and_never_sent_are_counted_from_the_schedule() {
        let ms = Duration::from_millis;
        let mut p = Workload::FixedRate { interval: ms(10) }.pacer(0, 1);
        let t0 = Instant::now();
        assert_eq!(p.due(t0), t0);
        // Due at 0, 10, …, 90 ms: ten before 100 ms, none at or after it.
        assert_eq!(p.due_before(t0, t0 + ms(100)), 10);
        assert_eq!(p.due_before(t0, t0 + ms(91)), 10);
        assert_eq!(p.due_before(t0, t0 + ms(90)), 9);
        assert_eq!(p.due_before(t0 + ms(35), t0 + ms(100)), 6, "from 40 ms: the warm-up's left out");
        p.taken();
        assert_eq!(p.due_before(t0, t0 + ms(100)), 9);
        assert_eq!(p.due_before(t0, t0 + ms(5)), 0);
        assert_eq!(Workload::ClosedLoop.pacer(0, 1).due_before(t0, t0 + ms(100)), 0);
    }

    #[test]
    fn closed_loop_is_due_now() {
        let mut p = Workload::ClosedLoop.pacer(0, 1);
        let now = Instant::now();
        assert_eq!(p.due(now), now);
        p.taken();
        assert_eq!(p.due(now), now);
        assert!(!p.paced());
    }

    #[test]
    fn fixed_rate_keeps_its_schedule_even_when_late() {
        let ms = Duration::from_millis;
        let mut p = Workload::FixedRate { interval: ms(10) }.pacer(1, 2);
        let now = Instant::now();
        assert_eq!(p.due(now), now + ms(5), "connection 1 of 2 starts half an interval in");
        assert_eq!(p.due(now + ms(1)), now + ms(5), "asking again does not move it");
        p.taken();
        assert_eq!(p.due(now + ms(50)), now + ms(15), "late sends keep the intended times");
        assert!(p.paced());
    }

    #[test]
    fn ops_split_evenly_and_add_up() {
        let parts: Vec<u64> = (0..7).map(|i| split_ops(100, 7, i)).collect();
        assert_eq!(parts.iter().sum::<u64>(), 100);
        assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
        assert_eq!(split_ops(3, 5, 4), 0);
    }
}
