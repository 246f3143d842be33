//! The machine's network counters over a run, as numbers (read by the engines from `/proc`).

/// Machine-wide network counters that explain a latency tail on loopback: packets the kernel
/// dropped at its per-CPU input backlog (`/proc/net/softnet_stat`, full at
/// `net.core.netdev_max_backlog`), and TCP segments retransmitted (`/proc/net/snmp`) — on
/// loopback nothing else drops a packet, and each drop costs its connection a retransmission
/// timeout (200 ms at least).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub backlog_drops: u64,
    pub retransmits: u64,
}

impl NetCounters {
    /// Each counter's smaller (`max`: larger) of two readings.
    pub fn min(self, o: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.min(o.backlog_drops),
            retransmits: self.retransmits.min(o.retransmits),
        }
    }
    pub fn max(self, o: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.max(o.backlog_drops),
            retransmits: self.retransmits.max(o.retransmits),
        }
    }

    /// What happened between two readings.
    pub fn since(self, before: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.saturating_sub(before.backlog_drops),
            retransmits: self.retransmits.saturating_sub(before.retransmits),
        }
    }
}
