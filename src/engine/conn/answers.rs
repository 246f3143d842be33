//! How a connection digests what the server sent: the handshake's answers, the answers to
//! operations (each completing the operation it names, or the oldest), control messages, the
//! server's goodbye and its end of the stream. Every byte goes to the class it belongs to.

use super::ledger::InFlight;
use super::{Conn, End, GOODBYE_READS, Phase, file_as_failed};
use crate::clock::Instant;
use crate::outcome::ErrorClass;
use crate::proto::{ClientCodec, CodecError, Decoded, Outcome};
use crate::stats::{CoreRecorder, Traffic};

impl<C: ClientCodec> Conn<C> {
    /// What came after our goodbye: counted, nothing answered (bounded in reads).
    pub(super) fn read_goodbye(&mut self, reads: u32, rec: &mut CoreRecorder) {
        while let Ok(Decoded::Done { consumed, .. }) =
            self.codec.decode_op(self.recv.data(), &mut self.control)
        {
            if consumed == 0 {
                break; // a decoder that makes no progress must not spin us
            }
            self.recv.consume(consumed);
            let carried = self.carrier.carried(consumed);
            self.carrier.count_rx(Traffic::Control, carried, rec);
            if self.codec.peer_closing() {
                return self.close(End::Done);
            }
        }
        self.control.clear(); // no replies after goodbye
        if reads + 1 >= GOODBYE_READS {
            self.close(End::Done);
        } else {
            self.phase = Phase::Goodbye(reads + 1);
        }
    }

    pub(super) fn eof(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let end = match self.phase.clone() {
            Phase::Salvage(end) => end,
            Phase::Goodbye(_) => End::Done,
            Phase::Handshake => End::Failed(ErrorClass::Closed, "server closed during the handshake".into()),
            _ => match self.codec.decode_eof(self.recv.data()) {
                Ok(Decoded::Done { consumed, outcome }) => match self.complete(consumed, outcome, now, rec) {
                    Ok(()) => End::PeerClosed,
                    Err(end) => end,
                },
                Ok(Decoded::Partial) if self.ledger.is_empty() && self.recv.data().is_empty() => {
                    End::PeerClosed
                }
                // Cut off in the middle of an answer: the peer closed on it.
                Ok(Decoded::Partial) if !self.recv.data().is_empty() => {
                    End::Failed(ErrorClass::Closed, "connection closed in the middle of a response".into())
                }
                Ok(Decoded::Partial) => End::Failed(
                    ErrorClass::Closed,
                    "server closed the connection with operations in flight".into(),
                ),
                Err(e) => End::Failed(e.class(), e.to_string()),
            },
        };
        self.close(end);
    }

    /// A codec's error, with the detail it may have kept (a server's own words).
    fn error_text(&self, e: C::Error) -> String {
        match self.codec.error_detail() {
            Some(detail) => format!("{e}: {detail}"),
            None => e.to_string(),
        }
    }

    /// Decode the handshake's answers; a step that goes on may queue a reply (handshake bytes).
    pub(super) fn decode_handshake(&mut self, now: Instant, rec: &mut CoreRecorder) {
        let mut reply = Vec::new();
        loop {
            match self.codec.decode_handshake(self.recv.data(), &mut reply) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed, outcome: Outcome::Handshaking }) => {
                    if consumed == 0 {
                        return self
                            .fail(ErrorClass::Protocol, "the handshake made no progress (a wirebench bug)");
                    }
                    self.recv.consume(consumed);
                    let carried = self.carrier.carried(consumed);
                    self.carrier.count_rx(Traffic::Handshake, carried, rec);
                    if self.codec.start_tls() && !self.carrier.active() {
                        // The upgrade: this step's reply (if any) in plaintext, then TLS.
                        let from = self.send.len();
                        self.send.buf().extend_from_slice(&reply);
                        self.send.tag(from, Traffic::Handshake, None);
                        return self.start_tls(now, rec);
                    }
                }
                Ok(Decoded::Done { consumed, .. }) => {
                    self.recv.consume(consumed);
                    let carried = self.carrier.carried(consumed);
                    self.carrier.count_rx(Traffic::Handshake, carried, rec);
                    if self.schedule.timing_set_up(now) {
                        rec.phases.handshake(now.saturating_duration_since(self.connected_at));
                    }
                    self.phase = Phase::Running;
                    self.set_up(now, rec);
                    self.beat.start(self.codec.heartbeat_interval(), now);
                    break;
                }
                Err(e) => {
                    let text = self.error_text(e);
                    return self.fail(e.class(), format!("handshake: {text}"));
                }
            }
        }
        if !reply.is_empty() {
            self.queue_bytes(&reply, Traffic::Handshake, rec);
        }
    }

    /// Decode every whole message; queue the codec's control replies; returns how many
    /// operations were answered.
    pub(super) fn decode_ops(&mut self, now: Instant, rec: &mut CoreRecorder) -> usize {
        let mut answered = 0;
        self.control.clear();
        loop {
            match self.codec.decode_op(self.recv.data(), &mut self.control) {
                Ok(Decoded::Partial) => break,
                Ok(Decoded::Done { consumed: 0, .. }) => {
                    self.fail(ErrorClass::Protocol, "the decoder made no progress (a wirebench bug)");
                    return answered;
                }
                Ok(Decoded::Done { consumed, outcome }) => {
                    answered += usize::from(matches!(outcome, Outcome::Op | Outcome::OpFailed(_)));
                    if let Err(end) = self.complete(consumed, outcome, now, rec) {
                        self.close(end);
                        return answered;
                    }
                    if self.codec.peer_closing() {
                        break;
                    }
                }
                Err(e) => {
                    let text = self.error_text(e);
                    self.fail(ErrorClass::Protocol, text);
                    return answered;
                }
            }
        }
        // Bytes of the next answer already here: its first byte came with this read.
        if !self.recv.data().is_empty() {
            self.first_byte(now);
        }
        if self.codec.peer_closing() {
            // The replies (a WebSocket close's echo) are flushed first, best effort.
            self.close(End::PeerClosed);
        }
        if !self.control.is_empty() {
            let control = std::mem::take(&mut self.control);
            self.queue_bytes(&control, Traffic::Control, rec);
            self.control = control;
            self.control.clear();
        }
        answered
    }

    /// Account one whole message from the server: its bytes go to the operation it answers
    /// (the one the codec names, or the oldest), or to `control`.
    fn complete(
        &mut self,
        consumed: usize,
        outcome: Outcome,
        now: Instant,
        rec: &mut CoreRecorder,
    ) -> Result<(), End> {
        self.recv.consume(consumed);
        let carried = self.carrier.carried(consumed);
        let id = self.codec.answers_op();
        let no_request = || End::Failed(ErrorClass::Protocol, "response with no request in flight".into());
        match outcome {
            Outcome::Control | Outcome::Handshaking => {
                self.carrier.count_rx(Traffic::Control, carried, rec);
                Ok(())
            }
            Outcome::OpPart => {
                let tls = self.carrier.active();
                let Some(op) = self.ledger.get_mut(id) else {
                    self.carrier.count_rx(Traffic::Control, carried, rec);
                    return Err(no_request());
                };
                op.rx += carried.wire;
                op.rx_plain += if tls { carried.plain } else { 0 };
                if op.id.is_some() && op.first_byte.is_none() {
                    op.first_byte = Some(now);
                }
                let traffic = op.traffic;
                self.carrier.count_rx(traffic, carried, rec);
                Ok(())
            }
            Outcome::Op | Outcome::OpFailed(_) => {
                let full = self.ledger.len() == self.depth || self.no_room;
                let Some(op) = self.ledger.complete(id) else {
                    self.carrier.count_rx(Traffic::Control, carried, rec);
                    return Err(no_request());
                };
                if full {
                    self.room_since = now;
                    self.no_room = false;
                }
                self.life.answered = true;
                self.futile = 0;
                if op.traffic != Traffic::Op {
                    self.carrier.count_rx(op.traffic, carried, rec);
                    return Ok(());
                }
                self.answered += 1;
                if let Some(answer) = self.codec.answer() {
                    rec.answered(answer);
                }
                self.record(&op, outcome, carried, now, rec);
                Ok(())
            }
        }
    }

    /// A measured operation's answer, recorded: completed (its latency and phases) or refused.
    fn record(
        &mut self,
        op: &InFlight,
        outcome: Outcome,
        carried: crate::tls::Carried,
        now: Instant,
        rec: &mut CoreRecorder,
    ) {
        let from = self.schedule.budget().measure_from;
        if let Outcome::OpFailed(failure) = outcome {
            self.carrier.count_rx(Traffic::Failed, carried, rec);
            file_as_failed(op, rec);
            rec.refused(failure);
            rec.series_errors(from, now, 1);
            return;
        }
        self.carrier.count_rx(Traffic::Op, carried, rec);
        rec.ops += 1;
        let ns = now.nanos_since(op.intended);
        rec.record_latency(ns);
        let rx = op.rx + carried.wire;
        rec.share_completed(self.target, op.kind as usize, ns, op.tx_len, rx);
        rec.series_op(from, now, ns);
        let waiting = op.written.map(|w| op.first_byte.unwrap_or(now).saturating_duration_since(w));
        rec.record_phases(now.saturating_duration_since(op.sent), waiting);
        if self.schedule.paced() {
            rec.record_uncorrected(now.nanos_since(op.sent));
        }
    }
}
