//! Plans: what a load run will do, as plain data. [`validate_load`] checks every option (pure:
//! no I/O, so it is tested without sockets or files); the registry (`crate::protocol`) aims the
//! load at a URL, under the protocol's own rules. Running a plan is the floor above
//! (`crate::run`): `prepare` resolves the target, reads the payload, raises the engine's
//! limits, catches Ctrl-C and makes one pre-flight connect; then the plan's protocol builds its
//! codec and hands it to a [`Drive`]. `bench` runs one plan; `compare` and `sweep` build theirs
//! from the same validated options.
//!
//! This floor knows no protocol: what each declares is in [`protocol`]'s descriptor types, and
//! their options travel in an [`OptionSet`], each group found by its type.

mod args;
mod prepared;
pub mod protocol;
pub mod target;

pub use args::*;
pub use prepared::*;
pub use protocol::*;
pub use target::{Endpoint, Target};

use crate::workload::{ConnectRate, Shape, Workload};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
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

impl RunInfo {
    /// What ran, as a result states it.
    pub fn ran(&self, label: Option<String>) -> crate::stats::result::Ran {
        crate::stats::result::Ran {
            label,
            target: self.target.clone(),
            also: self.also.clone(),
            protocol: self.protocol.to_string(),
            engine: self.engine.to_string(),
            cores: self.cores.clone(),
            connections: self.connections,
            depth: self.depth,
            messages_per_op: self.messages_per_op,
            kinds: self.kinds.clone(),
            stages: {
                let mut at = 0.0;
                self.stages
                    .iter()
                    .map(|s| {
                        let from = at;
                        at += s.length.as_secs_f64();
                        crate::stats::result::StageResult::new(s.from, s.to, from, at)
                    })
                    .collect()
            },
        }
    }
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
    /// How long the `uring` engine may wait in a closed loop to wake once for several
    /// completions (`--gather`; zero in paced runs and on the other engines).
    pub gather: Duration,
    /// CPUs, one engine thread each; never more than there are connections.
    pub cores: Vec<usize>,
    pub shape: Shape,
    /// `None`: the protocol's default size.
    pub payload: Option<Payload>,
    /// `--requests`: the file of entries, read when the plan is prepared, and `--order`.
    pub requests: Option<(PathBuf, crate::requests::Order)>,
    pub headers: Vec<(String, String)>,
    /// Every protocol's options, each group found by its type.
    pub options: OptionSet,
    /// TLS options (used by TLS targets: `https://`, `wss://`, `nsq://…?tls=1`, …).
    pub tls: crate::tls::options::TlsArgs,
    /// Source addresses (`--bind`), connection i from `bind[i % len]`; empty: the kernel's
    /// choice.
    pub bind: Vec<std::net::IpAddr>,
    /// `--proxy-protocol` and `--proxy-source`: a PROXY header first on every connection.
    pub proxy: Option<(crate::proxy_header::ProxyVersion, Option<std::net::IpAddr>)>,
    /// `--unix-socket`: every connection to this path instead of the targets' addresses.
    pub unix: Option<std::sync::Arc<std::path::Path>>,
    /// `--close-reset`: each connection closed with a reset.
    pub reset_close: bool,
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
fn check_report_every(args: &LoadArgs<impl clap::Args>) -> Result<()> {
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
fn stage_window(
    args: &LoadArgs<impl clap::Args>,
    stages: &[crate::workload::Stage],
) -> Result<(Duration, Option<Duration>)> {
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
fn workload(args: &LoadArgs<impl clap::Args>, connections: usize) -> Result<Workload> {
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
fn payload(args: &LoadArgs<impl clap::Args>) -> Result<Option<Payload>> {
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
fn headers(args: &LoadArgs<impl clap::Args>) -> Result<Vec<(String, String)>> {
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
pub fn validate_load<P: clap::Args + Clone + Into<OptionSet>>(
    args: &LoadArgs<P>,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<Load> {
    let (connections, ops) = counts(args, defaults)?;
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
    let unix = unix_socket(args)?;
    let bind = match &args.bind {
        Some(text) => parse_bind(text).map_err(|e| anyhow::anyhow!("--bind: {e}"))?,
        None => Vec::new(),
    };
    let (spin, slack, gather) = spin_slack_gather(args, engine_kind, workload)?;
    Ok(Load {
        engine: engine_kind,
        spin,
        slack,
        gather,
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
        options: args.protocol.clone().into(),
        tls: args.tls.clone(),
        bind,
        proxy: args.proxy_protocol.map(|v| (v, args.proxy_source)),
        unix,
        reset_close: args.close_reset,
        repeat: args.repeat,
    })
}

/// `--unix-socket`: a path a socket address holds, with none of the options that name IP
/// addresses.
fn unix_socket<P: clap::Args + Clone>(args: &LoadArgs<P>) -> Result<Option<std::sync::Arc<std::path::Path>>> {
    let Some(path) = &args.unix_socket else { return Ok(None) };
    if path.as_os_str().is_empty() || path.as_os_str().len() > target::MAX_UNIX_PATH {
        bail!(
            "--unix-socket {}: a Unix socket's path is 1 to {} bytes long",
            path.display(),
            target::MAX_UNIX_PATH
        );
    }
    for (given, flag) in
        [(args.bind.is_some(), "--bind"), (args.proxy_protocol.is_some(), "--proxy-protocol")]
    {
        if given {
            bail!("{flag} names IP addresses: it cannot apply with --unix-socket");
        }
    }
    Ok(Some(path.as_path().into()))
}

/// `--connections` and `-n` (with the command's defaults), after the checks on the counts and
/// durations that need nothing else.
fn counts<P: clap::Args + Clone>(args: &LoadArgs<P>, defaults: &Defaults) -> Result<(usize, Option<u64>)> {
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
    Ok((connections, ops))
}

/// `--spin` and `--slack`, the `uring` engine's for paced runs, and `--gather`, its own for a
/// closed loop, within their bounds.
fn spin_slack_gather<P: clap::Args + Clone>(
    args: &LoadArgs<P>,
    engine: EngineKind,
    workload: Workload,
) -> Result<(Duration, Duration, Duration)> {
    let closed_loop = workload == Workload::ClosedLoop;
    for (given, flag, closed) in [
        (args.spin.is_some(), "--spin", false),
        (args.slack.is_some(), "--slack", false),
        (args.gather.is_some(), "--gather", true),
    ] {
        if given && engine != EngineKind::Uring {
            bail!("{flag} applies to --engine uring (the async engines sleep and wake on their runtimes)");
        }
        if given && closed != closed_loop {
            match closed {
                true => bail!("{flag} applies to a closed loop (paced runs gather their sends with --slack)"),
                false => bail!(
                    "{flag} applies to paced runs (--rate, --interval, --stages): a closed loop sends at once"
                ),
            }
        }
    }
    let gather = args.gather.unwrap_or(args::URING_GATHER);
    if gather > args::MAX_GATHER {
        bail!("--gather must be at most 1ms (an answer read later than that is a measurement changed)");
    }
    let gather = if engine == EngineKind::Uring && closed_loop { gather } else { Duration::ZERO };
    let slack = args.slack.unwrap_or_default();
    if slack > MAX_SLACK {
        bail!("--slack must be at most 100ms");
    }
    let spin = args.spin.unwrap_or(URING_SPIN);
    if spin > MAX_SPIN {
        bail!("--spin must be at most 1ms (past that, sleeping is as punctual and cheaper)");
    }
    Ok((spin, slack, gather))
}

impl LoadPlan {
    /// A copy whose option group `T` is changed by `change` (a `compare` row's variant of
    /// the plan: MQTT at another QoS, the floor with another response).
    pub fn with_options<T>(&self, change: impl FnOnce(&mut T)) -> LoadPlan
    where
        T: std::any::Any + Send + Sync + Default + Clone,
    {
        let mut plan = self.clone();
        let mut group = (*plan.load.options.get::<T>()).clone();
        change(&mut group);
        plan.load.options.put(group);
        plan
    }

    /// Every target, the first one first.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        std::iter::once(&self.target).chain(&self.also)
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
mod tests;
