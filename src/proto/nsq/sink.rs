//! The TCP side of the publish sink: nsqd 1.3.0's answers to the magic, `IDENTIFY`, `PUB`,
//! `MPUB`, `DPUB` and `NOP`, with its topic rules, limits and error strings, its heartbeats and
//! its read deadline. Messages are counted and dropped. Commands are read incrementally: an
//! MPUB arriving over many reads is walked from its last whole message.

use super::{DEFAULT_HEARTBEAT_MS, FRAME_ERROR, FRAME_RESPONSE, HEARTBEAT, MAGIC_V2, MAX_COMMAND_LINE};
use super::{MAX_HEARTBEAT_MS, MAX_REQ_TIMEOUT_MS, SinkLimits, valid_topic, write_frame};
use crate::proto::{Ask, Awaiting, Served, ServerCodec, Step, Tell};
use std::time::Duration;

/// The TCP side of the sink: one value per connection.
#[derive(Debug, Clone)]
pub struct NsqServer {
    limits: SinkLimits,
    magic_seen: bool,
    identified: bool,
    heartbeat_ms: i64,
    /// The MPUB whose body is arriving.
    mpub: Option<MpubProgress>,
    /// The sink serves TLS (`serve nsq --tls`): `IDENTIFY` with `tls_v1` upgrades, as nsqd
    /// started with `--tls-cert` does.
    tls_v1: bool,
    /// `IDENTIFY` agreed to `tls_v1`: what follows its answer is TLS.
    upgrading: bool,
}

impl NsqServer {
    pub fn new(limits: SinkLimits) -> Self {
        NsqServer {
            limits,
            magic_seen: false,
            identified: false,
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            mpub: None,
            tls_v1: false,
            upgrading: false,
        }
    }

    /// Offer TLS through `IDENTIFY`'s `tls_v1` (the server wraps this codec in TLS).
    pub fn with_tls_v1(mut self) -> Self {
        self.tls_v1 = true;
        self
    }
}

fn fatal(out: &mut Vec<u8>, code: &str, desc: &str) -> Step {
    write_frame(out, FRAME_ERROR, format!("{code} {desc}").as_bytes());
    Step::Close
}

fn be_i32(b: &[u8]) -> i64 {
    i64::from(i32::from_be_bytes(b[..4].try_into().expect("4 bytes")))
}

/// Go's `%q` for the ASCII names nsqd quotes.
fn quoted(name: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(name))
}

impl NsqServer {
    /// A command answered: `used` bytes, one request, `messages` published; TLS starts
    /// after it if its IDENTIFY agreed to `tls_v1`.
    fn done(&mut self, used: usize, messages: u64) -> Step {
        Step::Done { used, requests: 1, messages, start_tls: std::mem::take(&mut self.upgrading) }
    }

    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Step {
        if !self.magic_seen {
            if input.len() < 4 {
                return Step::Need(if input.is_empty() { Awaiting::Request } else { Awaiting::Head });
            }
            if &input[..4] != MAGIC_V2 {
                write_frame(out, FRAME_ERROR, b"E_BAD_PROTOCOL");
                return Step::Close;
            }
            self.magic_seen = true;
            return self.done(4, 0);
        }
        // nsqd reads lines through a 16 KiB buffer: a longer one fails however it arrived.
        let nl = input.iter().take(MAX_COMMAND_LINE + 1).position(|&b| b == b'\n');
        let Some(nl) = nl else {
            return match input.len() {
                0 => Step::Need(Awaiting::Request),
                n if n > MAX_COMMAND_LINE => Step::Close,
                _ => Step::Need(Awaiting::Head),
            };
        };
        let line = input[..nl].strip_suffix(b"\r").unwrap_or(&input[..nl]);
        let params: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let after = nl + 1;
        let rest = &input[after..];
        let name = params[0];
        match name {
            b"NOP" => self.done(after, 0),
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
            // nsqd 1.3.0's reply with its default settings, fields in its order; `tls_v1` is
            // true when the client asked and the server has TLS, and then the rest is TLS.
            self.upgrading = self.tls_v1 && body.get("tls_v1").and_then(|v| v.as_bool()) == Some(true);
            let reply = format!(
                concat!(
                    r#"{{"max_rdy_count":2500,"version":"1.3.0","max_msg_timeout":900000,"msg_timeout":60000,"#,
                    r#""tls_v1":{},"deflate":false,"deflate_level":6,"max_deflate_level":6,"snappy":false,"#,
                    r#""sample_rate":0,"auth_required":false,"output_buffer_size":16384,"output_buffer_timeout":250}}"#
                ),
                self.upgrading
            );
            write_frame(out, FRAME_RESPONSE, reply.as_bytes());
        } else {
            write_frame(out, FRAME_RESPONSE, b"OK");
        }
        self.done(after + 4 + len, 0)
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
        self.done(after + 4 + len as usize, 1)
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
                self.done(after + 4 + used, count)
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
pub(super) fn parse_mpub_body(
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
        Served::by_steps(input, |rest| self.step(rest, out))
    }

    fn ask(&self, question: Ask<'_>) {
        match question {
            Ask::HeartbeatInterval(a) => *a = self.interval(),
            // nsqd's read deadline: two heartbeat intervals without a byte from the client.
            Ask::SilenceLimit(a) => *a = self.interval().map(|i| 2 * i),
            Ask::Busy(_) => {}
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        match news {
            Tell::Heartbeat(out) => write_frame(out, FRAME_RESPONSE, HEARTBEAT),
            // nsqd's first words over TLS.
            Tell::TlsEstablished(out) => write_frame(out, FRAME_RESPONSE, b"OK"),
            Tell::Seed(_) | Tell::UnixTime(_) => {}
        }
    }
}

impl NsqServer {
    /// The heartbeat interval agreed in `IDENTIFY` (or the default); none when it is 0.
    fn interval(&self) -> Option<Duration> {
        (self.heartbeat_ms > 0).then(|| Duration::from_millis(self.heartbeat_ms as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PublishSpec, encode_identify, encode_publish};
    use super::*;
    use crate::proto::Hooks as _;

    fn spec(batch: usize) -> PublishSpec {
        PublishSpec { topic: "test".into(), message: vec![b'x'; 400], batch, defer_ms: None }
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
}
