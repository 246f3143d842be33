//! `wirebench serve KIND`: run a built-in server until `--duration` or Ctrl-C, then print its
//! tally. [`start`] is also how `compare` and `sweep` start the built-in servers they measure.

use super::{LimitArgs, ServeArgs, parse_cores};
use crate::codec::BoxedServer;
use crate::engine::ServerHandle;
use crate::engine::serve_conn::ServerLimits;
use crate::plan::Server;
use crate::plan::{Endpoint, EngineKind};
use crate::protocol::{self, ServerOptions};
use crate::stats::ServerTally;
use anyhow::{Context, Result, bail};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The most `--max-conns` may say: far past what a machine holds (a connection costs the
/// kernel a few KiB at least), and far from overflowing what is sized from it.
const MAX_CONNS: usize = 1 << 30;
/// Connections a built-in server expects to hold at most; the file limit is raised for them.
const SERVER_SOCKETS: u64 = crate::engine::serve_conn::DEFAULT_MAX_CONNS as u64;

/// Built-in servers started together on the same cores.
pub struct Started {
    pub handle: ServerHandle,
    /// Per server asked for, in order: the target URLs of its listeners.
    pub urls: Vec<Vec<String>>,
    /// Their TLS, when they serve it (its certificate, for clients to trust).
    pub tls: Option<crate::tls::options::ServerTls>,
}

/// Start `servers` (each on its address) on `cores`, one engine for all; they run until
/// `stop` is set.
pub fn start(
    engine: EngineKind,
    servers: &[(&'static Server, Endpoint)],
    options: &ServerOptions,
    cores: &[usize],
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<Started> {
    let mut all: Vec<(Endpoint, BoxedServer)> = Vec::new();
    let mut counts = Vec::new();
    let tls = options.tls.server()?;
    let tcp = servers.iter().filter(|(s, _)| !s.quic && s.datagrams.is_none());
    for (server, addr) in tcp.clone() {
        let own = listeners(server, addr, options, tls.is_some())?;
        counts.push(own.len());
        if tls.is_some() && server.tls.len() != own.len() {
            bail!(
                "`serve {}` serves no TLS on {} of its {} listeners: run it without --tls/--cert",
                server.name,
                own.len() - server.tls.len().min(own.len()),
                own.len()
            );
        }
        match &tls {
            // Every listener's codec behind the TLS layer, starting where the server says.
            Some(t) => all.extend(own.into_iter().zip(server.tls).map(|((addr, codec), start)| {
                let at_accept = *start == crate::tls::options::TlsStart::AtConnect;
                let wrapped: BoxedServer =
                    Box::new(crate::tls::TlsServer::new(codec, t.config_for(server.alpn), at_accept));
                (addr, wrapped)
            })),
            None => all.extend(own),
        }
    }
    // Best effort for the file limit: a server with fewer sockets still serves (up to
    // `--max-conns`, refusing the rest).
    let _ =
        crate::engine::sys::ensure_file_limit(SERVER_SOCKETS.min(limits.max_conns as u64).saturating_add(64));
    crate::engine::ensure_limits(engine, 0, cores.len(), false)?;
    let mut handle = if all.is_empty() {
        ServerHandle::empty(stop.clone())
    } else {
        crate::engine::start_server(engine, all, cores, limits, stop.clone())?
    };
    let mut per_server: Vec<Vec<String>> = Vec::new();
    let mut from = 0;
    for ((server, _), n) in tcp.zip(counts) {
        per_server.push(urls(server, &handle.addrs[from..from + n], tls.is_some()));
        from += n;
    }
    // QUIC servers (`serve h3`): TLS always, the certificate of `--tls`/`--cert` or one made.
    let mut tls = tls;
    let mut quic_urls = Vec::new();
    for (server, addr) in servers.iter().filter(|(s, _)| s.quic) {
        let Some(addr) = addr.ip() else {
            bail!("`serve {}` speaks QUIC over UDP: it cannot listen on {addr}", server.name)
        };
        if tls.is_none() {
            let forced = crate::tls::options::ServeTlsArgs { tls: true, ..options.tls.clone() };
            tls = forced.server()?;
        }
        let t = tls.as_ref().context("a QUIC server's TLS")?;
        let config = crate::engine::quic::server_config(
            (*t.config_for(server.alpn)).clone(),
            crate::engine::quic::MAX_STREAMS,
            limits.idle_timeout,
        )?;
        // The same limits as the TCP servers', each core its share of the connections.
        let bounds = crate::engine::quic::ServerBounds {
            max_conns: limits.max_conns.div_ceil(cores.len().max(1)),
            head_timeout: limits.head_timeout,
            write_timeout: limits.write_timeout,
            delay: limits.delay,
        };
        let quic = crate::engine::quic_io::start_server(addr, cores, config, bounds, stop.clone())?;
        quic_urls.push(urls(server, &quic.addrs, true));
        handle.merge(quic);
    }
    let udp_urls = start_datagram_servers(servers, options, cores, &stop, &mut handle)?;
    // The URLs in the order the servers were asked for.
    let (mut tcp_urls, mut quic_urls, mut udp_urls) =
        (per_server.into_iter(), quic_urls.into_iter(), udp_urls.into_iter());
    let urls = servers
        .iter()
        .map(|(s, _)| {
            match (s.quic, s.datagrams.is_some()) {
                (true, _) => quic_urls.next(),
                (false, true) => udp_urls.next(),
                (false, false) => tcp_urls.next(),
            }
            .unwrap_or_default()
        })
        .collect();
    Ok(Started { handle, urls, tls })
}

/// The datagram servers of `servers` (`serve udp`: no TLS, their own loop), merged into
/// `handle`; their URLs, in order.
fn start_datagram_servers(
    servers: &[(&'static Server, Endpoint)],
    options: &ServerOptions,
    cores: &[usize],
    stop: &Arc<AtomicBool>,
    handle: &mut ServerHandle,
) -> Result<Vec<Vec<String>>> {
    let mut udp_urls = Vec::new();
    for (server, addr) in servers {
        let Some(answerer) = server.datagrams else { continue };
        let Some(addr) = addr.ip() else {
            bail!("`serve {}` answers UDP: it cannot listen on {addr}", server.name)
        };
        if options.tls.tls || options.tls.cert.is_some() {
            bail!(
                "`serve {}` serves no TLS: UDP_RR is the floor under QUIC, without its encryption",
                server.name
            );
        }
        let udp =
            crate::engine::udp_server::start_server(addr, cores, answerer(&options.set())?, stop.clone())?;
        udp_urls.push(urls(server, &udp.addrs, false));
        handle.merge(udp);
    }
    Ok(udp_urls)
}

/// `server`'s listeners with their codecs, at `addr`: on a Unix path, the server's one
/// listener there (a server with several — NSQ's TCP and HTTP ports — needs IP ports).
fn listeners(
    server: &Server,
    addr: &Endpoint,
    options: &ServerOptions,
    tls: bool,
) -> Result<Vec<(Endpoint, BoxedServer)>> {
    let Endpoint::Unix(path) = addr else {
        let ip = addr.ip().context("an IP listener's address")?;
        return Ok((server.listeners)(ip, &options.set(), tls)?
            .into_iter()
            .map(|(a, c)| (a.into(), c))
            .collect());
    };
    let mut own = (server.listeners)(([127, 0, 0, 1], 0).into(), &options.set(), tls)?;
    if own.len() != 1 {
        bail!(
            "`serve {}` listens on {} ports: --listen unix:PATH takes a server with one (give it an IP address)",
            server.name,
            own.len()
        );
    }
    let (_, codec) = own.remove(0);
    Ok(vec![(Endpoint::Unix(path.clone()), codec)])
}

/// The URLs of `server`'s listeners at `addrs`. A Unix socket's names the host `localhost`
/// (what the protocol says it speaks to); its path goes to the client apart, `--unix-socket`.
fn urls(server: &Server, addrs: &[Endpoint], tls: bool) -> Vec<String> {
    const STAND_IN: &str = "127.0.0.1:1";
    let ips: Vec<SocketAddr> = addrs
        .iter()
        .map(|a| a.ip().unwrap_or_else(|| STAND_IN.parse().expect("a literal address")))
        .collect();
    let urls = (server.urls)(&ips, tls);
    // A server on a Unix path has that one listener (however many schemes it answers).
    match addrs.iter().any(Endpoint::is_unix) {
        true => urls.into_iter().map(|url| url.replacen(STAND_IN, "localhost", 1)).collect(),
        false => urls,
    }
}

/// `--listen`: `HOST:PORT`, or `unix:PATH` for a Unix socket.
fn listen_endpoint(listen: &str) -> Result<Endpoint> {
    if let Some(path) = listen.strip_prefix("unix:") {
        if path.is_empty() || path.len() > crate::plan::target::MAX_UNIX_PATH {
            bail!(
                "--listen {listen}: a Unix socket's path is 1 to {} bytes long",
                crate::plan::target::MAX_UNIX_PATH
            );
        }
        return Ok(Endpoint::Unix(std::path::Path::new(path).into()));
    }
    listen.to_socket_addrs().ok().and_then(|mut a| a.next()).map(Endpoint::Ip).with_context(|| {
        format!("--listen '{listen}' is not an address: use e.g. 127.0.0.1:8080, or unix:/tmp/wirebench.sock")
    })
}

impl LimitArgs {
    /// The limits, checked.
    pub fn limits(&self) -> Result<ServerLimits> {
        let limits = ServerLimits {
            head_timeout: self.head_timeout,
            idle_timeout: self.idle_timeout,
            write_timeout: self.write_timeout,
            max_conns: self.max_conns,
            delay: self.delay,
        };
        if limits.head_timeout.is_zero() || limits.idle_timeout.is_zero() || limits.write_timeout.is_zero() {
            bail!("--head-timeout, --idle-timeout and --write-timeout must be longer than zero");
        }
        if !(1..=MAX_CONNS).contains(&limits.max_conns) {
            bail!(
                "--max-conns must be between 1 and {MAX_CONNS} (connections per server, shared out over its cores)"
            );
        }
        Ok(limits)
    }
}

/// Start the server `serve` names, on `cores` (its own stop flag).
pub fn start_args(args: &ServeArgs, cores: &[usize]) -> Result<Started> {
    let server =
        protocol::server(&args.kind).with_context(|| format!("no built-in server '{}'", args.kind))?;
    for (flag, owners) in args.options.given() {
        if !owners.contains(&server.name) {
            bail!("{flag} applies to `serve {}`", owners.join("` and `serve "));
        }
    }
    let addr = listen_endpoint(args.listen.as_deref().unwrap_or(server.default_listen))?;
    let engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_SERVER);
    start(engine, &[(server, addr)], &args.options, cores, args.limits.limits()?, crate::run::own_stop())
}

pub fn main(args: &ServeArgs) -> Result<()> {
    let cores = parse_cores(args.engine.cores.as_deref())?;
    if args.duration == Some(Duration::ZERO) {
        bail!("--duration must be longer than zero");
    }
    let interrupted = crate::interrupt::flag();
    let engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_SERVER);
    let mut started = start_args(args, &cores)?;
    let addrs: Vec<String> = started.handle.addrs.iter().map(ToString::to_string).collect();
    // A client reaches a Unix socket's URL through the path (`--unix-socket`).
    let through = match started.handle.addrs.iter().find(|a| a.is_unix()) {
        Some(crate::plan::Endpoint::Unix(path)) => format!(" --unix-socket {}", path.display()),
        _ => String::new(),
    };
    // QUIC's and UDP's servers run on their own loops, whatever --engine says for TCP's.
    let engine = match protocol::server(&args.kind) {
        Some(s) if s.quic => "quic",
        Some(s) if s.datagrams.is_some() => "udp (recvmmsg)",
        _ => engine.name(),
    };
    crate::report::out(&format!(
        "wirebench serve {}: listening on {} — {engine} engine on CPU {} (Ctrl-C stops)\ntargets: {}{through}\n",
        args.kind,
        addrs.join(" and "),
        crate::cpus::format(&cores),
        started.urls.concat().join(" ")
    ));
    // The certificate file made for clients goes when the server does (a guard: on every way out).
    let mut _cert_file = None;
    if let Some(tls) = &started.tls
        && args.options.tls.cert.is_none()
    {
        // A client must trust the certificate just made: it is written where they can read it.
        let tag = match started.handle.addr().port() {
            0 => format!("unix-{}", std::process::id()),
            port => port.to_string(),
        };
        let path = std::env::temp_dir().join(format!("wirebench-serve-{tag}.pem"));
        std::fs::write(&path, &tls.cert_pem).with_context(|| format!("cannot write {}", path.display()))?;
        _cert_file = Some(RemovedOnDrop(path.clone()));
        crate::report::out(&format!(
            "TLS: a self-signed certificate for localhost, 127.0.0.1 and ::1, written to {} (clients: --ca {0}, or --insecure)\n",
            path.display()
        ));
    }
    let began = crate::clock::Instant::now();
    while !interrupted.load(Ordering::Relaxed) {
        if args.duration.is_some_and(|d| began.elapsed() >= d) {
            break;
        }
        // A core that died leaves a listener answering part of its clients, or none: the
        // server ends, saying why, rather than look alive.
        if let Err(e) = started.handle.check() {
            let _ = started.handle.stop();
            return Err(anyhow::Error::new(e).context("the server stopped serving"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tallies = started.handle.stop()?;
    crate::report::out(&render_tally(&tallies, began.elapsed()));
    Ok(())
}

/// A file removed when this goes out of scope.
struct RemovedOnDrop(std::path::PathBuf);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn render_tally(tallies: &[ServerTally], elapsed: Duration) -> String {
    let total = ServerTally::sum(tallies);
    let mut s = format!(
        "served {} requests ({} messages) on {} connections in {:.2}s; rx {} B tx {} B; cpu time {:.3}s; {} closed for slowness, {} refused at the limit\n",
        total.requests,
        total.messages,
        total.connections,
        elapsed.as_secs_f64(),
        total.rx,
        total.tx,
        total.cpu.as_secs_f64(),
        total.timeouts,
        total.refused
    );
    for t in tallies {
        s += &format!(
            "  cpu {:>3}: {} requests, {} messages, {} connections, rx {} B, tx {} B, {:.0}% busy\n",
            t.core,
            t.requests,
            t.messages,
            t.connections,
            t.rx,
            t.tx,
            100.0 * crate::stats::ratio(t.cpu.as_secs_f64(), t.wall.as_secs_f64())
        );
    }
    s
}
