//! `--connect-rate auto`: how fast one core opens connections, adapted to how their set-ups
//! fare. A leaf (it knows only the clock), so that each core's recorder, which every
//! connection machine of the core is handed, can carry it.

use crate::clock::Instant;
use std::time::Duration;

/// The most openings a second a core's opener without `--connect-rate` may reach (the ceiling
/// `--connect-rate auto` has too).
const MAX: f64 = 10_000_000.0;

/// One opening's place in its core's [`Opener`]: no ticket taken yet, or the one it waits on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Turn(Option<u64>);

/// `--connect-rate auto` on one core: TCP's congestion control (AIMD), on set-ups. Each opening
/// takes a ticket, in turn, and goes at its ticket's time at the core's rate of the moment. The
/// rate starts at [`START`](Self::START) per second; every [`PERIOD`](Self::PERIOD) in which no
/// set-up went wrong it grows by [`STEP`](Self::STEP) (up to its share of the maximum, and to
/// at most twice the set-ups done in the period, as TCP's window grows by the segments
/// acknowledged, not by the time passed), and it
/// halves (down to [`FLOOR`](Self::FLOOR)) after a period in which one did (it holds in a
/// period in which no opening waited for it): a set-up (connect,
/// TLS, the protocol's handshake) slower than [`SLOW`](Self::SLOW) — a connect that slow is a SYN
/// the kernel had to send again, a listen queue that overflowed — or one that failed. Only
/// set-ups that began after the last decrease count against the rate: those begun before it
/// tell of the rate it already left (TCP's one decrease per round trip).
#[derive(Debug, Clone)]
pub struct Opener {
    rate: f64,
    max: f64,
    /// Ticket `t` opens at `anchor + (t − anchor_ticket) / rate` (`None`: no ticket yet).
    anchor: Option<Instant>,
    anchor_ticket: f64,
    tickets: u64,
    /// The end of the current period (`None`: not started), whether a set-up went wrong in
    /// it, and when the rate last halved.
    period_end: Option<Instant>,
    trouble: bool,
    /// Set-ups done since the current period began.
    done: u64,
    decreased_at: Option<Instant>,
    /// Openings that go at once, before any is paced: none with `auto`; without
    /// `--connect-rate`, [`BURST`](Self::BURST) ([`Opener::first_openings`]).
    burst: u64,
    /// What it did, for the report.
    pub peak: f64,
    pub decreases: u64,
}

impl Opener {
    pub const START: f64 = 500.0;
    pub const STEP: f64 = 500.0;
    pub const FLOOR: f64 = 50.0;
    pub const PERIOD: Duration = Duration::from_millis(250);
    pub const SLOW: Duration = Duration::from_secs(1);

    /// One core's opener, its share of the run's maximum being `max` per second.
    pub fn new(max: f64) -> Opener {
        let max = max.max(Self::FLOOR);
        Opener {
            rate: Self::START.min(max),
            max,
            anchor: None,
            anchor_ticket: 0.0,
            tickets: 0,
            period_end: None,
            trouble: false,
            done: 0,
            decreased_at: None,
            burst: 0,
            peak: Self::START.min(max),
            decreases: 0,
        }
    }

    /// A core's openings beyond the first this many are paced without `--connect-rate`.
    pub const BURST: u64 = 1024;

    /// A core's opener without `--connect-rate`: each connection's first opening takes a
    /// ticket, the first [`BURST`](Self::BURST) go at once, as every load generator opens its
    /// connections, and those beyond them as `auto` would. Opened all at once, 18,000
    /// connections overflowed a one-core `serve ws`'s listen queue: their SYNs were dropped
    /// and sent again a second later, and in 2 of 5 runs (2026-12-07) 480 and 1,040 set-ups
    /// went past the 5 s timeout. Reopenings, and retries after a failed connect, are not
    /// paced (a server closing every connection is a workload, not a ramp).
    pub fn first_openings() -> Opener {
        let mut o = Opener::new(MAX);
        o.burst = Self::BURST;
        // Ticket t goes at (t − anchor_ticket) / rate: tickets 0 ..= BURST − 1 at once.
        o.anchor_ticket = (Self::BURST - 1) as f64;
        o
    }

    /// Whether an opening waits for its turn: every one with `auto`, each connection's first
    /// without `--connect-rate`.
    pub fn paces(&self, first: bool) -> bool {
        self.burst == 0 || first
    }

    /// Whether the report tells what it did: always with `auto`; without `--connect-rate`,
    /// once it held an opening back.
    pub fn reported(&self) -> bool {
        self.burst == 0 || self.tickets > self.burst
    }

    /// The rate now, per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The next opening's ticket.
    pub fn ticket(&mut self) -> u64 {
        self.tickets += 1;
        self.tickets - 1
    }

    /// When ticket `t` may open, at the rate of `now`.
    pub fn time_for(&mut self, t: u64, now: Instant) -> Instant {
        self.adapt(now);
        let anchor = *self.anchor.get_or_insert(now);
        anchor + Duration::from_secs_f64((t as f64 - self.anchor_ticket).max(0.0) / self.rate)
    }

    /// When to look again if the opening holding `turn` must wait for it at this core's rate
    /// (`None`: open now, and the turn is spent). It takes a ticket once; the time of its
    /// ticket moves with the rate, so it sleeps until the earliest its turn could come (were
    /// the rate to rise all the while), and looks again.
    pub fn wait(&mut self, turn: &mut Turn, now: Instant) -> Option<Instant> {
        let ticket = *turn.0.get_or_insert_with(|| self.ticket());
        let at = self.time_for(ticket, now);
        if at <= now {
            turn.0 = None;
            return None;
        }
        let earliest = self.earliest_for(ticket, now);
        Some(at.min(earliest.max(now + Duration::from_millis(1))))
    }

    /// The earliest ticket `t` could open: if the rate rose by a step every period from `now`
    /// on. A connection that sleeps until then wakes on its turn or before it, never after.
    pub fn earliest_for(&self, t: u64, now: Instant) -> Instant {
        let anchor = self.anchor.unwrap_or(now);
        let due = self.anchor_ticket + now.saturating_duration_since(anchor).as_secs_f64() * self.rate;
        // The next step may come at once (a period's end is backdated to its start).
        now + fastest(t as f64 - due, (self.rate + Self::STEP).min(self.max), self.max)
    }

    /// The soonest `connections` could all open from the start, the first `burst` of them at
    /// once (the window's expected opening; the bound it waits for at most is at the floor
    /// rate).
    pub fn fastest(connections: usize, burst: u64, max: f64) -> Duration {
        let max = max.max(Self::FLOOR);
        fastest(connections.saturating_sub(burst as usize) as f64, Self::START.min(max), max)
    }

    /// A set-up that began at `started` was done at `now`.
    pub fn set_up(&mut self, started: Instant, now: Instant) {
        self.adapt(now);
        self.done += 1;
        self.pending(started, now);
    }

    /// A set-up that began at `started` is not done at `now`: one already slower than
    /// [`SLOW`](Self::SLOW) is trouble now, not when it ends (a server falling behind answers
    /// late, and the rate would climb meanwhile on the news of set-ups begun before the queue
    /// formed).
    pub fn pending(&mut self, started: Instant, now: Instant) {
        if now.saturating_duration_since(started) > Self::SLOW {
            self.went_wrong(started, now);
        }
    }

    /// A set-up that began at `started` failed at `now`.
    pub fn went_wrong(&mut self, started: Instant, now: Instant) {
        self.adapt(now);
        if self.decreased_at.is_none_or(|at| started >= at) {
            self.trouble = true;
        }
    }

    /// The periods that ended by `now`: the first with what it saw, any after it (nothing was
    /// asked of the opener meanwhile, so nothing went wrong) as steps up.
    fn adapt(&mut self, now: Instant) {
        let Some(end) = self.period_end else {
            self.period_end = Some(now + Self::PERIOD);
            return;
        };
        if now < end {
            return;
        }
        let quiet = (now.saturating_duration_since(end).as_nanos() / Self::PERIOD.as_nanos()) as f64;
        // The rate rises only where it held openings back (tickets taken beyond those due).
        let waited = self.tickets as f64 > self.due_at(end);
        // Set-ups done a second over the period (and the quiet ones after it).
        let done = std::mem::take(&mut self.done) as f64 / (Self::PERIOD.as_secs_f64() * (1.0 + quiet));
        let rate = if self.trouble {
            self.decreases += 1;
            self.decreased_at = Some(end);
            (self.rate / 2.0).max(Self::FLOOR)
        } else if waited {
            (self.rate + (1.0 + quiet) * Self::STEP).min(self.max).min((2.0 * done).max(self.rate))
        } else {
            self.rate
        };
        // From the start of the period `now` is in: what went unused before it is not kept.
        self.rebase(end + Self::PERIOD.mul_f64(quiet), rate);
        self.trouble = false;
        self.period_end = Some(end + Self::PERIOD.mul_f64(quiet + 1.0));
    }

    /// How many tickets are due by `at` at the current rate.
    fn due_at(&self, at: Instant) -> f64 {
        let Some(anchor) = self.anchor else { return self.anchor_ticket };
        self.anchor_ticket + at.saturating_duration_since(anchor).as_secs_f64() * self.rate
    }

    /// The rate changes at `at`: the tickets due by then stay due. What nobody used is not
    /// kept (a burst of openings after a quiet spell starts at the rate, not all at once).
    fn rebase(&mut self, at: Instant, rate: f64) {
        if let Some(anchor) = self.anchor {
            let at = at.max(anchor);
            self.anchor_ticket = self.due_at(at).min(self.tickets as f64);
            self.anchor = Some(at);
        }
        self.rate = rate;
        self.peak = self.peak.max(rate);
    }
}

/// How long `tickets` openings take at `rate` per second rising by a step every period (at
/// most to `max`): the time τ in which `rate·τ + a·τ²/2` reaches them, `a` the rise per second.
fn fastest(tickets: f64, rate: f64, max: f64) -> Duration {
    if tickets <= 0.0 {
        return Duration::ZERO;
    }
    let a = Opener::STEP / Opener::PERIOD.as_secs_f64();
    let to_max = ((max - rate) / a).max(0.0);
    let by_max = rate * to_max + a * to_max * to_max / 2.0;
    let secs = if tickets <= by_max {
        ((rate * rate + 2.0 * a * tickets).sqrt() - rate) / a
    } else {
        to_max + (tickets - by_max) / max
    };
    Duration::from_secs_f64(secs.clamp(0.0, 1e7))
}

/// What the openers of several cores did, added: the sum of their peak rates and of their
/// rates at the end, per second, and how many times they halved.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub peak: f64,
    pub last: f64,
    pub decreases: u64,
}

impl Totals {
    pub fn add(&mut self, o: &Opener) {
        self.peak += o.peak;
        self.last += o.rate();
        self.decreases += o.decreases;
    }

    pub fn merge(&mut self, t: &Totals) {
        self.peak += t.peak;
        self.last += t.last;
        self.decreases += t.decreases;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// `n` set-ups done at `ms` after `t0`, each quick (begun a millisecond before).
    fn done(o: &mut Opener, t0: Instant, ms: u64, n: u64) {
        for _ in 0..n {
            o.set_up(at(t0, ms - 1), at(t0, ms));
        }
    }

    #[test]
    fn tickets_go_at_the_start_rate_and_the_rate_steps_up_while_set_ups_keep_up() {
        let t0 = Instant::now();
        let mut o = Opener::new(1e9);
        let times: Vec<Duration> = (0..4)
            .map(|_| {
                let t = o.ticket();
                o.time_for(t, t0) - t0
            })
            .collect();
        assert_eq!(times, [0, 2, 4, 6].map(Duration::from_millis));
        wait_many(&mut o);
        // A period in which the 125 set-ups it let go were done: 500/s more; ticket 125 was
        // due at 250 ms, the rest come faster.
        done(&mut o, t0, 200, 125);
        let t = o.time_for(200, at(t0, 250));
        assert_eq!(o.rate(), 1000.0);
        assert_eq!(t, at(t0, 250 + 75));
        // A period with no set-up done: no news, no rise (it rose by the time passed, and
        // outran a server that answered 280 handshakes a second ninefold).
        o.time_for(0, at(t0, 500));
        assert_eq!(o.rate(), 1000.0);
        // Four quiet periods after 2,000 set-ups: four steps at once.
        done(&mut o, t0, 600, 2000);
        o.time_for(0, at(t0, 1500));
        assert_eq!((o.rate(), o.decreases), (3000.0, 0));
    }

    #[test]
    fn without_a_connect_rate_the_first_openings_go_at_once_and_the_rest_are_paced() {
        let t0 = Instant::now();
        let mut o = Opener::first_openings();
        assert!(o.paces(true) && !o.paces(false), "reopenings are not paced");
        let mut turn = Turn::default();
        for _ in 0..Opener::BURST {
            assert_eq!(o.wait(&mut turn, t0), None, "the burst goes at once");
        }
        assert!(!o.reported(), "an opener that held nothing back is not in the report");
        let times: Vec<Duration> = (0..3)
            .map(|_| {
                let t = o.ticket();
                o.time_for(t, t0) - t0
            })
            .collect();
        assert_eq!(times, [2, 4, 6].map(Duration::from_millis), "then 500/s");
        assert!(o.reported());
        assert!(Opener::new(1e9).paces(false), "auto paces every opening");
        assert_eq!(Opener::fastest(1024, Opener::BURST, 1e9), Duration::ZERO);
        assert!(Opener::fastest(2048, Opener::BURST, 1e9) > Duration::ZERO);
    }

    #[test]
    fn the_rate_rises_to_at_most_twice_the_set_ups_done() {
        let (t0, mut o) = backlogged(1e9);
        // A server that sets up 280 a second (70 in a period) while 500 go: 560/s, not 1,000.
        done(&mut o, t0, 200, 70);
        o.time_for(0, at(t0, 250));
        assert_eq!(o.rate(), 560.0);
        // Fewer than half the rate done: it holds (never falls for it: halving is for trouble).
        done(&mut o, t0, 400, 70);
        o.time_for(0, at(t0, 500));
        assert_eq!((o.rate(), o.decreases), (560.0, 0));
    }

    /// Openings waiting far beyond the rate (the rate rises only where it holds some back).
    fn wait_many(o: &mut Opener) {
        for _ in 0..100_000 {
            o.ticket();
        }
    }

    /// An opener started at the returned instant with openings waiting far beyond its rate.
    fn backlogged(max: f64) -> (Instant, Opener) {
        let t0 = Instant::now();
        let mut o = Opener::new(max);
        wait_many(&mut o);
        o.time_for(0, t0);
        (t0, o)
    }

    /// Periods `from..=to` (ending at 250 ms each), in each of which plenty of set-ups were
    /// done quickly.
    fn busy(o: &mut Opener, t0: Instant, periods: std::ops::RangeInclusive<u64>) {
        for p in periods {
            done(o, t0, 250 * p - 10, 10_000);
            o.time_for(0, at(t0, 250 * p));
        }
    }

    #[test]
    fn a_slow_or_failed_set_up_halves_once_and_the_older_ones_do_not_again() {
        let (t0, mut o) = backlogged(1e9);
        busy(&mut o, t0, 1..=8);
        assert_eq!(o.rate(), 4500.0);
        busy(&mut o, t0, 9..=12);
        assert_eq!(o.rate(), 6500.0);
        // A set-up begun at 1.9 s took 1.2 s: the period it ends in halves the rate.
        o.set_up(at(t0, 1900), at(t0, 3100));
        o.set_up(at(t0, 2000), at(t0, 2500)); // quick: nothing
        o.time_for(0, at(t0, 3250));
        assert_eq!((o.rate(), o.decreases), (3250.0, 1));
        // Another slow one that began before the decrease (at 3.25 s) tells of the old rate.
        o.went_wrong(at(t0, 3000), at(t0, 3300));
        done(&mut o, t0, 3400, 10_000);
        o.time_for(0, at(t0, 3500));
        assert_eq!((o.rate(), o.decreases), (3750.0, 1));
        // One begun after it halves again; the floor holds.
        o.went_wrong(at(t0, 3400), at(t0, 3600));
        o.time_for(0, at(t0, 3750));
        assert_eq!((o.rate(), o.decreases), (1875.0, 2));
        for p in 0..10 {
            o.went_wrong(at(t0, 3750 + 250 * p + 1), at(t0, 3750 + 250 * p + 2));
            o.time_for(0, at(t0, 4000 + 250 * p));
        }
        assert_eq!(o.rate(), Opener::FLOOR);
        assert_eq!(o.peak, 6500.0);
        // A set-up not done after a second is trouble then, before it ends (the last
        // decrease was at 6.25 s).
        busy(&mut o, t0, 26..=28);
        let rate = o.rate();
        assert_eq!(rate, Opener::FLOOR + 3.0 * Opener::STEP);
        o.pending(at(t0, 6900), at(t0, 7200)); // 300 ms: nothing
        done(&mut o, t0, 7200, 10_000);
        o.time_for(0, at(t0, 7250));
        assert_eq!(o.rate(), rate + Opener::STEP);
        o.pending(at(t0, 6300), at(t0, 7400)); // 1.1 s, begun after the decrease
        o.time_for(0, at(t0, 7500));
        assert_eq!((o.rate(), o.decreases), ((rate + Opener::STEP) / 2.0, 13));
    }

    #[test]
    fn the_maximum_caps_the_steps() {
        let (t0, mut o) = backlogged(800.0);
        done(&mut o, t0, 100, 5000);
        o.time_for(0, at(t0, 10_000));
        assert_eq!(o.rate(), 800.0);
        assert_eq!(Opener::new(10.0).rate(), Opener::FLOOR);
    }

    #[test]
    fn nobody_waiting_holds_the_rate_and_keeps_no_credit() {
        let t0 = Instant::now();
        let mut o = Opener::new(1e9);
        let first = o.ticket();
        assert_eq!(o.time_for(first, t0), t0);
        // Ten quiet seconds: the rate held no opening back, so it did not rise.
        o.time_for(0, at(t0, 10_000));
        assert_eq!(o.rate(), Opener::START);
        // A burst after them goes at the rate, not at once.
        let burst: Vec<u64> = (0..100).map(|_| o.ticket()).collect();
        let last = o.time_for(burst[99], at(t0, 10_000));
        assert!(last >= at(t0, 10_000 + 190), "{:?}", last - t0);
    }
}
