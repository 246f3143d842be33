//! What operations' bytes are made of, in a protocol's own layers: header blocks, trailers,
//! frame heads, message prefixes and payload, each way — for a connection's first operation
//! apart from the ones after it, since header compression makes the first one dearer (HTTP/2's
//! HPACK inserts the first request's headers into its dynamic table; the next ones index them).
//!
//! The codec counts these as it encodes and decodes (only it knows where a header block ends
//! and a payload begins), per connection; the engine adds each connection's to its core's
//! recorder when the connection closes. They cover every operation's bytes, warm-up and failed
//! ones too: in a run where every byte queued was written they sum to what the report files
//! under `op`, `warmup` and `failed` (with TLS, to the plaintext beside them: `tls.plain_*`),
//! which the tests check. A connection that ended with bytes of its operations still queued (a
//! write timeout, a server gone) counts them here, as encoded, but not on the wire.

use serde::{Deserialize, Serialize};

/// One direction's operation bytes by layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerBytes {
    /// Header blocks as sent (HPACK-encoded), the answer's trailers apart.
    pub headers: u64,
    pub trailers: u64,
    /// Frame heads (9 octets per HTTP/2 frame), padding and frames that are nothing else (a
    /// RST_STREAM ending an operation).
    pub framing: u64,
    /// Message prefixes inside the payload (gRPC's 5 octets per message).
    pub prefix: u64,
    pub payload: u64,
}

impl LayerBytes {
    pub fn total(&self) -> u64 {
        self.headers + self.trailers + self.framing + self.prefix + self.payload
    }

    pub fn merge(&mut self, o: &LayerBytes) {
        let LayerBytes { headers, trailers, framing, prefix, payload } = *o;
        self.headers += headers;
        self.trailers += trailers;
        self.framing += framing;
        self.prefix += prefix;
        self.payload += payload;
    }

    /// Each layer per operation of `ops`.
    pub fn per(&self, ops: u64) -> [f64; 5] {
        let each = |n: u64| if ops == 0 { 0.0 } else { n as f64 / ops as f64 };
        [each(self.headers), each(self.trailers), each(self.framing), each(self.prefix), each(self.payload)]
    }
}

/// Operations of one kind (a connection's first, or the ones after it) and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerCount {
    /// Operations sent (HTTP/2 streams opened).
    pub ops: u64,
    pub tx: LayerBytes,
    pub rx: LayerBytes,
}

impl LayerCount {
    fn merge(&mut self, o: &LayerCount) {
        self.ops += o.ops;
        self.tx.merge(&o.tx);
        self.rx.merge(&o.rx);
    }
}

/// Operation bytes by layer: each connection's first operation, and the ones after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Layers {
    pub first: LayerCount,
    pub steady: LayerCount,
    /// Operations whose bytes the peer stopped before they all went (HTTP/3: STOP_SENDING, an
    /// answer before the whole body): their `tx` here counts what was handed to the
    /// transport, which may be more than went on the wire. The report says so.
    #[serde(default)]
    pub stopped: u64,
}

impl Layers {
    pub fn merge(&mut self, o: &Layers) {
        self.first.merge(&o.first);
        self.steady.merge(&o.steady);
        self.stopped += o.stopped;
    }

    /// The count the operation belongs to: a connection's first, or one after it.
    #[inline]
    pub fn of(&mut self, first: bool) -> &mut LayerCount {
        if first { &mut self.first } else { &mut self.steady }
    }

    /// Both kinds' bytes each way: (tx, rx).
    pub fn totals(&self) -> (u64, u64) {
        (self.first.tx.total() + self.steady.tx.total(), self.first.rx.total() + self.steady.rx.total())
    }
}

/// Merge optional tallies (a run whose protocol counts none has `None`).
pub fn merge_into(into: &mut Option<Layers>, o: Option<&Layers>) {
    match (into.as_mut(), o) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => *into = Some(*b),
        _ => {}
    }
}
