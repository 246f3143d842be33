//! `wirebench serve KIND`: run a built-in server until `--duration` or Ctrl-C, then print its tally.

use super::{ServeArgs, ServeKind, parse_cores};
use crate::engine::serve_conn::ServerLimits;
use crate::engine::{self, EngineKind, ServerHandle, ServerTally};
use crate::proto::http1::Http1Server;
use crate::proto::nsq::{NsqHttpServer, NsqServer, SinkLimits};
use crate::proto::ws::WsServer;
use crate::proto::{Served, ServerCodec};
use anyhow::{Context, Result, bail};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Connections a built-in server expects to hold at most; the file limit is raised for them.
const SERVER_SOCKETS: u64 = 65_536;

/// Every built-in server, so one engine core can serve several listeners (nsq's TCP and HTTP
/// sides; all of them for `compare`). One `match` per read, not per byte.
#[derive(Debug, Clone)]
pub enum Builtin {
    Http(Http1Server),
    Nsq(NsqServer),
    NsqHttp(NsqHttpServer),
    Ws(WsServer),
}

impl ServerCodec for Builtin {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        match self {
            Builtin::Http(s) => s.serve(input, out),
            Builtin::Nsq(s) => s.serve(input, out),
            Builtin::NsqHttp(s) => s.serve(input, out),
            Builtin::Ws(s) => s.serve(input, out),
        }
    }
    fn set_unix_time(&mut self, secs: u64) {
        if let Builtin::NsqHttp(s) = self {
            s.set_unix_time(secs);
        }
    }
    fn heartbeat_interval(&self) -> Option<Duration> {
        match self {
            Builtin::Nsq(s) => s.heartbeat_interval(),
            _ => None,
        }
    }
    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        if let Builtin::Nsq(s) = self {
            s.heartbeat(out);
        }
    }
    fn silence_limit(&self) -> Option<Duration> {
        match self {
            Builtin::Nsq(s) => s.silence_limit(),
            _ => None,
        }
    }
    fn busy(&self, out: &mut Vec<u8>) {
        match self {
            Builtin::Http(s) => s.busy(out),
            Builtin::Nsq(s) => s.busy(out),
            Builtin::NsqHttp(s) => s.busy(out),
            Builtin::Ws(s) => s.busy(out),
        }
    }
}

/// Start built-in servers, one listener each, on `cores`; they run until `stop` is set.
pub fn start(
    engine: EngineKind,
    listeners: Vec<(SocketAddr, Builtin)>,
    cores: &[usize],
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle> {
    // Best effort for the file limit: a server with fewer sockets still serves (up to
    // `--max-conns`, refusing the rest).
    let _ = engine::sys::ensure_file_limit(SERVER_SOCKETS.min(limits.max_conns as u64).saturating_add(64));
    engine.for_server().ensure_limits(0, cores.len())?;
    Ok(engine.start_server(listeners, cores, limits, stop)?)
}

/// The limits `serve` was given.
pub fn limits(args: &ServeArgs) -> Result<ServerLimits> {
    let limits = ServerLimits {
        head_timeout: args.head_timeout,
        idle_timeout: args.idle_timeout,
        write_timeout: args.write_timeout,
        max_conns: args.max_conns,
    };
    if limits.head_timeout.is_zero() || limits.idle_timeout.is_zero() || limits.write_timeout.is_zero() {
        bail!("--head-timeout, --idle-timeout and --write-timeout must be longer than zero");
    }
    if limits.max_conns == 0 {
        bail!("--max-conns must be at least 1");
    }
    Ok(limits)
}

/// The listeners of one `serve KIND`.
pub fn listeners(kind: ServeKind, args: &ServeArgs) -> Result<Vec<(SocketAddr, Builtin)>> {
    let listen = resolve(args.listen.as_deref().unwrap_or(kind.default_listen()), "--listen")?;
    let limits = SinkLimits { max_msg_size: args.max_msg_size, max_body_size: args.max_body_size };
    Ok(match kind {
        ServeKind::Http => vec![(listen, Builtin::Http(Http1Server::default()))],
        ServeKind::Ws => vec![(listen, Builtin::Ws(WsServer::new(args.max_message as usize)))],
        ServeKind::Nsq => vec![
            (listen, Builtin::Nsq(NsqServer::new(limits))),
            (resolve(&args.http_listen, "--http-listen")?, Builtin::NsqHttp(NsqHttpServer::new(limits))),
        ],
    })
}

fn resolve(text: &str, flag: &str) -> Result<SocketAddr> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("{flag} '{text}' is not an address: use e.g. 127.0.0.1:8080"))
}

pub fn main(args: &ServeArgs) -> Result<()> {
    let cores = parse_cores(args.engine.cores.as_deref())?;
    if args.duration == Some(Duration::ZERO) {
        bail!("--duration must be longer than zero");
    }
    let interrupted = super::interrupted();
    let stop = Arc::new(AtomicBool::new(false));
    let engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_SERVER).for_server();
    let handle = start(engine, listeners(args.kind, args)?, &cores, limits(args)?, stop)?;
    let addrs: Vec<String> = handle.addrs.iter().map(ToString::to_string).collect();
    crate::report::out(&format!(
        "wirebench serve {}: listening on {} — {} engine on CPU {} (Ctrl-C stops)\n",
        format!("{:?}", args.kind).to_lowercase(),
        addrs.join(" and "),
        engine.name(),
        crate::cpus::format(&cores)
    ));
    let started = std::time::Instant::now();
    while !interrupted.load(Ordering::Relaxed) {
        if args.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tallies = handle.stop()?;
    crate::report::out(&render_tally(&tallies, started.elapsed()));
    Ok(())
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
