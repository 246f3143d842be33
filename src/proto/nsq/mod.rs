//! NSQ: the publisher's side of nsqd's binary TCP protocol (`PUB`, `MPUB`, `DPUB`) and of its
//! HTTP API (`POST /pub`, `/mpub`), and a publish sink that answers both byte for byte as
//! nsqd v1.3.0 does (messages are counted and dropped). This file is the wire format; the
//! client ([`client`]), the TCP sink ([`sink`]) and the HTTP sink ([`http_sink`]) use it.
//!
//! Wire format (nsqd's `protocol_v2.go`): the client sends the magic `"  V2"` once, then
//! newline-terminated commands, some followed by a 4-byte big-endian length and a body. The
//! server answers with frames: 4-byte size (of what follows), 4-byte type (0 response, 1 error,
//! 2 message), data. A 400-byte `PUB` on topic `test` is 9 + 4 + 400 = 413 bytes; its `OK`
//! frame is 4 + 4 + 2 = 10.

pub mod client;
pub mod fuzz;
pub mod http_sink;
pub mod sink;

pub use client::NsqClient;
pub use http_sink::NsqHttpServer;
pub use sink::NsqServer;

use super::http1::RequestSpec;
use std::fmt::Write as _;

/// How nsqd (or what answered as it) broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("malformed NSQ frame")]
    BadFrame,
    #[error("the server refused IDENTIFY")]
    IdentifyRefused,
    #[error(
        "nsqd did not agree to tls_v1: is it started with --tls-cert and --tls-key (or `serve nsq --tls`)?"
    )]
    TlsRefused,
    #[error("unexpected NSQ message frame (a publisher receives none)")]
    UnexpectedMessage,
}

impl super::CodecError for Error {
    fn class(&self) -> crate::outcome::ErrorClass {
        match self {
            Error::TlsRefused => crate::outcome::ErrorClass::Tls,
            _ => crate::outcome::ErrorClass::Protocol,
        }
    }
}

pub const MAGIC_V2: &[u8; 4] = b"  V2";
/// The NSQ study's ratio in `compare`: the same message published by HTTP and by TCP.
pub const NSQ_HTTP_VS_TCP: &str = "HTTP vs TCP (NSQ /pub vs PUB)";
pub const FRAME_RESPONSE: u32 = 0;
pub const FRAME_ERROR: u32 = 1;
pub const FRAME_MESSAGE: u32 = 2;
pub const HEARTBEAT: &[u8] = b"_heartbeat_";
pub const NOP: &[u8] = b"NOP\n";
/// nsqd's defaults (`--max-msg-size`, `--max-body-size`, `--max-req-timeout`, heartbeat).
pub const DEFAULT_MAX_MSG_SIZE: u64 = 1_048_576;
pub const DEFAULT_MAX_BODY_SIZE: u64 = 5_242_880;
pub const MAX_REQ_TIMEOUT_MS: i64 = 3_600_000;
pub const DEFAULT_HEARTBEAT_MS: i64 = 30_000;
pub const MAX_HEARTBEAT_MS: i64 = 60_000;
/// A client frame larger than this is garbage (nsqd's frames are bounded by its body limits).
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// nsqd reads commands through a 16 KiB bufio reader; a longer line closes the connection.
pub const MAX_COMMAND_LINE: usize = 16 * 1024;

/// Append one frame as nsqd writes it.
pub fn write_frame(out: &mut Vec<u8>, frame_type: u32, data: &[u8]) {
    out.extend_from_slice(&(4 + data.len() as u32).to_be_bytes());
    out.extend_from_slice(&frame_type.to_be_bytes());
    out.extend_from_slice(data);
}

/// What to publish, as the user asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishSpec {
    pub topic: String,
    pub message: Vec<u8>,
    /// Messages per operation: 1 is `PUB`, more is `MPUB`.
    pub batch: usize,
    /// `DPUB` with this delay (single messages only).
    pub defer_ms: Option<u64>,
}

/// The length field of a publish's body (the message for `PUB`, the whole batch for `MPUB`),
/// or `None` when it does not fit NSQ's signed 32-bit lengths.
pub fn publish_body_len(batch: usize, message: usize) -> Option<u32> {
    let message = message as u64;
    let len = if batch > 1 { 4 + batch as u64 * (4 + message) } else { message };
    u32::try_from(len).ok().filter(|&n| n <= i32::MAX as u32)
}

/// `PUB`, `MPUB` or `DPUB`, encoded once. The lengths must fit ([`publish_body_len`]; plans
/// are checked before this is called).
pub fn encode_publish(spec: &PublishSpec) -> Vec<u8> {
    let mut out = Vec::new();
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes();
    if spec.batch > 1 {
        let _ = writeln!(ByteWriter(&mut out), "MPUB {}", spec.topic);
        out.extend_from_slice(
            &publish_body_len(spec.batch, spec.message.len()).unwrap_or(u32::MAX).to_be_bytes(),
        );
        out.extend_from_slice(&len(spec.batch));
        for _ in 0..spec.batch {
            out.extend_from_slice(&len(spec.message.len()));
            out.extend_from_slice(&spec.message);
        }
    } else {
        match spec.defer_ms {
            Some(ms) => _ = writeln!(ByteWriter(&mut out), "DPUB {} {ms}", spec.topic),
            None => _ = writeln!(ByteWriter(&mut out), "PUB {}", spec.topic),
        }
        out.extend_from_slice(&len(spec.message.len()));
        out.extend_from_slice(&spec.message);
    }
    out
}

/// The `IDENTIFY` command with its JSON body.
pub fn encode_identify(json: &[u8]) -> Vec<u8> {
    let mut out = b"IDENTIFY\n".to_vec();
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
    out
}

/// The request `nsq+http://` sends: `POST /pub?topic=T` with the message as body, or `/mpub`
/// with `batch` messages, newline-separated or (`binary`) in MPUB's binary form.
pub fn http_publish_request(host: &str, spec: &PublishSpec, binary: bool) -> RequestSpec {
    let (target, body) = if spec.batch > 1 {
        if binary {
            let mpub = encode_publish(spec);
            let body_start = mpub.iter().position(|&b| b == b'\n').unwrap_or(0) + 1 + 4;
            (format!("/mpub?topic={}&binary=true", spec.topic), mpub[body_start..].to_vec())
        } else {
            let mut body = Vec::with_capacity(spec.batch * (spec.message.len() + 1));
            for _ in 0..spec.batch {
                body.extend_from_slice(&spec.message);
                body.push(b'\n');
            }
            (format!("/mpub?topic={}", spec.topic), body)
        }
    } else {
        let defer = spec.defer_ms.map(|ms| format!("&defer={ms}")).unwrap_or_default();
        (format!("/pub?topic={}{defer}", spec.topic), spec.message.clone())
    };
    RequestSpec { method: "POST".into(), host: host.into(), target, headers: vec![], body }
}

pub struct ByteWriter<'a>(&'a mut Vec<u8>);
impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A whole frame: its type, its data, and its length on the wire.
pub type Frame<'a> = (u32, &'a [u8], usize);

/// One whole frame at the start of `input`, if it has arrived.
pub fn parse_frame(input: &[u8]) -> Result<Option<Frame<'_>>, Error> {
    if input.len() < 8 {
        return Ok(None);
    }
    let size = u32::from_be_bytes(input[..4].try_into().expect("4 bytes")) as usize;
    if !(4..=MAX_FRAME).contains(&size) {
        return Err(Error::BadFrame);
    }
    if input.len() < 4 + size {
        return Ok(None);
    }
    let frame_type = u32::from_be_bytes(input[4..8].try_into().expect("4 bytes"));
    Ok(Some((frame_type, &input[8..4 + size], 4 + size)))
}

/// The error codes nsqd sends; anything else is reported as `E_OTHER`.
const ERROR_CODES: &[&str] = &[
    "E_INVALID",
    "E_BAD_BODY",
    "E_BAD_TOPIC",
    "E_BAD_CHANNEL",
    "E_BAD_MESSAGE",
    "E_PUB_FAILED",
    "E_MPUB_FAILED",
    "E_DPUB_FAILED",
    "E_BAD_PROTOCOL",
    "E_IDENTIFY_FAILED",
    "E_AUTH_FIRST",
    "E_AUTH_FAILED",
    "E_UNAUTHORIZED",
];

pub fn error_code(data: &[u8]) -> &'static str {
    let code = data.split(|&b| b == b' ').next().unwrap_or_default();
    ERROR_CODES.iter().find(|c| c.as_bytes() == code).copied().unwrap_or("E_OTHER")
}

/// The default `IDENTIFY` body: who we are, nothing negotiated.
pub fn default_identify(hostname: &str) -> Vec<u8> {
    serde_json::json!({
        "client_id": "wirebench",
        "hostname": hostname,
        "user_agent": concat!("wirebench/", env!("CARGO_PKG_VERSION")),
    })
    .to_string()
    .into_bytes()
}

/// Limits of the sink, named as nsqd's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkLimits {
    pub max_msg_size: u64,
    pub max_body_size: u64,
}

impl Default for SinkLimits {
    fn default() -> Self {
        SinkLimits { max_msg_size: DEFAULT_MAX_MSG_SIZE, max_body_size: DEFAULT_MAX_BODY_SIZE }
    }
}

/// nsqd's topic rule: 1–64 of `[.a-zA-Z0-9_-]`, optionally ending in `#ephemeral`.
pub fn valid_topic(name: &[u8]) -> bool {
    let base = name.strip_suffix(b"#ephemeral").unwrap_or(name);
    !name.is_empty()
        && name.len() <= 64
        && !base.is_empty()
        && base.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(batch: usize) -> PublishSpec {
        PublishSpec { topic: "test".into(), message: vec![b'x'; 400], batch, defer_ms: None }
    }

    #[test]
    fn pub_of_400_bytes_is_413_and_ok_is_10() {
        // `PUB <topic>\n`, the message's 4-byte big-endian length, the message.
        let p = encode_publish(&spec(1));
        assert_eq!(p, [b"PUB test\n".as_slice(), &400u32.to_be_bytes(), &[b'x'; 400]].concat());
        assert_eq!(p.len(), 413, "the study's figure");
        let mut ok = Vec::new();
        write_frame(&mut ok, FRAME_RESPONSE, b"OK");
        assert_eq!(ok, b"\x00\x00\x00\x06\x00\x00\x00\x00OK");
    }

    #[test]
    fn mpub_of_10_by_400_is_4058_and_dpub_carries_its_delay() {
        // `MPUB <topic>\n`, the body's length, then the body: the count, and per message its
        // length and the message.
        let m = encode_publish(&spec(10));
        let one = [&400u32.to_be_bytes()[..], &[b'x'; 400]].concat();
        let body = [&10u32.to_be_bytes()[..], &one.repeat(10)].concat();
        assert_eq!(m, [b"MPUB test\n".as_slice(), &(body.len() as u32).to_be_bytes(), &body].concat());
        assert_eq!(m.len(), 4058);
        let d = encode_publish(&PublishSpec { defer_ms: Some(250), ..spec(1) });
        assert!(d.starts_with(b"DPUB test 250\n\x00\x00\x01\x90"));
    }

    #[test]
    fn http_publish_requests() {
        let r = http_publish_request("127.0.0.1:4151", &spec(1), false);
        let head = b"POST /pub?topic=test HTTP/1.1\r\nHost: 127.0.0.1:4151\r\nContent-Length: 400\r\n\r\n";
        assert_eq!(crate::proto::http1::encode_request(&r), [head.as_slice(), &[b'x'; 400]].concat());
        let r = http_publish_request("h", &spec(3), false);
        assert_eq!((r.target.as_str(), r.body.len()), ("/mpub?topic=test", 3 * 401));
        let r = http_publish_request("h", &spec(3), true);
        assert_eq!(r.body.len(), 4 + 3 * 404);
        let mut s = NsqHttpServer::new(SinkLimits::default());
        let mut out = Vec::new();
        let served =
            crate::proto::ServerCodec::serve(&mut s, &crate::proto::http1::encode_request(&r), &mut out);
        assert_eq!(served.messages, 3);
    }
}

// ---------------------------------------------------------------------------------------------
// NSQ in the protocol registry: two protocols (TCP and HTTP publishing) and one built-in
// server answering both.

use crate::plan::{
    CompareRow, Drive, LoadPlan, OptionSet, Payload, Prepared, Protocol, Scheme, Server, Versus,
};
use crate::tls::options::TlsStart;
use anyhow::bail;
use std::net::{SocketAddr, ToSocketAddrs};

/// A batch larger than this is a typo (and a body nsqd refuses by default long before).
const MAX_BATCH: usize = 100_000;
/// `compare`'s MPUB row batches this many messages unless `--batch` says otherwise.
const COMPARE_BATCH: usize = 10;

/// NSQ's load options: those of a publish, and those of each of its two protocols.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(skip)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub publish: PublishOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub tcp: TcpOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub http: HttpOptions,
}

/// The options of a publish, over TCP or HTTP.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "nsq-options")]
pub struct PublishOptions {
    /// NSQ: messages per operation (`MPUB` over TCP, `/mpub` over HTTP; default 1; compare's
    /// MPUB row: 10).
    #[arg(long)]
    pub batch: Option<usize>,
    /// NSQ: publish deferred by D milliseconds (`DPUB`, or `/pub?defer=D`).
    #[arg(long, value_name = "D")]
    pub defer_ms: Option<u64>,
}

/// NSQ's load options for its TCP protocol only.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "nsq-tcp-options")]
pub struct TcpOptions {
    /// NSQ over TCP: send only the magic, no `IDENTIFY`.
    #[arg(long, conflicts_with = "identify")]
    pub no_identify: bool,
    /// NSQ over TCP: the `IDENTIFY` JSON body to send instead of the default one.
    #[arg(long, value_name = "JSON")]
    pub identify: Option<String>,
}

/// NSQ's load options for its HTTP API only.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "nsq-http-options")]
pub struct HttpOptions {
    /// NSQ over HTTP with --batch: the binary `/mpub` form instead of newline-separated messages.
    #[arg(long)]
    pub binary: bool,
}

/// The sink's options, named as nsqd's flags.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "nsq-serve-options")]
pub struct ServeOptions {
    /// nsq: the address of the HTTP side (`/pub`, `/mpub`, `/ping`; default 127.0.0.1:4151, or
    /// a free port when --listen asks for one).
    #[arg(long)]
    pub http_listen: Option<String>,
    /// nsq: largest message accepted (nsqd's `--max-msg-size`, default 1048576; NSQ's lengths
    /// are 32-bit).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub max_msg_size: Option<u64>,
    /// nsq: largest MPUB body accepted (nsqd's `--max-body-size`, default 5242880).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub max_body_size: Option<u64>,
}

impl ServeOptions {
    fn limits(&self) -> SinkLimits {
        SinkLimits {
            max_msg_size: self.max_msg_size.unwrap_or(DEFAULT_MAX_MSG_SIZE),
            max_body_size: self.max_body_size.unwrap_or(DEFAULT_MAX_BODY_SIZE),
        }
    }
}

/// nsqd's answer to a publish: `OK` (its success) or an error code (`E_BAD_TOPIC`).
pub const fn answer(code: &'static str) -> crate::outcome::Answer {
    let ok = matches!(code.as_bytes(), b"OK");
    crate::outcome::Answer::new("", crate::outcome::Code::Name(code), ok)
}

/// NSQ's options in a plan.
fn options(plan: &LoadPlan) -> std::sync::Arc<Options> {
    plan.load.options.get::<Options>()
}

/// NSQ's TCP protocol: `IDENTIFY` (unless `--no-identify`; upgrading to TLS with `?tls=1`),
/// then `PUB`/`MPUB`; built for each target and driven by `D`.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| {
        let options = options(&p.plan);
        let identify = match (&options.tcp.identify, options.tcp.no_identify) {
            (_, true) => None,
            (Some(json), false) => Some(json.clone().into_bytes()),
            (None, false) => Some(default_identify(&p.hostname)),
        };
        let tls = p.plan.target.tls.is_some();
        let identify = identify.map(|json| if tls { identify_tls_v1(&json) } else { json });
        let client = NsqClient::new(&publish_spec(&p.plan, &p.body), identify.as_deref());
        if tls { client.with_tls_v1() } else { client }
    })
}

/// nsqd's HTTP API: `/pub` or `/mpub` over HTTP/1.1, built for each target and driven by `D`.
pub fn run_http<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| {
        let spec = publish_spec(&p.plan, &p.body);
        let mut request = http_publish_request(p.authority(), &spec, options(&p.plan).http.binary);
        request.headers = crate::proto::http1::headers(p);
        crate::proto::http1::Http1Client::new(&request)
    })
}

pub static PROTOCOL: Protocol = Protocol {
    name: "nsq",
    schemes: &[Scheme {
        name: "nsq",
        default_port: 4150,
        tls: Some(TlsStart::InHandshake),
        datagrams: false,
    }],
    default_payload: 400,
    validate: |plan| {
        validate_publish(plan)?;
        if !plan.load.headers.is_empty() {
            bail!("-H does not apply to nsq:// targets: NSQ's TCP protocol has no headers (nsq+http:// has)");
        }
        if let Some(json) = &options(plan).tcp.identify {
            let value = serde_json::from_str::<serde_json::Value>(json)
                .map_err(|e| anyhow::anyhow!("--identify '{json}' is not JSON: {e}"))?;
            if plan.target.tls.is_some() && !value.is_object() {
                bail!("--identify must be a JSON object with ?tls=1 (tls_v1 is added to it)");
            }
        }
        if plan.target.tls.is_some() && options(plan).tcp.no_identify {
            bail!("?tls=1 upgrades through IDENTIFY's tls_v1: it cannot go with --no-identify");
        }
        Ok(())
    },
    check_payload,
    messages_per_op,
    compare_rows: |plan| {
        let batch = options(plan).publish.batch.unwrap_or(COMPARE_BATCH);
        vec![
            CompareRow {
                label: "NSQ TCP PUB".into(),
                plan: with_batch(plan, 1),
                payload_crossings: 1,
                versus: Some(Versus { title: NSQ_HTTP_VS_TCP, numerator: false }),
                floor: false,
            },
            CompareRow {
                label: format!("NSQ TCP MPUB×{batch}"),
                plan: with_batch(plan, batch),
                payload_crossings: 1,
                versus: None,
                floor: false,
            },
        ]
    },
    option_groups: &["nsq-options", "nsq-tcp-options"],
    http_method: None,
    alpn: Some((b"http/1.1", false)),
    recognize: looks_like_nsq,
};

/// An NSQ frame: a 4-byte size (at least the 4-byte type, at most a megabyte) and a type of
/// response (0), error (1) or message (2).
fn looks_like_nsq(bytes: &[u8]) -> Option<&'static str> {
    let word = |at: usize| bytes.get(at..at + 4).map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    match (word(0), word(4)) {
        (Some(4..=1_048_576), Some(0..=2)) => Some("NSQ (a framed response)"),
        _ => None,
    }
}

pub static HTTP_PROTOCOL: Protocol = Protocol {
    name: "nsq-http",
    schemes: &[
        Scheme { name: "nsq+http", default_port: 4151, tls: None, datagrams: false },
        Scheme { name: "nsq+https", default_port: 4152, tls: Some(TlsStart::AtConnect), datagrams: false },
    ],
    default_payload: 400,
    validate: validate_publish,
    check_payload: |plan, body| {
        check_payload(plan, body)?;
        if messages_per_op(plan) > 1 && !options(plan).http.binary && body.contains(&b'\n') {
            bail!("the message contains a newline, which /mpub's text form would split: add --binary");
        }
        Ok(())
    },
    messages_per_op,
    compare_rows: |plan| {
        vec![CompareRow {
            label: "NSQ HTTP /pub".into(),
            plan: with_batch(plan, 1),
            payload_crossings: 1,
            versus: Some(Versus { title: NSQ_HTTP_VS_TCP, numerator: true }),
            floor: false,
        }]
    },
    option_groups: &["nsq-options", "nsq-http-options"],
    http_method: None,
    alpn: Some((b"http/1.1", false)),
    recognize: crate::plan::recognizes_none,
};

/// An `IDENTIFY` body that asks for TLS: `feature_negotiation` and `tls_v1` set (nsqd answers
/// `tls_v1` only to a client that negotiates features).
pub fn identify_tls_v1(json: &[u8]) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(json).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(map) = value.as_object_mut() {
        map.insert("feature_negotiation".into(), true.into());
        map.insert("tls_v1".into(), true.into());
    }
    value.to_string().into_bytes()
}

/// The topic a URL names: its path without the slash.
fn topic(plan: &LoadPlan) -> &str {
    plan.target.path.trim_start_matches('/').split('?').next().unwrap_or_default()
}

fn messages_per_op(plan: &LoadPlan) -> u64 {
    options(plan).publish.batch.unwrap_or(1) as u64
}

fn validate_publish(plan: &LoadPlan) -> anyhow::Result<()> {
    if topic(plan).is_empty() {
        bail!("{}: an NSQ URL names its topic: nsq://127.0.0.1:4150/TOPIC", plan.target.url);
    }
    let options = &options(plan).publish;
    let batch = options.batch.unwrap_or(1);
    if batch == 0 || batch > MAX_BATCH {
        bail!("--batch must be between 1 and {MAX_BATCH}");
    }
    if batch > 1 && options.defer_ms.is_some() {
        bail!("--defer-ms publishes single messages (DPUB); it cannot be combined with --batch");
    }
    if let Some(Payload::Size(n)) = plan.load.payload {
        fits(plan, n)?;
    }
    Ok(())
}

fn check_payload(plan: &LoadPlan, body: &[u8]) -> anyhow::Result<()> {
    fits(plan, body.len())
}

/// A batch of messages of `size` bytes fits NSQ's 32-bit lengths.
fn fits(plan: &LoadPlan, size: usize) -> anyhow::Result<()> {
    let batch = messages_per_op(plan) as usize;
    if publish_body_len(batch, size).is_none() {
        bail!(
            "--batch {batch} × --size {size} does not fit NSQ's 32-bit lengths (at most {} bytes per MPUB body); lower one of them",
            i32::MAX
        );
    }
    Ok(())
}

fn publish_spec(plan: &LoadPlan, body: &[u8]) -> PublishSpec {
    let options = &options(plan).publish;
    PublishSpec {
        topic: topic(plan).to_string(),
        message: body.to_vec(),
        batch: options.batch.unwrap_or(1),
        defer_ms: options.defer_ms,
    }
}

/// The plan with `batch` messages per operation, and `-n` messages in as many operations.
fn with_batch(plan: &LoadPlan, batch: usize) -> LoadPlan {
    let mut plan = plan.with_options(|o: &mut Options| o.publish.batch = Some(batch));
    plan.load.shape.ops = plan.load.shape.ops.map(|n| n.div_ceil(batch as u64));
    plan
}

pub static SERVER: Server = Server {
    name: "nsq",
    about: "an nsqd-compatible publish sink on TCP (PUB, MPUB, DPUB) and HTTP (/pub, /mpub): answers byte for byte as nsqd 1.3.0; messages are counted and dropped",
    default_listen: "127.0.0.1:4150",
    // The TCP side upgrades on `IDENTIFY`'s `tls_v1`, as nsqd's; the HTTP side is HTTPS (nsqd
    // keeps a plaintext HTTP port beside its HTTPS one; this sink serves one or the other).
    tls: &[TlsStart::InHandshake, TlsStart::AtConnect],
    listeners: |addr, options: &OptionSet, tls| {
        let options = options.get::<ServeOptions>();
        let http = match &options.http_listen {
            Some(text) => text.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
                anyhow::anyhow!("--http-listen '{text}' is not an address: use e.g. 127.0.0.1:4151")
            })?,
            // A free port for the TCP side means a free one for the HTTP side too.
            None if addr.port() == 0 => SocketAddr::new(addr.ip(), 0),
            None => SocketAddr::new(addr.ip(), 4151),
        };
        let limits = options.limits();
        let tcp = NsqServer::new(limits);
        let tcp = if tls { tcp.with_tls_v1() } else { tcp };
        Ok(vec![(addr, Box::new(tcp)), (http, Box::new(NsqHttpServer::new(limits)))])
    },
    alpn: Some(b"http/1.1"),
    urls: |addrs, tls| {
        let (tcp, http) = if tls { ("?tls=1", "nsq+https") } else { ("", "nsq+http") };
        vec![format!("nsq://{}/test{tcp}", addrs[0]), format!("{http}://{}/test", addrs[1])]
    },
    option_groups: &["nsq-serve-options"],
    quic: false,
    datagrams: None,
};
