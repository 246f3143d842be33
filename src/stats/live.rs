//! What a core's recorder shows while a run goes on (`--metrics-listen`): a copy of its counts
//! and its latency histogram, taken a few times a second by the core itself (never locked per
//! operation), read by whoever serves them.

use super::{ByteSplit, CoreRecorder};
use crate::outcome::{AnswerCounts, ClassCounts};
use hdrhistogram::Histogram;
use std::sync::{Arc, Mutex};

/// One core's figures as of its last copy.
#[derive(Debug, Clone)]
pub struct LiveCore {
    pub core: usize,
    pub sent: u64,
    pub ops: u64,
    pub failed: ClassCounts,
    pub conn_errors: ClassCounts,
    pub tx: ByteSplit,
    pub rx: ByteSplit,
    pub connects: u64,
    pub reconnects: u64,
    /// Sockets closed (and audited) so far: `connects` less these are open.
    pub closed: u64,
    /// Latency of the operations completed so far in the window, ns.
    pub latency: Histogram<u64>,
    /// Paced runs: how late each operation was sent against its schedule, ns; and those that
    /// came due while their connection was busy, or went unsent.
    pub schedule_lag: Histogram<u64>,
    pub due_while_busy: u64,
    pub due_unsent: u64,
    /// The answers in the protocol's words (HTTP statuses, NSQ responses…).
    pub answers: AnswerCounts,
    /// Operation bytes by layer, of the operations whose connections gave them so far (an
    /// HTTP/2 connection at each copy; an HTTP/3 one when it closes).
    pub layers: Option<crate::stats::Layers>,
    /// The core thread's CPU time when it copied, and when: two copies make its busy share.
    pub cpu: std::time::Duration,
    pub at: crate::clock::Instant,
}

impl LiveCore {
    /// Copy what `rec` counted so far (its latencies folded into its histogram first), with
    /// the core thread's CPU time `cpu` at `at`.
    pub fn of(rec: &mut CoreRecorder, cpu: std::time::Duration, at: crate::clock::Instant) -> LiveCore {
        rec.settle();
        LiveCore {
            core: rec.core,
            sent: rec.sent,
            ops: rec.ops,
            failed: rec.failed,
            conn_errors: rec.conn_errors,
            tx: rec.tx,
            rx: rec.rx,
            connects: rec.connects,
            reconnects: rec.reconnects,
            // Checked against the kernel, and not (Unix sockets, UDP, …): every socket closed.
            closed: rec.audit.sockets + rec.audit.inexact.values().sum::<u64>(),
            latency: rec.latency.clone(),
            schedule_lag: rec.schedule_lag.clone(),
            due_while_busy: rec.due_while_busy,
            due_unsent: rec.due_unsent,
            answers: rec.answers.clone(),
            layers: rec.layers,
            cpu,
            at,
        }
    }
}

/// Every core's live figures, one slot each (`None` until the core's first copy).
pub type Live = Arc<[Mutex<Option<LiveCore>>]>;

/// Slots for `cores` cores.
pub fn live(cores: usize) -> Live {
    (0..cores).map(|_| Mutex::new(None)).collect()
}
