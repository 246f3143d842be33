//! What a core's recorder shows while a run goes on (`--metrics-listen`): a copy of its counts
//! and its latency histogram, taken a few times a second by the core itself (never locked per
//! operation), read by whoever serves them.

use super::{ByteSplit, CoreRecorder};
use crate::outcome::ClassCounts;
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
    /// Latency of the operations completed so far in the window, ns.
    pub latency: Histogram<u64>,
}

impl LiveCore {
    /// Copy what `rec` counted so far (its latencies folded into its histogram first).
    pub fn of(rec: &mut CoreRecorder) -> LiveCore {
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
            latency: rec.latency.clone(),
        }
    }
}

/// Every core's live figures, one slot each (`None` until the core's first copy).
pub type Live = Arc<[Mutex<Option<LiveCore>>]>;

/// Slots for `cores` cores.
pub fn live(cores: usize) -> Live {
    (0..cores).map(|_| Mutex::new(None)).collect()
}
