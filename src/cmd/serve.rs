//! `wirebench serve KIND`: run a built-in server until `--duration` or Ctrl-C, then print its
//! tally. [`start`] is also how `compare` and `sweep` start the built-in servers they measure.

use super::{LimitArgs, ServeArgs, parse_cores};
use crate::codec::{BoxedServer, Listener};
use crate::engine::ServerHandle;
use crate::engine::serve_conn::ServerLimits;
use crate::plan::EngineKind;
use crate::plan::Server;
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
const SERVER_SOCKETS: u64 = 65_536;

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
    servers: &[(&'static Server, SocketAddr)],
    options: &ServerOptions,
    cores: &[usize],
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<Started> {
    let mut listeners: Vec<Listener> = Vec::new();
    let mut counts = Vec::new();
    let tls = options.tls.server()?;
    let tcp = servers.iter().filter(|(s, _)| !s.quic);
    for (server, addr) in tcp.clone() {
        let own = (server.listeners)(*addr, &options.set(), tls.is_some())?;
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
            Some(t) => listeners.extend(own.into_iter().zip(server.tls).map(|((addr, codec), start)| {
                let at_accept = *start == crate::tls::options::TlsStart::AtConnect;
                let wrapped: BoxedServer =
                    Box::new(crate::tls::TlsServer::new(codec, t.config_for(server.alpn), at_accept));
                (addr, wrapped)
            })),
            None => listeners.extend(own),
        }
    }
    // Best effort for the file limit: a server with fewer sockets still serves (up to
    // `--max-conns`, refusing the rest).
    let _ =
        crate::engine::sys::ensure_file_limit(SERVER_SOCKETS.min(limits.max_conns as u64).saturating_add(64));
    crate::engine::ensure_limits(engine, 0, cores.len(), false)?;
    let mut handle = if listeners.is_empty() {
        ServerHandle::empty(stop.clone())
    } else {
        crate::engine::start_server(engine, listeners, cores, limits, stop.clone())?
    };
    let mut per_server: Vec<Vec<String>> = Vec::new();
    let mut from = 0;
    for ((server, _), n) in tcp.zip(counts) {
        per_server.push((server.urls)(&handle.addrs[from..from + n], tls.is_some()));
        from += n;
    }
    // QUIC servers (`serve h3`): TLS always, the certificate of `--tls`/`--cert` or one made.
    let mut tls = tls;
    let mut quic_urls = Vec::new();
    for (server, addr) in servers.iter().filter(|(s, _)| s.quic) {
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
        let quic = crate::engine::quic_io::start_server(*addr, cores, config, bounds, stop.clone())?;
        quic_urls.push((server.urls)(&quic.addrs, true));
        handle.merge(quic);
    }
    // The URLs in the order the servers were asked for.
    let (mut tcp_urls, mut quic_urls) = (per_server.into_iter(), quic_urls.into_iter());
    let urls = servers
        .iter()
        .map(|(s, _)| if s.quic { quic_urls.next() } else { tcp_urls.next() }.unwrap_or_default())
        .collect();
    Ok(Started { handle, urls, tls })
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
    let listen = args.listen.as_deref().unwrap_or(server.default_listen);
    let addr = listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("--listen '{listen}' is not an address: use e.g. 127.0.0.1:8080"))?;
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
    crate::report::out(&format!(
        "wirebench serve {}: listening on {} — {} engine on CPU {} (Ctrl-C stops)\ntargets: {}\n",
        args.kind,
        addrs.join(" and "),
        engine.name(),
        crate::cpus::format(&cores),
        started.urls.concat().join(" ")
    ));
    // The certificate file made for clients goes when the server does (a guard: on every way out).
    let mut _cert_file = None;
    if let Some(tls) = &started.tls
        && args.options.tls.cert.is_none()
    {
        // A client must trust the certificate just made: it is written where they can read it.
        let port = started.handle.addr().port();
        let path = std::env::temp_dir().join(format!("wirebench-serve-{port}.pem"));
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
