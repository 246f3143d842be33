//! The machine's network counters over a run, as numbers (read by the engines from `/proc`).

/// Machine-wide network counters that explain a latency tail on loopback: packets the kernel
/// dropped at its per-CPU input backlog (`/proc/net/softnet_stat`, full at
/// `net.core.netdev_max_backlog`), and TCP segments retransmitted (`/proc/net/snmp`) — on
/// loopback nothing else drops a packet, and each drop costs its connection a retransmission
/// timeout (200 ms at least).
///
/// And UDP's datagrams in and out and those a full receive buffer dropped (`/proc/net/snmp`
/// `Udp:`): the kernel keeps no per-socket UDP counts, so a QUIC run's own counts stand beside
/// the machine's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub backlog_drops: u64,
    pub retransmits: u64,
    pub udp_in: u64,
    pub udp_out: u64,
    pub udp_drops: u64,
}

impl NetCounters {
    /// Each counter's smaller (`max`: larger) of two readings.
    pub fn min(self, o: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.min(o.backlog_drops),
            retransmits: self.retransmits.min(o.retransmits),
            udp_in: self.udp_in.min(o.udp_in),
            udp_out: self.udp_out.min(o.udp_out),
            udp_drops: self.udp_drops.min(o.udp_drops),
        }
    }
    pub fn max(self, o: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.max(o.backlog_drops),
            retransmits: self.retransmits.max(o.retransmits),
            udp_in: self.udp_in.max(o.udp_in),
            udp_out: self.udp_out.max(o.udp_out),
            udp_drops: self.udp_drops.max(o.udp_drops),
        }
    }

    /// What happened between two readings.
    pub fn since(self, before: NetCounters) -> NetCounters {
        NetCounters {
            backlog_drops: self.backlog_drops.saturating_sub(before.backlog_drops),
            retransmits: self.retransmits.saturating_sub(before.retransmits),
            udp_in: self.udp_in.saturating_sub(before.udp_in),
            udp_out: self.udp_out.saturating_sub(before.udp_out),
            udp_drops: self.udp_drops.saturating_sub(before.udp_drops),
        }
    }
}
