//! NSQ: the publisher's side of nsqd's binary TCP protocol (`PUB`, `MPUB`, `DPUB`) and of its
//! HTTP API (`POST /pub`, `/mpub`), and a publish sink that answers both byte for byte as
//! nsqd v1.3.0 does (messages are counted and dropped).
//!
//! Wire format (nsqd's `protocol_v2.go`): the client sends the magic `"  V2"` once, then
//! newline-terminated commands, some followed by a 4-byte big-endian length and a body. The
//! server answers with frames: 4-byte size (of what follows), 4-byte type (0 response, 1 error,
//! 2 message), data. A 400-byte `PUB` on topic `test` is 9 + 4 + 400 = 413 bytes; its `OK`
//! frame is 4 + 4 + 2 = 10.

use super::http1::{self, Refusal, Request, RequestLimits, RequestSpec};
use super::{Awaiting, ClientCodec, Decoded, Failure, Outcome, ProtoError, Served, ServerCodec};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

pub const MAGIC_V2: &[u8; 4] = b"  V2";
const FRAME_RESPONSE: u32 = 0;
const FRAME_ERROR: u32 = 1;
const FRAME_MESSAGE: u32 = 2;
const HEARTBEAT: &[u8] = b"_heartbeat_";
pub const NOP: &[u8] = b"NOP\n";
/// nsqd's defaults (`--max-msg-size`, `--max-body-size`, `--max-req-timeout`, heartbeat).
pub const DEFAULT_MAX_MSG_SIZE: u64 = 1_048_576;
pub const DEFAULT_MAX_BODY_SIZE: u64 = 5_242_880;
const MAX_REQ_TIMEOUT_MS: i64 = 3_600_000;
const DEFAULT_HEARTBEAT_MS: i64 = 30_000;
const MAX_HEARTBEAT_MS: i64 = 60_000;
/// A client frame larger than this is garbage (nsqd's frames are bounded by its body limits).
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// nsqd reads commands through a 16 KiB bufio reader; a longer line closes the connection.
const MAX_COMMAND_LINE: usize = 16 * 1024;

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
pub fn publish_body_len(spec: &PublishSpec) -> Option<u32> {
    let message = spec.message.len() as u64;
    let len = if spec.batch > 1 { 4 + spec.batch as u64 * (4 + message) } else { message };
    u32::try_from(len).ok().filter(|&n| n <= i32::MAX as u32)
}

/// `PUB`, `MPUB` or `DPUB`, encoded once. The lengths must fit ([`publish_body_len`]; plans
/// are checked before this is called).
pub fn encode_publish(spec: &PublishSpec) -> Vec<u8> {
    let mut out = Vec::new();
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes();
    if spec.batch > 1 {
        let _ = writeln!(ByteWriter(&mut out), "MPUB {}", spec.topic);
        out.extend_from_slice(&publish_body_len(spec).unwrap_or(u32::MAX).to_be_bytes());
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

struct ByteWriter<'a>(&'a mut Vec<u8>);
impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A whole frame: its type, its data, and its length on the wire.
type Frame<'a> = (u32, &'a [u8], usize);

/// One whole frame at the start of `input`, if it has arrived.
fn parse_frame(input: &[u8]) -> Result<Option<Frame<'_>>, ProtoError> {
    if input.len() < 8 {
        return Ok(None);
    }
    let size = u32::from_be_bytes(input[..4].try_into().expect("4 bytes")) as usize;
    if !(4..=MAX_FRAME).contains(&size) {
        return Err(ProtoError::BadFrame);
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

fn error_code(data: &[u8]) -> &'static str {
    let code = data.split(|&b| b == b' ').next().unwrap_or_default();
    ERROR_CODES.iter().find(|c| c.as_bytes() == code).copied().unwrap_or("E_OTHER")
}

/// The TCP publisher: magic and `IDENTIFY` once per connection, then prebuilt publishes.
#[derive(Debug, Clone)]
pub struct NsqClient {
    handshake: Arc<[u8]>,
    identify: bool,
    publish: Arc<[u8]>,
    /// An error frame arrived: nsqd closes the connection after every publishing error.
    closing: bool,
}

impl NsqClient {
    /// `identify`: the JSON body of `IDENTIFY`, or `None` to send only the magic.
    pub fn new(spec: &PublishSpec, identify: Option<&[u8]>) -> Self {
        let mut handshake = MAGIC_V2.to_vec();
        if let Some(json) = identify {
            handshake.extend_from_slice(&encode_identify(json));
        }
        NsqClient {
            handshake: handshake.into(),
            identify: identify.is_some(),
            publish: encode_publish(spec).into(),
            closing: false,
        }
    }
    pub fn publish(&self) -> &[u8] {
        &self.publish
    }
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

impl ClientCodec for NsqClient {
    fn handshake(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.handshake);
    }

    fn decode_handshake(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        if !self.identify {
            return Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control });
        }
        match parse_frame(input)? {
            None => Ok(Decoded::Partial),
            Some((FRAME_RESPONSE, _, len)) => Ok(Decoded::Done { consumed: len, outcome: Outcome::Control }),
            Some(_) => Err(ProtoError::IdentifyRefused),
        }
    }

    fn encode_op(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.publish);
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, ProtoError> {
        let Some((frame_type, data, consumed)) = parse_frame(input)? else { return Ok(Decoded::Partial) };
        let outcome = match frame_type {
            FRAME_RESPONSE if data == HEARTBEAT => {
                out.extend_from_slice(NOP);
                Outcome::Control
            }
            FRAME_RESPONSE => Outcome::Op,
            FRAME_ERROR => {
                self.closing = true;
                Outcome::OpFailed(Failure::Nsq(error_code(data)))
            }
            FRAME_MESSAGE => return Err(ProtoError::UnexpectedMessage),
            _ => return Err(ProtoError::BadFrame),
        };
        Ok(Decoded::Done { consumed, outcome })
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }
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

/// The TCP side of the sink: one value per connection.
#[derive(Debug, Clone)]
pub struct NsqServer {
    limits: SinkLimits,
    magic_seen: bool,
    identified: bool,
    heartbeat_ms: i64,
    /// The MPUB whose body is arriving.
    mpub: Option<MpubProgress>,
}

impl NsqServer {
    pub fn new(limits: SinkLimits) -> Self {
        NsqServer {
            limits,
            magic_seen: false,
            identified: false,
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            mpub: None,
        }
    }
}

/// What one command did.
enum Step {
    /// Need more bytes: of a command line (or the magic), or of a body.
    Need(Awaiting),
    /// Answered (or not, for NOP); used this many bytes and published this many messages.
    Done(usize, u64),
    /// An error frame was written; nsqd closes the connection.
    Fatal,
}

fn fatal(out: &mut Vec<u8>, code: &str, desc: &str) -> Step {
    write_frame(out, FRAME_ERROR, format!("{code} {desc}").as_bytes());
    Step::Fatal
}

fn be_i32(b: &[u8]) -> i64 {
    i64::from(i32::from_be_bytes(b[..4].try_into().expect("4 bytes")))
}

/// Go's `%q` for the ASCII names nsqd quotes.
fn quoted(name: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(name))
}

impl NsqServer {
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Step {
        if !self.magic_seen {
            if input.len() < 4 {
                return Step::Need(if input.is_empty() { Awaiting::Request } else { Awaiting::Head });
            }
            if &input[..4] != MAGIC_V2 {
                write_frame(out, FRAME_ERROR, b"E_BAD_PROTOCOL");
                return Step::Fatal;
            }
            self.magic_seen = true;
            return Step::Done(4, 0);
        }
        // nsqd reads lines through a 16 KiB buffer: a longer one fails however it arrived.
        let nl = input.iter().take(MAX_COMMAND_LINE + 1).position(|&b| b == b'\n');
        let Some(nl) = nl else {
            return match input.len() {
                0 => Step::Need(Awaiting::Request),
                n if n > MAX_COMMAND_LINE => Step::Fatal,
                _ => Step::Need(Awaiting::Head),
            };
        };
        let line = input[..nl].strip_suffix(b"\r").unwrap_or(&input[..nl]);
        let params: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let after = nl + 1;
        let rest = &input[after..];
        let name = params[0];
        match name {
            b"NOP" => Step::Done(after, 0),
            b"IDENTIFY" => self.identify(rest, after, out),
            b"PUB" | b"DPUB" => self.publish_one(name, &params, rest, after, out),
            b"MPUB" => self.mpub(&params, rest, after, out),
            b"FIN" | b"RDY" | b"REQ" | b"TOUCH" | b"CLS" | b"SUB" => {
                let what = String::from_utf8_lossy(name);
                fatal(out, "E_INVALID", &format!("cannot {what} in current state"))
            }
            b"AUTH" => fatal(out, "E_AUTH_DISABLED", "AUTH disabled"),
            _ => fatal(out, "E_INVALID", &format!("invalid command {}", String::from_utf8_lossy(name))),
        }
    }

    fn identify(&mut self, rest: &[u8], after: usize, out: &mut Vec<u8>) -> Step {
        if self.identified {
            return fatal(out, "E_INVALID", "cannot IDENTIFY in current state");
        }
        if rest.len() < 4 {
            return Step::Need(Awaiting::Body);
        }
        let len = be_i32(rest);
        if len > as_i64(self.limits.max_body_size) {
            return fatal(
                out,
                "E_BAD_BODY",
                &format!("IDENTIFY body too big {len} > {}", self.limits.max_body_size),
            );
        }
        if len <= 0 {
            return fatal(out, "E_BAD_BODY", &format!("IDENTIFY invalid body size {len}"));
        }
        let len = len as usize;
        if rest.len() < 4 + len {
            return Step::Need(Awaiting::Body);
        }
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&rest[4..4 + len]) else {
            return fatal(out, "E_BAD_BODY", "IDENTIFY failed to decode JSON body");
        };
        let heartbeat = body.get("heartbeat_interval").and_then(|v| v.as_i64()).unwrap_or(0);
        match heartbeat {
            -1 => self.heartbeat_ms = -1,
            0 => {}
            ms if (1000..=MAX_HEARTBEAT_MS).contains(&ms) => self.heartbeat_ms = ms,
            ms => return fatal(out, "E_BAD_BODY", &format!("IDENTIFY heartbeat interval ({ms}) is invalid")),
        }
        self.identified = true;
        if body.get("feature_negotiation").and_then(|v| v.as_bool()) == Some(true) {
            // nsqd 1.3.0's reply with its default settings, fields in its order.
            let reply = concat!(
                r#"{"max_rdy_count":2500,"version":"1.3.0","max_msg_timeout":900000,"msg_timeout":60000,"#,
                r#""tls_v1":false,"deflate":false,"deflate_level":6,"max_deflate_level":6,"snappy":false,"#,
                r#""sample_rate":0,"auth_required":false,"output_buffer_size":16384,"output_buffer_timeout":250}"#
            );
            write_frame(out, FRAME_RESPONSE, reply.as_bytes());
        } else {
            write_frame(out, FRAME_RESPONSE, b"OK");
        }
        Step::Done(after + 4 + len, 0)
    }

    fn publish_one(
        &mut self,
        name: &[u8],
        params: &[&[u8]],
        rest: &[u8],
        after: usize,
        out: &mut Vec<u8>,
    ) -> Step {
        let cmd = String::from_utf8_lossy(name);
        let deferred = name == b"DPUB";
        if params.len() < if deferred { 3 } else { 2 } {
            return fatal(out, "E_INVALID", &format!("{cmd} insufficient number of parameters"));
        }
        if !valid_topic(params[1]) {
            return fatal(
                out,
                "E_BAD_TOPIC",
                &format!("{cmd} topic name {} is not valid", quoted(params[1])),
            );
        }
        if deferred {
            let text = String::from_utf8_lossy(params[2]);
            let Some(ms) =
                params[2].iter().all(u8::is_ascii_digit).then(|| text.parse::<i64>().ok()).flatten()
            else {
                return fatal(out, "E_INVALID", &format!("DPUB could not parse timeout {text}"));
            };
            if !(0..=MAX_REQ_TIMEOUT_MS).contains(&ms) {
                return fatal(
                    out,
                    "E_INVALID",
                    &format!("DPUB timeout {ms} out of range 0-{MAX_REQ_TIMEOUT_MS}"),
                );
            }
        }
        if rest.len() < 4 {
            return Step::Need(Awaiting::Body);
        }
        let len = be_i32(rest);
        if len <= 0 {
            return fatal(out, "E_BAD_MESSAGE", &format!("{cmd} invalid message body size {len}"));
        }
        if len > as_i64(self.limits.max_msg_size) {
            return fatal(
                out,
                "E_BAD_MESSAGE",
                &format!("{cmd} message too big {len} > {}", self.limits.max_msg_size),
            );
        }
        if rest.len() < 4 + len as usize {
            return Step::Need(Awaiting::Body);
        }
        write_frame(out, FRAME_RESPONSE, b"OK");
        Step::Done(after + 4 + len as usize, 1)
    }

    fn mpub(&mut self, params: &[&[u8]], rest: &[u8], after: usize, out: &mut Vec<u8>) -> Step {
        if params.len() < 2 {
            return fatal(out, "E_INVALID", "MPUB insufficient number of parameters");
        }
        if !valid_topic(params[1]) {
            // nsqd 1.3.0 repeats the code inside the description; so does the sink.
            return fatal(
                out,
                "E_BAD_TOPIC",
                &format!("E_BAD_TOPIC MPUB topic name {} is not valid", quoted(params[1])),
            );
        }
        if rest.len() < 4 {
            return Step::Need(Awaiting::Body);
        }
        let body_len = be_i32(rest);
        if body_len <= 0 {
            return fatal(out, "E_BAD_BODY", &format!("MPUB invalid body size {body_len}"));
        }
        if body_len > as_i64(self.limits.max_body_size) {
            return fatal(
                out,
                "E_BAD_BODY",
                &format!("MPUB body too big {body_len} > {}", self.limits.max_body_size),
            );
        }
        // Bounded by the declared length, and resumed where the last read stopped.
        let body_len = body_len as usize;
        let end = rest.len().min(4 + body_len);
        let progress = self.mpub.get_or_insert_with(MpubProgress::default);
        match parse_mpub_body(&rest[4..end], self.limits, progress) {
            Err((code, desc)) => fatal(out, code, &desc),
            Ok(None) if end == 4 + body_len => {
                let desc = format!("MPUB body size {body_len} is less than its messages need");
                fatal(out, "E_BAD_BODY", &desc)
            }
            Ok(None) => Step::Need(Awaiting::Body),
            Ok(Some((used, _))) if used != body_len => fatal(
                out,
                "E_BAD_BODY",
                &format!("MPUB body size {body_len} does not match its messages ({used})"),
            ),
            Ok(Some((used, count))) => {
                self.mpub = None;
                write_frame(out, FRAME_RESPONSE, b"OK");
                Step::Done(after + 4 + used, count)
            }
        }
    }
}

/// How far an MPUB body arriving over several reads has been read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MpubProgress {
    /// Messages read whole so far, and where the next one starts in the body.
    read: i64,
    pos: usize,
}

/// MPUB's binary body (count, then size + message each) as nsqd's `readMPUB` reads it, from
/// where `progress` stopped: `Ok(None)` if incomplete, else the bytes used and the count.
fn parse_mpub_body(
    body: &[u8],
    limits: SinkLimits,
    progress: &mut MpubProgress,
) -> Result<Option<(usize, u64)>, (&'static str, String)> {
    if body.len() < 4 {
        return Ok(None);
    }
    let count = be_i32(body);
    let max_messages = as_i64(limits.max_body_size).saturating_sub(4) / 5;
    if count <= 0 || count > max_messages {
        return Err(("E_BAD_BODY", format!("MPUB invalid message count {count}")));
    }
    if progress.pos == 0 {
        progress.pos = 4;
    }
    while progress.read < count {
        let (i, pos) = (progress.read, progress.pos);
        if body.len() < pos + 4 {
            return Ok(None);
        }
        let size = be_i32(&body[pos..]);
        if size <= 0 {
            return Err(("E_BAD_MESSAGE", format!("MPUB invalid message({i}) body size {size}")));
        }
        if size > as_i64(limits.max_msg_size) {
            return Err(("E_BAD_MESSAGE", format!("MPUB message too big {size} > {}", limits.max_msg_size)));
        }
        let next = pos + 4 + size as usize;
        if body.len() < next {
            return Ok(None);
        }
        progress.read += 1;
        progress.pos = next;
    }
    Ok(Some((progress.pos, count as u64)))
}

/// A limit given as u64 (nsqd's flags) compared with a length read as a signed 32-bit value.
fn as_i64(limit: u64) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl ServerCodec for NsqServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let mut served = Served::default();
        loop {
            match self.step(&input[served.consumed..], out) {
                Step::Need(awaiting) => {
                    served.awaiting = awaiting;
                    return served;
                }
                Step::Done(used, messages) => {
                    served.consumed += used;
                    served.requests += 1;
                    served.messages += messages;
                }
                Step::Fatal => {
                    served.consumed = input.len();
                    served.close = true;
                    return served;
                }
            }
        }
    }

    fn heartbeat_interval(&self) -> Option<Duration> {
        (self.heartbeat_ms > 0).then(|| Duration::from_millis(self.heartbeat_ms as u64))
    }

    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        write_frame(out, FRAME_RESPONSE, HEARTBEAT);
    }

    fn silence_limit(&self) -> Option<Duration> {
        // nsqd's read deadline: two heartbeat intervals without a byte from the client.
        self.heartbeat_interval().map(|i| 2 * i)
    }
}

/// `Mon, 30 Nov 2026 08:55:20 GMT` (IMF-fixdate, always 29 bytes) for Unix time `secs`.
pub fn http_date(secs: u64) -> [u8; 29] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (H. Hinnant), day 0 = 1970-01-01, a Thursday.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let text = format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    let mut out = [b' '; 29];
    out.copy_from_slice(&text.as_bytes()[..29]);
    out
}

/// Go's request-head limit (`http.DefaultMaxHeaderBytes` plus its 4 KiB slack).
const GO_MAX_HEADER_BYTES: usize = (1 << 20) + 4096;

/// The HTTP side of the sink (`/pub`, `/mpub`, `/ping`), answering as nsqd's Go server does:
/// same status lines, headers in the same order, same bodies, and a live `Date`.
#[derive(Debug, Clone)]
pub struct NsqHttpServer {
    limits: SinkLimits,
    date: [u8; 29],
    date_secs: u64,
    reader: http1::RequestReader,
}

impl NsqHttpServer {
    pub fn new(limits: SinkLimits) -> Self {
        NsqHttpServer { limits, date: http_date(0), date_secs: 0, reader: http1::RequestReader::default() }
    }

    /// Route one request; returns (status, extra leading header, body, published messages).
    fn route(&self, r: &Request<'_>) -> (u16, Option<&'static str>, Result<&'static str, String>, u64) {
        let (path, query) = r.target.split_once('?').unwrap_or((r.target, ""));
        let allowed = match path {
            "/pub" | "/mpub" => "POST",
            "/ping" => "GET",
            _ => return (404, None, Err("NOT_FOUND".into()), 0),
        };
        if r.method != allowed {
            let allow = if allowed == "POST" { "Allow: OPTIONS, POST" } else { "Allow: GET, OPTIONS" };
            return (405, Some(allow), Err("METHOD_NOT_ALLOWED".into()), 0);
        }
        if path == "/ping" {
            return (200, None, Ok("OK"), 0);
        }
        let body: std::borrow::Cow<'_, [u8]> =
            if r.chunked { dechunk(r.body).into() } else { std::borrow::Cow::Borrowed(r.body) };
        let topic = query_value(query, "topic");
        let topic_error = match &topic {
            None => Some("MISSING_ARG_TOPIC"),
            Some(t) if !valid_topic(t.as_bytes()) => Some("INVALID_TOPIC"),
            Some(_) => None,
        };
        if path == "/pub" {
            if body.len() as u64 > self.limits.max_msg_size {
                return (413, None, Err("MSG_TOO_BIG".into()), 0);
            }
            if body.is_empty() {
                return (400, None, Err("MSG_EMPTY".into()), 0);
            }
            if let Some(e) = topic_error {
                return (400, None, Err(e.into()), 0);
            }
            if let Some(d) = query_value(query, "defer") {
                match d.parse::<i64>() {
                    Ok(ms) if (0..=MAX_REQ_TIMEOUT_MS).contains(&ms) => {}
                    _ => return (400, None, Err("INVALID_DEFER".into()), 0),
                }
            }
            return (200, None, Ok("OK"), 1);
        }
        // /mpub
        if body.len() as u64 > self.limits.max_body_size {
            return (413, None, Err("BODY_TOO_BIG".into()), 0);
        }
        if let Some(e) = topic_error {
            return (400, None, Err(e.into()), 0);
        }
        let binary = query_value(query, "binary")
            .is_some_and(|v| !matches!(v.as_str(), "false" | "0" | "f" | "F" | "FALSE" | "False"));
        if binary {
            return match parse_mpub_body(&body, self.limits, &mut MpubProgress::default()) {
                Ok(Some((_, n))) => (200, None, Ok("OK"), n),
                Ok(None) => (413, None, Err("BAD_MESSAGE".into()), 0),
                Err((code, _)) => (413, None, Err(code[2..].into()), 0),
            };
        }
        let mut count = 0;
        for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if line.len() as u64 > self.limits.max_msg_size {
                return (413, None, Err("MSG_TOO_BIG".into()), 0);
            }
            count += 1;
        }
        (200, None, Ok("OK"), count)
    }

    /// One answer; `request`: the request answered (`None` for a refused one: HTTP/1.1 and a
    /// close), for the status line's version and the `Connection` header, as Go writes them.
    fn respond(
        &self,
        status: u16,
        lead: Option<&str>,
        body: Result<&str, String>,
        request: Option<&Request<'_>>,
        out: &mut Vec<u8>,
    ) {
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            413 => "Request Entity Too Large",
            _ => "Error",
        };
        let date = std::str::from_utf8(&self.date).unwrap_or_default();
        let mut w = ByteWriter(out);
        let minor = request.map_or(1, |r| r.minor_version);
        let _ = write!(w, "HTTP/1.{minor} {status} {reason}\r\n");
        if let Some(h) = lead {
            let _ = write!(w, "{h}\r\n");
        }
        // Go writes the handler's headers sorted, then Date, Content-Length, a sniffed
        // Content-Type and Connection.
        let text = match &body {
            Ok(text) => {
                let _ = write!(
                    w,
                    "X-Nsq-Content-Type: nsq; version=1.0\r\nDate: {date}\r\nContent-Length: {}\r\nContent-Type: text/plain; charset=utf-8\r\n",
                    text.len()
                );
                text.to_string()
            }
            Err(message) => {
                let json = format!("{{\"message\":\"{message}\"}}");
                let _ = write!(
                    w,
                    "Content-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: {date}\r\nContent-Length: {}\r\n",
                    json.len()
                );
                json
            }
        };
        let connection = request.map_or(Some("Connection: close\r\n"), Request::connection_header);
        let _ = write!(w, "{}\r\n{text}", connection.unwrap_or_default());
    }
}

impl ServerCodec for NsqHttpServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let max_body = usize::try_from(self.limits.max_body_size).unwrap_or(usize::MAX).saturating_add(1);
        let limits = RequestLimits { max_head: GO_MAX_HEADER_BYTES, max_body };
        let mut messages = 0;
        let mut reader = std::mem::take(&mut self.reader);
        let mut served = http1::serve_requests(input, out, limits, &mut reader, |request, out| {
            match request {
            Ok(r) => {
                let (status, lead, body, n) = self.route(r);
                messages += n;
                if r.target.starts_with("/ping") && status == 200 {
                    // /ping is PlainText in nsqd: no X-Nsq-Content-Type.
                    let date = std::str::from_utf8(&self.date).unwrap_or_default();
                    let connection = r.connection_header().unwrap_or_default();
                    let minor = r.minor_version;
                    let _ = write!(ByteWriter(out), "HTTP/1.{minor} 200 OK\r\nDate: {date}\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n{connection}\r\nOK");
                } else {
                    self.respond(status, lead, body, Some(r), out);
                }
            }
            Err(Refusal::BodyTooLarge) => self.respond(413, None, Err("MSG_TOO_BIG".into()), None, out),
            Err(Refusal::HeadTooLarge) => out.extend_from_slice(
                b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large",
            ),
            Err(Refusal::BadRequest) => out.extend_from_slice(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
            ),
        }
        });
        self.reader = reader;
        served.messages = messages;
        served
    }

    fn busy(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(http1::RESPONSE_BUSY);
    }

    fn set_unix_time(&mut self, secs: u64) {
        if secs != self.date_secs {
            self.date = http_date(secs);
            self.date_secs = secs;
        }
    }
}

/// The first value of `key` in a query string, percent-decoded.
fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The data of a chunked body (already checked whole by the request parser).
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") {
        let hex = body[..line_end].split(|&b| b == b';').next().unwrap_or_default();
        let size = usize::from_str_radix(std::str::from_utf8(hex).unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || body.len() < line_end + 2 + size {
            break;
        }
        out.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
        body = &body[(line_end + 4 + size).min(body.len())..];
    }
    out
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
    fn client_decodes_ok_heartbeat_and_errors() {
        let mut c = NsqClient::new(&spec(1), None);
        let mut out = Vec::new();
        let mut frames = Vec::new();
        write_frame(&mut frames, FRAME_RESPONSE, b"OK");
        write_frame(&mut frames, FRAME_RESPONSE, HEARTBEAT);
        write_frame(&mut frames, FRAME_ERROR, b"E_BAD_TOPIC PUB topic name \"a!\" is not valid");
        for cut in 0..10 {
            assert_eq!(c.decode_op(&frames[..cut], &mut out), Ok(Decoded::Partial));
        }
        assert_eq!(c.decode_op(&frames, &mut out), Ok(Decoded::Done { consumed: 10, outcome: Outcome::Op }));
        assert_eq!(
            c.decode_op(&frames[10..], &mut out),
            Ok(Decoded::Done { consumed: 19, outcome: Outcome::Control })
        );
        assert_eq!(out, NOP);
        assert_eq!(
            c.decode_op(&frames[29..], &mut out),
            Ok(Decoded::Done {
                consumed: frames.len() - 29,
                outcome: Outcome::OpFailed(Failure::Nsq("E_BAD_TOPIC"))
            })
        );
        assert_eq!(c.decode_op(b"\x00\x00\x00\x01\x00\x00\x00\x00", &mut out), Err(ProtoError::BadFrame));
    }

    #[test]
    fn handshake_is_magic_then_identify() {
        let mut c = NsqClient::new(&spec(1), Some(br#"{"client_id":"x"}"#));
        let mut out = Vec::new();
        c.handshake(&mut out);
        assert_eq!(out, b"  V2IDENTIFY\n\x00\x00\x00\x11{\"client_id\":\"x\"}");
        assert_eq!(c.decode_handshake(b"\x00\x00\x00\x06\x00\x00"), Ok(Decoded::Partial));
        assert!(matches!(
            c.decode_handshake(b"\x00\x00\x00\x06\x00\x00\x00\x00OK"),
            Ok(Decoded::Done { consumed: 10, .. })
        ));
        let mut bare = NsqClient::new(&spec(1), None);
        assert_eq!(bare.decode_handshake(b""), Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control }));
    }

    fn sink(input: &[u8]) -> (Served, Vec<u8>) {
        let mut out = Vec::new();
        (NsqServer::new(SinkLimits::default()).serve(input, &mut out), out)
    }

    fn frame(t: u32, data: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        write_frame(&mut f, t, data);
        f
    }

    #[test]
    fn sink_answers_like_nsqd() {
        let mut input = MAGIC_V2.to_vec();
        input.extend(encode_identify(br#"{"client_id":"a"}"#));
        input.extend(encode_publish(&spec(1)));
        input.extend(encode_publish(&spec(10)));
        input.extend(b"NOP\n");
        let (served, out) = sink(&input);
        assert_eq!((served.consumed, served.messages, served.close), (input.len(), 11, false));
        assert_eq!(out, [frame(0, b"OK"), frame(0, b"OK"), frame(0, b"OK")].concat());
        // Every prefix is answered only as far as it is whole.
        for cut in 0..input.len() {
            let (served, _) = sink(&input[..cut]);
            assert!(served.consumed <= cut && !served.close);
        }
    }

    /// The strings a real nsqd v1.3.0 sent for the same inputs (captured on loopback).
    #[test]
    fn sink_errors_are_nsqds() {
        let cases: [(&[u8], &[u8]); 7] = [
            (b"  V1", b"E_BAD_PROTOCOL"),
            (b"  V2PUB bad!\n", b"E_BAD_TOPIC PUB topic name \"bad!\" is not valid"),
            (b"  V2PUB test\n\x00\x1e\x84\x80abc", b"E_BAD_MESSAGE PUB message too big 2000000 > 1048576"),
            (b"  V2PUB test\n\x00\x00\x00\x00", b"E_BAD_MESSAGE PUB invalid message body size 0"),
            (b"  V2FOO\n", b"E_INVALID invalid command FOO"),
            (b"  V2DPUB test 99999999999\n", b"E_INVALID DPUB timeout 99999999999 out of range 0-3600000"),
            (b"  V2PUB\n", b"E_INVALID PUB insufficient number of parameters"),
        ];
        for (input, expected) in cases {
            let (served, out) = sink(input);
            assert!(served.close);
            assert_eq!(out, frame(1, expected), "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn feature_negotiation_gets_nsqds_json() {
        let mut input = MAGIC_V2.to_vec();
        input.extend(encode_identify(br#"{"feature_negotiation":true}"#));
        let (_, out) = sink(&input);
        assert_eq!(out.len(), 4 + 0x10c);
        assert!(out[8..].starts_with(br#"{"max_rdy_count":2500,"version":"1.3.0""#));
    }

    #[test]
    fn heartbeats_and_nsqds_silence_limit() {
        let mut s = NsqServer::new(SinkLimits::default());
        assert_eq!(s.heartbeat_interval(), Some(Duration::from_secs(30)));
        assert_eq!(s.silence_limit(), Some(Duration::from_secs(60)));
        let mut out = Vec::new();
        s.heartbeat(&mut out);
        assert_eq!(out, frame(0, HEARTBEAT));
        assert_eq!(out.len(), 4 + 4 + HEARTBEAT.len());
    }

    #[test]
    fn http_date_is_imf_fixdate() {
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(1_796_028_920), b"Mon, 30 Nov 2026 08:55:20 GMT");
    }

    fn http_sink(input: &[u8]) -> Vec<u8> {
        let mut s = NsqHttpServer::new(SinkLimits::default());
        s.set_unix_time(1_796_028_920);
        let mut out = Vec::new();
        s.serve(input, &mut out);
        out
    }

    /// Byte-exact against what nsqd v1.3.0 answered on loopback (Date aside, same length).
    #[test]
    fn http_sink_answers_like_nsqd() {
        let body = vec![b'x'; 400];
        let req = [
            b"POST /pub?topic=test HTTP/1.1\r\nHost: 127.0.0.1:4151\r\nContent-Length: 400\r\n\r\n"
                .as_slice(),
            &body,
        ]
        .concat();
        let ok = b"HTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK";
        assert_eq!(http_sink(&req), ok);
        assert_eq!(ok.len(), 156);
        assert_eq!(
            http_sink(b"POST /pub?topic=bad! HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 27\r\n\r\n{\"message\":\"INVALID_TOPIC\"}"
        );
        assert_eq!(
            http_sink(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"),
            b"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK"
        );
        assert_eq!(
            http_sink(b"GET /pub?topic=test HTTP/1.1\r\nHost: x\r\n\r\n"),
            b"HTTP/1.1 405 Method Not Allowed\r\nAllow: OPTIONS, POST\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 32\r\n\r\n{\"message\":\"METHOD_NOT_ALLOWED\"}"
        );
        assert_eq!(
            http_sink(b"garbage\r\n\r\n"),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
        );
    }

    #[test]
    fn http_publish_requests() {
        let r = http_publish_request("127.0.0.1:4151", &spec(1), false);
        let head = b"POST /pub?topic=test HTTP/1.1\r\nHost: 127.0.0.1:4151\r\nContent-Length: 400\r\n\r\n";
        assert_eq!(http1::encode_request(&r), [head.as_slice(), &[b'x'; 400]].concat());
        let r = http_publish_request("h", &spec(3), false);
        assert_eq!((r.target.as_str(), r.body.len()), ("/mpub?topic=test", 3 * 401));
        let r = http_publish_request("h", &spec(3), true);
        assert_eq!(r.body.len(), 4 + 3 * 404);
        let mut s = NsqHttpServer::new(SinkLimits::default());
        let mut out = Vec::new();
        let served = s.serve(&http1::encode_request(&r), &mut out);
        assert_eq!(served.messages, 3);
    }
}
