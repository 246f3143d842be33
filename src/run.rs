//! Running a plan: [`prepare`] resolves its targets, reads the payload, raises the engine's
//! limits, catches Ctrl-C and checks each target with one pre-flight connection (with TLS, its
//! handshake); [`run`] hands the plan to its protocol (by the registry), which builds its
//! codec and has an engine drive it ([`crate::drive`]) while this thread draws the progress
//! line. Above the registry and the engines; the plans themselves ([`crate::plan`]) are plain
//! data below.

use crate::clock::Instant;
use crate::plan::{ClientJob, Endpoint, LoadPlan, MAX_PAYLOAD, Payload, Prepared, RunInfo, Target};
use crate::requests::{Defaults, Order, Requests};
use crate::stats::{Repeats, Report, RunSummary};
use crate::tls::options::{ClientTls, TlsStart};
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How far ahead `--start-at` may be.
const MAX_START_AHEAD: Duration = Duration::from_secs(86_400);
/// The pre-flight connect gives up after this long.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the UDP pre-flight waits for an ICMP error (on loopback it is back at once).
const UDP_PREFLIGHT_WAIT: Duration = Duration::from_millis(200);

/// Make a plan ready: resolve its target, read its payload, raise the engine's limits, catch
/// Ctrl-C, and connect once so that an unreachable target is one clear line before any engine.
pub fn prepare(plan: LoadPlan) -> Result<Prepared> {
    // `--unix-socket`: every target's connections go to the path; no host is resolved.
    let addrs: Vec<Endpoint> = match &plan.load.unix {
        Some(path) => plan.targets().map(|_| Endpoint::Unix(path.clone())).collect(),
        None => plan
            .targets()
            .map(|t| t.resolve().map(|a| if t.datagrams { Endpoint::Udp(a) } else { Endpoint::Ip(a) }))
            .collect::<Result<_, _>>()?,
    };
    let addr = addrs[0].clone();
    let body = payload(&plan)?;
    (plan.protocol.check_payload)(&plan, &body)?;
    let requests = match &plan.load.requests {
        Some((file, order)) => Some(Arc::new(read_requests(&plan, file, *order, &body)?)),
        None => None,
    };
    check_start_at(plan.load.shape.start_at)?;
    let load = &plan.load;
    crate::engine::ensure_limits(
        load.engine,
        load.shape.connections as u64,
        load.cores.len(),
        !load.bind.is_empty(),
    )?;
    check_bind(load, &addrs)?;
    let stop = crate::interrupt::flag();
    let tls = plan.targets().map(|t| client_tls(t, &load.tls)).collect::<Result<Vec<_>>>()?;
    // One connection per target before the run; its bytes are the run's too (a server's
    // accept count and a packet capture see them), reported apart.
    let mut checked = crate::stats::Preflight::default();
    for ((target, addr), tls) in plan.targets().zip(&addrs).zip(&tls) {
        let (tx, rx) = match tls.as_deref() {
            Some(tls) if tls.start == TlsStart::AtConnect => {
                let preamble =
                    addr.ip().and_then(|ip| crate::proxy_header::for_connection(load.proxy, ip, 0));
                preflight_tls(target, addr, tls, preamble.as_deref())?
            }
            Some(tls) if tls.start == TlsStart::InQuic => match addr.ip() {
                Some(ip) => preflight_quic(target, ip, tls)?,
                None => bail!("{}: QUIC needs an IP address, not {addr}", target.url),
            },
            _ if addr.is_datagram() => preflight_udp(target, addr, &body)?,
            _ => preflight(target, addr).map(|_| (0, 0))?,
        };
        checked.connections += 1;
        checked.tx += tx;
        checked.rx += rx;
    }
    let job = ClientJob {
        addrs,
        cores: load.cores.clone(),
        shape: load.shape,
        seed: fastrand::u64(..),
        stop,
        progress: (0..load.cores.len()).map(|_| AtomicU64::new(0)).collect(),
        window: ClientJob::fresh_window(&load.shape, load.cores.len()),
        tls,
        bind: load.bind.clone(),
        proxy: load.proxy,
        spin: load.spin,
        slack: load.slack,
        gather: load.gather,
        reset_close: load.reset_close,
        // A series' view (`compare --tui`…) draws each of its runs from the cores' copies.
        live: crate::report::tui::series::active().then(|| crate::stats::live::live(load.cores.len())),
        picks: requests.as_ref().map(|r| r.picks()),
        kinds: requests.as_ref().map_or(0, |r| r.kinds.len()),
    };
    let body = body.into();
    Ok(Prepared {
        addr,
        body,
        requests,
        hostname: hostname(),
        method: None,
        job,
        plan,
        preflight: checked,
        live_rows: None,
        tui: crate::report::tui::series::active(),
    })
}

/// The payload: `--size` bytes of `x`, or `--body-file` (within the largest message).
fn payload(plan: &LoadPlan) -> Result<Vec<u8>> {
    Ok(match &plan.load.payload {
        None => vec![b'x'; plan.protocol.default_payload],
        Some(Payload::Size(n)) => vec![b'x'; *n],
        Some(Payload::File(path)) => {
            let read = || format!("cannot read --body-file {}", path.display());
            let len = std::fs::metadata(path).with_context(read)?.len();
            if len > MAX_PAYLOAD as u64 {
                bail!(
                    "--body-file {} is larger than the {} MiB a message may be here",
                    path.display(),
                    MAX_PAYLOAD >> 20
                );
            }
            std::fs::read(path).with_context(read)?
        }
    })
}

/// `--start-at`: within a day ahead, and not in the past.
fn check_start_at(start_at: Option<std::time::SystemTime>) -> Result<()> {
    let Some(at) = start_at else { return Ok(()) };
    if at.duration_since(std::time::SystemTime::now()).is_ok_and(|ahead| ahead > MAX_START_AHEAD) {
        bail!("--start-at is more than a day ahead: every run stops by itself, and would wait that long");
    }
    if let Ok(late) = std::time::SystemTime::now().duration_since(at)
        && late > Duration::from_millis(100)
    {
        bail!(
            "--start-at is {:.1} s in the past: give every host a time ahead, e.g. $(( $(date +%s) + 30 ))",
            late.as_secs_f64()
        );
    }
    Ok(())
}

/// Every source address (`--bind`) must be one this machine has — one that is not fails every
/// connection from it: said once, here, not as a run of connect errors — and of the family of
/// the targets it meets: connection i goes from bind[i % b] to addrs[i % a].
fn check_bind(load: &crate::plan::Load, addrs: &[Endpoint]) -> Result<()> {
    for &ip in &load.bind {
        if let Err(e) = std::net::UdpSocket::bind((ip, 0)) {
            bail!("--bind {ip}: {e} (not an address of this machine? `ip -brief address` lists them)");
        }
    }
    let (b, a) = (load.bind.len(), addrs.len());
    if b > 0 {
        let pairs = (b * a).min(load.shape.connections);
        if let Some(i) = (0..pairs).find(|i| load.bind[i % b].is_ipv6() != addrs[i % a].is_ipv6()) {
            bail!("--bind {} cannot reach {}: one is IPv4, the other IPv6", load.bind[i % b], addrs[i % a]);
        }
    }
    Ok(())
}

/// `--requests FILE`, read and checked against the plan's protocol: its entries' fields, and
/// each body by the protocol's rules on payloads.
fn read_requests(plan: &LoadPlan, file: &Path, order: Order, payload: &[u8]) -> Result<Requests> {
    let name = file.display();
    let len = std::fs::metadata(file).with_context(|| format!("cannot read --requests {name}"))?.len();
    if len > crate::requests::MAX_BODIES as u64 {
        bail!("--requests {name} is larger than {} MiB", crate::requests::MAX_BODIES >> 20);
    }
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read --requests {name}"))?;
    let method = plan.protocol.http_method.map_or_else(|| "GET".to_string(), |method| method(plan));
    let defaults = Defaults {
        method: &method,
        path: &plan.target.path,
        http: plan.protocol.http_method.is_some(),
        payload: payload.len(),
    };
    let read = |path: &Path| {
        let cannot = |e: std::io::Error| format!("cannot read body_file {}: {e}", path.display());
        if std::fs::metadata(path).map_err(cannot)?.len() > MAX_PAYLOAD as u64 {
            return Err(format!(
                "body_file {} is larger than the {} MiB a message may be here",
                path.display(),
                MAX_PAYLOAD >> 20
            ));
        }
        std::fs::read(path).map_err(cannot)
    };
    let folder = file.parent().unwrap_or(Path::new("."));
    let requests = Requests::parse(&text, folder, order, &defaults, read)
        .map_err(|e| anyhow::anyhow!("--requests {name}, {e}"))?;
    // Each entry is encoded once per target, an entry without a body carrying the payload.
    let copies = plan.messages_per_op() as usize * (1 + plan.also.len());
    let encoded: usize =
        requests.entries.iter().map(|e| e.body.as_ref().map_or(payload.len(), |b| b.len())).sum();
    if encoded.saturating_mul(copies) > crate::requests::MAX_BODIES {
        bail!(
            "--requests {name}: its {} entries' bodies and messages, encoded once per target, come to {} MiB: more than {} MiB",
            requests.entries.len(),
            encoded.saturating_mul(copies) >> 20,
            crate::requests::MAX_BODIES >> 20
        );
    }
    for entry in &requests.entries {
        let at = |e: String| anyhow::anyhow!("--requests {name}, line {}: {e}", entry.line);
        if let Some(field) = entry.http_fields().find(|_| plan.protocol.http_method.is_none()) {
            return Err(at(format!(
                "`{field}` applies to HTTP requests; an entry for {} is a message (body or body_file, weight, label)",
                plan.target.url
            )));
        }
        if let Some(body) = &entry.body {
            (plan.protocol.check_payload)(plan, body).map_err(|e| at(e.to_string()))?;
        }
    }
    Ok(requests)
}

/// A target's TLS set-up, if it speaks TLS: the protocol's ALPN name (HTTP and what upgrades
/// from it say `http/1.1`; NSQ's TCP protocol none).
fn client_tls(target: &Target, args: &crate::tls::options::TlsArgs) -> Result<Option<Arc<ClientTls>>> {
    let Some(start) = target.tls else { return Ok(None) };
    let alpn = target.protocol.alpn.filter(|_| matches!(start, TlsStart::AtConnect | TlsStart::InQuic));
    let config = crate::tls::options::client_config(args, alpn.map(|(offered, _)| offered))?;
    let name = crate::tls::options::server_name(&target.host)?;
    let required = alpn.filter(|(_, required)| *required).map(|(offered, _)| offered);
    Ok(Some(Arc::new(ClientTls { config, name, start, alpn: required })))
}

/// One TLS handshake before the run, so a certificate the client will not trust, a version
/// the server will not speak or a plaintext port is one clear line (exit status 2), not a
/// run in which every connection fails; its connect is the reachability check too. Returns
/// the bytes it wrote and read.
fn preflight_tls(
    target: &Target,
    addr: &Endpoint,
    tls: &ClientTls,
    preamble: Option<&[u8]>,
) -> Result<(u64, u64)> {
    let failed = |why: String| anyhow::anyhow!("{}: TLS handshake failed: {why}", target.url);
    let mut session = tls.preflight_session().map_err(|e| failed(crate::tls::explain(&e)))?;
    let mut stream = connect(addr).map_err(|e| failed(crate::engine::conn::io_text(&e)))?;
    let mut wire = Vec::new();
    let mut buf = vec![0u8; crate::tls::MAX_RECORD];
    let (mut tx, mut rx) = (0u64, 0u64);
    // `--proxy-protocol`'s header before TLS, as every connection of the run sends it.
    if let Some(preamble) = preamble {
        std::io::Write::write_all(&mut stream, preamble)
            .map_err(|e| failed(crate::engine::conn::io_text(&e)))?;
        tx += preamble.len() as u64;
    }
    // Bounded: a handshake is a few flights; each round writes what TLS has, reads once.
    for _ in 0..16 {
        wire.clear();
        crate::tls::flush(&mut session, &mut wire);
        std::io::Write::write_all(&mut stream, &wire)
            .map_err(|e| failed(crate::engine::conn::io_text(&e)))?;
        tx += wire.len() as u64;
        if !session.is_handshaking() {
            if let Some(wanted) = tls.alpn
                && session.alpn_protocol() != Some(wanted)
            {
                let said = session.alpn_protocol().map(String::from_utf8_lossy);
                return Err(failed(format!(
                    "the server did not agree to {} by ALPN (it chose {}): it does not speak it over TLS here",
                    String::from_utf8_lossy(wanted),
                    said.map_or("nothing".into(), |s| s.into_owned())
                )));
            }
            let after = say_goodbye(&mut session, &mut stream, &mut tx)
                .map_err(|e| failed(crate::tls::explain(&e)))?;
            return Ok((tx, rx + after));
        }
        let n = match std::io::Read::read(&mut stream, &mut buf) {
            Ok(0) => return Err(failed("the server closed the connection during the handshake".into())),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(failed(format!(
                    "no answer within {PREFLIGHT_TIMEOUT:?}: is this port a TLS one? (a plaintext server takes the scheme without TLS: http:// for https://, ws:// for wss://)"
                )));
            }
            Err(e) => return Err(failed(crate::engine::conn::io_text(&e))),
        };
        rx += n as u64;
        crate::tls::record_len(&buf[..n]).map_err(|e| failed(e.to_string()))?;
        if let Err(e) = crate::tls::open(&mut session, &buf[..n]) {
            // Tell the server why, as a client does.
            wire.clear();
            crate::tls::flush(&mut session, &mut wire);
            let _ = std::io::Write::write_all(&mut stream, &wire);
            return Err(failed(crate::tls::explain(&e)));
        }
    }
    Err(failed("no end to the handshake after 16 rounds".into()))
}

/// After the pre-flight's handshake: TLS's goodbye, then what the server still sends (its
/// session tickets, its own goodbye) until it closes, so that every byte of the connection
/// is counted; bounded by the pre-flight's timeout. Returns the bytes read; an alert among
/// them is the server's verdict on the handshake it saw end (TLS 1.3's client certificate is
/// judged after the client's side is done: `CertificateRequired`).
fn say_goodbye(
    session: &mut rustls::ClientConnection,
    stream: &mut socket2::Socket,
    tx: &mut u64,
) -> Result<u64, rustls::Error> {
    session.send_close_notify();
    let mut wire = Vec::new();
    crate::tls::flush(session, &mut wire);
    if std::io::Write::write_all(stream, &wire).is_ok() {
        *tx += wire.len() as u64;
    }
    let mut buf = [0u8; 4096];
    let mut read = 0u64;
    let began = Instant::now();
    while began.elapsed() < PREFLIGHT_TIMEOUT {
        match std::io::Read::read(stream, &mut buf) {
            Ok(n @ 1..) => {
                read += n as u64;
                crate::tls::open(session, &buf[..n])?;
            }
            _ => break,
        }
    }
    Ok(read)
}

/// One QUIC handshake before the run (`h3://`): an unreachable target, a certificate the
/// client will not trust or a server that will not speak HTTP/3 is one clear line, not a run
/// in which every connection fails. Returns the UDP payload bytes it sent and received.
fn preflight_quic(target: &Target, addr: SocketAddr, tls: &ClientTls) -> Result<(u64, u64)> {
    use crate::engine::quic::{ClientConn, Lost};
    let failed = |why: String| anyhow::anyhow!("{}: QUIC handshake failed: {why}", target.url);
    let config = crate::engine::quic::client_config(tls.config.clone()).map_err(|e| failed(e.to_string()))?;
    let any = unspecified(addr);
    let sock = std::net::UdpSocket::bind(any)
        .and_then(|s| s.connect(addr).map(|()| s))
        .map_err(|e| failed(e.to_string()))?;
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut endpoint =
        quinn_proto::Endpoint::new(Arc::new(quinn_proto::EndpointConfig::default()), None, false, None);
    let spec = crate::proto::h2::client::RequestSpec {
        method: "GET".into(),
        scheme: "https",
        authority: target.host.clone(),
        path: "/".into(),
        headers: Vec::new(),
        body: Vec::new(),
        grpc: false,
    };
    let h3 = crate::proto::h3::client::H3Client::new(&spec, true);
    let started = std::time::Instant::now();
    let mut conn = ClientConn::connect(&mut endpoint, started, config, addr, &target.host, h3)
        .map_err(|e| failed(e.to_string()))?;
    let (mut tx, mut rx) = (0u64, 0u64);
    let (mut buf, mut incoming) = (Vec::new(), vec![0u8; 65_536]);
    let mut refused = false;
    // Bounded: PREFLIGHT_TIMEOUT, in reads of at most 20 ms.
    while started.elapsed() < PREFLIGHT_TIMEOUT {
        let now = std::time::Instant::now();
        if conn.poll_timeout().is_some_and(|at| at <= now) {
            conn.handle_timeout(now);
        }
        conn.drive(now, &mut endpoint, &mut Vec::new());
        if let Some(Lost { reason, .. }) = conn.lost() {
            return Err(failed(crate::tls::explain_quic(reason)));
        }
        let connected = conn.connected();
        if connected {
            conn.close(now);
        }
        while let Some(t) = conn.poll_transmit(now, 1, &mut buf) {
            tx += t.size as u64;
            let _ = sock.send(&buf[..t.size]);
            buf.clear();
        }
        if connected {
            return Ok((tx, rx));
        }
        match sock.recv(&mut incoming) {
            Ok(n) => {
                rx += n as u64;
                let data = bytes::BytesMut::from(&incoming[..n]);
                if let Some(quinn_proto::DatagramEvent::ConnectionEvent(_, event)) =
                    endpoint.handle(std::time::Instant::now(), addr, None, None, data, &mut Vec::new())
                {
                    conn.handle_event(event);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused = true;
                break;
            }
            Err(_) => {}
        }
    }
    if refused {
        bail!(
            "cannot reach {} ({addr}): UDP port unreachable; is an HTTP/3 server listening there (on UDP)?",
            target.url
        );
    }
    Err(failed(format!(
        "no answer from {addr} in {} s; is an HTTP/3 server listening there (on UDP)?",
        PREFLIGHT_TIMEOUT.as_secs()
    )))
}

/// One plain connect, so an unreachable target is one clear line.
fn preflight(target: &Target, addr: &Endpoint) -> Result<()> {
    match connect(addr) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => bail!(
            "cannot connect to {} ({addr}): connection refused; is the server running and listening there?",
            target.url
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && addr.is_unix() => {
            bail!(
                "cannot connect to {} ({addr}): no such file; is the server listening on that path?",
                target.url
            )
        }
        Err(e) => bail!("cannot connect to {} ({addr}): {e}", target.url),
    }
}

/// One request datagram (`udp://`), so that a port nobody listens on — the kernel's ICMP
/// "port unreachable", back at once on loopback — is one clear line. Its answer, if one comes
/// in the wait, is read; none is needed (`serve udp` answers no client that has not set up;
/// an empty datagram would be no gentler: neper's `udp_rr` server closes on one). A server
/// that answers nothing is found out by the run's timeouts (and its exit status, where
/// nothing completed). Returns the bytes sent and received.
fn preflight_udp(target: &Target, addr: &Endpoint, request: &[u8]) -> Result<(u64, u64)> {
    let failed = |why: String| anyhow::anyhow!("cannot reach {} ({addr}): {why}", target.url);
    let to = addr.ip().context("a UDP target's address")?;
    let any = unspecified(to);
    let sock = std::net::UdpSocket::bind(any)
        .and_then(|s| s.connect(to).map(|()| s))
        .map_err(|e| failed(e.to_string()))?;
    let _ = sock.set_read_timeout(Some(UDP_PREFLIGHT_WAIT));
    sock.send(request).map_err(|e| failed(e.to_string()))?;
    match sock.recv(&mut vec![0u8; 65_536]) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(failed("refused (ICMP port unreachable): is a UDP server listening there?".into()))
        }
        Ok(n) => Ok((request.len() as u64, n as u64)),
        Err(_) => Ok((request.len() as u64, 0)),
    }
}

/// Any address of `of`'s family, port 0: what a UDP pre-flight socket binds to.
fn unspecified(of: SocketAddr) -> SocketAddr {
    if of.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() }
}

/// A blocking stream socket connected to `addr` within the pre-flight's timeout, its reads and
/// writes bounded by it too.
fn connect(addr: &Endpoint) -> std::io::Result<socket2::Socket> {
    let to = addr.sockaddr()?;
    let socket = socket2::Socket::new(to.domain(), socket2::Type::STREAM.cloexec(), None)?;
    socket.connect_timeout(&to, PREFLIGHT_TIMEOUT)?;
    socket.set_read_timeout(Some(PREFLIGHT_TIMEOUT))?;
    socket.set_write_timeout(Some(PREFLIGHT_TIMEOUT))?;
    Ok(socket)
}

/// This machine's name, for NSQ's IDENTIFY.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".into(), |h| h.trim().to_string())
}

/// Run: the protocol builds its codec and drives the engine (its `run`, from the registry).
/// With `--repeat N`, N runs back to back (fewer if Ctrl-C stops one): the median run's
/// report (by ops/s), carrying every run's summary.
pub fn run(p: &Prepared) -> Result<(RunInfo, Report)> {
    let mut reports = Vec::new();
    for _ in 0..p.plan.load.repeat {
        if !reports.is_empty() && p.job.stop.load(Ordering::Relaxed) {
            break;
        }
        for core in p.job.progress.iter() {
            core.store(0, Ordering::Relaxed);
        }
        reports.push(crate::protocol::run(p)?);
    }
    let runs: Vec<RunSummary> = reports.iter().map(RunSummary::of).collect();
    let median = crate::stats::median_index(&runs.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
    let mut report = reports.swap_remove(median);
    report.preflight = p.preflight;
    if runs.len() > 1 {
        report.repeats = Some(Repeats { median, runs });
    }
    let mut info = p.plan.info();
    info.kinds = p.requests.as_ref().map_or_else(Vec::new, |r| r.kinds.clone());
    Ok((info, report))
}

/// A flag the process's stop flag is not: for servers and steps stopped by their owner.
pub fn own_stop() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}
