//! The NSQ TCP publisher: the magic and `IDENTIFY` once per connection, then publishes encoded
//! once; `OK` completes an operation, an error frame refuses it (and nsqd closes), heartbeats
//! are answered with `NOP`.

use super::Error;
use super::{FRAME_ERROR, FRAME_MESSAGE, FRAME_RESPONSE, HEARTBEAT, MAGIC_V2, NOP, PublishSpec};
use super::{encode_identify, encode_publish, error_code, parse_frame};
use crate::proto::{ClientCodec, Decoded, Failure, Outcome};
use std::sync::Arc;
use std::time::Duration;

/// nsqd's default heartbeat interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

/// The TCP publisher: magic and `IDENTIFY` once per connection, then prebuilt publishes.
#[derive(Debug, Clone)]
pub struct NsqClient {
    handshake: Arc<[u8]>,
    identify: bool,
    /// The publish of each entry (`--requests`; one without).
    publish: Arc<Vec<Box<[u8]>>>,
    /// An error frame arrived: nsqd closes the connection after every publishing error.
    closing: bool,
    /// nsqd's heartbeat interval for this connection: 30 s, or `IDENTIFY`'s
    /// `heartbeat_interval` (ms; −1 turns heartbeats off).
    heartbeat: Option<Duration>,
    /// NSQ's word for the last answer: `OK` or the error code.
    answer: &'static str,
    /// `IDENTIFY` asked for `tls_v1`; `upgrading`: nsqd agreed, and TLS starts now.
    tls_v1: bool,
    upgrading: bool,
}

impl NsqClient {
    /// `identify`: the JSON body of `IDENTIFY`, or `None` to send only the magic.
    pub fn new(spec: &PublishSpec, identify: Option<&[u8]>) -> Self {
        let mut handshake = MAGIC_V2.to_vec();
        if let Some(json) = identify {
            handshake.extend_from_slice(&encode_identify(json));
        }
        let asked = identify
            .and_then(|json| serde_json::from_slice::<serde_json::Value>(json).ok())
            .and_then(|v| v.get("heartbeat_interval").and_then(serde_json::Value::as_i64));
        let heartbeat = match asked {
            Some(ms) if ms < 0 => None,
            Some(ms @ 1..) => Some(Duration::from_millis(ms as u64)),
            _ => Some(DEFAULT_HEARTBEAT),
        };
        NsqClient {
            handshake: handshake.into(),
            identify: identify.is_some(),
            publish: Arc::new(vec![encode_publish(spec).into()]),
            closing: false,
            heartbeat,
            answer: "OK",
            tls_v1: false,
            upgrading: false,
        }
    }

    /// `IDENTIFY` asks for `tls_v1` (its JSON must say so: see [`super::identify_tls_v1`]);
    /// nsqd's agreement starts TLS, and its `OK` then comes over it.
    pub fn with_tls_v1(mut self) -> Self {
        self.tls_v1 = true;
        self
    }
    pub fn publish(&self) -> &[u8] {
        &self.publish[0]
    }
}

impl ClientCodec for NsqClient {
    type Error = Error;

    fn handshake(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.handshake);
    }

    fn decode_handshake(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Error> {
        if !self.identify {
            return Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control });
        }
        match parse_frame(input)? {
            None => Ok(Decoded::Partial),
            // The answer to IDENTIFY: with tls_v1 asked, nsqd's JSON must agree; its `OK`
            // follows over TLS.
            Some((FRAME_RESPONSE, data, len)) if self.tls_v1 && !self.upgrading => {
                let agreed = serde_json::from_slice::<serde_json::Value>(data)
                    .ok()
                    .and_then(|v| v.get("tls_v1").and_then(serde_json::Value::as_bool))
                    == Some(true);
                if !agreed {
                    return Err(Error::TlsRefused);
                }
                self.upgrading = true;
                Ok(Decoded::Done { consumed: len, outcome: Outcome::Handshaking })
            }
            Some((FRAME_RESPONSE, _, len)) => Ok(Decoded::Done { consumed: len, outcome: Outcome::Control }),
            Some(_) => Err(Error::IdentifyRefused),
        }
    }

    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.publish[entry]);
    }

    fn add_entries(&mut self, other: Self) {
        Arc::make_mut(&mut self.publish).extend(other.publish.iter().cloned());
    }

    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Error> {
        let Some((frame_type, data, consumed)) = parse_frame(input)? else { return Ok(Decoded::Partial) };
        let outcome = match frame_type {
            FRAME_RESPONSE if data == HEARTBEAT => {
                out.extend_from_slice(NOP);
                Outcome::Control
            }
            FRAME_RESPONSE => {
                self.answer = "OK";
                Outcome::Op
            }
            FRAME_ERROR => {
                self.closing = true;
                self.answer = error_code(data);
                Outcome::OpFailed(Failure::protocol("", self.answer))
            }
            FRAME_MESSAGE => return Err(Error::UnexpectedMessage),
            _ => return Err(Error::BadFrame),
        };
        Ok(Decoded::Done { consumed, outcome })
    }

    fn peer_closing(&self) -> bool {
        self.closing
    }

    fn start_tls(&self) -> bool {
        self.upgrading
    }

    fn answer(&self) -> Option<crate::outcome::Answer> {
        Some(super::answer(self.answer))
    }

    fn answer_within(&self) -> Option<Duration> {
        // nsqd closes a client that stays silent for two heartbeat intervals: a `NOP` within
        // one keeps it.
        self.heartbeat
    }
}

#[cfg(test)]
mod tests {
    use super::super::write_frame;
    use super::*;

    fn spec(batch: usize) -> PublishSpec {
        PublishSpec { topic: "test".into(), message: vec![b'x'; 400], batch, defer_ms: None }
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
                outcome: Outcome::OpFailed(Failure::protocol("", "E_BAD_TOPIC"))
            })
        );
        assert_eq!(c.decode_op(b"\x00\x00\x00\x01\x00\x00\x00\x00", &mut out), Err(Error::BadFrame));
    }

    #[test]
    fn handshake_is_magic_then_identify() {
        let mut c = NsqClient::new(&spec(1), Some(br#"{"client_id":"x"}"#));
        let mut out = Vec::new();
        c.handshake(&mut out);
        assert_eq!(out, b"  V2IDENTIFY\n\x00\x00\x00\x11{\"client_id\":\"x\"}");
        assert_eq!(c.decode_handshake(b"\x00\x00\x00\x06\x00\x00", &mut Vec::new()), Ok(Decoded::Partial));
        assert!(matches!(
            c.decode_handshake(b"\x00\x00\x00\x06\x00\x00\x00\x00OK", &mut Vec::new()),
            Ok(Decoded::Done { consumed: 10, .. })
        ));
        let mut bare = NsqClient::new(&spec(1), None);
        assert_eq!(
            bare.decode_handshake(b"", &mut Vec::new()),
            Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control })
        );
    }
}
