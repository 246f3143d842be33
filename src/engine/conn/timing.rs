//! A connection's clocks, given the time, never reading it: how long a connect, write or read
//! may wait ([`Timeouts`]), and when the protocol's heartbeats fall due and how long the
//! server may stay silent ([`Heartbeat`]).

use super::DRAIN_LIMIT;
use crate::clock::Instant;
use std::time::Duration;

/// The shortest wait given to anything: an operation needs some time.
const MIN_WAIT: Duration = Duration::from_millis(1);

/// How long a connect, write or read may take: `--timeout`, but never past [`DRAIN_LIMIT`]
/// after the run's end, so that a silent server cannot stretch the run. Before the window
/// opens the run's end is not known: the expected one bounds them, and a ramp that overran it
/// still gets [`DRAIN_LIMIT`].
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    timeout: Duration,
    /// The same in nanoseconds, for [`over`](Self::over), asked twice a request.
    timeout_ns: u64,
    /// The run's end plus [`DRAIN_LIMIT`] (expected, while the window is shut).
    drain_end: Instant,
    /// The window is shut: `drain_end` is only expected.
    expected: bool,
    /// Until then an operation gets its whole timeout: [`io`](Self::io)'s answer without
    /// clock arithmetic, per operation (it was 6 % of the generator's user time).
    full_until: Option<Instant>,
}

impl Timeouts {
    #[inline]
    pub fn new(timeout: Duration, run_end: Instant, expected: bool) -> Timeouts {
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        let mut t = Timeouts { timeout, timeout_ns, drain_end: run_end, expected, full_until: None };
        t.set_run_end(run_end, expected);
        t
    }

    /// The run ends at `run_end` (expected: the window is still shut).
    #[inline]
    pub fn set_run_end(&mut self, run_end: Instant, expected: bool) {
        self.drain_end = run_end + DRAIN_LIMIT;
        self.expected = expected;
        self.full_until = if expected && self.timeout > DRAIN_LIMIT {
            None // the slow way, then
        } else {
            self.drain_end.checked_sub(self.timeout)
        };
    }

    /// A connect or write (see the type's comment).
    #[inline]
    pub fn io(&self, now: Instant) -> Duration {
        if self.full_until.is_some_and(|until| now <= until) {
            return self.timeout;
        }
        let left = self.drain_end.saturating_duration_since(now);
        let left = if self.expected { left.max(DRAIN_LIMIT) } else { left };
        left.clamp(MIN_WAIT, self.timeout)
    }

    /// A read, no longer than the protocol lets the server stay silent (until `silent`).
    #[inline]
    pub fn read(&self, now: Instant, silent: Option<Instant>) -> Duration {
        let io = self.io(now);
        match silent {
            Some(at) => io.min(at.saturating_duration_since(now).max(MIN_WAIT)),
            None => io,
        }
    }

    /// A read for the answer to an operation sent at `sent`: due within the timeout of its
    /// send however it trickles in (each read used to get the whole timeout afresh, so a
    /// server sending a byte a second never timed out).
    #[inline]
    pub fn answer(&self, now: Instant, sent: Instant, silent: Option<Instant>) -> Duration {
        let left = (sent + self.timeout).saturating_duration_since(now).max(MIN_WAIT);
        self.read(now, silent).min(left)
    }

    /// Whether the time for something begun at `since` is up: `--timeout` after it, or the
    /// run's end plus [`DRAIN_LIMIT`] (once that end is known). The waits above never fall
    /// below [`MIN_WAIT`], so a peer whose bytes keep coming would restart them for ever:
    /// the connection machine asks this before every wait, and fails what ran out.
    #[inline]
    pub fn over(&self, now: Instant, since: Instant) -> bool {
        now.as_nanos() >= since.as_nanos().saturating_add(self.timeout_ns)
            || (!self.expected && now >= self.drain_end)
    }

    /// Whether the run's end plus [`DRAIN_LIMIT`] has passed (once that end is known).
    #[inline]
    pub fn drained(&self, now: Instant) -> bool {
        !self.expected && now >= self.drain_end
    }

    /// A read during the set-up (TLS, the protocol's handshake): done within the timeout of
    /// the connect.
    #[inline]
    pub fn set_up(&self, now: Instant, connected: Instant) -> Duration {
        let left = (connected + self.timeout).saturating_duration_since(now).max(MIN_WAIT);
        self.io(now).min(left)
    }
}

/// The protocol's heartbeats and the server's silence: when the client's next unprompted
/// message is due (Engine.IO 3's pings), when the server last said anything, and when the
/// connection last looked at its socket.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    pub next_beat: Option<Instant>,
    pub last_rx: Instant,
    pub last_look: Instant,
}

impl Heartbeat {
    #[inline]
    pub fn new(now: Instant) -> Heartbeat {
        Heartbeat { next_beat: None, last_rx: now, last_look: now }
    }

    /// Bytes came in (or the connection opened): the server spoke, and the socket was looked at.
    #[inline]
    pub fn heard(&mut self, now: Instant) {
        self.last_rx = now;
        self.last_look = now;
    }

    /// When the server will have been silent longer than `limit` allows.
    #[inline]
    pub fn silent_at(&self, limit: Option<Duration>) -> Option<Instant> {
        limit.map(|limit| self.last_rx + limit)
    }

    /// A heartbeat every `interval` from now on (`None`: none).
    #[inline]
    pub fn start(&mut self, interval: Option<Duration>, now: Instant) {
        self.next_beat = interval.map(|i| now + i);
    }

    /// Whether a heartbeat is due; if so the next is scheduled an interval on.
    #[inline]
    pub fn due(&mut self, interval: Option<Duration>, now: Instant) -> bool {
        match (self.next_beat, interval) {
            (Some(due), Some(interval)) if now >= due => {
                self.next_beat = Some(now.max(due) + interval);
                true
            }
            _ => false,
        }
    }

    /// When an idle connection should look at its socket next, for messages the server sends
    /// unprompted that need an answer `within` (twice as often, at least a millisecond apart:
    /// a server announcing 0 had it look without end).
    #[inline]
    pub fn next_look(&self, within: Option<Duration>) -> Option<Instant> {
        within.map(|w| self.last_look + (w / 2).max(MIN_WAIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_get_the_whole_timeout_until_the_run_end_cuts_it_short() {
        let now = Instant::now();
        let s = |s: f64| now + Duration::from_secs_f64(s);
        // The run ends at 60 s, a drain limit of 1 s after it, a timeout of 1 s.
        let t = Timeouts::new(Duration::from_secs(1), s(60.0), false);
        assert_eq!(t.io(s(0.0)), Duration::from_secs(1));
        assert_eq!(t.io(s(60.0)), Duration::from_secs(1), "1 s left of the drain limit");
        assert_eq!(t.io(s(60.5)), Duration::from_millis(500));
        assert_eq!(t.io(s(61.0)), MIN_WAIT, "never 0: an operation needs some time");
        assert_eq!(t.io(s(90.0)), MIN_WAIT);
        // While the window is shut, an overrun ramp still gets the drain limit.
        let t = Timeouts::new(Duration::from_secs(5), s(1.0), true);
        assert_eq!(t.io(s(30.0)), DRAIN_LIMIT);
    }

    #[test]
    fn an_answer_is_due_within_the_timeout_of_its_request_and_a_set_up_of_its_connect() {
        let now = Instant::now();
        let ms = Duration::from_millis;
        let t = Timeouts::new(ms(400), now + Duration::from_secs(60), false);
        assert_eq!(t.answer(now + ms(300), now, None), ms(100), "sent 300 ms ago");
        assert_eq!(t.answer(now + ms(500), now, None), MIN_WAIT, "past it");
        assert_eq!(t.answer(now + ms(100), now, Some(now + ms(150))), ms(50), "the silence limit first");
        assert_eq!(t.set_up(now + ms(150), now), ms(250));
        // What the waits' floor hides, `over` says: 400 ms after, the time is up however
        // recently bytes came; and at the run's end plus the drain limit for everything.
        assert!(!t.over(now + ms(399), now) && t.over(now + ms(400), now));
        let t = Timeouts::new(Duration::from_secs(5), now + ms(100), false);
        assert!(t.over(now + ms(100) + DRAIN_LIMIT, now + ms(90)), "the run's end bounds it");
        assert!(t.drained(now + ms(100) + DRAIN_LIMIT) && !t.drained(now + ms(100)));
        let t = Timeouts::new(Duration::from_secs(5), now + ms(100), true);
        assert!(!t.over(now + Duration::from_secs(4), now), "an end only expected bounds nothing");
    }

    #[test]
    fn heartbeats_fall_due_an_interval_apart_and_looks_are_bounded() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let mut h = Heartbeat::new(now);
        h.start(Some(s(25)), now);
        assert!(!h.due(Some(s(25)), now + s(24)));
        assert!(h.due(Some(s(25)), now + s(26)));
        assert_eq!(h.next_beat, Some(now + s(51)), "from when it went");
        assert_eq!(h.silent_at(Some(s(45))), Some(now + s(45)));
        h.heard(now + s(10));
        assert_eq!(h.silent_at(Some(s(45))), Some(now + s(55)));
        assert_eq!(h.next_look(Some(Duration::ZERO)), Some(now + s(10) + MIN_WAIT), "0 is no spin");
        assert_eq!(h.next_look(Some(s(20))), Some(now + s(20)));
        assert_eq!(h.next_look(None), None);
    }
}
