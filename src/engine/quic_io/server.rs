//! The built-in HTTP/3 server's cores (`serve h3`): one UDP socket a core sharing the port,
//! its sends and receives in flight on the core's ring, the endpoint of `crate::engine::quic`.

use super::*;

/// Sends and receives a server core keeps in flight at once (each its own buffer and header):
/// a burst of datagrams is read as fast as it comes, not one per turn of the loop.
const SERVER_SENDS: usize = 32;
const SERVER_RECVS: usize = 32;
/// Tags of a server core's operations: the send slots' indexes, then the receives'.
const SERVER_RECV: u64 = 1 << 32;

/// Start the built-in HTTP/3 server on `addr` (UDP), a core each on `cores` sharing the port
/// (`SO_REUSEPORT`: the kernel keeps each client's datagrams on one core), until `stop`, each
/// core within `bounds`.
pub fn start_server(
    addr: SocketAddr,
    cores: &[usize],
    config: quinn_proto::ServerConfig,
    bounds: crate::engine::quic::ServerBounds,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<crate::engine::ServerHandle, EngineError> {
    let listen = udp::bound;
    let first = crate::engine::unclaimed(addr, socket2::Type::DGRAM)
        .and_then(|()| listen(addr))
        .map_err(|source| EngineError::Listen { addr: addr.into(), source })?;
    let bound = first.local_addr().map_err(|source| EngineError::Listen { addr: addr.into(), source })?;
    let mut sockets = vec![first];
    for _ in 1..cores.len() {
        sockets.push(listen(bound).map_err(|source| EngineError::Listen { addr: bound.into(), source })?);
    }
    let config = Arc::new(config);
    let mut threads = Vec::new();
    for (&cpu, sock) in cores.iter().zip(sockets) {
        let (stop, config) = (stop.clone(), config.clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-serve-h3-{cpu}"))
            .spawn(move || {
                crate::engine::catching(
                    cpu,
                    || {},
                    || {
                        crate::engine::pin_current_thread(cpu)?;
                        serve_core(cpu, sock, (*config).clone(), bounds, &stop)
                            .map_err(|source| EngineError::Executor { cpu, source })
                    },
                )
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    Ok(crate::engine::ServerHandle { addrs: vec![bound.into()], stop, threads })
}

/// One server core: its socket's datagrams to the endpoint, the endpoint's to the socket,
/// quinn's deadlines slept on, until `stop`.
fn serve_core(
    cpu: usize,
    sock: std::net::UdpSocket,
    config: quinn_proto::ServerConfig,
    bounds: crate::engine::quic::ServerBounds,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<crate::stats::ServerTally> {
    let clock = crate::engine::sys::ThreadClock::start();
    let mut io = SocketOps::new(&sock)?;
    let mut endpoint = crate::engine::quic::ServerEndpoint::new(config, bounds);
    let mut tally = crate::stats::ServerTally { core: cpu, ..Default::default() };
    let clocks = Clocks::new();
    // Bounded: until `stop`, then a few turns to send every connection's close.
    let mut closing_turns: Option<u32> = None;
    let result = (|| -> std::io::Result<()> {
        while closing_turns.is_none_or(|n| n > 0) {
            let now = clocks.to_std(Instant::now());
            match &mut closing_turns {
                None if stop.load(std::sync::atomic::Ordering::Relaxed) => {
                    // Stopping: every connection told (CONNECTION_CLOSE, H3_NO_ERROR).
                    endpoint.close_all(now);
                    closing_turns = Some(20);
                }
                Some(n) => *n -= 1,
                None => {}
            }
            endpoint.handle_timeout(now);
            endpoint.drive(now);
            io.post(&mut endpoint, now)?;
            let tick = if closing_turns.is_some() { Duration::from_millis(1) } else { TICK };
            wait(
                &mut io.ring,
                endpoint.poll_timeout(now).map_or(tick, |at| at.saturating_duration_since(now)).min(tick),
            )?;
            io.reap(&mut endpoint, clocks.to_std(Instant::now()), &mut tally);
        }
        Ok(())
    })();
    io.finish();
    result?;
    tally.requests = endpoint.answered;
    tally.connections = endpoint.accepted;
    tally.refused = endpoint.refused;
    (tally.cpu, tally.wall) = clock.since(Instant::now());
    Ok(tally)
}

/// A server core's socket operations: its ring, the sends and receives in flight and their
/// buffers. A receive takes a GRO batch (64 KiB); a send, a GSO one (10 datagrams) — or one
/// at a time after the kernel refused to segment one.
struct SocketOps {
    ring: IoUring,
    fd: types::Fd,
    // Boxed: the ring's operations point into each, so none may move.
    #[allow(clippy::vec_box)]
    recvs: Vec<Box<Msg>>,
    #[allow(clippy::vec_box)]
    sends: Vec<Box<Msg>>,
    /// Whether each send in flight carries several datagrams.
    segmented: [bool; SERVER_SENDS],
    gso: bool,
    /// The sends and receives not in flight.
    free: Vec<usize>,
    idle: Vec<usize>,
}

impl SocketOps {
    fn new(sock: &std::net::UdpSocket) -> std::io::Result<SocketOps> {
        Ok(SocketOps {
            ring: crate::engine::rings::ring(256, 256)?,
            fd: types::Fd(sock.as_raw_fd()),
            recvs: (0..SERVER_RECVS).map(|_| Msg::new(GRO_BYTES)).collect(),
            sends: (0..SERVER_SENDS).map(|_| Msg::new(GSO_DATAGRAMS * DATAGRAM)).collect(),
            segmented: [false; SERVER_SENDS],
            gso: true,
            free: (0..SERVER_SENDS).collect(),
            idle: (0..SERVER_RECVS).collect(),
        })
    }

    /// As many of the endpoint's datagrams as there are free sends, and every idle receive.
    fn post(
        &mut self,
        endpoint: &mut crate::engine::quic::ServerEndpoint,
        now: std::time::Instant,
    ) -> std::io::Result<()> {
        while let Some(&slot) = self.free.last() {
            let m = &mut self.sends[slot];
            m.buf.clear();
            let Some(t) = endpoint.poll_transmit(now, if self.gso { GSO_DATAGRAMS } else { 1 }, &mut m.buf)
            else {
                break;
            };
            self.segmented[slot] = t.segment_size.is_some_and(|s| s < t.size);
            m.for_send(t.size, Some(t.destination), t.segment_size);
            let sqe = opcode::SendMsg::new(self.fd, &m.hdr).build().user_data(slot as u64);
            push(&mut self.ring, &sqe)?;
            self.free.pop();
        }
        while let Some(r) = self.idle.pop() {
            self.recvs[r].for_receive(true);
            let sqe = opcode::RecvMsg::new(self.fd, &mut self.recvs[r].hdr)
                .build()
                .user_data(SERVER_RECV + r as u64);
            push(&mut self.ring, &sqe)?;
        }
        Ok(())
    }

    /// The completions: datagrams received to the endpoint, sends freed, each counted.
    fn reap(
        &mut self,
        endpoint: &mut crate::engine::quic::ServerEndpoint,
        now: std::time::Instant,
        tally: &mut crate::stats::ServerTally,
    ) {
        let done: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (data, result) in done {
            if let Some(r) = data.checked_sub(SERVER_RECV).map(|r| r as usize).filter(|&r| r < SERVER_RECVS) {
                self.idle.push(r);
                // (A receive cut short — past 64 KiB, GRO's bound — is counted, not read.)
                let got = &self.recvs[r];
                if result > 0
                    && let Some(from) = got.source()
                    && got.hdr.msg_flags & libc::MSG_TRUNC == 0
                {
                    tally.rx += result as u64;
                    let data = BytesMut::from(&got.buf[..result as usize]);
                    for datagram in udp::datagrams(data, got.gro_size()) {
                        endpoint.datagram(now, from, datagram);
                    }
                }
            } else if (data as usize) < SERVER_SENDS {
                if result > 0 {
                    tally.tx += result as u64;
                } else if self.segmented[data as usize] && udp::refused_gso(result) {
                    self.gso = false; // this kernel will not segment: one at a time
                }
                self.free.push(data as usize);
            }
        }
    }

    /// Every operation points into `recvs` and `sends`: cancel them and wait before they go
    /// (bounded: 100 waits of 10 ms; what never completed is leaked, not freed).
    fn finish(mut self) {
        let busy = (SERVER_RECVS - self.idle.len()) + (SERVER_SENDS - self.free.len());
        if busy == 0 {
            return;
        }
        for r in (0..SERVER_RECVS).filter(|r| !self.idle.contains(r)) {
            let cancel = opcode::AsyncCancel::new(SERVER_RECV + r as u64).build().user_data(u64::MAX);
            let _ = push(&mut self.ring, &cancel);
        }
        let mut left = busy;
        for _ in 0..100 {
            if left == 0 {
                break;
            }
            let ts = types::Timespec::new().nsec(10_000_000);
            let _ = self.ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            left -= self.ring.completion().filter(|c| c.user_data() != u64::MAX).count().min(left);
        }
        if left > 0 {
            std::mem::forget(self.recvs);
            std::mem::forget(self.sends);
        }
    }
}
