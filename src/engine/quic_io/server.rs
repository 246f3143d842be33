//! The built-in HTTP/3 server's cores (`serve h3`): one UDP socket a core sharing the port,
//! its sends and receives in flight on the core's ring, the endpoint of `crate::engine::quic`.

use super::*;

/// Sends a server core keeps in flight at once (each its own buffer and header).
const SERVER_SENDS: usize = 32;
/// Tags of a server core's operations: the send slots' indexes, and the receive's.
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
            let quiet = io.quiet_sends();
            wait(
                &mut io.ring,
                endpoint.poll_timeout(now).map_or(tick, |at| at.saturating_duration_since(now)).min(tick),
                quiet,
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

/// A server core's socket operations: its ring, the sends in flight and their buffers, and
/// one multishot receive taking its buffers from a provided-buffer ring. A receive takes a GRO
/// batch (64 KiB); a send, a GSO one (10 datagrams) — or one at a time after the kernel refused
/// to segment one. (The receive was 32 single-shot ones, each re-armed after its datagram: at
/// 20,000 paced requests/s the arming, polling and an io-wq worker blocking in one of them
/// were ~10 % of the core's samples.)
struct SocketOps {
    ring: IoUring,
    fd: types::Fd,
    /// The receive's buffers and header (each datagram's sender named), and whether it is armed.
    receiving: Receiving,
    armed: bool,
    // Boxed: the ring's operations point into each, so none may move.
    #[allow(clippy::vec_box)]
    sends: Vec<Box<Msg>>,
    /// Whether each send in flight carries several datagrams.
    segmented: [bool; SERVER_SENDS],
    gso: bool,
    /// The sends not in flight.
    free: Vec<usize>,
}

/// A server core's receive buffers.
const SERVER_BUFFERS: u16 = 64;

impl SocketOps {
    fn new(sock: &std::net::UdpSocket) -> std::io::Result<SocketOps> {
        let ring = crate::engine::rings::ring(256, 256)?;
        let receiving = Receiving::new(&ring, SERVER_BUFFERS, true)?;
        Ok(SocketOps {
            ring,
            fd: types::Fd(sock.as_raw_fd()),
            receiving,
            armed: false,
            sends: (0..SERVER_SENDS).map(|_| Msg::new(GSO_DATAGRAMS * DATAGRAM)).collect(),
            segmented: [false; SERVER_SENDS],
            gso: true,
            free: (0..SERVER_SENDS).collect(),
        })
    }

    /// Sends in flight whose completion the loop need not wake for: all of them when there was
    /// a free send left (the endpoint had no more to send), none when every send is busy (its
    /// next datagrams wait for one to end).
    fn quiet_sends(&self) -> usize {
        if self.free.is_empty() { 0 } else { SERVER_SENDS - self.free.len() }
    }

    /// As many of the endpoint's datagrams as there are free sends, and the receive armed.
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
        if !self.armed {
            push(&mut self.ring, &self.receiving.arm(self.fd, SERVER_RECV))?;
            self.armed = true;
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
        let done: Vec<(u64, i32, u32)> =
            self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())).collect();
        for (data, result, flags) in done {
            if data == SERVER_RECV {
                // A multishot receive stays armed while it says more will come; one that ended
                // (no buffer free, an error) is armed again at the next post.
                self.armed &= io_uring::cqueue::more(flags);
                // (A receive cut short — past 64 KiB, GRO's bound — is counted, not read.)
                if let Some(Received { from: Some(from), data, gro, truncated }) =
                    self.receiving.take(result, flags)
                {
                    tally.rx += data.len() as u64;
                    if !truncated {
                        for datagram in udp::datagrams(data, gro) {
                            endpoint.datagram(now, from, datagram);
                        }
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

    /// Every operation points into `receiving` and `sends`: cancel them and wait before they go
    /// (bounded: 100 waits of 10 ms; what never completed is leaked, not freed).
    fn finish(mut self) {
        let busy = usize::from(self.armed) + (SERVER_SENDS - self.free.len());
        if busy == 0 {
            return;
        }
        if self.armed {
            let cancel = opcode::AsyncCancel::new(SERVER_RECV).build().user_data(u64::MAX);
            let _ = push(&mut self.ring, &cancel);
        }
        let mut left = busy;
        for _ in 0..100 {
            if left == 0 {
                break;
            }
            let ts = types::Timespec::new().nsec(10_000_000);
            let _ = self.ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            // (The receive's last completion is the one without `more`.)
            let ended = self
                .ring
                .completion()
                .filter(|c| {
                    c.user_data() != u64::MAX
                        && (c.user_data() != SERVER_RECV || !io_uring::cqueue::more(c.flags()))
                })
                .count();
            left -= ended.min(left);
        }
        if left > 0 {
            std::mem::forget(self.receiving);
            std::mem::forget(self.sends);
        }
    }
}
