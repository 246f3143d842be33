//! A client connection's slot on a core and what is done to it in its turn: driven when
//! something happened to it, its requests sent, completed, timed out or lost, its life ended.

use super::*;

/// One connection's state on this core.
pub(super) struct Slot {
    pub(super) target: usize,
    pub(super) remote: SocketAddr,
    /// Its source address (`--bind`), if given.
    pub(super) source: Option<std::net::IpAddr>,
    pub(super) sock: Option<OwnedFd>,
    pub(super) conn: Option<ClientConn>,
    /// The buffers the ring's operations point into (boxed: they do not move).
    pub(super) send: Box<Msg>,
    pub(super) recv_armed: bool,
    pub(super) send_busy: bool,
    /// The send in flight carries all quinn had to send (fewer datagrams than a batch): its
    /// completion needs no turn, so the loop's wait need not wake for it.
    pub(super) send_last: bool,
    /// The send in flight: its class, length and datagrams, counted once the socket took it.
    pub(super) sending: (Traffic, u64, u64),
    /// The kernel takes several datagrams in one send (GSO) on this socket; off after a send
    /// it refused.
    pub(super) gso: bool,
    /// Requests in flight: (stream, intended, sent, traffic, kind).
    pub(super) ops: HashMap<u64, Op, Ids>,
    /// When this connection's operations are due (`--rate`; now, in a closed loop), and
    /// when its next one is (for the loop's sleep).
    pub(super) pacer: crate::workload::Pacer,
    pub(super) next_due: Option<Instant>,
    /// This connection's share of `-n` left (`None`: no count).
    pub(super) left: Option<u64>,
    pub(super) settled: bool,
    pub(super) connected_at: Option<Instant>,
    pub(super) started: Instant,
    /// When to open the next connection (`--connect-rate N`: the first's place in the ramp),
    /// and with `--connect-rate auto` its place in the core's opener.
    pub(super) retry_at: Option<Instant>,
    pub(super) turn: crate::opener::Turn,
    pub(super) closing: bool,
    /// Once closed, open another (a GOAWAY), not done.
    pub(super) reconnect: bool,
    pub(super) done: bool,
    /// This connection's first request went (before it, its datagrams end the handshake).
    pub(super) requested: bool,
    /// `--requests`: the order this connection picks the entries in, and an entry picked that
    /// could not go yet.
    pub(super) picker: Option<crate::requests::Picker>,
    pub(super) unsent_pick: Option<(usize, usize)>,
    /// UDP payload bytes of this socket's life, for the audit's "not checkable" line; the
    /// connection ended and its socket's last operations are still in the ring (the audit
    /// waits for them: bytes they move are the socket's too).
    pub(super) life: (u64, u64),
    pub(super) audit_due: bool,
    /// Connections in a row that answered nothing (a server refusing every one, or saying
    /// GOAWAY at once), and whether the current one has answered.
    pub(super) futile: u32,
    pub(super) answered: bool,
    /// When this slot next needs a turn with nothing arriving, the time of its live entry in
    /// the core's timers (never later than `wake`: a wake that moves later leaves the entry,
    /// which then finds it moved), and whether it is in this turn's list already.
    pub(super) wake: Option<Instant>,
    pub(super) armed: Option<Instant>,
    pub(super) queued: bool,
}

impl Slot {
    /// The socket's bytes to the audit, once its connection ended (not checkable against the
    /// kernel: UDP keeps no per-socket counts).
    pub(super) fn audit(&mut self, rec: &mut CoreRecorder) {
        if std::mem::take(&mut self.audit_due) {
            let (tx, rx) = std::mem::take(&mut self.life);
            rec.audit.add(tx, rx, Err(crate::stats::Inexact::Udp));
        }
    }

    /// The connection's schedule is settled (its set-up over, or given up): once.
    pub(super) fn settle(&mut self, core: &mut Core<'_>, now: Instant) {
        if !std::mem::replace(&mut self.settled, true) {
            core.job.window.settle(now);
        }
    }

    /// The class of a datagram this connection moves now.
    pub(super) fn class(&self, core: &Core<'_>, now: Instant) -> Traffic {
        match &self.conn {
            Some(c) if !c.connected() || !self.requested => Traffic::Handshake,
            _ if self.closing => Traffic::Control,
            _ if core.measure_from.is_some_and(|from| now >= from) => Traffic::Op,
            _ => Traffic::WarmupOp,
        }
    }
}

/// One connection's turn: connect when due, let quinn act, complete answered requests, time
/// out late ones, send new ones, close at the end (or on a GOAWAY, to open another), send what
/// quinn has, keep a receive armed.
#[allow(clippy::too_many_arguments)]
pub(super) fn drive(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    over: bool,
    gave_up: bool,
    rec: &mut CoreRecorder,
    done: &mut Vec<Completed>,
) -> std::io::Result<()> {
    if slot.done || (slot.conn.is_none() && !between_lives(slot, i, core, now, over, rec)) {
        return Ok(());
    }
    let timeout = core.job.shape.timeout;
    let conn = slot.conn.as_mut().expect("a connection");
    let qnow = core.clocks.to_std(now);
    if conn.poll_timeout().is_some_and(|at| at <= qnow) {
        conn.handle_timeout(qnow);
    }
    conn.drive(qnow, &mut core.endpoint, done);
    if conn.connected() && slot.connected_at.is_none() {
        slot.connected_at = Some(now);
        rec.phases.handshake(now.saturating_duration_since(slot.started));
        if let Some(opener) = &mut rec.opener {
            opener.set_up(slot.started, now);
        }
        slot.settle(core, now);
    }
    for c in done.drain(..) {
        complete(slot, c, now, core, rec);
    }
    // A handshake not done (nor being closed at the run's end): with `--connect-rate auto`,
    // one slower than the opener's bound is news for it now; one past `--timeout` is lost as
    // a timeout.
    if slot.connected_at.is_none() && !slot.closing {
        if let Some(opener) = &mut rec.opener {
            opener.pending(slot.started, now);
        }
        if now >= slot.started + timeout
            && let Some(conn) = slot.conn.as_mut()
        {
            conn.close(qnow);
            let lost = Lost { class: ErrorClass::Timeout, reason: "the QUIC handshake timed out".into() };
            lose(ring, slot, i, core, now, &lost, rec)?;
            return Ok(());
        }
    }
    if !slot.closing
        && let Some(lost) = slot.conn.as_ref().and_then(ClientConn::lost).cloned()
    {
        lose(ring, slot, i, core, now, &lost, rec)?;
        return Ok(());
    }
    expire(slot, core, now, timeout, rec);
    if !over && !slot.closing {
        request(slot, core, now, rec);
    } else {
        slot.next_due = None;
    }
    wind_down(slot, core, now, qnow, over, gave_up, rec);
    transmit(ring, slot, i, core, now)?;
    if slot.closing && !slot.send_busy {
        return life_over(ring, slot, i, core, now, rec);
    }
    arm_receive(ring, slot, i, core)
}

/// The end of a connection's life, decided: once nothing is in flight (or the drain limit
/// passed) at the run's end, close; a connection per operation whose one is done, close (the
/// next opens as planned); a GOAWAY: close, and open another (a reconnect).
#[allow(clippy::too_many_arguments)]
fn wind_down(
    slot: &mut Slot,
    core: &mut Core<'_>,
    now: Instant,
    qnow: std::time::Instant,
    over: bool,
    gave_up: bool,
    rec: &mut CoreRecorder,
) {
    let Some(conn) = slot.conn.as_mut() else { return };
    if slot.closing {
        return;
    }
    let finished = over || slot.left == Some(0);
    if finished && (conn.in_flight() == 0 || gave_up) {
        slot.closing = true;
        conn.close(qnow);
        fail_all(slot, now, core, ErrorClass::Timeout, "no answer by the end of the drain", rec);
    } else if core.job.shape.per_op && slot.requested && conn.in_flight() == 0 {
        slot.closing = true;
        slot.reconnect = true;
        conn.close(qnow);
    } else if conn.going_away() {
        slot.closing = true;
        slot.reconnect = true;
        rec.reconnects += 1;
        conn.close(qnow);
    }
}

/// Its CONNECTION_CLOSE went (or could not): the connection is over; open another at once
/// (a reconnect), after a pause (it answered nothing), or never (the slot is done).
fn life_over(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    rec: &mut CoreRecorder,
) -> std::io::Result<()> {
    end_life(ring, slot, i, core, rec)?;
    if std::mem::take(&mut slot.reconnect) {
        slot.closing = false;
        slot.retry_at = Some(if slot.futile > 0 { now + RETRY_PAUSE } else { now });
    } else {
        slot.done = true;
        // A paced connection's operations that came due before the end (or Ctrl-C) and
        // never went; none once its share of `-n` went.
        if let (Some(from), Some(end)) = (core.measure_from, core.deadline)
            && slot.left != Some(0)
        {
            rec.due_unsent += slot.pacer.due_before(from, end.min(now));
        }
    }
    Ok(())
}

/// A multishot receive armed on the slot's socket, if none is.
fn arm_receive(ring: &mut IoUring, slot: &mut Slot, i: usize, core: &Core<'_>) -> std::io::Result<()> {
    if !slot.recv_armed
        && let Some(sock) = &slot.sock
    {
        let sqe = core.receiving.arm(types::Fd(sock.as_raw_fd()), (i as u64) << 1 | RECV);
        push(ring, &sqe)?;
        slot.recv_armed = true;
    }
    Ok(())
}
/// A slot with no connection: its socket given back once the ring is done with it, and a new
/// connection opened when one is due — unless its share of `-n` went, the run is over, or the
/// server answered nothing too often. `true`: a connection is open to drive.
fn between_lives(
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    over: bool,
    rec: &mut CoreRecorder,
) -> bool {
    // A socket whose connection ended is kept until the ring is done with it (its receive
    // cancelled, its send completed): its operations point into this slot.
    if slot.sock.is_some() {
        if slot.recv_armed || slot.send_busy {
            return false;
        }
        slot.sock = None;
        slot.audit(rec);
    }
    // With `-n`, a server that answers nothing ends this connection's work (as the TCP
    // engines' give-up rule).
    let futile = slot.left.is_some() && slot.futile >= crate::engine::conn::GIVE_UP_AFTER;
    if futile {
        rec.sample(|| {
            format!("gave up: {} connections in a row got no answer", crate::engine::conn::GIVE_UP_AFTER)
        });
    }
    // Nothing (more) to send: a share of `-n` of 0, or the run is over.
    if futile || over || slot.left == Some(0) {
        slot.done = true;
        slot.retry_at = None;
        slot.settle(core, now);
        return false;
    }
    match slot.retry_at {
        Some(at) if now >= at => {}
        _ => return false,
    }
    // A paced connection per operation opens when its operation is due.
    if core.job.shape.per_op
        && core.job.shape.workload != crate::workload::Workload::ClosedLoop
        && let Some(from) = core.measure_from
    {
        slot.pacer.start(from.checked_sub(core.job.shape.warmup).unwrap_or(from));
        let due = slot.pacer.due(now);
        if due > now {
            slot.retry_at = Some(due);
            return false;
        }
    }
    // `--connect-rate auto`: each opening (the first, and each after a loss) waits its turn
    // at the core's rate, which halves when handshakes fail or are slow; without
    // `--connect-rate`, the first opening of each beyond the core's first 1,024.
    if !core.job.shape.per_op
        && let Some(opener) = &mut rec.opener
        && opener.paces(!slot.settled && slot.futile == 0)
        && let Some(at) = opener.wait(&mut slot.turn, now)
    {
        slot.retry_at = Some(at);
        return false;
    }
    slot.retry_at = None;
    open(slot, i, core, now, rec);
    slot.conn.is_some()
}

/// Requests past `--timeout`: reset, and failed as `timeout`; those above a GOAWAY's last id:
/// never to be answered, failed as `closed`.
pub(super) fn expire(
    slot: &mut Slot,
    core: &Core<'_>,
    now: Instant,
    timeout: Duration,
    rec: &mut CoreRecorder,
) {
    let Some(conn) = slot.conn.as_mut() else { return };
    let late: Vec<u64> =
        slot.ops.iter().filter(|(_, op)| now >= op.sent + timeout).map(|(id, _)| *id).collect();
    let refused = conn.refused();
    for (streams, class) in [(late, ErrorClass::Timeout), (refused, ErrorClass::Closed)] {
        for stream in streams {
            conn.cancel(stream);
            if let Some(Op { traffic: Traffic::Op, .. }) = slot.ops.remove(&stream) {
                rec.ops_failed(class, 1);
                rec.series_errors(core.measure_from.unwrap_or(core.started), now, 1);
                rec.sample(|| format!("{}: HTTP/3 request stream {stream}", class.name()));
                // `-n` counts answered operations: a lost one is sent again.
                if let Some(left) = &mut slot.left {
                    *left += 1;
                }
            }
        }
    }
}

/// New requests, as the workload allows: up to `--depth` in flight, none before the window
/// opens (every connection sets up first), none past this connection's share of `-n`.
pub(super) fn request(slot: &mut Slot, core: &Core<'_>, now: Instant, rec: &mut CoreRecorder) {
    let Some(conn) = slot.conn.as_mut() else { return };
    // A connection per operation (`--no-keepalive`): one, whose time began before its
    // connect.
    let per_op = core.job.shape.per_op;
    let depth = if per_op { 1 } else { core.job.shape.depth };
    let paced = core.job.shape.workload != crate::workload::Workload::ClosedLoop;
    slot.next_due = None;
    // Paced (`--rate`): the schedule starts at the window's opening (not before: asked for
    // its next due time earlier, it would start at this connection's connect, and its first
    // operations would fall before the window, sent uncounted); an operation goes once due,
    // its latency counted from then, however late it goes.
    let Some(from) = core.measure_from else { return };
    slot.pacer.start(from.checked_sub(core.job.shape.warmup).unwrap_or(from));
    while conn.connected() && conn.in_flight() < depth && slot.left != Some(0) && !(per_op && slot.requested)
    {
        let due = slot.pacer.due(now);
        if due > now {
            slot.next_due = Some(due);
            break;
        }
        let intended = if per_op { due.min(slot.started) } else { due };
        let traffic = if intended >= from { Traffic::Op } else { Traffic::WarmupOp };
        if paced && traffic == Traffic::Op {
            rec.record_lag(now.saturating_duration_since(intended));
        }
        // The entry it sends (`--requests`); one picked but not sent (no stream could open)
        // goes next time, so the order holds.
        let (entry, kind) = match slot.unsent_pick.take() {
            Some(pick) => pick,
            None => slot.picker.as_mut().map_or((0, 0), crate::requests::Picker::pick),
        };
        let Some(stream) = conn.request(entry) else {
            slot.unsent_pick = slot.picker.is_some().then_some((entry, kind));
            break;
        };
        if traffic == Traffic::Op {
            rec.first_sent.get_or_insert(now);
            rec.sent += 1;
            rec.share_sent(slot.target, kind);
            if let Some(left) = &mut slot.left {
                *left -= 1;
            }
        }
        slot.ops.insert(stream, Op { intended, sent: now, traffic, kind: kind as u16 });
        slot.pacer.taken();
        slot.requested = true;
    }
    // Stopped for any reason but a due time ahead (in flight to the depth, no stream free,
    // its share sent): no timer — an answer or the peer's stream credit gives the next turn,
    // where a due time already past would give one every turn of the loop.
}

/// A new QUIC connection: its socket (connected to the target) and quinn's connection.
pub(super) fn open(slot: &mut Slot, i: usize, core: &mut Core<'_>, now: Instant, rec: &mut CoreRecorder) {
    let target = &core.targets[slot.target];
    let sock = match udp::connected(slot.remote, slot.source) {
        Ok(s) => s,
        Err(e) => {
            rec.conn_error(ErrorClass::Connect, || format!("UDP socket: {e}"));
            opening_failed(slot, now, rec);
            return;
        }
    };
    match ClientConn::connect(
        &mut core.endpoint,
        core.clocks.to_std(now),
        target.config.clone(),
        slot.remote,
        &target.server_name,
        target.h3.clone(),
    ) {
        Ok(conn) => {
            core.handles.insert(conn.handle(), i);
            slot.sock = Some(sock);
            slot.conn = Some(conn);
            slot.started = now;
            slot.connected_at = None;
            rec.connects += 1;
        }
        Err(e) => {
            rec.conn_error(ErrorClass::Connect, || format!("QUIC connect: {e}"));
            opening_failed(slot, now, rec);
        }
    }
}

/// No connection could be opened (no socket: the file limit; quinn refused): try again after
/// a pause, and with `--connect-rate auto` the core's opener slows down, as for a TCP connect
/// that failed.
fn opening_failed(slot: &mut Slot, now: Instant, rec: &mut CoreRecorder) {
    if let Some(opener) = &mut rec.opener {
        opener.went_wrong(now, now);
    }
    // A connection that answered nothing, as a TCP connect that failed is: its retry is not
    // a first opening (unpaced without `--connect-rate`), and enough in a row give up.
    slot.futile += 1;
    slot.retry_at = Some(now + RETRY_PAUSE);
}

/// Send what quinn has, one datagram at a time (the socket's one send in flight); its bytes
/// are counted when the socket took them.
pub(super) fn transmit(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &Core<'_>,
    now: Instant,
) -> std::io::Result<()> {
    if slot.send_busy {
        return Ok(());
    }
    let class = slot.class(core, now);
    let (Some(conn), Some(sock)) = (slot.conn.as_mut(), &slot.sock) else { return Ok(()) };
    let batch = if slot.gso { GSO_DATAGRAMS } else { 1 };
    let send = &mut slot.send;
    send.buf.clear();
    // A connection with nothing in flight sends a keep-alive PING now and then: its bytes are
    // the connection's upkeep (`control`), as a TCP protocol's heartbeats, not an operation's.
    let pings = (conn.connected() && slot.ops.is_empty()).then(|| conn.stats().frame_tx.ping);
    let Some(t) = conn.poll_transmit(core.clocks.to_std(now), batch, &mut send.buf) else { return Ok(()) };
    let class = match pings {
        Some(before) if conn.stats().frame_tx.ping > before => Traffic::Control,
        _ => class,
    };
    let datagrams = t.segment_size.map_or(1, |seg| t.size.div_ceil(seg.max(1))) as u64;
    slot.sending = (class, t.size as u64, datagrams);
    slot.send_last = datagrams < batch as u64;
    send.for_send(t.size, None, t.segment_size.filter(|_| datagrams > 1));
    let sqe = opcode::SendMsg::new(types::Fd(sock.as_raw_fd()), &send.hdr)
        .build()
        .user_data((i as u64) << 1 | SEND);
    push(ring, &sqe)?;
    slot.send_busy = true;
    Ok(())
}

/// A request's answer: its latency and outcome recorded.
pub(super) fn complete(slot: &mut Slot, c: Completed, now: Instant, core: &Core<'_>, rec: &mut CoreRecorder) {
    let Some(Op { intended, sent, traffic, kind }) = slot.ops.remove(&c.stream) else { return };
    slot.answered = true;
    slot.futile = 0;
    if traffic != Traffic::Op {
        return;
    }
    if core.job.shape.workload != crate::workload::Workload::ClosedLoop {
        rec.record_uncorrected(now.nanos_since(sent));
    }
    if let Some(answer) = c.answer {
        rec.answered(answer);
    }
    let from = core.measure_from.unwrap_or(core.started);
    match c.outcome {
        Outcome::OpFailed(failure) => {
            rec.refused(failure);
            rec.series_errors(from, now, 1);
        }
        _ => {
            rec.ops += 1;
            let ns = now.nanos_since(intended);
            rec.record_latency(ns);
            rec.share_completed(slot.target, usize::from(kind), ns, 0, 0);
            rec.series_op(from, now, ns);
            rec.record_phases(now.saturating_duration_since(intended), None);
        }
    }
}

/// Every measured request in flight fails with `class`.
pub(super) fn fail_all(
    slot: &mut Slot,
    now: Instant,
    core: &Core<'_>,
    class: ErrorClass,
    why: &str,
    rec: &mut CoreRecorder,
) {
    let lost = slot.ops.drain().filter(|(_, op)| op.traffic == Traffic::Op).count() as u64;
    // `-n` counts answered operations: lost ones are sent again.
    if let Some(left) = &mut slot.left {
        *left += lost;
    }
    if lost > 0 {
        rec.ops_failed(class, lost);
        rec.series_errors(core.measure_from.unwrap_or(core.started), now, lost);
        rec.sample(|| format!("{}: {why}", class.name()));
    }
}

/// The connection was lost: its requests fail with the loss's class (`timeout` for QUIC's
/// idle timeout, `tls` for a refused handshake, `protocol` for this side's HTTP/3 error,
/// `closed` for the peer's close), a close of this side's own goes out if the socket is free,
/// and a new connection opens after a pause.
pub(super) fn lose(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    now: Instant,
    lost: &Lost,
    rec: &mut CoreRecorder,
) -> std::io::Result<()> {
    fail_all(slot, now, core, lost.class, &lost.reason, rec);
    rec.conn_error(lost.class, || format!("QUIC: {}", lost.reason));
    if slot.connected_at.is_none()
        && let Some(opener) = &mut rec.opener
    {
        opener.went_wrong(slot.started, now);
    }
    // This side's CONNECTION_CLOSE (its HTTP/3 error, its timeout), best effort.
    transmit(ring, slot, i, core, now)?;
    end_life(ring, slot, i, core, rec)?;
    if !slot.settled {
        slot.settled = true;
        core.job.window.settle(now);
    }
    slot.retry_at = Some(now + RETRY_PAUSE);
    Ok(())
}

/// A connection's life is over: its layers and its bytes (not checkable against the kernel:
/// UDP) go to the core's figures, the endpoint forgets it, and its socket's receive is
/// cancelled (the socket goes once the ring is done with it).
pub(super) fn end_life(
    ring: &mut IoUring,
    slot: &mut Slot,
    i: usize,
    core: &mut Core<'_>,
    rec: &mut CoreRecorder,
) -> std::io::Result<()> {
    if let Some(c) = slot.conn.take() {
        core.handles.remove(&c.handle());
        if !c.is_drained() {
            // Dropped before quinn drained it: its connection ids go from the endpoint.
            let _ = core.endpoint.handle_event(c.handle(), quinn_proto::EndpointEvent::drained());
        }
        crate::stats::layers_merge_into(&mut rec.layers, Some(c.h3().layers()));
    }
    // Audited once the ring is done with the socket (`Slot::audit`).
    slot.audit_due = true;
    if !std::mem::take(&mut slot.answered) {
        slot.futile += 1;
    }
    slot.requested = false;
    slot.connected_at = None;
    if slot.recv_armed {
        let cancel = opcode::AsyncCancel::new((i as u64) << 1 | RECV).build().user_data(CANCELLING);
        push(ring, &cancel)?;
    }
    Ok(())
}
