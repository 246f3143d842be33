//! The deadlines of many connections, looked at only when one may be due, for the raw
//! io_uring loops that hold a million of them.
//!
//! A timing wheel of [`SLACK`]-wide ticks: each slot keeps one entry no later than its
//! earliest deadline, and remembers that entry's instant (its `entry` field). A deadline that
//! moves later — the usual case: every answer pushes a read deadline forward — costs nothing:
//! the entry comes up early, the loop finds nothing due, and the slot is entered again at its
//! deadline as it then stands. So the cost is per deadline that comes up (about one per
//! connection per timeout period), not per connection per scan: scanning every connection's
//! deadlines every 50 ms was most of the CPU of a generator holding 18,000 connections that
//! each sent one message every 30 s, and would be 20 million slot visits a second at a
//! million connections.
//!
//! Entering and taking an entry are a push and a pop on the tick's list. (A binary heap did
//! this before: at a million Socket.IO connections, each re-entered at every ping, its `pop`
//! was 19 % of the server's CPU, a cache miss per level of twenty.) A tick's entries come up
//! together once the tick has passed, so a deadline fires at most [`SLACK`] late and a
//! million connections' stale entries wake a loop at most once per tick. Entries further
//! ahead than the wheel turns ([`TICKS`] × [`SLACK`], 164 s) wait in a heap.

use crate::clock::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// How late a deadline may fire, so that the entries coming up together are looked at in one
/// wake (timeouts here are seconds; the scan this replaced fired them up to 50 ms late).
pub const SLACK: Duration = Duration::from_millis(10);
const TICK_NS: u64 = SLACK.as_nanos() as u64;
/// Ticks in one turn of the wheel.
pub const TICKS: usize = 1 << 14;

#[derive(Debug)]
pub struct Deadlines {
    /// Entries by tick (instant / SLACK), modulo [`TICKS`]; each list holds one tick's.
    wheel: Vec<Vec<(Instant, usize)>>,
    /// The first tick not yet taken: the lists hold ticks `cursor .. cursor + TICKS`.
    cursor: u64,
    /// Entries in the wheel.
    in_wheel: usize,
    /// No tick before this one holds an entry (lowered as entries are placed, raised as
    /// [`wait`](Deadlines::wait) looks): a loop's wait looks at no list when, as is usual,
    /// every entry is seconds ahead (it looked at the two or three lists of the ticks within
    /// its cap every turn, ~60 instructions a turn of `serve http`'s loop).
    first: u64,
    /// Entries a whole turn or more ahead.
    far: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines { wheel: vec![Vec::new(); TICKS], cursor: 0, in_wheel: 0, first: 0, far: BinaryHeap::new() }
    }
}

fn tick(at: Instant) -> u64 {
    at.as_nanos() / TICK_NS
}

impl Deadlines {
    pub fn new() -> Self {
        Self::default()
    }

    /// Make sure slot `slot` is looked at no later than `at`. `entry` is the slot's record of
    /// its own entry, updated here.
    pub fn ensure(&mut self, slot: usize, at: Instant, entry: &mut Option<Instant>) {
        if entry.is_some_and(|e| e <= at) {
            return;
        }
        *entry = Some(at);
        if tick(at) >= self.cursor + TICKS as u64 {
            self.far.push(Reverse((at, slot)));
        } else {
            self.place(at, slot);
        }
    }

    /// Into the list of `at`'s tick: one already taken comes up with the next (the cursor
    /// never passes the present). `at` is less than a turn ahead.
    fn place(&mut self, at: Instant, slot: usize) {
        let t = tick(at).max(self.cursor);
        self.list(t).push((at, slot));
        self.in_wheel += 1;
        self.first = self.first.min(t);
    }

    fn list(&mut self, t: u64) -> &mut Vec<(Instant, usize)> {
        &mut self.wheel[(t % TICKS as u64) as usize]
    }

    /// How long a loop may sleep before the next entry comes up (at most `cap`): until the end
    /// of the first tick that holds one, looked for no further than `cap` ahead.
    pub fn wait(&mut self, now: Instant, cap: Duration) -> Duration {
        let mut wait = cap;
        if let Some(Reverse((at, _))) = self.far.peek() {
            wait = wait.min((*at + SLACK).saturating_duration_since(now));
        }
        if self.in_wheel > 0 {
            let horizon = tick(now + cap).min(self.cursor + TICKS as u64 - 1);
            let from = self.first.max(self.cursor);
            match (from..=horizon).find(|t| !self.wheel[(t % TICKS as u64) as usize].is_empty()) {
                Some(t) => {
                    self.first = t;
                    wait = wait.min(Duration::from_nanos(((t + 1) * TICK_NS).saturating_sub(now.as_nanos())));
                }
                None => self.first = from.max(horizon + 1),
            }
        }
        wait
    }

    /// The next slot whose entry is due by `now` (its tick has passed), if any. The caller
    /// looks at the slot's deadlines, calls [`Deadlines::came_up`] with its `entry`, and
    /// [`ensure`](Self::ensure)s the deadlines that remain.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize)> {
        if let Some(Reverse((at, _))) = self.far.peek()
            && *at + SLACK <= now
        {
            return self.far.pop().map(|Reverse(e)| e);
        }
        let now_tick = tick(now);
        while self.cursor < now_tick {
            if self.in_wheel == 0 {
                // Nothing in between: the wheel turns to the present at once.
                self.cursor = now_tick;
            } else if let Some(e) = self.list(self.cursor).pop() {
                self.in_wheel -= 1;
                return Some(e);
            } else {
                self.cursor += 1;
            }
            self.bring_near();
        }
        None
    }

    /// Entries that were a turn or more ahead and now fit the wheel go into it.
    fn bring_near(&mut self) {
        while let Some(Reverse((at, _))) = self.far.peek()
            && tick(*at) < self.cursor + TICKS as u64
        {
            let Some(Reverse((at, slot))) = self.far.pop() else { break };
            self.place(at, slot);
        }
    }

    /// The entry at `at` of a slot whose `entry` this is came up: the slot has no entry left
    /// (unless it was entered again earlier than `at`, which stays).
    pub fn came_up(at: Instant, entry: &mut Option<Instant>) {
        if *entry == Some(at) {
            *entry = None;
        }
    }

    /// Entries held (live and stale).
    pub fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_deadline_adds_no_entry_and_an_earlier_one_does() {
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        let mut entry = None;
        d.ensure(3, t0 + Duration::from_secs(10), &mut entry);
        for s in 11..100 {
            d.ensure(3, t0 + Duration::from_secs(s), &mut entry);
        }
        assert_eq!(d.len(), 1);
        d.ensure(3, t0 + Duration::from_secs(2), &mut entry);
        assert_eq!((d.len(), entry), (2, Some(t0 + Duration::from_secs(2))));
    }

    #[test]
    fn entries_come_up_in_order_and_only_when_due() {
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        let mut entries = [None; 3];
        for (slot, secs) in [(0, 5), (1, 1), (2, 3)] {
            d.ensure(slot, t0 + Duration::from_secs(secs), &mut entries[slot]);
        }
        assert_eq!(d.pop_due(t0), None);
        let due: Vec<usize> =
            std::iter::from_fn(|| d.pop_due(t0 + Duration::from_secs(4))).map(|(_, s)| s).collect();
        assert_eq!(due, vec![1, 2]);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn a_stale_entry_does_not_clear_the_slots_live_one() {
        let t0 = Instant::now();
        let (late, early) = (t0 + Duration::from_secs(9), t0 + Duration::from_secs(1));
        let mut d = Deadlines::new();
        let mut entry = None;
        d.ensure(0, late, &mut entry);
        d.ensure(0, early, &mut entry);
        let (at, _) = d.pop_due(early + SLACK).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, None);
        // Entered again for a deadline at 5 s: the stale 9 s entry leaves it alone.
        d.ensure(0, t0 + Duration::from_secs(5), &mut entry);
        let (at, _) = d.pop_due(t0 + Duration::from_secs(5) + SLACK).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, None);
        d.ensure(0, t0 + Duration::from_secs(20), &mut entry);
        let (at, _) = d.pop_due(late + SLACK).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, Some(t0 + Duration::from_secs(20)));
    }

    #[test]
    fn an_entry_comes_up_within_the_slack_after_its_instant_never_before() {
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        assert_eq!(d.pop_due(t0), None, "the wheel starts turning");
        for (slot, ms) in [(0, 1u64), (1, 37), (2, 990), (3, 200_000), (4, 500_000)] {
            d.ensure(slot, t0 + Duration::from_millis(ms), &mut None);
        }
        assert_eq!(d.len(), 5);
        let mut seen = Vec::new();
        let mut now = t0;
        while seen.len() < 5 && now < t0 + Duration::from_secs(600) {
            while let Some((at, slot)) = d.pop_due(now) {
                assert!(now >= at, "slot {slot} came up {:?} early", at - now);
                assert!(
                    now <= at + SLACK + Duration::from_millis(1),
                    "slot {slot} came up {:?} late",
                    now - at
                );
                seen.push(slot);
            }
            now += Duration::from_millis(1);
        }
        assert_eq!(seen, [0, 1, 2, 3, 4], "in order, the ones a turn ahead too");
        assert!(d.is_empty());
    }

    #[test]
    fn the_wait_gathers_entries_within_the_slack_and_is_capped() {
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        assert_eq!(d.wait(t0, Duration::from_millis(5)), Duration::from_millis(5));
        d.pop_due(t0);
        d.ensure(0, t0 + Duration::from_millis(100), &mut None);
        let wait = d.wait(t0, Duration::from_secs(1));
        assert!(wait > Duration::from_millis(100) && wait <= Duration::from_millis(100) + SLACK, "{wait:?}");
        assert_eq!(d.wait(t0, Duration::from_millis(20)), Duration::from_millis(20));
        assert_eq!(d.wait(t0 + Duration::from_secs(1), Duration::from_secs(1)), Duration::ZERO);
        // A turn or more ahead: waited for too.
        let mut far = Deadlines::new();
        far.pop_due(t0);
        far.ensure(0, t0 + Duration::from_secs(300), &mut None);
        assert_eq!(far.wait(t0, Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(far.wait(t0 + Duration::from_secs(300), Duration::from_secs(1)), SLACK);
    }

    /// The wait as it was computed before the `first` hint: every list from the cursor to the
    /// horizon looked at.
    fn wait_by_scan(d: &Deadlines, now: Instant, cap: Duration) -> Duration {
        let mut wait = cap;
        if let Some(Reverse((at, _))) = d.far.peek() {
            wait = wait.min((*at + SLACK).saturating_duration_since(now));
        }
        let horizon = tick(now + cap).min(d.cursor + TICKS as u64 - 1);
        if let Some(t) = (d.cursor..=horizon).find(|t| !d.wheel[(t % TICKS as u64) as usize].is_empty()) {
            wait = wait.min(Duration::from_nanos(((t + 1) * TICK_NS).saturating_sub(now.as_nanos())));
        }
        wait
    }

    #[test]
    fn the_hinted_wait_is_the_scanned_one() {
        // Entries placed, moved and taken at random over ten simulated seconds, with time
        // moving by a few ms at a time: every wait equals the one found by looking at every list.
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        let mut entries = [None; 32];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut now = t0;
        for _ in 0..20_000 {
            match next(4) {
                0 | 1 => {
                    let slot = next(32) as usize;
                    let at = now + Duration::from_micros(next(200_000));
                    d.ensure(slot, at, &mut entries[slot]);
                }
                2 => {
                    while let Some((at, slot)) = d.pop_due(now) {
                        Deadlines::came_up(at, &mut entries[slot]);
                    }
                }
                _ => now += Duration::from_micros(next(3_000)),
            }
            let cap = Duration::from_millis(1 + next(40));
            assert_eq!(d.wait(now, cap), wait_by_scan(&d, now, cap));
        }
    }
}
