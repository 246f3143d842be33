//! The cross-check of the application's byte counts against the kernel's, socket by socket.

use std::collections::BTreeMap;

/// Why a socket's bytes could not be checked against the kernel's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Inexact {
    /// `TCP_INFO` could not be read.
    Unreadable,
    /// Bytes kept arriving while the socket was being closed, so no snapshot of the kernel's
    /// counters matched what had been read.
    Unsettled,
    /// The engine failed and its sockets were abandoned without a snapshot.
    Abandoned,
    /// A UDP socket (QUIC): the kernel keeps no per-socket byte counts to read.
    Udp,
    /// A Unix domain socket (`--unix-socket`): nor for one of these.
    Unix,
}

impl Inexact {
    pub const ALL: [Inexact; 5] =
        [Inexact::Unreadable, Inexact::Unsettled, Inexact::Abandoned, Inexact::Udp, Inexact::Unix];
    pub fn name(self) -> &'static str {
        match self {
            Inexact::Unreadable => "unreadable",
            Inexact::Unsettled => "unsettled",
            Inexact::Abandoned => "abandoned",
            Inexact::Udp => "UDP: the kernel keeps no per-socket counts",
            Inexact::Unix => "Unix socket: the kernel keeps no byte counts",
        }
    }
}

/// What the kernel counted for one socket, read (`TCP_INFO`) just before it was closed, in
/// application bytes: the SYN and a received FIN are taken off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelSocket {
    /// Bytes written into the socket: acknowledged by the peer, plus still queued.
    pub tx: u64,
    /// Of `tx`, bytes not yet acknowledged when the socket closed (a peer that stopped reading).
    pub unacked: u64,
    pub rx: u64,
    pub segs_out: u64,
    pub segs_in: u64,
    /// Segments the kernel sent again (`tcpi_total_retrans`): on loopback, each one a packet
    /// dropped at a full input backlog, and an answer late by a retransmission timeout.
    pub retrans: u64,
}

/// The kernel's counts for one closing socket, or why there are none.
pub type SocketAudit = Result<KernelSocket, Inexact>;

/// The cross-check of the application's byte counts against the kernel's, over every socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Sockets whose counts were read.
    pub sockets: u64,
    /// The application's bytes on those sockets…
    pub app_tx: u64,
    pub app_rx: u64,
    /// …and the kernel's.
    pub kernel: KernelSocket,
    /// Sockets that could not be checked, by reason, and the application's bytes on them.
    pub inexact: BTreeMap<Inexact, u64>,
    pub inexact_tx: u64,
    pub inexact_rx: u64,
}

impl Audit {
    /// Add one closed socket: the application's bytes on it and the kernel's view.
    pub fn add(&mut self, app_tx: u64, app_rx: u64, socket: SocketAudit) {
        match socket {
            Ok(k) => {
                self.sockets += 1;
                self.app_tx += app_tx;
                self.app_rx += app_rx;
                self.kernel.tx += k.tx;
                self.kernel.unacked += k.unacked;
                self.kernel.rx += k.rx;
                self.kernel.segs_out += k.segs_out;
                self.kernel.segs_in += k.segs_in;
                self.kernel.retrans += k.retrans;
            }
            Err(reason) => {
                *self.inexact.entry(reason).or_default() += 1;
                self.inexact_tx += app_tx;
                self.inexact_rx += app_rx;
            }
        }
    }
    /// The kernel's counts equal the application's on every socket that could be read.
    pub fn matches(&self) -> bool {
        self.app_tx == self.kernel.tx && self.app_rx == self.kernel.rx
    }
    pub fn inexact_sockets(&self) -> u64 {
        self.inexact.values().sum()
    }
    pub(super) fn merge(&mut self, o: &Audit) {
        self.sockets += o.sockets;
        self.app_tx += o.app_tx;
        self.app_rx += o.app_rx;
        self.kernel.tx += o.kernel.tx;
        self.kernel.unacked += o.kernel.unacked;
        self.kernel.rx += o.kernel.rx;
        self.kernel.segs_out += o.kernel.segs_out;
        self.kernel.retrans += o.kernel.retrans;
        self.kernel.segs_in += o.kernel.segs_in;
        for (k, v) in &o.inexact {
            *self.inexact.entry(*k).or_default() += v;
        }
        self.inexact_tx += o.inexact_tx;
        self.inexact_rx += o.inexact_rx;
    }
}
