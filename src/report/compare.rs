//! The comparison table: one row per protocol, per message, then the HTTP-vs-TCP ratios.
//! Every figure is derived from a run's [`RunResult`]; the wire estimate adds the IP and TCP
//! headers of the segments the kernel counted (`TCP_INFO`), at a header size stated in the output.

use super::{RunInfo, micros, si};
use crate::cpus::format as list_cores;
use crate::stats::ratio;
use crate::stats::result::RunResult;
use crate::stats::result::class_total;
use std::fmt::Write;
use std::time::Duration;

/// Bytes of headers per segment on loopback: IPv4 20 + TCP 20 + the timestamp option 12
/// (Linux sends timestamps by default); no link layer. IPv6 is 40 + 20 + 12.
pub const HEADER_BYTES_V4: f64 = 52.0;
pub const HEADER_BYTES_V6: f64 = 72.0;
/// IP and UDP header bytes per datagram (QUIC rows): IPv4 20 + UDP 8; IPv6 40 + 8.
pub const UDP_HEADER_BYTES_V4: f64 = 28.0;
pub const UDP_HEADER_BYTES_V6: f64 = 48.0;
/// The study this command replaces timed 100,000 messages.
pub const STUDY_MESSAGES: f64 = 100_000.0;

/// The load every row of a comparison ran with, and where (in its JSON as it is here).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CompareSetup {
    pub payload: usize,
    pub connections: usize,
    pub depth: usize,
    pub messages: u64,
    pub client_cores: Vec<usize>,
    /// `None` when the targets were the user's own.
    pub server_cores: Option<Vec<usize>>,
}

/// What the comparison ran with.
#[derive(Debug, Clone)]
pub struct CompareInfo {
    pub setup: CompareSetup,
    pub duration: Duration,
    /// Engines: the generator's, and the built-in servers' (when they ran).
    pub engine: String,
    /// Server and generator had to share a CPU (a 1-CPU machine, or as asked).
    pub shared_cpu: bool,
    /// The rows' label column, as wide as the longest label planned ([`label_width`]): the
    /// table is printed row by row, so it is known before the first.
    pub label_width: usize,
}

/// The label column's width for `labels`: the longest, and never less than 20.
pub fn label_width<'a>(labels: impl IntoIterator<Item = &'a str>) -> usize {
    labels.into_iter().map(|l| l.chars().count()).max().unwrap_or(0).max(20)
}

/// The same for rows already run.
fn rows_width(rows: &[Row]) -> usize {
    label_width(rows.iter().map(|r| r.label.as_str()))
}

/// One protocol's run.
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub info: RunInfo,
    /// Its run's result (`label`: the row's name).
    pub result: RunResult,
    /// Payload bytes of one message, and how many times each message's payload crosses the
    /// wire (1: a publish; 2: an echo, which sends it back).
    pub payload: usize,
    pub payload_crossings: u8,
    /// Its side in a ratio the footer prints (the NSQ study's HTTP against TCP).
    pub versus: Option<crate::plan::Versus>,
    /// It is a floor row: the bare transport carrying the same payload.
    pub floor: bool,
    pub ipv6: bool,
}

impl Row {
    pub fn messages(&self) -> f64 {
        (self.result.ops * self.result.messages_per_op) as f64
    }
    pub fn tx_per_msg(&self) -> f64 {
        ratio(self.result.bytes.op_tx as f64, self.messages())
    }
    pub fn rx_per_msg(&self) -> f64 {
        ratio(self.result.bytes.op_rx as f64, self.messages())
    }
    /// Whether any message completed: without one there is no per-message figure to show.
    pub fn has_result(&self) -> bool {
        self.result.ops > 0
    }
    /// Payload bytes per message, both ways (an echo carries it twice).
    pub fn payload_bytes(&self) -> f64 {
        self.payload as f64 * f64::from(self.payload_crossings)
    }
    /// Framing bytes per message, both ways: everything that is not payload.
    pub fn framing(&self) -> f64 {
        self.tx_per_msg() + self.rx_per_msg() - self.payload_bytes()
    }
    /// framing / payload: what the protocol adds to each payload byte it carries.
    pub fn overhead(&self) -> f64 {
        ratio(self.framing(), self.payload_bytes())
    }
    /// Segments (QUIC: datagrams) both ways per message, over the connections' whole lives
    /// (set-up included).
    pub fn segs_per_msg(&self) -> f64 {
        let packets = match self.result.datagrams {
            Some(d) => d.tx + d.rx,
            None => self.result.audit.segs_out + self.result.audit.segs_in,
        };
        ratio(packets as f64, self.messages())
    }
    /// IP and TCP (or UDP) header bytes per segment (datagram).
    pub fn header_bytes(&self) -> f64 {
        match (self.result.datagrams.is_some(), self.ipv6) {
            (true, false) => UDP_HEADER_BYTES_V4,
            (true, true) => UDP_HEADER_BYTES_V6,
            (false, false) => HEADER_BYTES_V4,
            (false, true) => HEADER_BYTES_V6,
        }
    }
    /// Estimated bytes on the wire per message: payload and framing plus IP/TCP headers.
    pub fn wire_per_msg(&self) -> f64 {
        self.tx_per_msg() + self.rx_per_msg() + self.segs_per_msg() * self.header_bytes()
    }
    pub fn msgs_per_sec(&self) -> f64 {
        self.result.messages_per_sec
    }
    pub fn secs_per_study(&self) -> f64 {
        ratio(STUDY_MESSAGES, self.msgs_per_sec())
    }
    pub fn cpu_us_per_msg(&self) -> f64 {
        ratio(self.result.cpu_us_per_op, self.result.messages_per_op as f64)
    }
    /// Per new connection (`--no-keepalive`: one connection per operation): bytes both ways
    /// of every class (set-up, the operation, goodbye), segments, and the wire estimate.
    pub fn per_connection(&self) -> Option<PerConnectionResult> {
        let r = &self.result;
        let conns = r.connects as f64;
        if r.connects == 0 || r.ops == 0 {
            return None;
        }
        let per = |n: u64| n as f64 / conns;
        let bytes = per(r.bytes.tx + r.bytes.rx);
        // Segments, or a QUIC row's datagrams.
        let segs = per(r.datagrams.map_or(r.audit.segs_out + r.audit.segs_in, |d| d.tx + d.rx));
        let mean_ms = |s: Option<crate::stats::result::Spread>| s.map_or(0.0, |s| s.mean / 1e3);
        Some(PerConnectionResult {
            // With TLS, its handshake (and tickets, alerts) is part of the set-up.
            setup_tx: per(r.bytes.handshake_tx + r.bytes.tls_tx),
            setup_rx: per(r.bytes.handshake_rx + r.bytes.tls_rx),
            op_tx: self.tx_per_msg() * r.messages_per_op as f64,
            op_rx: self.rx_per_msg() * r.messages_per_op as f64,
            control_tx: per(r.bytes.control_tx),
            control_rx: per(r.bytes.control_rx),
            bytes,
            segs,
            wire: bytes + segs * self.header_bytes(),
            connect_ms: mean_ms(r.phases_us.phases.connect),
            setup_ms: mean_ms(r.phases_us.phases.handshake) + mean_ms(r.phases_us.phases.tls),
            first_op_ms: mean_ms(r.phases_us.total),
        })
    }

    /// The floor row this row is measured against: the floor's, of as many payload
    /// crossings, as much TLS and over the same kind of socket, if it completed something; a
    /// QUIC row's is UDP's (`compare --tls`).
    pub fn floor_of<'a>(&self, rows: &'a [Row]) -> Option<&'a Row> {
        let tls = self.label.ends_with(TLS_MARK);
        let unix = self.label.ends_with(UNIX_MARK);
        // QUIC's rows stand on UDP's floor, without encryption: QUIC's own is the cost.
        let datagrams = self.result.datagrams.is_some();
        rows.iter().find(|f| {
            f.floor
                && f.payload_crossings == self.payload_crossings
                && f.result.datagrams.is_some() == datagrams
                && (datagrams || f.label.ends_with(TLS_MARK) == tls)
                && f.label.ends_with(UNIX_MARK) == unix
                && f.has_result()
        })
    }

    /// This row's bytes, segments, wire bytes and CPU per message as multiples of `floor`'s.
    pub fn vs_floor(&self, floor: &Row) -> FloorMultiples {
        FloorMultiples {
            floor: floor.label.clone(),
            bytes: ratio(self.tx_per_msg() + self.rx_per_msg(), floor.tx_per_msg() + floor.rx_per_msg()),
            segs: ratio(self.segs_per_msg(), floor.segs_per_msg()),
            wire: ratio(self.wire_per_msg(), floor.wire_per_msg()),
            cpu: ratio(self.cpu_us_per_msg(), floor.cpu_us_per_msg()),
        }
    }

    pub fn handshake(&self) -> (f64, f64) {
        let conns = self.result.connects.max(1) as f64;
        (self.result.bytes.handshake_tx as f64 / conns, self.result.bytes.handshake_rx as f64 / conns)
    }
}

/// Each row as a multiple of the floor under it (`TCP floor`: the same payload over bare TCP,
/// as many times, on the same cores in the same run): what the protocol costs.
pub fn floor_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "
each row as a multiple of the floor under it (bare TCP carrying the same payload, measured above):
",
    );
    let w = rows_width(rows);
    let _ = writeln!(s, "{:<w$}  bytes/msg  segs/msg  wire/msg  cpu/msg  against", "protocol");
    for r in rows.iter().filter(|r| r.has_result() && !r.floor) {
        let Some(floor) = r.floor_of(rows) else {
            let _ = writeln!(s, "{:<w$}  no floor measured for it", r.label);
            continue;
        };
        let m = r.vs_floor(floor);
        // Over a Unix socket there are no segments to compare.
        let segs = if floor.segs_per_msg() > 0.0 { format!("{:.2}x", m.segs) } else { "-".into() };
        let _ = writeln!(
            s,
            "{:<w$}  {:>8.2}x  {:>8}  {:>7.2}x  {:>6.2}x  {}",
            r.label, m.bytes, segs, m.wire, m.cpu, m.floor
        );
    }
    s += "bytes = tx + rx per message; the floor of an echo is an echo (the payload back), of a publish or request one byte back\n";
    if rows.iter().any(|r| r.result.datagrams.is_some() && !r.floor) {
        s += "QUIC's rows stand on UDP's floor (UDP_RR without encryption: what QUIC and its TLS add to the datagrams)\n";
    }
    s
}

/// The mark a TLS row's label carries after its plaintext twin's (`compare --tls`).
pub const TLS_MARK: &str = " +TLS";
/// The mark a row over a Unix socket carries after its twin's over TCP (`compare --unix`).
pub const UNIX_MARK: &str = " @unix";

/// What TCP/IP on loopback costs (`compare --unix`): each row over TCP against its twin over
/// a Unix socket — the same bytes, no segments, no IP or TCP — in messages/s, median latency
/// and client CPU per message.
pub fn unix_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "
what TCP/IP on loopback costs (each row over TCP against the same over a Unix socket, measured above):
",
    );
    let w = rows_width(rows);
    let _ = writeln!(
        s,
        "{:<w$}  msg/s tcp  msg/s unix      p50 tcp   p50 unix  cpu/msg tcp  cpu/msg unix  tcp ÷ unix",
        "protocol"
    );
    for u in rows.iter().filter(|r| r.label.ends_with(UNIX_MARK)) {
        let twin = u.label.trim_end_matches(UNIX_MARK);
        let Some(t) = rows.iter().find(|r| r.label == twin) else { continue };
        if !u.has_result() || !t.has_result() {
            let _ = writeln!(s, "{twin:<w$}  no result");
            continue;
        }
        let _ = writeln!(
            s,
            "{twin:<w$}  {:>9}  {:>10}  {:>11}  {:>9}  {:>9.2}us  {:>10.2}us  {:>9.2}x",
            si(t.msgs_per_sec()),
            si(u.msgs_per_sec()),
            micros(t.result.latency_us.p50),
            micros(u.result.latency_us.p50),
            t.cpu_us_per_msg(),
            u.cpu_us_per_msg(),
            ratio(t.cpu_us_per_msg(), u.cpu_us_per_msg()),
        );
    }
    s += "cpu = the client's per message (a Unix socket has no segments: the kernel's counts are TCP's, so its audit is the server's own count)\n";
    s
}

/// What TLS costs (`compare --tls`): each TLS row beside its plaintext twin, per message the
/// wire and plaintext bytes, the records' overhead, CPU, and per connection the handshake.
pub fn tls_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "
what TLS costs (each row against the same protocol in plaintext, measured above):
",
    );
    let w = rows_width(rows) + 5;
    let _ = writeln!(
        s,
        "{:<w$} wire tx/rx per msg    plaintext tx/rx   TLS tx/rx   records/op  handshake tx/rx/conn  client cpu/msg",
        "protocol"
    );
    for t in rows.iter().filter(|r| r.label.ends_with(TLS_MARK)) {
        let twin = t.label.trim_end_matches(TLS_MARK);
        let Some(p) = rows.iter().find(|r| r.label == twin) else { continue };
        if !t.has_result() || !p.has_result() {
            let _ = writeln!(s, "{:<w$} no result", t.label);
            continue;
        }
        let r = &t.result;
        let Some(tls) = &r.tls else { continue };
        let msgs = (r.ops * r.messages_per_op).max(1) as f64;
        let per_msg = |n: u64| n as f64 / msgs;
        let conns = (tls.full.count + tls.resumed.count).max(1) as f64;
        let _ = writeln!(
            s,
            "{:<w$} {:>8.1} / {:<8.1}  {:>7.1} / {:<7.1} {:>5.1} / {:<5.1} {:>4.2} / {:<4.2} {:>7.0} / {:<7.0}   {:>6.2}us ({:.2}x)",
            t.label,
            t.tx_per_msg(),
            t.rx_per_msg(),
            per_msg(tls.plain_tx.op),
            per_msg(tls.plain_rx.op),
            t.tx_per_msg() - per_msg(tls.plain_tx.op),
            t.rx_per_msg() - per_msg(tls.plain_rx.op),
            tls.records_tx.op as f64 / r.ops.max(1) as f64,
            tls.records_rx.op as f64 / r.ops.max(1) as f64,
            (tls.full.tx + tls.resumed.tx) as f64 / conns,
            (tls.full.rx + tls.resumed.rx) as f64 / conns,
            t.cpu_us_per_msg(),
            ratio(t.cpu_us_per_msg(), p.cpu_us_per_msg()),
        );
    }
    s += "TLS tx/rx = wire − plaintext (record headers, tags); handshake = the TLS handshake's own bytes, per connection; cpu ratio against the plaintext row\n";
    s
}

/// Bytes per request by layer, for the rows whose protocol counts them (HTTP/2, gRPC): each
/// connection's first request beside the ones after it, each way.
pub fn layers_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "
bytes per request by layer (each connection's first request / the ones after it; means over every request sent):
",
    );
    let w = rows_width(rows);
    s += &super::layer_heading(w);
    for r in rows {
        if let Some(l) = &r.result.layers {
            s += &super::layer_lines(&format!("{:<w$}", r.label), l);
        }
    }
    s += "framing = frame heads (9 bytes per HTTP/2 frame) and padding; prefix = gRPC's 5-byte message prefix
";
    s
}

pub fn per_connection_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "
per new connection (--no-keepalive: connect, set-up, one operation, close; means):
",
    );
    let w = rows_width(rows);
    let _ = writeln!(
        s,
        "{:<w$}  set-up tx/rx      op tx/rx control tx/rx  bytes/conn  segs/conn  wire/conn  connect   set-up  first op",
        "protocol"
    );
    for r in rows {
        let Some(c) = r.per_connection() else {
            let _ = writeln!(s, "{:<w$} no result", r.label);
            continue;
        };
        let _ = writeln!(
            s,
            "{:<w$} {:>6.0} / {:<5.0} {:>6.0} / {:<5.0} {:>4.0} / {:<5.0} {:>10.1} {:>10.2} {:>10.1} {:>6.3}ms {:>6.3}ms {:>7.3}ms",
            r.label,
            c.setup_tx,
            c.setup_rx,
            c.op_tx,
            c.op_rx,
            c.control_tx,
            c.control_rx,
            c.bytes,
            c.segs,
            c.wire,
            c.connect_ms,
            c.setup_ms,
            c.first_op_ms
        );
    }
    s += "control = the connection's own messages besides its set-up and its operation (acknowledgements, window updates, pings, goodbyes); first op = from when the operation was due (before its connect) to its answer; segments include SYN and FIN
";
    s
}

pub fn header(info: &CompareInfo) -> String {
    let mut s = format!(
        "wirebench compare: {}-byte payload, {} connection{}, depth {}, {} messages or {:.0?} per protocol, {}\n",
        info.setup.payload,
        info.setup.connections,
        if info.setup.connections == 1 { "" } else { "s" },
        info.setup.depth,
        info.setup.messages,
        info.duration,
        info.engine
    );
    match &info.setup.server_cores {
        Some(server) => {
            let _ = write!(
                s,
                "built-in servers on CPU {}, generator on CPU {}",
                list_cores(server),
                list_cores(&info.setup.client_cores)
            );
            if info.shared_cpu {
                s += " (shared: this machine has one CPU, so server and generator compete for it)";
            }
        }
        None => {
            let _ = write!(s, "generator on CPU {}", list_cores(&info.setup.client_cores));
        }
    }
    let _ = write!(
        s,
        "\n\n{:<w$}  tx/msg   rx/msg  payload  overhead  segs/msg  wire/msg      msg/s  100k msgs      p50      p99  cpu/msg  errors  audit",
        "protocol",
        w = info.label_width
    );
    s
}

/// One row of the table, its label column `w` wide ([`CompareInfo::label_width`]).
pub fn line(r: &Row, w: usize) -> String {
    if !r.has_result() {
        return format!(
            "{:<w$} no result: no message completed ({} failed, {})  audit {}",
            r.label,
            class_total(&r.result.failed),
            super::count(class_total(&r.result.connection_errors), "connection error"),
            r.result.audit.word()
        );
    }
    format!(
        "{:<w$} {:>7.1}  {:>7.1}  {:>7}  {:>8}  {:>8.2}  {:>8.1}  {:>9}  {:>8.2}s  {:>7}  {:>7}  {:>5.2}us  {:>6}  {}",
        r.label,
        r.tx_per_msg(),
        r.rx_per_msg(),
        r.payload_bytes(),
        if r.payload_bytes() > 0.0 { format!("{:.1}%", 100.0 * r.overhead()) } else { "-".into() },
        r.segs_per_msg(),
        r.wire_per_msg(),
        si(r.msgs_per_sec()),
        r.secs_per_study(),
        micros(r.result.latency_us.p50),
        micros(r.result.latency_us.p99),
        r.cpu_us_per_msg(),
        r.result.errors(),
        // `unchecked` for QUIC's and Unix sockets' rows: no kernel count to hold them to.
        r.result.audit.word()
    )
}

/// The pairs the footer compares, from the rows' own declarations: (title, numerator row,
/// denominator row), the first of each side per title.
pub fn versus_pairs(rows: &[Row]) -> Vec<(&'static str, &Row, &Row)> {
    let mut pairs = Vec::new();
    for r in rows {
        let Some(v) = r.versus.filter(|v| v.numerator) else { continue };
        if pairs.iter().any(|(title, _, _)| *title == v.title) {
            continue;
        }
        let tcp = rows.iter().find(|t| t.versus.is_some_and(|w| w.title == v.title && !w.numerator));
        if let Some(tcp) = tcp {
            pairs.push((v.title, r, tcp));
        }
    }
    pairs
}

pub fn footer(rows: &[Row]) -> String {
    let mut s = String::from("\nhandshake per connection (apart from the per-message bytes):");
    for r in rows.iter().filter(|r| r.handshake() != (0.0, 0.0)) {
        let (tx, rx) = r.handshake();
        let _ = write!(s, " {} tx {tx:.0} rx {rx:.0};", r.label);
    }
    if rows.iter().all(|r| r.handshake() == (0.0, 0.0)) {
        s += " none";
    }
    s += "\n";
    for (title, http, tcp) in versus_pairs(rows) {
        if !(http.has_result() && tcp.has_result()) {
            let empty = if http.has_result() { &tcp.label } else { &http.label };
            let _ = writeln!(s, "{title}: no result ({empty} had no completed message)");
            continue;
        }
        let _ = writeln!(
            s,
            "{title}: writes {:.2}x ({:.0} vs {:.0} B), reads {:.2}x ({:.0} vs {:.0} B), speed {:.2}x ({} vs {} msg/s)",
            ratio(http.tx_per_msg(), tcp.tx_per_msg()),
            http.tx_per_msg(),
            tcp.tx_per_msg(),
            ratio(http.rx_per_msg(), tcp.rx_per_msg()),
            http.rx_per_msg(),
            tcp.rx_per_msg(),
            ratio(http.msgs_per_sec(), tcp.msgs_per_sec()),
            si(http.msgs_per_sec()),
            si(tcp.msgs_per_sec()),
        );
    }
    let _ = writeln!(
        s,
        "payload = the message's payload bytes both ways (an echo carries it twice); overhead = (tx + rx − payload) / payload"
    );
    let _ = writeln!(
        s,
        "wire/msg = tx + rx + segments × {:.0} B (IPv4 20 + TCP 20 + timestamps 12; no link layer on loopback); segments from TCP_INFO, set-up included",
        HEADER_BYTES_V4
    );
    if rows.iter().any(|r| r.result.datagrams.is_some()) {
        let _ = writeln!(
            s,
            "QUIC rows (HTTP/3): tx/rx = UDP payload; segs/msg = datagrams both ways; wire/msg adds {:.0} B per datagram (IPv4 20 + UDP 8)",
            UDP_HEADER_BYTES_V4
        );
    }
    for r in rows.iter().filter(|r| r.result.errors() > 0) {
        let _ = writeln!(
            s,
            "{}: {} errors, e.g. {}",
            r.label,
            r.result.errors(),
            r.result.error_samples.join("; ")
        );
    }
    s
}

/// What `compare --json` writes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CompareResult {
    #[serde(flatten)]
    pub setup: CompareSetup,
    /// IP and TCP header bytes per segment in the wire estimate (IPv4 on loopback).
    pub header_bytes_per_segment: f64,
    /// A row per protocol: its run's result (`label`: the row's name) and the figures
    /// per message derived from it.
    pub rows: Vec<CompareRowResult>,
    /// The NSQ study's ratios, HTTP against TCP (also in `versus`).
    pub http_vs_tcp: Option<VersusRatios>,
    pub versus: Vec<VersusResult>,
}

/// One row: its run's result, and its per-message figures (`None` without a completed one).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CompareRowResult {
    #[serde(flatten)]
    pub result: RunResult,
    pub derived: Option<RowDerived>,
}

/// A row's figures per message (see the table's columns).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RowDerived {
    pub tx_per_msg: f64,
    pub rx_per_msg: f64,
    pub payload: usize,
    /// Payload bytes per message, both ways (twice for an echo).
    pub payload_bytes: f64,
    pub framing: f64,
    pub overhead: f64,
    pub segs_per_msg: f64,
    pub wire_per_msg: f64,
    pub msgs_per_sec: f64,
    pub secs_per_100k_msgs: f64,
    pub cpu_us_per_msg: f64,
    pub handshake_tx_per_conn: f64,
    pub handshake_rx_per_conn: f64,
    /// `--no-keepalive`: what one new connection costs.
    pub per_connection: Option<PerConnectionResult>,
    /// This row as a multiple of the floor under it (`None`: a floor row, or none measured).
    #[serde(default)]
    pub vs_floor: Option<FloorMultiples>,
}

/// A row's figures per message as multiples of its floor's (bare TCP carrying the same
/// payload, as many times, with as much TLS).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct FloorMultiples {
    /// The floor row's label.
    pub floor: String,
    /// tx + rx bytes per message.
    pub bytes: f64,
    pub segs: f64,
    pub wire: f64,
    pub cpu: f64,
}

/// What one new connection costs (`compare --no-keepalive`), means over the run: bytes of
/// the protocol's set-up, one operation, and the connection's own messages besides (control:
/// acknowledgements, window updates, pings, the goodbye); every byte both ways, segments both
/// ways (SYN and FIN included) and the wire estimate; SYN to established, established to
/// set-up done, and from the operation's start (before its connect) to its completion.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PerConnectionResult {
    pub setup_tx: f64,
    pub setup_rx: f64,
    pub op_tx: f64,
    pub op_rx: f64,
    pub control_tx: f64,
    pub control_rx: f64,
    pub bytes: f64,
    pub segs: f64,
    pub wire: f64,
    pub connect_ms: f64,
    pub setup_ms: f64,
    pub first_op_ms: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct VersusResult {
    pub title: String,
    /// The rows divided: the numerator's figures over the denominator's.
    pub numerator: String,
    pub denominator: String,
    /// `None` when either side has no result.
    pub ratios: Option<VersusRatios>,
}

/// The numerator's figure over the denominator's: bytes per message each way, and messages
/// per second.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct VersusRatios {
    pub tx: f64,
    pub rx: f64,
    pub speed: f64,
}

impl Row {
    fn derived(&self, rows: &[Row]) -> Option<RowDerived> {
        self.has_result().then(|| RowDerived {
            tx_per_msg: self.tx_per_msg(),
            rx_per_msg: self.rx_per_msg(),
            payload: self.payload,
            payload_bytes: self.payload_bytes(),
            framing: self.framing(),
            overhead: self.overhead(),
            segs_per_msg: self.segs_per_msg(),
            wire_per_msg: self.wire_per_msg(),
            msgs_per_sec: self.msgs_per_sec(),
            secs_per_100k_msgs: self.secs_per_study(),
            cpu_us_per_msg: self.cpu_us_per_msg(),
            handshake_tx_per_conn: self.handshake().0,
            handshake_rx_per_conn: self.handshake().1,
            per_connection: self.info.per_connection.then(|| self.per_connection()).flatten(),
            vs_floor: (!self.floor).then(|| self.floor_of(rows).map(|f| self.vs_floor(f))).flatten(),
        })
    }
}

pub fn json(info: &CompareInfo, rows: &[Row]) -> CompareResult {
    let versus: Vec<VersusResult> = versus_pairs(rows)
        .into_iter()
        .map(|(title, http, tcp)| VersusResult {
            title: title.to_string(),
            numerator: http.label.clone(),
            denominator: tcp.label.clone(),
            ratios: (http.has_result() && tcp.has_result()).then(|| VersusRatios {
                tx: ratio(http.tx_per_msg(), tcp.tx_per_msg()),
                rx: ratio(http.rx_per_msg(), tcp.rx_per_msg()),
                speed: ratio(http.msgs_per_sec(), tcp.msgs_per_sec()),
            }),
        })
        .collect();
    CompareResult {
        setup: info.setup.clone(),
        header_bytes_per_segment: HEADER_BYTES_V4,
        rows: rows
            .iter()
            .map(|r| CompareRowResult { result: r.result.clone(), derived: r.derived(rows) })
            .collect(),
        http_vs_tcp: versus
            .iter()
            .find(|v| v.title == crate::proto::nsq::NSQ_HTTP_VS_TCP)
            .and_then(|v| v.ratios),
        versus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::result::fixtures;

    fn row(label: &str, result: RunResult, payload: usize, crossings: u8) -> Row {
        let info = RunInfo::fixture(&result.target, None);
        Row {
            label: label.into(),
            info,
            result,
            payload,
            payload_crossings: crossings,
            versus: None,
            floor: false,
            ipv6: false,
        }
    }

    /// A fixed result in, the exact row and footer out.
    #[test]
    fn a_row_and_its_footer_are_exactly_these() {
        let r = row("HTTP/1.1 POST", fixtures::run("a", 1000, 20_000, 2), 40, 1);
        assert_eq!(
            line(&r, 20),
            "HTTP/1.1 POST          100.0     50.0       40    275.0%      0.00     150.0        500    199.88s   20.5us   21.0us  20.00us       3  match"
        );
        assert_eq!(
            footer(std::slice::from_ref(&r)),
            "\nhandshake per connection (apart from the per-message bytes): HTTP/1.1 POST tx 2 rx 0;\n\
payload = the message's payload bytes both ways (an echo carries it twice); overhead = (tx + rx − payload) / payload\n\
wire/msg = tx + rx + segments × 52 B (IPv4 20 + TCP 20 + timestamps 12; no link layer on loopback); segments from TCP_INFO, set-up included\n\
HTTP/1.1 POST: 3 errors, e.g. status: HTTP 503; connect: refused\n"
        );
        // A row with nothing completed says so, with its failures and the audit.
        let mut empty = fixtures::run("b", 0, 1, 1);
        empty.ops = 0;
        let none = row("WebSocket binary", empty, 40, 2);
        assert_eq!(
            line(&none, 20),
            "WebSocket binary     no result: no message completed (2 failed, 1 connection error)  audit match"
        );
    }
}
