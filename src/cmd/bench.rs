//! `wirebench bench URL`: validate the options into a [`BenchPlan`], check the machine's limits
//! and that the target answers, run the engine with a progress line, print the report.

use super::{BenchArgs, parse_cores};
use crate::engine::{ClientJob, EngineKind};
use crate::proto::ClientCodec;
use crate::proto::http1::{Http1Client, RequestSpec};
use crate::proto::nsq::{self, NsqClient, PublishSpec};
use crate::proto::ws::{WsClient, WsSpec};
use crate::report::{self, RunInfo};
use crate::stats::Report;
use crate::target::{self, Scheme, Target};
use crate::workload::Workload;
use anyhow::{Context, Result, bail};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// With `-n` and no `-d`, a run still ends after this long (every loop is bounded in time).
pub const OPS_TIME_LIMIT: Duration = Duration::from_secs(600);
/// Runs shorter than this show no progress line.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);
/// Pipelining deeper than this is almost surely a typo and would only fill buffers.
const MAX_DEPTH: usize = 4096;
/// More connections than this is a typo (one process, even with direct descriptors, holds a few
/// million at most).
pub const MAX_CONNECTIONS: usize = 10_000_000;
/// Highest `--rate`, and the longest wait between a connection's operations it may imply.
const MAX_RATE: f64 = 1e9;
const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Largest message or body: every protocol holds one whole in memory per connection.
pub const MAX_PAYLOAD: usize = 256 * 1024 * 1024;
/// The pre-flight connect gives up after this long.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(3);

/// What a bench run will do, validated once.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub target: Target,
    pub engine: EngineKind,
    pub job: ClientJob,
    pub request: RequestSpec,
    /// NSQ targets: what to publish, and the IDENTIFY body (`None`: magic only).
    pub publish: Option<PublishSpec>,
    pub identify: Option<Vec<u8>>,
    /// NSQ over HTTP with a batch: binary `/mpub`.
    pub binary: bool,
    /// WebSocket: text frames.
    pub text: bool,
    pub json: Option<std::path::PathBuf>,
}

/// WebSocket and NSQ messages default to the NSQ study's 400 bytes.
const DEFAULT_MESSAGE_SIZE: usize = 400;

impl BenchPlan {
    pub fn from_args(args: &BenchArgs) -> Result<BenchPlan> {
        let target = target::parse(&args.url)?;
        if args.connections == 0 || args.connections > MAX_CONNECTIONS {
            bail!("--connections must be between 1 and {MAX_CONNECTIONS}");
        }
        if args.depth == 0 || args.depth > MAX_DEPTH {
            bail!("--depth must be between 1 and {MAX_DEPTH}");
        }
        if args.ops == Some(0) {
            bail!("-n/--ops must be at least 1");
        }
        if args.duration == Some(Duration::ZERO) || args.timeout.is_zero() {
            bail!("durations must be longer than zero");
        }
        let workload = match args.rate {
            None => Workload::ClosedLoop,
            Some(r) if r.is_finite() && r > 0.0 && r <= MAX_RATE => {
                let interval = Duration::try_from_secs_f64(args.connections as f64 / r)
                    .ok()
                    .filter(|i| *i <= MAX_INTERVAL)
                    .with_context(|| {
                        format!(
                            "--rate {r} is too low for {} connection(s): each would wait more than {:?} between operations; raise --rate or lower -c",
                            args.connections, MAX_INTERVAL
                        )
                    })?;
                Workload::FixedRate { interval }
            }
            Some(r) => bail!("--rate {r}: give operations per second, more than 0 and at most {MAX_RATE:e}"),
        };
        let duration = match (args.duration, args.ops) {
            (Some(d), _) => d,
            (None, Some(_)) => OPS_TIME_LIMIT,
            (None, None) => Duration::from_secs(10),
        };
        let is_nsq = matches!(target.scheme, Scheme::Nsq | Scheme::NsqHttp);
        let is_message = is_nsq || target.scheme == Scheme::Ws;
        let body = match (&args.size, &args.body_file) {
            (Some(n), _) if *n > MAX_PAYLOAD => {
                bail!("--size {n} is larger than the {} MiB a message may be here", MAX_PAYLOAD >> 20)
            }
            (Some(n), _) => vec![b'x'; *n],
            (None, Some(path)) => {
                let len = std::fs::metadata(path)
                    .with_context(|| format!("cannot read --body-file {}", path.display()))?
                    .len();
                if len > MAX_PAYLOAD as u64 {
                    bail!(
                        "--body-file {} is larger than the {} MiB a message may be here",
                        path.display(),
                        MAX_PAYLOAD >> 20
                    );
                }
                std::fs::read(path).with_context(|| format!("cannot read --body-file {}", path.display()))?
            }
            (None, None) if is_message => vec![b'x'; DEFAULT_MESSAGE_SIZE],
            (None, None) => Vec::new(),
        };
        if !is_nsq
            && (args.batch != 1
                || args.defer_ms.is_some()
                || args.identify.is_some()
                || args.no_identify
                || args.binary)
        {
            bail!(
                "--batch, --defer-ms, --identify, --no-identify and --binary apply to nsq:// and nsq+http:// targets"
            );
        }
        if args.text && target.scheme != Scheme::Ws {
            bail!("--text applies to ws:// targets");
        }
        if args.text && std::str::from_utf8(&body).is_err() {
            bail!("--text needs a UTF-8 message; the body is not");
        }
        if args.batch == 0 || args.batch > 100_000 {
            bail!("--batch must be between 1 and 100000");
        }
        if args.batch > 1 && args.defer_ms.is_some() {
            bail!("--defer-ms publishes single messages (DPUB); it cannot be combined with --batch");
        }
        let publish = if is_nsq {
            let topic = target.path.trim_start_matches('/').split('?').next().unwrap_or_default().to_string();
            if topic.is_empty() {
                bail!("{}: an NSQ URL names its topic: nsq://127.0.0.1:4150/TOPIC", target.url);
            }
            if target.scheme == Scheme::NsqHttp && args.batch > 1 && !args.binary && body.contains(&b'\n') {
                bail!("the message contains a newline, which /mpub's text form would split: add --binary");
            }
            let spec =
                PublishSpec { topic, message: body.clone(), batch: args.batch, defer_ms: args.defer_ms };
            if nsq::publish_body_len(&spec).is_none() {
                bail!(
                    "--batch {} × --size {} does not fit NSQ's 32-bit lengths (at most {} bytes per MPUB body); lower one of them",
                    args.batch,
                    body.len(),
                    i32::MAX
                );
            }
            Some(spec)
        } else {
            None
        };
        let identify = match (&args.identify, args.no_identify) {
            (_, true) => None,
            (Some(json), false) => {
                serde_json::from_str::<serde_json::Value>(json)
                    .with_context(|| format!("--identify '{json}' is not JSON"))?;
                Some(json.clone().into_bytes())
            }
            (None, false) => Some(nsq::default_identify(&hostname())),
        };
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
        let method = args.method.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            bail!("'{}' is not an HTTP method", args.method);
        }
        let mut cores = parse_cores(args.engine.cores.as_deref())?;
        cores.truncate(args.connections); // a core with no connection would only report zeros
        let cores_n = cores.len();
        let request = RequestSpec {
            method,
            host: target.authority.clone(),
            target: target.path.clone(),
            headers,
            body,
        };
        Ok(BenchPlan {
            job: ClientJob {
                addr: target.addr,
                cores,
                connections: args.connections,
                depth: args.depth,
                ops: args.ops,
                duration,
                warmup: args.warmup,
                timeout: args.timeout,
                workload,
                seed: fastrand::u64(..),
                stop: super::interrupted(),
                progress: (0..cores_n).map(|_| AtomicU64::new(0)).collect(),
            },
            target,
            engine: args.engine.engine.unwrap_or(EngineKind::DEFAULT_CLIENT),
            request,
            publish,
            identify,
            binary: args.binary,
            text: args.text,
            json: args.json.clone(),
        })
    }

    pub fn info(&self, protocol: &'static str) -> RunInfo {
        RunInfo {
            messages_per_op: self.publish.as_ref().map_or(1, |p| p.batch as u64),
            target: self.target.url.clone(),
            protocol,
            engine: self.engine.name(),
            cores: self.job.cores.clone(),
            connections: self.job.connections,
            depth: self.job.depth,
        }
    }
}

/// One plain connect before the engines start, so an unreachable target is one clear line.
pub fn preflight(target: &Target) -> Result<()> {
    match std::net::TcpStream::connect_timeout(&target.addr, PREFLIGHT_TIMEOUT) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            bail!(
                "cannot connect to {} ({}): connection refused; is the server running and listening there?",
                target.url,
                target.addr
            )
        }
        Err(e) => bail!("cannot connect to {} ({}): {e}", target.url, target.addr),
    }
}

/// The protocol's name in reports and its codec, chosen once from the URL's scheme.
pub fn run(plan: &BenchPlan) -> Result<(RunInfo, Report)> {
    plan.engine.ensure_limits(plan.job.connections as u64, plan.job.cores.len())?;
    preflight(&plan.target)?;
    match (plan.target.scheme, &plan.publish) {
        (Scheme::Http, _) => Ok((plan.info("http1"), drive(plan, Http1Client::new(&plan.request))?)),
        (Scheme::Nsq, Some(publish)) => {
            Ok((plan.info("nsq"), drive(plan, NsqClient::new(publish, plan.identify.as_deref()))?))
        }
        (Scheme::NsqHttp, Some(publish)) => {
            let mut request = nsq::http_publish_request(&plan.target.authority, publish, plan.binary);
            request.headers = plan.request.headers.clone();
            Ok((plan.info("nsq-http"), drive(plan, Http1Client::new(&request))?))
        }
        (Scheme::Ws, _) => {
            let spec = WsSpec {
                host: plan.request.host.clone(),
                path: plan.request.target.clone(),
                headers: plan.request.headers.clone(),
                message: plan.request.body.clone(),
                text: plan.text,
            };
            Ok((plan.info("ws"), drive(plan, WsClient::new(spec))?))
        }
        (Scheme::Nsq | Scheme::NsqHttp, None) => {
            bail!("{}: this protocol is not supported by bench yet", plan.target.url)
        }
    }
}

/// Run the engine on its own thread while this one draws the progress line.
fn drive<C: ClientCodec + Send + 'static>(plan: &BenchPlan, codec: C) -> Result<Report> {
    let job = plan.job.clone();
    let started = Instant::now();
    let engine = plan.engine;
    let worker = std::thread::spawn(move || engine.run_client(&job, codec));
    let expected = plan.job.warmup + plan.job.duration;
    let progress = report::Progress::new(
        std::io::stdout().is_terminal() && (expected > PROGRESS_AFTER || plan.job.ops.is_some()),
        plan.job.ops,
        expected,
    );
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        let done: u64 = plan.job.progress.iter().map(|p| p.load(Ordering::Relaxed)).sum();
        progress.update(done, started.elapsed());
    }
    progress.finish();
    let run = worker.join().map_err(|_| anyhow::anyhow!("the engine thread panicked"))??;
    Ok(run.report())
}

/// This machine's name, for NSQ's IDENTIFY.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".into(), |h| h.trim().to_string())
}

/// `wirebench bench`: run and print.
pub fn main(args: &BenchArgs) -> Result<()> {
    let plan = BenchPlan::from_args(args)?;
    let watcher = args.watch_pid.map(crate::watch::start).transpose()?;
    let (info, report) = run(&plan)?;
    let watched = watcher.map(crate::watch::Watcher::finish);
    if plan.json.as_deref() != Some(std::path::Path::new("-")) {
        report::out(&report::text::render(&info, &report));
        if let Some(w) = &watched {
            report::out(&report::text::render_watch(w));
        }
    }
    if let Some(path) = &plan.json {
        let mut value = report::json::bench(&info, &report);
        if let Some(w) = &watched {
            value["server_watch"] = report::json::watch(w);
        }
        report::json::write(path, &value)?;
    }
    Ok(())
}
