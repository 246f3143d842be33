//! The moments a core's loop wakes every sleeping connection at once (see [`Wakes`]).

use super::ClientJob;
use crate::clock::Instant;
use std::sync::atomic::Ordering;

/// The moments every sleeping connection is woken at once, each once: Ctrl-C (so they
/// notice), the measured window's opening (those set up before the others sleep until it),
/// and the end of a timed run once the core's last answers are in (so they finish).
#[derive(Default)]
pub(super) struct Wakes {
    stopped: bool,
    window_open: bool,
    run_end: Option<Instant>,
    drained: bool,
}

impl Wakes {
    /// Whether one of those moments came with this loop.
    pub(super) fn all_now(&mut self, job: &ClientJob, start: Instant, now: Instant, in_flight: u64) -> bool {
        let mut wake_all = false;
        if !self.stopped && job.stop.load(Ordering::Relaxed) {
            self.stopped = true;
            wake_all = true;
        }
        if !self.window_open
            && let Some(opened) = job.window.opened(now, start)
        {
            self.window_open = true;
            wake_all = true;
            self.run_end = Some(opened + job.shape.warmup + job.shape.duration);
        }
        if !self.drained && self.run_end.is_some_and(|end| now >= end) && in_flight == 0 {
            self.drained = true;
            wake_all = true;
        }
        wake_all
    }
}
