//! `wirebench serve KIND`: run a built-in server until `--duration` or Ctrl-C, then print its tally.

use super::{ServeArgs, ServeKind, parse_cores};
use crate::engine::{self, EngineKind, ServerTally, glommio::ServerHandle};
use crate::proto::http1::Http1Server;
use anyhow::{Context, Result, bail};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Connections a built-in server expects to hold at most; the file limit is raised for them.
const SERVER_SOCKETS: u64 = 65_536;

/// Start the built-in server of `kind` on `cores`; it runs until its stop flag is set.
pub fn start(
    kind: ServeKind,
    engine: EngineKind,
    listen: SocketAddr,
    cores: &[usize],
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle> {
    // Best effort for the file limit: a server with fewer sockets still serves.
    let _ = engine::sys::ensure_file_limit(SERVER_SOCKETS);
    super::bench::ensure_limits(0, cores.len())?;
    let handle = match (engine, kind) {
        (EngineKind::Glommio, ServeKind::Http) => {
            engine::glommio::start_server(listen, cores, Http1Server, stop)?
        }
    };
    Ok(handle)
}

pub fn main(args: &ServeArgs) -> Result<()> {
    let listen =
        args.listen.to_socket_addrs().ok().and_then(|mut a| a.next()).with_context(|| {
            format!("--listen '{}' is not an address: use e.g. 127.0.0.1:8080", args.listen)
        })?;
    let cores = parse_cores(args.engine.cores.as_deref())?;
    if args.duration == Some(Duration::ZERO) {
        bail!("--duration must be longer than zero");
    }
    let interrupted = super::interrupted();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = start(args.kind, args.engine.engine, listen, &cores, stop.clone())?;
    println!(
        "wirebench serve {:?}: listening on {} — {} engine on CPU {} (Ctrl-C stops)",
        args.kind,
        handle.addr,
        args.engine.engine.name(),
        super::list_cores(&cores)
    );
    let started = Instant::now();
    while !interrupted.load(Ordering::Relaxed) {
        if args.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tallies = handle.stop()?;
    print!("{}", render_tally(&tallies, started.elapsed()));
    Ok(())
}

pub fn render_tally(tallies: &[ServerTally], elapsed: Duration) -> String {
    let total = ServerTally::sum(tallies);
    let mut s = format!(
        "served {} requests on {} connections in {:.2}s; rx {} B tx {} B\n",
        total.requests,
        total.connections,
        elapsed.as_secs_f64(),
        total.rx,
        total.tx
    );
    for t in tallies {
        s += &format!(
            "  cpu {:>3}: {} requests, {} connections, rx {} B, tx {} B\n",
            t.core, t.requests, t.connections, t.rx, t.tx
        );
    }
    s
}
