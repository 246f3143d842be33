//! The connection machine without sockets: byte vectors in, wants and counts out.

use super::*;
use crate::outcome::Failure;
use crate::proto::http1::{Http1Client, RequestSpec};
use crate::proto::{CodecError, Decoded, Outcome};
use crate::stats::KernelSocket;
use crate::workload::Workload;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nOK";
/// The request every test connection sends, spelled out.
const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";

fn conn_with<C: ClientCodec>(codec: &C, ops: Option<u64>, depth: usize) -> (Conn<C>, Instant) {
    let now = Instant::now();
    let budget = Budget { ops, deadline: now + Duration::from_secs(60), measure_from: now };
    let c = Conn::new(
        &std::rc::Rc::new(codec.clone()),
        Workload::ClosedLoop.pacer(0, 1),
        budget,
        depth,
        Duration::from_secs(1),
        0,
    );
    (c, now)
}

/// The client every test connection uses: `GET /` to host `h`.
fn get() -> Http1Client {
    let spec = RequestSpec {
        method: "GET".into(),
        host: "h".into(),
        target: "/".into(),
        headers: vec![],
        body: vec![],
    };
    Http1Client::new(&spec)
}

fn conn(ops: u64, depth: usize) -> (Conn<Http1Client>, Instant) {
    conn_with(&get(), Some(ops), depth)
}

/// Feed `data` as if the socket had read it.
fn feed<C: ClientCodec>(c: &mut Conn<C>, data: &[u8], rec: &mut CoreRecorder) {
    c.read_buf().unwrap()[..data.len()].copy_from_slice(data);
    c.read(data.len(), Instant::now(), rec);
}

/// Close as an engine would, with a kernel that agrees with the app.
fn close<C: ClientCodec>(c: &mut Conn<C>, tx: u64, now: Instant, rec: &mut CoreRecorder) {
    let rx = c.socket_rx();
    c.closed(0, Some(Ok(KernelSocket { tx, rx, ..Default::default() })), now, rec);
}

fn write_all<C: ClientCodec>(c: &mut Conn<C>, now: Instant, rec: &mut CoreRecorder) -> usize {
    assert!(matches!(c.next(now, false, rec), Want::Write(_)));
    let n = c.to_write().len();
    c.wrote(n, Instant::now(), rec);
    n
}

#[test]
fn a_pipelined_exchange_without_sockets() {
    let (mut c, now) = conn(4, 2);
    let mut rec = CoreRecorder::new(0);
    assert_eq!(c.next(now, false, &mut rec), Want::Connect(Duration::from_secs(1)));
    c.connected(now, &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Write(Duration::from_secs(1)));
    assert_eq!(c.to_write(), [GET, GET].concat());
    c.wrote(2 * GET.len(), now, &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Read(Duration::from_secs(1)));
    // Both responses in one read, the second split.
    feed(&mut c, &[OK, &OK[..5]].concat(), &mut rec);
    assert_eq!(rec.ops, 1);
    assert_eq!(write_all(&mut c, now, &mut rec), GET.len()); // a slot freed: one more request
    feed(&mut c, &[&OK[5..], OK].concat(), &mut rec);
    assert_eq!(write_all(&mut c, now, &mut rec), GET.len());
    feed(&mut c, OK, &mut rec);
    assert_eq!(rec.ops, 4);
    assert_eq!(c.next(now, false, &mut rec), Want::Close); // quota met: close
    close(&mut c, 4 * GET.len() as u64, now, &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Done);
    assert_eq!((rec.sent, rec.failed.total()), (4, 0));
    assert_eq!((rec.tx.op, rec.rx.op), (4 * GET.len() as u64, 4 * OK.len() as u64));
    assert!(rec.audit.matches());
}

/// The issue's first reproduction, without sockets: depth 4 and a server that answers the
/// first request with `Connection: close`. Each connection completes one operation and
/// loses three; `-n 10` still means 10 completed, and every lost one is counted.
#[test]
fn operations_lost_to_a_close_are_counted_and_n_means_completed() {
    let (mut c, mut now) = conn(10, 4);
    let mut rec = CoreRecorder::new(0);
    for life in 0..10 {
        assert!(matches!(c.next(now, false, &mut rec), Want::Connect(_)), "life {life}");
        c.connected(now, &mut rec);
        let written = write_all(&mut c, now, &mut rec);
        feed(&mut c, OK_CLOSE, &mut rec);
        assert_eq!(c.next(now, false, &mut rec), Want::Close);
        close(&mut c, written as u64, now, &mut rec);
        now += Duration::from_millis(1);
    }
    assert_eq!(c.next(now, false, &mut rec), Want::Done);
    assert_eq!(rec.ops, 10);
    assert_eq!(rec.failed.get(ErrorClass::Closed), rec.sent - 10);
    assert!(rec.sent > 10);
    assert_eq!(rec.sent, rec.ops + rec.failed.total());
    assert_eq!(rec.conn_errors.total(), 0, "a server may close; that is no connection error");
    // Per-operation bytes are those of the completed operations only.
    assert_eq!(rec.tx.op, 10 * GET.len() as u64);
    assert_eq!(rec.rx.op, 10 * OK_CLOSE.len() as u64);
    assert_eq!(rec.tx.failed, (rec.sent - 10) * GET.len() as u64);
    assert!(rec.audit.matches());
}

#[test]
fn a_reset_fails_every_operation_in_flight_and_the_connection_once() {
    let (mut c, now) = conn(10, 3);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    write_all(&mut c, now, &mut rec);
    c.read_failed(&std::io::ErrorKind::ConnectionReset.into(), now, &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, 3 * GET.len() as u64, now, &mut rec);
    assert_eq!(rec.failed.get(ErrorClass::Read), 3);
    assert_eq!(rec.conn_errors.get(ErrorClass::Read), 1);
    assert_eq!(c.next(now, false, &mut rec), Want::Sleep(now + RETRY_PAUSE));
    assert!(matches!(c.next(now + RETRY_PAUSE, false, &mut rec), Want::Connect(_)));
    c.connect_failed(&std::io::ErrorKind::ConnectionRefused.into(), now, &mut rec);
    assert_eq!(c.next(now + RETRY_PAUSE, true, &mut rec), Want::Done, "Ctrl-C ends the retries");
    assert_eq!(rec.conn_errors.get(ErrorClass::Connect), 1);
    assert_eq!(rec.sent, rec.ops + rec.failed.total());
}

#[test]
fn eof_with_operations_in_flight_fails_them_as_closed() {
    let (mut c, now) = conn(10, 2);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    write_all(&mut c, now, &mut rec);
    feed(&mut c, &OK[..10], &mut rec);
    c.read(0, now, &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, 2 * GET.len() as u64, now, &mut rec);
    assert_eq!(rec.failed.get(ErrorClass::Closed), 2);
    assert_eq!(rec.conn_errors.get(ErrorClass::Closed), 1);
    assert_eq!(rec.rx.failed, 10, "the partial answer is a failed operation's");
    assert_eq!(rec.rx.op + rec.tx.op, 0);
}

#[test]
fn a_failed_write_reads_the_servers_last_words() {
    let (mut c, now) = conn(10, 1);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    c.next(now, false, &mut rec);
    c.write_failed(&std::io::ErrorKind::BrokenPipe.into(), &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Read(SALVAGE_WAIT));
    feed(&mut c, b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n", &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, 0, now, &mut rec);
    assert_eq!(rec.failed.get(ErrorClass::Status), 1);
    assert_eq!(rec.failures.get(&Failure::status(413)), Some(&1));
    assert_eq!(rec.conn_errors.total(), 0);
    assert_eq!(rec.reconnects, 1);
}

/// A codec answering with a control message (a heartbeat) after every write.
#[derive(Clone)]
struct Heartbeats;
impl ClientCodec for Heartbeats {
    type Error = Malformed;

    fn handshake(&mut self, _out: &mut Vec<u8>) {}
    fn decode_handshake(&mut self, _input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Malformed> {
        Ok(Decoded::Done { consumed: 0, outcome: Outcome::Control })
    }
    fn encode_op(&mut self, _entry: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(b"op");
    }
    fn add_entries(&mut self, _other: Self) {}
    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Malformed> {
        Ok(match input.first() {
            None => Decoded::Partial,
            Some(b'h') => Decoded::Done { consumed: 1, outcome: Outcome::Control },
            Some(b'0') => Decoded::Done { consumed: 0, outcome: Outcome::Control },
            Some(_) => Decoded::Done { consumed: 1, outcome: Outcome::Op },
        })
    }
}

#[test]
fn a_heartbeat_after_a_failed_write_does_not_hide_the_write_error() {
    let (mut c, now) = conn_with(&Heartbeats, Some(5), 1);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    c.next(now, false, &mut rec);
    c.write_failed(&std::io::ErrorKind::BrokenPipe.into(), &mut rec);
    feed(&mut c, b"h", &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, 0, now, &mut rec);
    assert_eq!(rec.conn_errors.get(ErrorClass::Write), 1);
    assert_eq!(rec.failed.get(ErrorClass::Write), 1);
}

#[test]
fn a_decoder_that_makes_no_progress_fails_the_connection_instead_of_spinning() {
    let (mut c, now) = conn_with(&Heartbeats, Some(5), 1);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    write_all(&mut c, now, &mut rec);
    feed(&mut c, b"0", &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, 2, now, &mut rec);
    assert_eq!(rec.failed.get(ErrorClass::Protocol), 1);
    assert!(rec.error_samples[0].contains("no progress"), "{:?}", rec.error_samples);
}

/// A paced connection idle between operations looks at its socket twice per heartbeat
/// interval, and answers what it finds (nsqd's heartbeat: `NOP`).
#[test]
fn an_idle_paced_connection_polls_for_heartbeats() {
    use crate::proto::nsq::{self, NsqClient, PublishSpec};
    let spec = PublishSpec { topic: "t".into(), message: b"m".to_vec(), batch: 1, defer_ms: None };
    let codec = NsqClient::new(&spec, Some(br#"{"heartbeat_interval":1000}"#));
    let start = Instant::now();
    let budget = Budget { ops: None, deadline: start + Duration::from_secs(60), measure_from: start };
    let pacer = Workload::FixedRate { interval: Duration::from_secs(10) }.pacer(0, 1);
    let mut c = Conn::new(&std::rc::Rc::new(codec), pacer, budget, 1, Duration::from_secs(1), 0);
    let mut rec = CoreRecorder::new(0);
    let frame = |data: &[u8]| {
        let mut f = Vec::new();
        nsq::write_frame(&mut f, nsq::FRAME_RESPONSE, data);
        f
    };
    c.next(start, false, &mut rec);
    c.connected(start, &mut rec);
    write_all(&mut c, start, &mut rec); // magic and IDENTIFY
    feed(&mut c, &frame(b"OK"), &mut rec);
    write_all(&mut c, start, &mut rec); // the first publish, due at once
    feed(&mut c, &frame(b"OK"), &mut rec);
    assert_eq!(rec.ops, 1);
    // The next publish is due in 10 s; the socket is looked at every 500 ms meanwhile.
    let half = Duration::from_millis(500);
    let look = |c: &mut Conn<NsqClient>, rec: &mut CoreRecorder| match c.next(Instant::now(), false, rec) {
        Want::Sleep(at) => at,
        other => panic!("{other:?}"),
    };
    let at = look(&mut c, &mut rec);
    assert!(at <= Instant::now() + half, "wakes within half the interval");
    assert_eq!(c.next(at, false, &mut rec), Want::Poll);
    c.polled(at);
    assert_eq!(c.next(at, false, &mut rec), Want::Sleep(at + half));
    assert_eq!(c.next(at + half, false, &mut rec), Want::Poll);
    feed(&mut c, &frame(b"_heartbeat_"), &mut rec);
    assert!(matches!(c.next(at + half, false, &mut rec), Want::Write(_)));
    assert_eq!(c.to_write(), b"NOP\n");
}

/// Paced: an operation sent late on a free connection is the generator's lag; one that
/// came due while its connection still waited for an answer is counted apart.
#[test]
fn schedule_lag_is_the_generators_and_a_busy_connection_is_counted_apart() {
    let start = Instant::now();
    let budget = Budget { ops: None, deadline: start + Duration::from_secs(60), measure_from: start };
    let ms = Duration::from_millis;
    let pacer = Workload::FixedRate { interval: ms(10) }.pacer(0, 1);
    let mut c = Conn::new(&std::rc::Rc::new(get()), pacer, budget, 1, Duration::from_secs(1), 0);
    let mut rec = CoreRecorder::new(0);
    let answer = |c: &mut Conn<Http1Client>, at: Instant, rec: &mut CoreRecorder| {
        c.read_buf().unwrap()[..OK.len()].copy_from_slice(OK);
        c.read(OK.len(), at, rec);
    };
    c.next(start, false, &mut rec);
    c.connected(start, &mut rec);
    // The schedule starts with the first operation, on time; answered at 1 ms.
    write_all(&mut c, start, &mut rec);
    answer(&mut c, start + ms(1), &mut rec);
    // The second, due at 10 ms, goes out at 13 ms on a free connection: 3 ms of lag.
    write_all(&mut c, start + ms(13), &mut rec);
    assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (2, 0));
    assert_eq!(rec.schedule_lag.max() / 1_000_000, 3);
    // Its answer comes at 25 ms: the third (due at 20 ms) waited for the connection.
    answer(&mut c, start + ms(25), &mut rec);
    write_all(&mut c, start + ms(25), &mut rec);
    assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (2, 1));
    // Answered at 26 ms, before the fourth is due (30 ms): not yet, then on time.
    answer(&mut c, start + ms(26), &mut rec);
    assert!(matches!(c.next(start + ms(26), false, &mut rec), Want::Sleep(_)), "not yet due");
    write_all(&mut c, start + ms(30), &mut rec);
    assert_eq!((rec.schedule_lag.len(), rec.due_while_busy), (3, 1));
}

#[test]
fn with_a_quota_a_server_that_never_answers_is_given_up_on() {
    let (mut c, mut now) = conn(5, 1);
    let mut rec = CoreRecorder::new(0);
    let mut lives = 0;
    loop {
        match c.next(now, false, &mut rec) {
            Want::Connect(_) => {
                lives += 1;
                c.connected(now, &mut rec);
            }
            Want::Write(_) => {
                let n = c.to_write().len();
                c.wrote(n, now, &mut rec);
            }
            Want::Read(_) => c.read(0, now, &mut rec),
            Want::Poll => c.polled(now),
            Want::Close => close(&mut c, GET.len() as u64, now, &mut rec),
            Want::Sleep(until) => now = until,
            Want::Done => break,
        }
        assert!(lives <= GIVE_UP_AFTER, "bounded");
    }
    assert_eq!(lives, GIVE_UP_AFTER);
    assert_eq!(rec.failed.get(ErrorClass::Closed), GIVE_UP_AFTER as u64);
    assert_eq!(rec.sent, rec.ops + rec.failed.total());
    assert!(rec.error_samples.iter().any(|s| s.starts_with("gave up")));
}

#[test]
fn partial_writes_are_attributed_to_the_operations_they_carried() {
    let (mut c, now) = conn(10, 3);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    assert!(matches!(c.next(now, false, &mut rec), Want::Write(_)));
    c.wrote(GET.len() + 3, now, &mut rec); // the first request and 3 bytes of the second
    c.write_failed(&std::io::ErrorKind::ConnectionReset.into(), &mut rec);
    assert_eq!(c.next(now, false, &mut rec), Want::Read(SALVAGE_WAIT));
    c.read(0, now, &mut rec); // nothing to salvage: the write's failure stands
    assert_eq!(c.next(now, false, &mut rec), Want::Close);
    close(&mut c, GET.len() as u64 + 3, now, &mut rec);
    assert_eq!(rec.failed.get(ErrorClass::Write), 3);
    assert_eq!((rec.tx.op, rec.tx.failed), (0, GET.len() as u64 + 3));
}

/// What an idle connection costs is mostly this struct (its buffers are given back): keep
/// it small. Measured: 824 bytes with a WebSocket codec, then 928 as fields were added; 808
/// once the codec's prototype was shared. A bound just above, so that growth is seen.
#[test]
fn a_connection_machine_stays_small() {
    assert!(std::mem::size_of::<super::Conn<crate::proto::ws::WsClient>>() <= 832);
    assert!(std::mem::size_of::<super::Conn<crate::proto::http1::Http1Client>>() <= 848);
}

/// A codec whose operations have ids and whose answers name them: `op N\n` out, `ok N\n` or
/// `part N\n` (a piece of N's answer) in, in any order.
#[derive(Clone, Default)]
struct ById {
    next: u64,
    answered: Option<u64>,
}

impl ClientCodec for ById {
    type Error = Malformed;

    fn handshake(&mut self, _out: &mut Vec<u8>) {}
    fn decode_handshake(&mut self, _input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Malformed> {
        Ok(Decoded::Partial)
    }
    fn encode_op(&mut self, _entry: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("op {}\n", self.next).as_bytes());
        self.next += 1;
    }
    fn add_entries(&mut self, _other: Self) {}
    fn op_id(&self) -> Option<u64> {
        Some(self.next - 1)
    }
    fn decode_op(&mut self, input: &[u8], _out: &mut Vec<u8>) -> Result<Decoded, Malformed> {
        let Some(end) = input.iter().position(|&b| b == b'\n') else { return Ok(Decoded::Partial) };
        let line = std::str::from_utf8(&input[..end]).map_err(|_| Malformed)?;
        let (word, id) = line.split_once(' ').ok_or(Malformed)?;
        self.answered = Some(id.parse().map_err(|_| Malformed)?);
        let outcome = if word == "part" { Outcome::OpPart } else { Outcome::Op };
        Ok(Decoded::Done { consumed: end + 1, outcome })
    }
    fn answers_op(&self) -> Option<u64> {
        self.answered
    }
}

/// Answers that name their operation complete it, in whatever order they come; each one's
/// bytes and latency are its own.
#[test]
fn operations_named_by_their_answers_complete_in_any_order() {
    let (mut c, now) = conn_with(&ById::default(), Some(3), 3);
    let mut rec = CoreRecorder::new(0);
    assert!(matches!(c.next(now, false, &mut rec), Want::Connect(_)));
    c.connected(now, &mut rec);
    assert!(matches!(c.next(now, false, &mut rec), Want::Write(_)));
    assert_eq!(c.to_write(), b"op 0\nop 1\nop 2\n");
    c.wrote(15, now, &mut rec);
    let later = |ms: u64| now + Duration::from_millis(ms);
    let answer = |c: &mut Conn<ById>, text: &[u8], at: Instant, rec: &mut CoreRecorder| {
        c.read_buf().unwrap()[..text.len()].copy_from_slice(text);
        c.read(text.len(), at, rec);
    };
    answer(&mut c, b"part 1\nok 2\n", later(3), &mut rec);
    assert_eq!(rec.ops, 1, "2 answered first");
    answer(&mut c, b"ok 0\nok 1\n", later(7), &mut rec);
    assert_eq!((rec.sent, rec.ops, rec.failed.total()), (3, 3, 0));
    assert_eq!(rec.rx.op, 7 + 5 + 5 + 5, "every byte an operation's, the part with its own");
    assert_eq!(rec.tx.op, 15);
    rec.settle();
    assert_eq!(rec.latency.len(), 3);
    assert_eq!(rec.latency.max(), rec.latency.value_at_quantile(1.0));
    let near = |ns: u64, ms: f64| (ns as f64 / 1e6 - ms).abs() < 0.01 * ms;
    assert!(
        near(rec.latency.min(), 3.0) && near(rec.latency.max(), 7.0),
        "{} {}",
        rec.latency.min(),
        rec.latency.max()
    );
    // An answer naming nothing in flight is the server's mistake: the connection fails.
    let (mut c, now) = conn_with(&ById::default(), Some(1), 1);
    let mut rec = CoreRecorder::new(0);
    c.next(now, false, &mut rec);
    c.connected(now, &mut rec);
    write_all(&mut c, now, &mut rec);
    answer(&mut c, b"ok 9\n", later(1), &mut rec);
    assert_eq!(c.next(later(1), false, &mut rec), Want::Close);
    close(&mut c, 5, later(1), &mut rec);
    assert_eq!((rec.ops, rec.failed.get(ErrorClass::Protocol)), (0, 1));
}

/// The test codecs' one error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed test message")]
struct Malformed;

impl CodecError for Malformed {}

/// A handshake written whole waits for its answer holding no send buffer (thousands of
/// connections set up at once each held one, and the heap they grew stayed); one written in
/// part keeps what is left.
#[test]
fn a_handshake_waits_for_its_answer_holding_no_buffer() {
    let ws = crate::proto::ws::WsClient::new(crate::proto::ws::WsSpec {
        host: "h".into(),
        path: "/".into(),
        headers: vec![],
        message: b"hi".to_vec(),
        text: false,
        expect: crate::proto::ws::Expect::Echo,
    });
    let (mut c, now) = conn_with(&ws, Some(1), 1);
    let mut rec = CoreRecorder::new(0);
    assert_eq!(c.next(now, false, &mut rec), Want::Connect(Duration::from_secs(1)));
    c.connected(now, &mut rec);
    assert!(matches!(c.next(now, false, &mut rec), Want::Write(_)));
    let upgrade = c.to_write().to_vec();
    assert!(upgrade.starts_with(b"GET / HTTP/1.1\r\n"));
    c.wrote(10, now, &mut rec);
    assert_eq!(c.to_write(), &upgrade[10..], "the rest is kept");
    c.wrote(upgrade.len() - 10, now, &mut rec);
    assert_eq!((c.send.buf().capacity(), c.phase.clone()), (0, Phase::Handshake));
    assert_eq!(rec.tx.handshake, upgrade.len() as u64);
}

/// The engine's shortcut for bytes that woke a connection waiting to read: an answer is
/// taken as `next` would have taken it, and one that came past its operation's timeout is a
/// timeout, as `next` would have said first.
#[test]
fn answers_taken_on_waking_are_timed_as_next_would_time_them() {
    for (late, completed, timed_out) in [(Duration::ZERO, 1, 0), (Duration::from_secs(2), 0, 1)] {
        let (mut c, now) = conn(1, 1);
        let mut rec = CoreRecorder::new(0);
        assert!(matches!(c.next(now, false, &mut rec), Want::Connect(_)));
        c.connected(now, &mut rec);
        write_all(&mut c, now, &mut rec);
        assert!(matches!(c.next(now, false, &mut rec), Want::Read(_)));
        assert!(c.arrived(OK));
        let at = now + late;
        c.take_answers(at, &mut rec);
        assert_eq!(rec.ops, completed, "answered {late:?} after its request");
        if timed_out == 1 {
            assert!(c.has_arrived(), "an answer past its timeout is left undecoded");
            assert_eq!(c.next(at, false, &mut rec), Want::Close, "it fails with the timeout");
            assert_eq!(rec.ops, 0);
        }
    }
}
