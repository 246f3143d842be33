//! A connection's view of the workload: when its next operation is due (its pacer), which of
//! its operations are measured and until when (its budget), and the run's measured window it
//! waits for before sending — opened once every connection is set up ([`Window`]).

use crate::clock::Instant;
use crate::stats::{CoreRecorder, Traffic};
use crate::workload::{Budget, Pacer, Window};
use std::sync::Arc;
use std::time::Duration;

/// How often a connection the engine wakes at the window's opening looks anyway.
const WINDOW_SAFETY_NET: Duration = Duration::from_secs(1);

/// A window not yet open, and how the budget follows from its opening.
struct PendingWindow {
    window: Arc<Window>,
    start: Instant,
    /// When the connect rate says the last connection opens, and the run's end if the window
    /// opened then: what bounds the waits begun before it opens.
    expected_open: Instant,
    expected_end: Instant,
    warmup: Duration,
    duration: Duration,
}

/// The pacer, the budget and the window of one connection.
pub struct Schedule {
    pacer: Pacer,
    budget: Budget,
    pending: Option<PendingWindow>,
    /// This connection told the window it is set up (or failed its first try).
    settled: bool,
    /// Operations due and never sent were counted ([`CoreRecorder::due_unsent`]).
    closed: bool,
}

impl Schedule {
    #[inline]
    pub fn new(pacer: Pacer, budget: Budget) -> Schedule {
        Schedule { pacer, budget, pending: None, settled: false, closed: false }
    }

    /// Measure from when `window` opens (every connection set up) plus `warmup`, for
    /// `duration`; until then every operation waits.
    #[inline]
    pub fn open_with(
        &mut self,
        window: Arc<Window>,
        (start, expected_open): (Instant, Instant),
        warmup: Duration,
        duration: Duration,
    ) {
        // Far enough never to come while the window is shut: it opens within its own bound.
        let never = start + Duration::from_secs(365 * 86_400);
        self.budget.measure_from = never;
        self.budget.deadline = never;
        let expected_end = expected_open + warmup + duration;
        self.pending = Some(PendingWindow { window, start, expected_open, expected_end, warmup, duration });
    }

    /// The run's end, and whether it is only expected (the window is shut).
    #[inline]
    pub fn run_end(&self) -> (Instant, bool) {
        match &self.pending {
            Some(p) => (p.expected_end, true),
            None => (self.budget.deadline, false),
        }
    }

    /// Once the window opened, the budget is known: `true` when it just did.
    #[inline]
    pub fn refresh(&mut self, now: Instant) -> bool {
        let Some(p) = &self.pending else { return false };
        let Some(opened) = p.window.opened(now, p.start) else { return false };
        self.pacer.start(opened);
        self.budget.measure_from = opened + p.warmup;
        self.budget.deadline = self.budget.measure_from + p.duration;
        self.pending = None;
        true
    }

    /// The window is still shut.
    #[inline]
    pub fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    /// Tell the window this connection is set up or failed its first try (once).
    #[inline]
    pub fn settle(&mut self, now: Instant) {
        if !std::mem::replace(&mut self.settled, true)
            && let Some(p) = &self.pending
        {
            p.window.settle(now);
        }
    }

    /// Set-ups are timed in the measured window, and before it while it waits for them (not
    /// during a warm-up).
    #[inline]
    pub fn timing_set_up(&self, now: Instant) -> bool {
        self.pending.is_some() || now >= self.budget.measure_from
    }

    #[inline]
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// No new operation may be sent (the run's end, the quota given `in_or_done` measured
    /// operations answered or in flight, or Ctrl-C).
    #[inline]
    pub fn stopped(&self, now: Instant, stopping: bool, in_or_done: u64) -> bool {
        now >= self.budget.deadline || stopping || self.budget.ops.is_some_and(|n| in_or_done >= n)
    }

    /// The intended send time of the next operation.
    #[inline]
    pub fn due(&mut self, now: Instant) -> Instant {
        self.pacer.due(now)
    }

    /// The operation that was due has been sent.
    #[inline]
    pub fn taken(&mut self) {
        self.pacer.taken();
    }

    #[inline]
    pub fn paced(&self) -> bool {
        self.pacer.paced()
    }

    /// The class of an operation intended at `intended`: warm-up before the window, else
    /// measured.
    #[inline]
    pub fn traffic(&self, intended: Instant) -> Traffic {
        if intended < self.budget.measure_from { Traffic::WarmupOp } else { Traffic::Op }
    }

    /// When a connection set up before the others looks again while the window is shut:
    /// until the last one is expected, then as often as the others' pace of settling says
    /// (or, woken by the engine at the opening, once a second). `None`: the window is open.
    #[inline]
    pub fn window_wait(&self, now: Instant, woken_by_engine: bool) -> Option<Instant> {
        let p = self.pending.as_ref()?;
        Some(match woken_by_engine {
            true => p.expected_open.max(now + WINDOW_SAFETY_NET),
            false => p.expected_open.max(now + p.window.recheck_in(now, p.start)),
        })
    }

    /// The connection sends no more: a paced schedule's operations that came due before the
    /// run's end (or Ctrl-C) and were never sent are counted, once. wrk2 leaves them out, and a
    /// server that stalls at the end of a run then hides thousands.
    #[inline]
    pub fn close(&mut self, now: Instant, in_or_done: u64, rec: &mut CoreRecorder) {
        if std::mem::replace(&mut self.closed, true) || self.pending.is_some() {
            return;
        }
        if self.budget.ops.is_some_and(|n| in_or_done >= n) {
            return; // the quota was sent: nothing more was due
        }
        let end = now.min(self.budget.deadline);
        rec.due_unsent += self.pacer.due_before(self.budget.measure_from, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn the_budget_follows_the_windows_opening_and_unsent_operations_are_counted_once() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let budget = Budget { ops: None, deadline: t0 + s(60), measure_from: t0 };
        let mut sch = Schedule::new(Workload::FixedRate { interval: ms(10) }.pacer(0, 1), budget);
        let window = Arc::new(Window::new(1, s(10), None));
        sch.open_with(window, (t0, t0 + ms(100)), Duration::ZERO, s(1));
        assert!(sch.waiting());
        assert_eq!(sch.run_end(), (t0 + ms(1100), true));
        assert_eq!(sch.window_wait(t0, true), Some(t0 + s(1)));
        assert!(!sch.refresh(t0 + ms(50)), "shut until the connection settles");
        sch.settle(t0 + ms(200));
        assert!(sch.refresh(t0 + ms(200)));
        assert_eq!(sch.run_end(), (t0 + ms(1200), false));
        assert_eq!(sch.due(t0 + ms(200)), t0 + ms(200), "the schedule starts at the opening");
        assert_eq!(sch.traffic(t0 + ms(200)), Traffic::Op);
        // Nothing was sent: 100 due in the second, counted once.
        let mut rec = CoreRecorder::new(0);
        assert!(sch.stopped(t0 + ms(1200), false, 0));
        sch.close(t0 + ms(1300), 0, &mut rec);
        sch.close(t0 + ms(1300), 0, &mut rec);
        assert_eq!(rec.due_unsent, 100);
    }
}
