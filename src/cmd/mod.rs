//! Commands: the command line (clap), its validation into plain-data plans, and the composition
//! of engines, codecs and reports for each subcommand. No protocol or syscall detail lives here.

pub mod bench;
pub mod compare;
pub mod serve;
pub mod sweep;

use crate::engine::EngineKind;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// Measure what network protocols cost on the wire and how servers scale across cores.
#[derive(Debug, Parser)]
#[command(name = "wirebench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load a target with pinned thread-per-core engines and report ops/s, latency and exact bytes.
    Bench(BenchArgs),
    /// Run a built-in server (thread-per-core, io_uring) to measure against.
    Serve(ServeArgs),
    /// The same payload through every protocol, side by side: bytes per message, framing
    /// overhead, segments, speed (on the built-in servers unless targets are given).
    Compare(CompareArgs),
    /// Scaling across cores: the same bench at 1, 2, 4, … client cores, or built-in server
    /// cores, or the cores of your own server started per step (`--server-cmd`).
    Sweep(SweepArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Target URL (omit with --serve: the built-in server's own URL is used).
    pub url: Option<String>,
    /// Client scaling: engine core counts, e.g. 1,2,4,8,16 (CPUs taken in order from --cpu-set).
    #[arg(long, value_name = "COUNTS", conflicts_with = "server_cores")]
    pub cores: Option<String>,
    /// Server scaling: server core counts, e.g. 1,2,4 (CPUs taken in order from --cpu-set,
    /// the generator's CPUs last).
    #[arg(long, value_name = "COUNTS")]
    pub server_cores: Option<String>,
    /// Server scaling on a built-in server.
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "server_cmd")]
    pub serve: Option<ServeKind>,
    /// Server scaling on your own server: started pinned for each step, `{cores}` and `{cpus}`
    /// replaced by the step's core count and CPU list, stopped after the step.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// CPUs the generator uses in server sweeps (default: the first online CPU).
    #[arg(long, value_name = "LIST")]
    pub client_cores: Option<String>,
    /// CPUs the core lists are taken from, in order (default: all online CPUs).
    #[arg(long, value_name = "LIST")]
    pub cpu_set: Option<String>,
    /// Sample this server process's CPU and memory at every step.
    #[arg(long, value_name = "PID")]
    pub watch_pid: Option<u32>,
    /// Connections in all.
    #[arg(short = 'c', long, default_value_t = 64)]
    pub connections: usize,
    /// Each step's measured length.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "5s")]
    pub duration: Duration,
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    #[arg(long, value_name = "N")]
    pub size: Option<usize>,
    /// Write every step as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw ops/s and efficiency against cores as an SVG chart.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// I/O engine of the generator and the built-in servers (default: uring for the
    /// generator, tokio-uring for servers; uring serves with tokio-uring).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Targets to compare (default: the built-in servers, started in-process on loopback).
    /// An nsq:// target gives a PUB row and an MPUB row.
    pub urls: Vec<String>,
    /// Payload of N bytes per message (the letter 'x' repeated).
    #[arg(long, default_value_t = 400, conflicts_with = "body_file")]
    pub size: usize,
    /// Payload read from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
    /// Connections per protocol (1: one persistent connection, as in the NSQ study).
    #[arg(short = 'c', long, default_value_t = 1)]
    pub connections: usize,
    /// Messages per protocol (an MPUB of --batch messages counts --batch).
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub messages: u64,
    /// Upper bound on each protocol's run.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// Operations in flight per connection.
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    /// Messages per NSQ MPUB.
    #[arg(long, default_value_t = 10)]
    pub batch: usize,
    /// CPUs for the built-in servers (default: the last online CPU).
    #[arg(long, value_name = "LIST")]
    pub server_cores: Option<String>,
    /// Write every row as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw bytes per message (payload vs framing) and messages/s as an SVG chart.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Options shared by every command that runs engines.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// CPUs to pin one engine thread each to: `0`, `0,1`, `0-3`, `0-3,8` (default: all online CPUs).
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// I/O engine (default: uring for the generator, tokio-uring for servers: the least CPU
    /// per request measured; uring serves with tokio-uring).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/
    pub url: String,
    /// Connections in all, split across cores.
    #[arg(short = 'c', long, default_value_t = 64)]
    pub connections: usize,
    /// Measured run length: `10s`, `500ms`, `2m` (default 10s unless -n is given).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Total measured operations, split across connections (then -d, if given, still bounds the run).
    #[arg(short = 'n', long)]
    pub ops: Option<u64>,
    /// Warm-up before measuring; its operations are sent and audited but not reported.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Request method (HTTP).
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra header `Name: value` (repeatable); a given `Host` replaces the default.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body / message of N bytes (the letter 'x' repeated; 400 for ws and nsq by default).
    #[arg(long, value_name = "N", conflicts_with = "body_file")]
    pub size: Option<usize>,
    /// Request body read from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
    /// Operations in flight per connection (HTTP pipelining, NSQ publishes in flight).
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    /// Fixed rate: R operations per second in all, spread evenly over the connections (at most
    /// --depth in flight each); latency counts from when each operation was due (wrk2), and the
    /// uncorrected figure is shown beside it. Default: a closed loop, as fast as responses come.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// NSQ: messages per operation (`MPUB` over TCP, `/mpub` over HTTP).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// NSQ: publish deferred by D milliseconds (`DPUB`, or `/pub?defer=D`).
    #[arg(long, value_name = "D")]
    pub defer_ms: Option<u64>,
    /// NSQ over TCP: send only the magic, no `IDENTIFY`.
    #[arg(long, conflicts_with = "identify")]
    pub no_identify: bool,
    /// NSQ over TCP: the `IDENTIFY` JSON body to send instead of the default one.
    #[arg(long, value_name = "JSON")]
    pub identify: Option<String>,
    /// NSQ over HTTP with --batch: the binary `/mpub` form instead of newline-separated messages.
    #[arg(long)]
    pub binary: bool,
    /// WebSocket: send text frames instead of binary ones.
    #[arg(long)]
    pub text: bool,
    /// A connect, write or response slower than this fails the connection (counted as timeout).
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub timeout: Duration,
    /// Write the results as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Sample this server process's CPU % (with its child processes) and memory during the run.
    #[arg(long, value_name = "PID")]
    pub watch_pid: Option<u32>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Which built-in server.
    #[arg(value_enum)]
    pub kind: ServeKind,
    /// Address to listen on (loopback by default: 127.0.0.1:8080 for http, :9001 for ws,
    /// :4150 for nsq; port 0 picks a free port).
    #[arg(long)]
    pub listen: Option<String>,
    /// nsq: the address of the HTTP side (`/pub`, `/mpub`, `/ping`).
    #[arg(long, default_value = "127.0.0.1:4151")]
    pub http_listen: String,
    /// ws: largest message accepted (at most 1 GiB); a larger one closes with 1009.
    #[arg(long, default_value_t = crate::proto::ws::DEFAULT_MAX_MESSAGE as u64,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_message: u64,
    /// nsq: largest message accepted (nsqd's `--max-msg-size`; NSQ lengths are 32-bit).
    #[arg(long, default_value_t = crate::proto::nsq::DEFAULT_MAX_MSG_SIZE,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub max_msg_size: u64,
    /// nsq: largest MPUB body accepted (nsqd's `--max-body-size`; NSQ lengths are 32-bit).
    #[arg(long, default_value_t = crate::proto::nsq::DEFAULT_MAX_BODY_SIZE,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub max_body_size: u64,
    /// A request head or handshake must arrive whole within this long of its first byte
    /// (slow clients, slowloris).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub head_timeout: Duration,
    /// Silence allowed between requests, and between the reads of a body.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub idle_timeout: Duration,
    /// A client must take each answer within this long (one that stops reading is closed).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub write_timeout: Duration,
    /// Connections served at once, over all cores; more are answered 503 (HTTP, WebSocket)
    /// or closed (NSQ TCP).
    #[arg(long, default_value_t = 16_384)]
    pub max_conns: usize,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeKind {
    /// HTTP/1.1 hello world: `Hello World` for GET, `OK` for a request with a body.
    Http,
    /// WebSocket echo: validates the upgrade, echoes every data message with its opcode,
    /// answers ping, completes the close handshake.
    Ws,
    /// An nsqd-compatible publish sink on TCP (`PUB`, `MPUB`, `DPUB`) and HTTP (`/pub`, `/mpub`):
    /// answers byte for byte as nsqd 1.3.0; messages are counted and dropped, never stored.
    Nsq,
}

impl ServeKind {
    pub fn default_listen(self) -> &'static str {
        match self {
            ServeKind::Http => "127.0.0.1:8080",
            ServeKind::Ws => "127.0.0.1:9001",
            ServeKind::Nsq => "127.0.0.1:4150",
        }
    }
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

/// Parse a CPU list (`0`, `0,2`, `0-3,8`) and check each CPU is one this process may run on;
/// none: all of them.
pub fn parse_cores(list: Option<&str>) -> Result<Vec<usize>> {
    let online = crate::cpus::online();
    match list {
        None => Ok(online),
        Some(list) => Ok(crate::cpus::parse(list, &online)?),
    }
}

static INTERRUPT: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Whether Ctrl-C stopped this process's work (the binary then exits with status 130, after
/// printing what was measured until then).
pub fn was_interrupted() -> bool {
    INTERRUPT.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

/// The process-wide stop flag, set by Ctrl-C: runs drain and report, servers stop. A second
/// Ctrl-C exits at once. (One flag for the process, since a handler can be installed only once.)
pub fn interrupted() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    INTERRUPT
        .get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let set = flag.clone();
            let _ = ctrlc::set_handler(move || {
                if set.swap(true, Ordering::Relaxed) {
                    std::process::exit(130);
                }
            });
            flag
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }
}
