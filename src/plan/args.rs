//! The command line's load options, as clap reads them: [`LoadArgs`] (flattened into every
//! command that generates load), [`EngineArgs`] and each command's [`Defaults`]. Checked into a
//! [`Load`](super::Load) by [`validate_load`](super::validate_load).

use super::{EngineKind, RateArg, parse_connect_rate, parse_duration, parse_rate, parse_start_at};
use crate::workload::ConnectRate;
use std::path::PathBuf;
use std::time::Duration;

/// The `uring` engine waits awake for a paced send due sooner than this (`--spin`'s default): a
/// sleep and its wake-up cost more CPU than a short spin (tens of µs on a VM), and the wake
/// comes late.
pub const URING_SPIN: Duration = Duration::from_micros(30);
/// The longest `--spin`: past a millisecond, sleeping is cheaper and as punctual.
pub(super) const MAX_SPIN: Duration = Duration::from_millis(1);
/// The longest `--slack`: a schedule later than this is no schedule.
pub(super) const MAX_SLACK: Duration = Duration::from_millis(100);
/// `--gather`'s default bound (see `engine::uring`'s `GATHER_SHARE` for the other).
pub const URING_GATHER: Duration = Duration::from_micros(50);
/// The longest `--gather`: an answer read a millisecond late is a measurement changed.
pub(super) const MAX_GATHER: Duration = Duration::from_millis(1);

/// The load options every command that generates load takes (`bench`, `compare`, `sweep`):
/// flattened into each, so every option reaches every one of them.
///
/// `P` is every protocol's options (the registry's `ProtocolOptions`), flattened in beside:
/// this floor holds them without knowing the protocols.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs<P: clap::Args> {
    /// Connections in all, split across cores (default: 64; compare: 1 per protocol).
    #[arg(short = 'c', long)]
    pub connections: Option<usize>,
    /// Measured run length: `10s`, `500ms`, `2m` (default: 10s; 5s per sweep step; with -n
    /// and no -d, 10 minutes at most).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Operations answered by the server, in all, split across connections (lost ones are sent
    /// again); compare: messages per protocol (default 100000).
    #[arg(short = 'n', long = "ops", visible_alias = "messages")]
    pub ops: Option<u64>,
    /// Warm-up before measuring; its operations are sent and audited but not reported.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Extra header `Name: value` (repeatable; HTTP, the WebSocket upgrade, NSQ over HTTP); a
    /// given `Host` replaces the default.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body / message of N bytes (the letter 'x' repeated; 400 for ws and nsq by default).
    #[arg(long, value_name = "N", conflicts_with = "body_file")]
    pub size: Option<usize>,
    /// Request body / message read from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
    /// Operations that differ, from a file of JSON lines: one HTTP request (method, path,
    /// headers, body or body_file) or one message (body or body_file) per line, with a weight
    /// and a label; each encoded once, cycled per connection, bytes per operation reported per
    /// label (docs/requests.md). An entry without a body carries --size's or --body-file's.
    #[arg(long, value_name = "FILE")]
    pub requests: Option<PathBuf>,
    /// How each connection goes through --requests' entries: `seq` (the file's order, from the
    /// first) or `random` (in proportion to the weights).
    #[arg(long, value_enum, default_value_t, requires = "requests")]
    pub order: crate::requests::Order,
    /// Operations in flight per connection (HTTP/1.1 pipelining, NSQ publishes in flight;
    /// HTTP/2 and gRPC: streams, never more than the server's MAX_CONCURRENT_STREAMS, so
    /// `--streams` is the same flag, h2load's `-m`).
    #[arg(long, visible_alias = "streams", default_value_t = 1)]
    pub depth: usize,
    /// Fixed rate: R operations per second in all, spread evenly over the connections (at most
    /// --depth in flight each); latency counts from when each operation was due (wrk2), and the
    /// uncorrected figure is shown beside it. Stages instead: steps and ramps, `1000:30s,5000:60s`
    /// or `1000..5000:60s` (the run lasts their total; a line per stage). Default: a closed loop,
    /// as fast as answers come.
    #[arg(long, value_name = "R|STAGES", value_parser = parse_rate)]
    pub rate: Option<RateArg>,
    /// Per-connection pace: each connection sends one operation every D (`100ms`, `1s`), the
    /// connections' first sends spread evenly over D; ops/s = connections / D. Latency as with
    /// --rate (from when each operation was due).
    #[arg(long, value_name = "D", value_parser = parse_duration, conflicts_with = "rate")]
    pub interval: Option<Duration>,
    /// A connection per operation, as ab without -k: connect, the protocol's set-up, one
    /// operation, a close from the client (HTTP also says `Connection: close`); the connect
    /// and set-up are timed as part of each operation.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Run N times back to back: a line per run, the median, min, max and spread of ops/s and
    /// p99; the full report is the median run's (by ops/s). Reaches every compare row and
    /// sweep step.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: usize,
    /// Cut the measured window into intervals of D and report each (ops, errors, p50, p99):
    /// text table, JSON `series`, and `--hlog`'s interval histograms.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub report_every: Option<Duration>,
    /// Start the measured window at this wall-clock time, RFC 3339 in UTC
    /// (`2026-11-30T23:10:00Z`) or Unix seconds (`1796080200`): connections are made and set
    /// up before it, and every host given the same time measures the same window.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// uring: stay awake for a paced send due within this long (default 30us: precise sends,
    /// CPU spent waiting); `--spin 0` sleeps until each one is due, the least CPU, the schedule
    /// lag showing how late the wake-ups make it.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub spin: Option<Duration>,
    /// uring: let paced sends go up to D late, so that one wake-up sends all that came due
    /// meanwhile (wrk2 sends on a 1 ms tick): less CPU per operation, and the latency (from when
    /// each was due) and the schedule lag count the lateness. Default 0: each on time.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub slack: Option<Duration>,
    /// uring, closed loop, TCP and Unix sockets (QUIC wakes for each), at least 8 operations
    /// out on as many connections a core, a mean latency of 1 ms or more: when nothing has
    /// come back, wait up to D (default 50us, at most 1ms, and never more than 1/64 of the
    /// mean latency) for several completions to wake for at once, not one wake-up each: less
    /// CPU per operation and bigger batches for the server; an answer may be read, and timed,
    /// that much late (the report says how much). Linux 6.12 or later (before: a wake-up for
    /// each). `--gather 0` wakes for every completion.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub gather: Option<Duration>,
    /// Open at most N connections per second at the start (tcpkali's ramp), connection i at
    /// i/N s; or `auto` (`auto:N`: at most N/s): as fast as the set-ups keep up, each core
    /// starting at 500/s, growing while set-ups take under a second (to at most twice
    /// those done), halving when one takes longer or fails (docs/scale.md). Without it, each
    /// core opens its first 1,024 at once and the rest as `auto` would. The measured window
    /// opens once every connection is set up (as always).
    #[arg(long, value_name = "N|auto", value_parser = parse_connect_rate)]
    pub connect_rate: Option<ConnectRate>,
    /// A connect or write slower than this, an answer not whole this long after its request
    /// went, or a set-up not done this long after the connect, fails its connection (timeout).
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub timeout: Duration,
    /// Source addresses for the connections, connection i from address i mod N: a list of
    /// addresses and ranges, `127.0.0.2-127.0.0.250,::1`. One source address reaches one
    /// target from at most the ephemeral port range (about 28,000 ports): more connections
    /// need more addresses. `uring` engine.
    #[arg(long, value_name = "ADDRS")]
    pub bind: Option<String>,
    /// Send a PROXY protocol header (HAProxy's; v1 text, v2 binary) first on every connection,
    /// before TLS and the protocol's own bytes, as a load balancer does for the server behind
    /// it; its bytes count as set-up. TCP targets.
    #[arg(long, value_enum, value_name = "v1|v2")]
    pub proxy_protocol: Option<crate::proxy_header::ProxyVersion>,
    /// The client address the PROXY header claims (default: the loopback address of the
    /// target's family); each connection claims a port of its own.
    #[arg(long, value_name = "IP", requires = "proxy_protocol")]
    pub proxy_source: Option<std::net::IpAddr>,
    /// Connect to this Unix domain socket instead of the URL's host and port (curl's and
    /// oha's option): the URL still names the scheme, and the host the protocol speaks to
    /// (HTTP's `Host`, TLS's server name). Every target's connections go there. TCP schemes;
    /// the kernel keeps no byte counts for Unix sockets, so the audit says `unchecked`.
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<std::path::PathBuf>,
    /// Close each connection with a reset (`SO_LINGER` 0 s) instead of a FIN, as neper and
    /// netperf do: no FIN exchange and no `TIME_WAIT` socket left on this side per connection
    /// (with `--no-keepalive` tens of thousands of them make each new connect's port search
    /// cost; measured in docs/performance.md). The server sees a reset.
    #[arg(long)]
    pub close_reset: bool,
    #[command(flatten)]
    pub protocol: P,
    #[command(flatten)]
    pub tls: crate::tls::options::TlsArgs,
}

/// Most source addresses `--bind` takes (a /16).
const MAX_BIND: usize = 65_536;

/// `--bind`: addresses and ranges (`A-B`, inclusive, of one family), comma-separated.
pub fn parse_bind(text: &str) -> Result<Vec<std::net::IpAddr>, String> {
    use std::net::IpAddr;
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("'{part}' is not an address or a range of them (e.g. 127.0.0.2-127.0.0.250)");
        match part.split_once('-') {
            None => out.push(part.parse::<IpAddr>().map_err(|_| bad())?),
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<IpAddr>().map_err(|_| bad())?,
                    b.trim().parse::<IpAddr>().map_err(|_| bad())?,
                );
                let (a, b, v4) = match (a, b) {
                    (IpAddr::V4(a), IpAddr::V4(b)) => {
                        (u128::from(u32::from(a)), u128::from(u32::from(b)), true)
                    }
                    (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), false),
                    _ => return Err(format!("'{part}': both ends of a range are of one family")),
                };
                if b < a || b - a >= MAX_BIND as u128 {
                    return Err(format!(
                        "'{part}': a range runs upwards and holds at most {MAX_BIND} addresses"
                    ));
                }
                out.extend((a..=b).map(|n| match v4 {
                    true => IpAddr::V4(std::net::Ipv4Addr::from(n as u32)),
                    false => IpAddr::V6(std::net::Ipv6Addr::from(n)),
                }));
            }
        }
        if out.len() > MAX_BIND {
            return Err(format!("--bind takes at most {MAX_BIND} addresses"));
        }
    }
    if out.is_empty() {
        return Err("give at least one address".into());
    }
    Ok(out)
}

/// Where the load runs: the engine and its CPUs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EngineArgs {
    /// CPUs to pin one engine thread each to: `0`, `0,1`, `0-3`, `0-3,8` (default: all online CPUs).
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// I/O engine (default: uring, for the generator and the servers: the least CPU per
    /// request measured).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
}

/// The defaults that differ between the commands that generate load.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub connections: usize,
    pub duration: Duration,
    pub ops: Option<u64>,
    /// The time bound of a run given `-n` and no `-d`.
    pub duration_with_ops: Duration,
}

impl Defaults {
    pub const BENCH: Defaults = Defaults {
        connections: 64,
        duration: Duration::from_secs(10),
        ops: None,
        duration_with_ops: Duration::from_secs(600),
    };
    pub const SWEEP: Defaults = Defaults { duration: Duration::from_secs(5), ..Defaults::BENCH };
    /// The NSQ study this replaces timed 100,000 messages on one connection.
    pub const COMPARE: Defaults = Defaults {
        connections: 1,
        duration: Duration::from_secs(10),
        ops: Some(100_000),
        duration_with_ops: Duration::from_secs(10),
    };
}
