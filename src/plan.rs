//! Plans: what a load run will do, as plain data. [`validate_load`] and [`Load::aim`] check
//! every option (pure: no I/O, so they are tested without sockets or files). Running a plan is
//! the floor above ([`crate::run`]): `prepare` resolves the target, reads the payload, raises
//! the engine's limits, catches Ctrl-C and makes one pre-flight connect; [`Prepared::run`] hands
//! the plan to its protocol, which builds its codec and lets an engine drive it. `bench` runs
//! one plan; `compare` and `sweep` build theirs from the same validated options.

use crate::protocol::{Protocol, ProtocolOptions};
use crate::target::{self, Target};
use crate::workload::{ConnectRate, Shape, Workload};
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

/// Pipelining deeper than this is almost surely a typo and would only fill buffers.
pub const MAX_DEPTH: usize = 4096;
/// More connections than this is a typo (one process, even with direct descriptors, holds a few
/// million at most).
pub const MAX_CONNECTIONS: usize = 10_000_000;
/// Highest `--rate`, and the longest wait between a connection's operations it may imply.
const MAX_RATE: f64 = 1e9;
/// Most runs `--repeat` does.
const MAX_REPEAT: usize = 1000;
const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Largest message or body: every protocol holds one whole in memory per connection.
pub const MAX_PAYLOAD: usize = 256 * 1024 * 1024;

/// The I/O drivers there are. `--engine` names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// glommio: thread-per-core executor on io_uring (try-the-syscall-first sockets, io_uring poll).
    Glommio,
    /// tokio-uring: a current-thread tokio runtime with an io_uring driver; every read and
    /// write an io_uring operation on an owned buffer.
    TokioUring,
    /// Raw io_uring (the `io-uring` crate): sends as SQEs, a multishot receive per socket on a
    /// provided-buffer ring (servers: a multishot accept too), one `io_uring_enter` per loop
    /// for all of a core's connections.
    Uring,
}

impl EngineKind {
    /// The generator's default: the engine that measured least CPU per request
    /// (docs/engines.md; `tools/engines.sh`).
    pub const DEFAULT_CLIENT: EngineKind = EngineKind::Uring;
    /// The built-in servers' default, measured likewise (`tools/vs-peers.sh`, part 2b: CPU per
    /// request at the same offered load).
    pub const DEFAULT_SERVER: EngineKind = EngineKind::Uring;

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Glommio => "glommio",
            EngineKind::TokioUring => "tokio-uring",
            EngineKind::Uring => "uring",
        }
    }
}

/// What was run, for the report's header and JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub target: String,
    /// More targets sharing the connections round-robin (`bench URL URL …`).
    pub also: Vec<String>,
    /// A connection per operation (`--no-keepalive`).
    pub per_connection: bool,
    /// `http1`, `ws`, `nsq`, `nsq-http`.
    pub protocol: &'static str,
    pub engine: &'static str,
    pub cores: Vec<usize>,
    pub connections: usize,
    pub depth: usize,
    /// A paced load's interval between one connection's operations (`--interval`, or
    /// `--rate` spread over the connections); `None`: a closed loop.
    pub interval: Option<std::time::Duration>,
    /// Messages each operation carries (an NSQ batch); 1 otherwise.
    pub messages_per_op: u64,
    /// How soon a paced send must be due for the engine to wait for it awake rather than
    /// sleep (the `uring` engine's spin window; `None`: the engine always sleeps).
    pub spin: Option<std::time::Duration>,
    /// `--rate` with stages.
    pub stages: Vec<crate::workload::Stage>,
    /// `--requests`: each kind's label and how many entries it has (empty: no file).
    pub kinds: Vec<(String, usize)>,
}

#[cfg(test)]
impl RunInfo {
    /// The renderers' tests' run: HTTP/1.1 on the uring engine, CPU 0, 4 connections.
    pub fn fixture(target: &str, spin: Option<Duration>) -> RunInfo {
        RunInfo {
            target: target.into(),
            also: vec![],
            per_connection: false,
            protocol: "http1",
            engine: "uring",
            cores: vec![0],
            connections: 4,
            depth: 1,
            interval: None,
            messages_per_op: 1,
            spin,
            stages: vec![],
            kinds: vec![],
        }
    }
}

/// The `uring` engine waits awake for a paced send due sooner than this (`--spin`'s default): a
/// sleep and its wake-up cost more CPU than a short spin (tens of µs on a VM), and the wake
/// comes late.
pub const URING_SPIN: Duration = Duration::from_micros(30);
/// The longest `--spin`: past a millisecond, sleeping is cheaper and as punctual.
const MAX_SPIN: Duration = Duration::from_millis(1);
/// The longest `--slack`: a schedule later than this is no schedule.
const MAX_SLACK: Duration = Duration::from_millis(100);

/// The load options every command that generates load takes (`bench`, `compare`, `sweep`):
/// flattened into each, so every option reaches every one of them.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
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
    /// Open at most N connections per second at the start (tcpkali's ramp), connection i at
    /// i/N s; or `auto` (`auto:N`: at most N/s): as fast as the set-ups keep up, each core
    /// starting at 500/s, growing while set-ups take under a second, halving when one takes
    /// longer or fails (docs/scale.md). The measured window opens once every connection is set
    /// up (as always).
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
    #[command(flatten)]
    pub protocol: ProtocolOptions,
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

/// What each operation carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// N bytes of the letter `x`.
    Size(usize),
    /// A file's bytes, read when the plan is prepared.
    File(PathBuf),
}

/// Everything about a load but its target: validated options, plain data.
#[derive(Debug, Clone)]
pub struct Load {
    pub engine: EngineKind,
    /// How long before a paced send the `uring` engine stays awake for it (`--spin`).
    pub spin: Duration,
    /// How late the `uring` engine may wake for paced sends, to send several at once (`--slack`).
    pub slack: Duration,
    /// CPUs, one engine thread each; never more than there are connections.
    pub cores: Vec<usize>,
    pub shape: Shape,
    /// `None`: the protocol's default size.
    pub payload: Option<Payload>,
    /// `--requests`: the file of entries, read when the plan is prepared, and `--order`.
    pub requests: Option<(PathBuf, crate::requests::Order)>,
    pub headers: Vec<(String, String)>,
    pub options: ProtocolOptions,
    /// TLS options (used by TLS targets: `https://`, `wss://`, `nsq://…?tls=1`, …).
    pub tls: crate::tls::options::TlsArgs,
    /// Source addresses (`--bind`), connection i from `bind[i % len]`; empty: the kernel's
    /// choice.
    pub bind: Vec<std::net::IpAddr>,
    /// Runs back to back (`--repeat`); the report is the median one's, with every run's line.
    pub repeat: usize,
}

/// A load aimed at a target: what one run does.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub target: Target,
    /// More targets of the same protocol (`bench URL URL …`): connections are spread over
    /// `target` and these, round-robin.
    pub also: Vec<Target>,
    pub protocol: &'static Protocol,
    pub load: Load,
}

/// `--report-every`: at least 10 ms, and no more intervals than a series keeps.
fn check_report_every(args: &LoadArgs) -> Result<()> {
    if args.report_every.is_some_and(|d| d < Duration::from_millis(10)) {
        bail!("--report-every must be at least 10ms");
    }
    if let (Some(every), Some(duration), None) = (args.report_every, args.duration, args.ops) {
        let intervals = duration.as_nanos().div_ceil(every.as_nanos());
        if intervals > crate::stats::MAX_INTERVALS as u128 {
            let at_least = duration.as_millis().div_ceil(crate::stats::MAX_INTERVALS as u128);
            bail!(
                "--report-every {} cuts a {} run into {intervals} intervals; at most {} are kept (each holds a latency histogram): use --report-every {at_least}ms or longer",
                humantime::format_duration(every),
                humantime::format_duration(duration),
                crate::stats::MAX_INTERVALS
            );
        }
    }
    Ok(())
}

/// A staged run's window (the stages' total) and intervals (`--report-every`, or the longest
/// that every stage's boundaries fall on, so that each stage's line adds whole intervals).
fn stage_window(args: &LoadArgs, stages: &[crate::workload::Stage]) -> Result<(Duration, Option<Duration>)> {
    let total: Duration = stages.iter().map(|s| s.length).sum();
    if args.duration.is_some_and(|d| d != total) {
        bail!("the stages of --rate last {total:?} in all: leave -d out, or make them add up to it");
    }
    if args.ops.is_some() {
        bail!("the stages of --rate set the run's length: -n cannot apply");
    }
    let gcd = |mut a: u128, mut b: u128| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let common = stages.iter().map(|s| s.length.as_nanos()).fold(0, gcd);
    let every = match args.report_every {
        Some(every) if common % every.as_nanos() != 0 => bail!(
            "--report-every {every:?} does not divide every stage ({:?} does): each stage's line adds whole intervals",
            Duration::from_nanos(common as u64)
        ),
        Some(every) => every,
        None => Duration::from_nanos(common as u64),
    };
    let intervals = total.as_nanos() / every.as_nanos();
    if every < Duration::from_millis(10) || intervals > crate::stats::MAX_INTERVALS as u128 {
        bail!(
            "the stages cut the run into intervals of {every:?} ({intervals} of them): give stage lengths with a common measure of 10ms or more, at most {} intervals in all",
            crate::stats::MAX_INTERVALS
        );
    }
    Ok((total, Some(every)))
}

/// `--rate`: a fixed rate, or stages.
#[derive(Debug, Clone, PartialEq)]
pub enum RateArg {
    Fixed(f64),
    Stages(Vec<crate::workload::Stage>),
}

/// The most stages a `--rate` may have.
const MAX_STAGES: usize = 100;

/// The most connections per second `--connect-rate` takes.
const MAX_CONNECT_RATE: f64 = 10_000_000.0;

/// Parse `--connect-rate`: `N`, `auto` or `auto:N`.
pub fn parse_connect_rate(text: &str) -> Result<ConnectRate, String> {
    let rate = |t: &str| match t.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.001..=MAX_CONNECT_RATE).contains(&r) => Ok(r),
        _ => Err(format!(
            "'{t}' is not a connect rate: connections per second, between 0.001 and 10000000, or auto"
        )),
    };
    match text.trim().split_once(':') {
        _ if text.trim() == "auto" => Ok(ConnectRate::Auto { max: MAX_CONNECT_RATE }),
        Some(("auto", max)) => Ok(ConnectRate::Auto { max: rate(max)? }),
        _ => rate(text).map(ConnectRate::Fixed),
    }
}

/// Parse `--rate`: `R`, or stages `R:D` (a step) and `A..B:D` (a ramp), comma-separated.
pub fn parse_rate(text: &str) -> Result<RateArg, String> {
    let rate = |t: &str| match t.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= MAX_RATE => Ok(r),
        _ => Err(format!("'{t}' is not a rate: operations per second, more than 0 and at most {MAX_RATE:e}")),
    };
    if !text.contains(':') {
        return rate(text).map(RateArg::Fixed);
    }
    let mut stages = Vec::new();
    for part in text.split(',') {
        let (rates, length) = part
            .split_once(':')
            .ok_or_else(|| format!("stage '{part}': write RATE:DURATION or FROM..TO:DURATION"))?;
        let length = parse_duration(length).map_err(|e| format!("stage '{part}': {e}"))?;
        if length.is_zero() {
            return Err(format!("stage '{part}': its duration must be longer than zero"));
        }
        let (from, to) = match rates.split_once("..") {
            Some((a, b)) => (rate(a)?, rate(b)?),
            None => (rate(rates)?, rate(rates)?),
        };
        stages.push(crate::workload::Stage { from, to, length });
    }
    if stages.len() > MAX_STAGES {
        return Err(format!("{} stages: at most {MAX_STAGES}", stages.len()));
    }
    Ok(RateArg::Stages(stages))
}

/// How operations are paced: `--interval` per connection, `--rate` over all of them, or a
/// closed loop.
fn workload(args: &LoadArgs, connections: usize) -> Result<Workload> {
    let fixed = match &args.rate {
        Some(RateArg::Stages(stages)) if args.interval.is_none() => {
            // Leaked once per plan: the pacers of a million connections share it.
            let stages: &'static [crate::workload::Stage] = Box::leak(stages.clone().into_boxed_slice());
            return Ok(Workload::Staged { stages, connections });
        }
        Some(RateArg::Stages(_)) => None,
        Some(RateArg::Fixed(r)) => Some(*r),
        None => None,
    };
    Ok(match (fixed, args.interval) {
        (_, Some(interval)) if interval.is_zero() || interval > MAX_INTERVAL => {
            bail!("--interval must be longer than zero and at most {MAX_INTERVAL:?}")
        }
        (_, Some(interval)) => Workload::FixedRate { interval },
        (None, None) => Workload::ClosedLoop,
        (Some(r), None) if r.is_finite() && r > 0.0 && r <= MAX_RATE => {
            let interval = Duration::try_from_secs_f64(connections as f64 / r)
                .ok()
                .filter(|i| *i <= MAX_INTERVAL)
                .with_context(|| {
                    format!(
                        "--rate {r} is too low for {connections} connection(s): each would wait more than {MAX_INTERVAL:?} between operations; raise --rate or lower -c"
                    )
                })?;
            Workload::FixedRate { interval }
        }
        (Some(r), None) => {
            bail!("--rate {r}: give operations per second, more than 0 and at most {MAX_RATE:e}")
        }
    })
}

/// What each operation carries: `--size` bytes, or a file's.
fn payload(args: &LoadArgs) -> Result<Option<Payload>> {
    Ok(match (args.size, &args.body_file) {
        (Some(n), _) if n > MAX_PAYLOAD => {
            bail!("--size {n} is larger than the {} MiB a message may be here", MAX_PAYLOAD >> 20)
        }
        (Some(n), _) => Some(Payload::Size(n)),
        (None, Some(path)) => Some(Payload::File(path.clone())),
        (None, None) => None,
    })
}

/// `-H 'Name: value'`, each checked.
fn headers(args: &LoadArgs) -> Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for h in &args.headers {
        let (name, value) = h
            .split_once(':')
            .filter(|(n, _)| !n.trim().is_empty() && n.bytes().all(|b| b.is_ascii_graphic()))
            .with_context(|| format!("header '{h}' is not 'Name: value'"))?;
        if value.contains(['\r', '\n']) {
            bail!("header '{name}' contains a line break");
        }
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok(headers)
}

/// Check the load options (pure): `online` is the CPUs this process may use.
pub fn validate_load(
    args: &LoadArgs,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<Load> {
    let connections = args.connections.unwrap_or(defaults.connections);
    if connections == 0 || connections > MAX_CONNECTIONS {
        bail!("--connections must be between 1 and {MAX_CONNECTIONS}");
    }
    if args.depth == 0 || args.depth > MAX_DEPTH {
        bail!("--depth must be between 1 and {MAX_DEPTH}");
    }
    if matches!(args.connect_rate, Some(ConnectRate::Auto { .. })) && args.no_keepalive {
        bail!(
            "--connect-rate auto paces the opening of connections that stay open; with --no-keepalive the operations' pace opens them"
        );
    }
    check_report_every(args)?;
    if !(1..=MAX_REPEAT).contains(&args.repeat) {
        bail!("--repeat must be between 1 and {MAX_REPEAT}");
    }
    if args.no_keepalive && args.depth > 1 {
        bail!("--no-keepalive sends one operation per connection: --depth {} cannot apply", args.depth);
    }
    let ops = args.ops.or(defaults.ops);
    if ops == Some(0) {
        bail!("-n/--ops must be at least 1");
    }
    if args.duration == Some(Duration::ZERO) || args.timeout.is_zero() {
        bail!("durations must be longer than zero");
    }
    let duration = match (args.duration, args.ops) {
        (Some(d), _) => d,
        (None, Some(_)) => defaults.duration_with_ops,
        (None, None) => defaults.duration,
    };
    let (duration, report_every) = match &args.rate {
        Some(RateArg::Stages(stages)) => stage_window(args, stages)?,
        _ => (duration, args.report_every),
    };
    let workload = workload(args, connections)?;
    let payload = payload(args)?;
    let headers = headers(args)?;
    let mut cores = match &engine.cores {
        Some(list) => crate::cpus::parse(list, online)?,
        None => online.to_vec(),
    };
    cores.truncate(connections); // a core with no connection would only report zeros
    if let Some(ConnectRate::Auto { max }) = args.connect_rate
        && max < crate::opener::Opener::FLOOR * cores.len() as f64
    {
        bail!(
            "--connect-rate auto:{max} is under the {} connections/s each of the {} cores opens at least: give at least {}, fewer --cores, or a fixed --connect-rate",
            crate::opener::Opener::FLOOR,
            cores.len(),
            crate::opener::Opener::FLOOR * cores.len() as f64
        );
    }
    let engine_kind = engine.engine.unwrap_or(EngineKind::DEFAULT_CLIENT);
    if args.bind.is_some() && engine_kind != EngineKind::Uring {
        bail!(
            "--bind needs --engine uring (it makes its own sockets; the others connect through their runtimes)"
        );
    }
    let bind = match &args.bind {
        Some(text) => parse_bind(text).map_err(|e| anyhow::anyhow!("--bind: {e}"))?,
        None => Vec::new(),
    };
    for (given, flag) in [(args.spin.is_some(), "--spin"), (args.slack.is_some(), "--slack")] {
        if given && engine_kind != EngineKind::Uring {
            bail!("{flag} applies to --engine uring (the async engines sleep on their runtimes' timers)");
        }
    }
    for (given, flag) in [(args.spin.is_some(), "--spin"), (args.slack.is_some(), "--slack")] {
        if given && workload == Workload::ClosedLoop {
            bail!("{flag} applies to paced runs (--rate, --interval, --stages): a closed loop sends at once");
        }
    }
    let slack = args.slack.unwrap_or_default();
    if slack > MAX_SLACK {
        bail!("--slack must be at most 100ms");
    }
    let spin = args.spin.unwrap_or(URING_SPIN);
    if spin > MAX_SPIN {
        bail!("--spin must be at most 1ms (past that, sleeping is as punctual and cheaper)");
    }
    Ok(Load {
        engine: engine_kind,
        spin,
        slack,
        cores,
        shape: Shape {
            connections,
            depth: args.depth,
            ops,
            duration,
            warmup: args.warmup,
            timeout: args.timeout,
            workload,
            per_op: args.no_keepalive,
            connect_rate: args.connect_rate,
            start_at: args.start_at,
            report_every,
        },
        payload,
        requests: args.requests.clone().map(|file| (file, args.order)),
        headers,
        options: args.protocol.clone(),
        tls: args.tls.clone(),
        bind,
        repeat: args.repeat,
    })
}

impl Load {
    /// Aim this load at `url`, under its protocol's own rules (pure). Options that belong to
    /// other protocols are ignored here (`compare` aims one load at every protocol);
    /// [`validate`] refuses them for a single target.
    pub fn aim(&self, url: &str) -> Result<LoadPlan> {
        let target = target::parse(url)?;
        let plan = LoadPlan { protocol: target.protocol, target, also: Vec::new(), load: self.clone() };
        (plan.protocol.validate)(&plan)?;
        Ok(plan)
    }
}

/// Check a single run's options and aim them at `url` (pure).
pub fn validate(
    url: &str,
    args: &LoadArgs,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<LoadPlan> {
    let plan = validate_load(args, engine, defaults, online)?.aim(url)?;
    plan.refuse_foreign_options()?;
    Ok(plan)
}

/// Check a run on several targets (`bench URL URL …`, pure): one protocol for all, each aimed
/// under its rules; connections are spread over them round-robin.
pub fn validate_targets(
    urls: &[String],
    args: &LoadArgs,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<LoadPlan> {
    let Some((first, rest)) = urls.split_first() else { bail!("give at least one target URL") };
    // The options are checked against every target together (`--insecure` with one TLS
    // target among plaintext ones applies to it).
    let mut plan = validate_load(args, engine, defaults, online)?.aim(first)?;
    for url in rest {
        let other = plan.load.aim(url)?;
        if other.protocol.name != plan.protocol.name {
            bail!(
                "{url} is a {} target but {first} is {}: one protocol per run (run them apart, or use `compare`)",
                other.protocol.name,
                plan.protocol.name
            );
        }
        plan.also.push(other.target);
    }
    if plan.load.shape.connections < urls.len() {
        bail!("{} targets need at least as many connections (-c {})", urls.len(), urls.len());
    }
    plan.refuse_foreign_options()?;
    Ok(plan)
}

impl LoadPlan {
    /// Every target, the first one first.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        std::iter::once(&self.target).chain(&self.also)
    }

    /// Refuse options given for other protocols than this plan's (a single target).
    pub fn refuse_foreign_options(&self) -> Result<()> {
        let tls_flags = crate::protocol::flags_set(&self.load.tls);
        if !tls_flags.is_empty() && self.targets().all(|t| t.tls.is_none()) {
            let flags: Vec<String> = tls_flags.into_iter().map(|(flag, _)| flag).collect();
            let verb = if flags.len() == 1 { "applies" } else { "apply" };
            bail!("{} {verb} to TLS targets: {}", flags.join(" and "), crate::protocol::tls_schemes_text());
        }
        for (flag, owners) in self.load.options.given() {
            if !owners.contains(&self.protocol.name) {
                bail!("{flag} applies to {} targets", crate::protocol::schemes_of(&owners));
            }
        }
        Ok(())
    }

    /// Messages each operation carries.
    pub fn messages_per_op(&self) -> u64 {
        (self.protocol.messages_per_op)(self)
    }

    pub fn info(&self) -> RunInfo {
        RunInfo {
            messages_per_op: self.messages_per_op(),
            target: self.target.url.clone(),
            also: self.also.iter().map(|t| t.url.clone()).collect(),
            per_connection: self.load.shape.per_op,
            protocol: self.protocol.name,
            // A scheme carried in QUIC runs on the QUIC engine (UDP on io_uring), whatever
            // `--engine` names for TCP: the report names the one that ran.
            engine: match self.target.tls {
                Some(crate::tls::options::TlsStart::InQuic) => "quic",
                _ => self.load.engine.name(),
            },
            cores: self.load.cores.clone(),
            connections: self.load.shape.connections,
            depth: self.load.shape.depth,
            interval: match self.load.shape.workload {
                Workload::FixedRate { interval } => Some(interval),
                Workload::ClosedLoop | Workload::Staged { .. } => None,
            },
            spin: (self.load.engine == EngineKind::Uring).then_some(self.load.spin),
            stages: match self.load.shape.workload {
                Workload::Staged { stages, .. } => stages.to_vec(),
                _ => vec![],
            },
            kinds: vec![],
        }
    }
}

/// Everything an engine needs to drive the client side of a run.
#[derive(Debug, Clone)]
pub struct ClientJob {
    /// The targets' addresses: connection i goes to `addrs[i % addrs.len()]`.
    pub addrs: Vec<SocketAddr>,
    /// CPUs to pin one engine thread each to.
    pub cores: Vec<usize>,
    pub shape: Shape,
    /// The run's seed for the codecs' randomness (each connection's is derived from it).
    pub seed: u64,
    /// Set by Ctrl-C: connections stop sending, drain and close.
    pub stop: Arc<AtomicBool>,
    /// Operations completed so far per core, published a few times a second for the progress line.
    pub progress: Arc<[AtomicU64]>,
    /// When the measured window opens (a fresh one per run: see `engine::run_client_threads`).
    pub window: Arc<crate::workload::Window>,
    /// Per target, its TLS set-up (`None`: plaintext); empty: none speaks TLS.
    pub tls: Vec<Option<Arc<crate::tls::options::ClientTls>>>,
    /// Source addresses, connection i from `bind[i % len]` (`uring` engine); empty: any.
    pub bind: Vec<std::net::IpAddr>,
    /// How long before a paced send the `uring` engine stays awake for it (`--spin`).
    pub spin: Duration,
    /// How late the `uring` engine may wake for paced sends (`--slack`).
    pub slack: Duration,
    /// Where each core copies its figures a few times a second while the run goes on
    /// (`--metrics-listen`); `None`: nobody reads them.
    pub live: Option<crate::stats::live::Live>,
    /// `--requests`: the order connections pick the entries in, and how many kinds they
    /// are reported under (0: no file).
    pub picks: Option<crate::requests::Picks>,
    pub kinds: usize,
}

/// A plan made ready to run (by [`crate::run::prepare`]); run by [`Prepared::run`], whose
/// protocol builds its codec and calls [`Prepared::drive`] (both in `run.rs`: the one call from
/// the protocols' registry entries up to the layer that runs plans).
#[derive(Clone)]
pub struct Prepared {
    pub plan: LoadPlan,
    /// The address of `plan.target`; the job holds every target's.
    pub addr: SocketAddr,
    /// The payload of every operation (of a `--requests` entry that gives none).
    pub body: Arc<[u8]>,
    /// `--requests`: the entries (each protocol builds its codec once per entry).
    pub requests: Option<Arc<crate::requests::Requests>>,
    /// This machine's name (NSQ's `IDENTIFY`).
    pub hostname: String,
    pub job: ClientJob,
    /// What the pre-flight connections carried (before any engine; in the report apart).
    pub preflight: crate::stats::Preflight,
    /// `--report-every` where no progress line shows: a row printed as each interval ends (as
    /// `iperf3 -i`), from the copies the cores publish ([`ClientJob::live`]), before the exact
    /// table at the end.
    pub live_rows: Option<Duration>,
}

impl Prepared {
    /// The same plan aimed at its target `i` alone (0: the first), to build that target's codec.
    pub fn on_target(&self, i: usize) -> Prepared {
        let mut p = self.clone();
        if i > 0 {
            p.plan.target = self.plan.also[i - 1].clone();
            p.addr = self.job.addrs[i];
        }
        p.plan.also.clear();
        p
    }

    /// The client codec `build` makes for this plan: with `--requests`, one per entry (this
    /// plan with the entry's changes), gathered into the first by
    /// [`add_entries`](crate::proto::ClientCodec::add_entries), each entry encoded once.
    pub fn codec<C: crate::proto::ClientCodec>(&self, build: &impl Fn(&Prepared) -> C) -> C {
        self.entries(build, C::add_entries)
    }

    /// The same for any client that gathers entries (`add`: HTTP/3's, which is no
    /// `ClientCodec`: its engine drives streams, not a byte stream).
    pub fn entries<C>(&self, build: &impl Fn(&Prepared) -> C, add: impl Fn(&mut C, C)) -> C {
        let Some(requests) = &self.requests else { return build(self) };
        let mut codec: Option<C> = None;
        for entry in &requests.entries {
            let c = build(&self.for_entry(entry));
            match &mut codec {
                Some(first) => add(first, c),
                None => codec = Some(c),
            }
        }
        codec.unwrap_or_else(|| build(self))
    }

    /// This plan with a `--requests` entry's changes: its body, method, path and headers.
    fn for_entry(&self, entry: &crate::requests::Entry) -> Prepared {
        let mut p = self.clone();
        if let Some(body) = &entry.body {
            p.body = body.clone();
        }
        if let Some(method) = &entry.method {
            p.plan.load.options.http1.method = Some(method.clone());
        }
        if let Some(path) = &entry.path {
            p.plan.target.path = path.clone();
        }
        p.plan.load.headers.extend(entry.headers.iter().cloned());
        p
    }

    /// The `Host` to name in requests: the target's authority as written.
    pub fn authority(&self) -> &str {
        &self.plan.target.authority
    }
}

/// `--start-at`: RFC 3339 in UTC, or Unix seconds (fractions allowed).
pub fn parse_start_at(text: &str) -> Result<std::time::SystemTime, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if !(secs.is_finite() && (0.0..4e9).contains(&secs)) {
            return Err(format!("'{text}' is not a Unix time in seconds"));
        }
        return Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).map_err(|e| {
        format!("'{text}' is neither RFC 3339 in UTC (2026-11-30T23:10:00Z) nor Unix seconds: {e}")
    })
}

/// `10s`, `500ms`, `2m`, `1.5s`, `250us`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().map_err(|_| format!("'{text}' is not a duration: use e.g. 10s, 500ms, 2m"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{text}': unknown unit '{unit}': use us, ms, s, m or h")),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 365.0 * 86400.0 {
        return Err(format!("'{text}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The load options as a user types them (no I/O: clap only).
    #[derive(Parser)]
    struct Args {
        url: String,
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        engine: EngineArgs,
    }

    fn plan(argv: &[&str]) -> Result<LoadPlan> {
        let args = Args::try_parse_from(std::iter::once("wirebench").chain(argv.iter().copied()))?;
        validate(&args.url, &args.load, &args.engine, &Defaults::BENCH, &[0, 1, 2, 3])
    }

    fn error(argv: &[&str]) -> String {
        format!("{:#}", plan(argv).expect_err("refused"))
    }

    /// Several targets as `bench` takes them.
    fn targets(urls: &[&str], argv: &[&str]) -> Result<LoadPlan> {
        let args = Args::try_parse_from(
            std::iter::once("wirebench").chain(std::iter::once("x")).chain(argv.iter().copied()),
        )?;
        let urls: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
        validate_targets(&urls, &args.load, &args.engine, &Defaults::BENCH, &[0, 1])
    }

    #[test]
    fn several_targets_are_one_protocol_with_a_connection_each_at_least() {
        let p = targets(&["http://a:1/", "http://b:2/x"], &[]).unwrap();
        assert_eq!(p.targets().map(|t| t.authority.as_str()).collect::<Vec<_>>(), ["a:1", "b:2"]);
        let mixed = targets(&["http://a/", "ws://b/"], &[]).expect_err("refused").to_string();
        assert!(mixed.contains("one protocol per run"), "{mixed}");
        let few =
            targets(&["http://a/", "http://b/", "http://c/"], &["-c", "2"]).expect_err("refused").to_string();
        assert!(few.contains("at least as many connections"), "{few}");
        assert!(targets(&["http://a/", "nope"], &[]).is_err());
        assert!(error(&["http://h/", "--connect-rate", "0"]).contains("--connect-rate"));
        assert!(error(&["http://h/", "--no-keepalive", "--depth", "2"]).contains("--no-keepalive"));
    }

    #[test]
    fn start_times_in_utc_or_unix_seconds() {
        let at = |t: &str| {
            parse_start_at(t).map(|s| s.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64())
        };
        assert_eq!(at("2026-11-30T23:10:00Z"), Ok(1_796_080_200.0));
        assert_eq!(at("1796080200"), Ok(1_796_080_200.0));
        assert_eq!(at("1796080200.5"), Ok(1_796_080_200.5));
        for bad in ["tomorrow", "2026-11-30T23:10:00+02:00", "-5", "1e20"] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn defaults_come_from_the_command_and_the_protocol() {
        let p = plan(&["http://127.0.0.1:8080/x"]).unwrap();
        assert_eq!(
            (p.protocol.name, p.load.shape.connections, p.load.shape.duration),
            ("http1", 64, Duration::from_secs(10))
        );
        assert_eq!(p.load.cores, [0, 1, 2, 3]);
        assert_eq!(p.load.payload, None);
        let p = plan(&["nsq://h/t", "-n", "5", "-c", "2"]).unwrap();
        assert_eq!(
            (p.load.shape.ops, p.load.shape.duration, p.load.cores.len()),
            (Some(5), Duration::from_secs(600), 2)
        );
        assert_eq!(p.messages_per_op(), 1);
        let p = plan(&["nsq://h/t", "--batch", "10"]).unwrap();
        assert_eq!(p.messages_per_op(), 10);
    }

    #[test]
    fn every_option_is_checked_before_anything_happens() {
        assert!(error(&["http://h/", "-c", "0"]).contains("--connections must be between 1"));
        assert!(error(&["http://h/", "--depth", "0"]).contains("--depth"));
        assert!(error(&["http://h/", "-n", "0"]).contains("at least 1"));
        assert!(error(&["http://h/", "--rate", "1e-18"]).contains("too low"));
        assert!(error(&["http://h/", "--interval", "0s"]).contains("--interval must be longer than zero"));
        assert!(error(&["http://h/", "--interval", "1s", "--rate", "5"]).contains("cannot be used with"));
        let p = plan(&["http://h/", "--interval", "250ms", "-c", "8"]).unwrap();
        assert_eq!(p.load.shape.workload, Workload::FixedRate { interval: Duration::from_millis(250) });
        assert!(error(&["http://h/", "--size", "999999999999"]).contains("larger than"));
        assert!(error(&["http://h/", "-H", "nocolon"]).contains("Name: value"));
        assert!(error(&["http://h/", "--cores", "9"]).contains("not available"));
        assert!(error(&["gopher://h/"]).contains("unsupported scheme"));
    }

    #[test]
    fn bind_takes_addresses_and_ranges() {
        let v = parse_bind("127.0.0.2-127.0.0.4,::1").unwrap();
        let text: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["127.0.0.2", "127.0.0.3", "127.0.0.4", "::1"]);
        // A range's family is its own ends', whatever else the list holds.
        let v = parse_bind("::1-::2,127.0.0.2").unwrap();
        let text: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["::1", "::2", "127.0.0.2"]);
        assert_eq!(parse_bind("127.0.0.1-127.0.255.255").unwrap().len(), 65_535);
        assert!(parse_bind("127.0.0.4-127.0.0.2").unwrap_err().contains("upwards"));
        assert!(parse_bind("127.0.0.1-::1").unwrap_err().contains("one family"));
        assert!(parse_bind("localhost").unwrap_err().contains("not an address"));
        assert!(parse_bind("10.0.0.0-10.2.0.0").unwrap_err().contains("at most"));
        assert!(
            error(&["http://h/", "--bind", "127.0.0.2", "--engine", "glommio"]).contains("--engine uring")
        );
    }

    #[test]
    fn options_of_another_protocol_are_refused_for_one_target() {
        assert_eq!(
            error(&["http://h/", "--batch", "3"]),
            "--batch applies to nsq://, nsq+http:// and nsq+https:// targets"
        );
        assert_eq!(error(&["nsq://h/t", "--text"]), "--text applies to ws:// and wss:// targets");
        assert_eq!(
            error(&["ws://h/", "-m", "POST"]),
            "-m/--method applies to http://, https://, h2c://, h2:// and h3:// targets"
        );
        assert_eq!(
            error(&["nsq://h/t", "--binary"]),
            "--binary applies to nsq+http:// and nsq+https:// targets"
        );
        assert_eq!(
            error(&["http://h/", "--insecure"]),
            "--insecure applies to TLS targets: https://, h2://, grpcs://, h3://, wss://, sios://, nsq+https:// or nsq://…?tls=1"
        );
        assert!(
            error(&["http://h/", "--insecure", "--tls-resume"])
                .starts_with("--insecure and --tls-resume apply")
        );
        assert!(error(&["nsq://h/t", "--ca", "x.pem"]).contains("nsq://…?tls=1"));
        assert!(plan(&["nsq://h/t?tls=1", "--insecure"]).is_ok());
        assert!(error(&["nsq://h/t?tls=1", "--no-identify"]).contains("tls_v1"));
    }

    #[test]
    fn a_protocol_checks_its_own_rules() {
        assert!(error(&["nsq://h/", "-n", "1"]).contains("names its topic"));
        assert!(error(&["nsq://h/t", "--batch", "100000", "--size", "100000"]).contains("32-bit"));
        assert!(error(&["nsq://h/t", "--batch", "2", "--defer-ms", "5"]).contains("--defer-ms"));
        assert!(error(&["nsq://h/t", "-H", "X: y"]).contains("-H"));
        assert!(error(&["http://h/", "-m", "G T"]).contains("not an HTTP method"));
    }

    #[test]
    fn rate_stages_parse_and_set_the_window() {
        use crate::workload::Stage;
        let s = |from: f64, to: f64, secs: u64| Stage { from, to, length: Duration::from_secs(secs) };
        assert_eq!(parse_rate("2000"), Ok(RateArg::Fixed(2000.0)));
        assert_eq!(
            parse_rate("1000:30s,1000..5000:60s"),
            Ok(RateArg::Stages(vec![s(1000.0, 1000.0, 30), s(1000.0, 5000.0, 60)]))
        );
        for bad in ["1000:", "x:1s", "0:1s", "1000..:1s", "1000:0s", "5000"] {
            if bad != "5000" {
                assert!(parse_rate(bad).is_err(), "{bad}");
            }
        }
        let p = plan(&["http://h/", "--rate", "1000:30s,5000:60s"]).unwrap();
        assert_eq!(p.load.shape.duration, Duration::from_secs(90));
        assert_eq!(p.load.shape.report_every, Some(Duration::from_secs(30)));
        assert!(error(&["http://h/", "--rate", "1000:30s", "-d", "10s"]).contains("last 30s in all"));
        assert!(error(&["http://h/", "--rate", "1000:30s", "-n", "10"]).contains("-n cannot apply"));
        assert!(
            error(&["http://h/", "--rate", "1000:30s,5000:60s", "--report-every", "7s"])
                .contains("does not divide")
        );
    }
}
