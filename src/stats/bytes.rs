//! Bytes by what they were for: [`Traffic`] (a connection's set-up, its operations, its
//! control frames), [`ByteSplit`] by direction, and TLS's own: records, handshakes and QUIC's
//! datagrams.

/// Which part of a connection's life some bytes belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Per-connection set-up (WebSocket upgrade, NSQ magic and IDENTIFY).
    Handshake,
    /// An operation sent in the measured window that completed, or its response.
    Op,
    /// An operation sent during warm-up, or its response: in the audit, not in per-op figures.
    WarmupOp,
    /// A measured operation that failed (refused by the server, or lost with its connection),
    /// and its (partial) response: kept out of the per-operation figures.
    Failed,
    /// Anything else: heartbeats, pings, closes, bytes left undecoded when a connection ended.
    Control,
    /// TLS records that carry no protocol bytes: the TLS handshake, session tickets, alerts
    /// (`close_notify`). Records that do carry them count with what they carry.
    Tls,
}

/// Bytes in one direction by class (the plaintext or records inside TLS).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename = "Split")]
pub struct ByteSplit {
    pub handshake: u64,
    pub op: u64,
    pub warmup_op: u64,
    pub failed: u64,
    pub control: u64,
    pub tls: u64,
}

impl ByteSplit {
    pub fn add(&mut self, traffic: Traffic, n: u64) {
        *self.class_mut(traffic) += n;
    }
    /// Re-file `n` bytes counted as `from` under `to` (an operation's bytes, once it failed).
    pub fn move_bytes(&mut self, from: Traffic, to: Traffic, n: u64) {
        let taken = n.min(*self.class_mut(from));
        *self.class_mut(from) -= taken;
        *self.class_mut(to) += taken;
    }
    fn class_mut(&mut self, traffic: Traffic) -> &mut u64 {
        match traffic {
            Traffic::Handshake => &mut self.handshake,
            Traffic::Op => &mut self.op,
            Traffic::WarmupOp => &mut self.warmup_op,
            Traffic::Failed => &mut self.failed,
            Traffic::Control => &mut self.control,
            Traffic::Tls => &mut self.tls,
        }
    }
    /// Everything, warm-up included: what the kernel must have counted too.
    pub fn total(&self) -> u64 {
        self.handshake + self.op + self.warmup_op + self.failed + self.control + self.tls
    }
    pub fn merge(&mut self, other: &ByteSplit) {
        self.handshake += other.handshake;
        self.op += other.op;
        self.warmup_op += other.warmup_op;
        self.failed += other.failed;
        self.control += other.control;
        self.tls += other.tls;
    }
}

/// What TLS carried beside the wire's bytes: the plaintext inside the records by the same
/// classes (so per operation the wire and the protocol's own bytes stand side by side), the
/// records themselves, and the handshakes, full and resumed, with their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TlsTally {
    pub plain_tx: ByteSplit,
    pub plain_rx: ByteSplit,
    /// Records, by the class of what they carry (a received record: the class of the message
    /// its last byte completed).
    pub records_tx: ByteSplit,
    pub records_rx: ByteSplit,
    pub full: Handshakes,
    pub resumed: Handshakes,
}

/// UDP datagrams each way (QUIC's: the kernel's segments' counterpart for the wire estimate).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Datagrams {
    pub tx: u64,
    pub rx: u64,
}

/// TLS handshakes of one kind, and their bytes each way (ClientHello to the server's
/// `Finished`, and the client's `Finished`; session tickets that follow are `tls` bytes too,
/// but not in these).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handshakes {
    pub count: u64,
    pub tx: u64,
    pub rx: u64,
}

impl TlsTally {
    /// Whether any connection spoke TLS.
    pub fn used(&self) -> bool {
        self.full.count + self.resumed.count > 0 || self.records_rx.total() + self.records_tx.total() > 0
    }
    pub(super) fn merge(&mut self, o: &TlsTally) {
        self.plain_tx.merge(&o.plain_tx);
        self.plain_rx.merge(&o.plain_rx);
        self.records_tx.merge(&o.records_tx);
        self.records_rx.merge(&o.records_rx);
        for (a, b) in [(&mut self.full, &o.full), (&mut self.resumed, &o.resumed)] {
            a.count += b.count;
            a.tx += b.tx;
            a.rx += b.rx;
        }
    }
}
