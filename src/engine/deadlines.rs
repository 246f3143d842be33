//! The deadlines of many connections, looked at only when one may be due, for the raw
//! io_uring loops that hold a million of them.
//!
//! A min-heap of `(instant, slot)` in which each slot keeps one entry no later than its
//! earliest deadline, and remembers that entry's instant (its `entry` field). A deadline that
//! moves later — the usual case: every answer pushes a read deadline forward — costs nothing:
//! the entry comes up early, the loop finds nothing due, and the slot is entered again at its
//! deadline as it then stands. So the cost is per deadline that comes up (about one per
//! connection per timeout period), not per connection per scan: scanning every connection's
//! deadlines every 50 ms was most of the CPU of a generator holding 18,000 connections that
//! each sent one message every 30 s, and would be 20 million slot visits a second at a
//! million connections.
//!
//! Entries are looked at in batches: a loop waits for the next one plus [`SLACK`], so a
//! million connections' stale entries wake it at most once per `SLACK`, and a deadline fires
//! at most that late.

use crate::clock::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// How late a deadline may fire, so that the entries coming up together are looked at in one
/// wake (timeouts here are seconds; the scan this replaced fired them up to 50 ms late).
pub const SLACK: Duration = Duration::from_millis(10);

#[derive(Debug, Default)]
pub struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl Deadlines {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` entries before the heap grows.
    pub fn with_capacity(n: usize) -> Self {
        Deadlines { heap: BinaryHeap::with_capacity(n) }
    }

    /// Make sure slot `slot` is looked at no later than `at`. `entry` is the slot's record of
    /// its own entry in the heap, updated here.
    pub fn ensure(&mut self, slot: usize, at: Instant, entry: &mut Option<Instant>) {
        if entry.is_none_or(|e| e > at) {
            self.heap.push(Reverse((at, slot)));
            *entry = Some(at);
        }
    }

    /// How long a loop may sleep before the next entry comes up (at most `cap`).
    pub fn wait(&self, now: Instant, cap: Duration) -> Duration {
        self.heap.peek().map_or(cap, |Reverse((at, _))| (*at + SLACK).saturating_duration_since(now).min(cap))
    }

    /// The next slot whose entry is due by `now`, if any. The caller looks at the slot's
    /// deadlines, calls [`Deadlines::came_up`] with its `entry`, and [`ensure`](Self::ensure)s
    /// the deadlines that remain.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize)> {
        match self.heap.peek() {
            Some(Reverse((at, _))) if *at <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    /// The entry at `at` of a slot whose `entry` this is came up: the slot has no entry left
    /// (unless it was entered again earlier than `at`, which stays).
    pub fn came_up(at: Instant, entry: &mut Option<Instant>) {
        if *entry == Some(at) {
            *entry = None;
        }
    }

    /// Entries in the heap (live and stale).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
        let (at, _) = d.pop_due(early).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, None);
        // Entered again for a deadline at 5 s: the stale 9 s entry leaves it alone.
        d.ensure(0, t0 + Duration::from_secs(5), &mut entry);
        let (at, _) = d.pop_due(t0 + Duration::from_secs(5)).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, None);
        d.ensure(0, t0 + Duration::from_secs(20), &mut entry);
        let (at, _) = d.pop_due(late).unwrap();
        Deadlines::came_up(at, &mut entry);
        assert_eq!(entry, Some(t0 + Duration::from_secs(20)));
    }

    #[test]
    fn the_wait_gathers_entries_within_the_slack_and_is_capped() {
        let t0 = Instant::now();
        let mut d = Deadlines::new();
        assert_eq!(d.wait(t0, Duration::from_millis(5)), Duration::from_millis(5));
        d.ensure(0, t0 + Duration::from_millis(100), &mut None);
        assert_eq!(d.wait(t0, Duration::from_secs(1)), Duration::from_millis(100) + SLACK);
        assert_eq!(d.wait(t0, Duration::from_millis(20)), Duration::from_millis(20));
        assert_eq!(d.wait(t0 + Duration::from_secs(1), Duration::from_secs(1)), Duration::ZERO);
    }
}
