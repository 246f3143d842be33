//! A result's bytes: by class both ways ([`Bytes`], [`ByteSplit`]), and TLS's beside them (the
//! plaintext, the records, the handshakes: [`TlsResult`]); each derived from its counts and
//! merged field by field.

use super::r3;
use crate::stats::{ByteSplit, Handshakes, ratio};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Bytes on the wire by class, both ways (`tx`/`rx` and per operation derived).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bytes {
    /// Derived: everything, warm-up included.
    #[serde(default)]
    pub tx: u64,
    #[serde(default)]
    pub rx: u64,
    pub op_tx: u64,
    pub op_rx: u64,
    pub warmup_tx: u64,
    pub warmup_rx: u64,
    pub handshake_tx: u64,
    pub handshake_rx: u64,
    pub control_tx: u64,
    pub control_rx: u64,
    pub failed_tx: u64,
    pub failed_rx: u64,
    pub tls_tx: u64,
    pub tls_rx: u64,
    /// Derived: bytes of completed operations per completed operation.
    #[serde(default)]
    pub tx_per_op: f64,
    #[serde(default)]
    pub rx_per_op: f64,
}

impl Bytes {
    pub(super) fn of(tx: &ByteSplit, rx: &ByteSplit) -> Bytes {
        Bytes {
            op_tx: tx.op,
            op_rx: rx.op,
            warmup_tx: tx.warmup_op,
            warmup_rx: rx.warmup_op,
            handshake_tx: tx.handshake,
            handshake_rx: rx.handshake,
            control_tx: tx.control,
            control_rx: rx.control,
            failed_tx: tx.failed,
            failed_rx: rx.failed,
            tls_tx: tx.tls,
            tls_rx: rx.tls,
            ..Bytes::default()
        }
    }

    pub(super) fn derive(&mut self, ops: u64) {
        self.tx =
            self.op_tx + self.warmup_tx + self.handshake_tx + self.control_tx + self.failed_tx + self.tls_tx;
        self.rx =
            self.op_rx + self.warmup_rx + self.handshake_rx + self.control_rx + self.failed_rx + self.tls_rx;
        self.tx_per_op = r3(ratio(self.op_tx as f64, ops as f64));
        self.rx_per_op = r3(ratio(self.op_rx as f64, ops as f64));
    }

    pub(super) fn merge(&mut self, o: &Bytes) {
        let Bytes {
            tx: _,
            rx: _,
            op_tx,
            op_rx,
            warmup_tx,
            warmup_rx,
            handshake_tx,
            handshake_rx,
            control_tx,
            control_rx,
            failed_tx,
            failed_rx,
            tls_tx,
            tls_rx,
            tx_per_op: _,
            rx_per_op: _,
        } = *o;
        self.op_tx += op_tx;
        self.op_rx += op_rx;
        self.warmup_tx += warmup_tx;
        self.warmup_rx += warmup_rx;
        self.handshake_tx += handshake_tx;
        self.handshake_rx += handshake_rx;
        self.control_tx += control_tx;
        self.control_rx += control_rx;
        self.failed_tx += failed_tx;
        self.failed_rx += failed_rx;
        self.tls_tx += tls_tx;
        self.tls_rx += tls_rx;
    }
}

/// TLS handshakes of one kind and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HandshakeResult {
    pub count: u64,
    pub tx: u64,
    pub rx: u64,
    /// Derived: per handshake.
    #[serde(default)]
    pub tx_each: f64,
    #[serde(default)]
    pub rx_each: f64,
}

impl HandshakeResult {
    pub(super) fn of(h: &Handshakes) -> HandshakeResult {
        HandshakeResult { count: h.count, tx: h.tx, rx: h.rx, ..HandshakeResult::default() }
    }
    pub(super) fn derive(&mut self) {
        self.tx_each = r3(ratio(self.tx as f64, self.count as f64));
        self.rx_each = r3(ratio(self.rx as f64, self.count as f64));
    }
    pub(super) fn merge(&mut self, o: &HandshakeResult) {
        let HandshakeResult { count, tx, rx, tx_each: _, rx_each: _ } = *o;
        self.count += count;
        self.tx += tx;
        self.rx += rx;
    }
}

/// TLS beside the wire's bytes (`bytes` holds the wire's): the plaintext by class, the records
/// by the class of what they carry, and the handshakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsResult {
    pub plain_tx: ByteSplit,
    pub plain_rx: ByteSplit,
    pub records_tx: ByteSplit,
    pub records_rx: ByteSplit,
    pub full: HandshakeResult,
    pub resumed: HandshakeResult,
    /// Derived: per completed operation.
    #[serde(default)]
    pub per_op: TlsPerOp,
}

/// TLS per completed operation: the plaintext, what the records added, and the records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsPerOp {
    pub plain_tx: f64,
    pub plain_rx: f64,
    pub overhead_tx: f64,
    pub overhead_rx: f64,
    pub records_tx: f64,
    pub records_rx: f64,
}

impl TlsResult {
    pub(super) fn of(t: &crate::stats::TlsTally) -> TlsResult {
        TlsResult {
            plain_tx: t.plain_tx,
            plain_rx: t.plain_rx,
            records_tx: t.records_tx,
            records_rx: t.records_rx,
            full: HandshakeResult::of(&t.full),
            resumed: HandshakeResult::of(&t.resumed),
            per_op: TlsPerOp::default(),
        }
    }

    pub(super) fn derive(&mut self, ops: u64, bytes: &Bytes) {
        let per = |n: u64| r3(ratio(n as f64, ops as f64));
        self.full.derive();
        self.resumed.derive();
        self.per_op = TlsPerOp {
            plain_tx: per(self.plain_tx.op),
            plain_rx: per(self.plain_rx.op),
            overhead_tx: per(bytes.op_tx.saturating_sub(self.plain_tx.op)),
            overhead_rx: per(bytes.op_rx.saturating_sub(self.plain_rx.op)),
            records_tx: per(self.records_tx.op),
            records_rx: per(self.records_rx.op),
        };
    }
    pub(super) fn merge(&mut self, o: &TlsResult) {
        let TlsResult { plain_tx, plain_rx, records_tx, records_rx, full, resumed, per_op: _ } = o;
        self.plain_tx.merge(plain_tx);
        self.plain_rx.merge(plain_rx);
        self.records_tx.merge(records_tx);
        self.records_rx.merge(records_rx);
        self.full.merge(full);
        self.resumed.merge(resumed);
    }
}
