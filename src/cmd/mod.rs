//! Commands: the command line (clap), layered as ripgrep's is — one shared group of load options
//! ([`LoadArgs`]) flattened into every command that generates load, each protocol's options
//! flattened from the registry — and the composition of plans, engines and reports for each
//! subcommand. No protocol or syscall detail lives here: protocols are asked through the
//! registry ([`crate::protocol`]).

pub mod agent;
pub mod bench;
pub mod compare;
pub mod kube;
pub mod merge;
pub mod plot;
pub mod report;
pub mod search;
pub mod serve;
pub mod sweep;
pub mod watch;

use crate::plan::EngineKind;
use crate::plan::{EngineArgs, LoadArgs, parse_duration};
use crate::protocol::ServerOptions;
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
    /// The highest rate a target serves within limits (`--p99 5ms`, `--failed 0.1%`): paced
    /// steps, doubling, then bisection; a row per step and the answer, with its rule.
    Search(SearchArgs),
    /// One load from N pods of a Kubernetes cluster: started together at a barrier, each pod's
    /// result gathered through the API and merged exactly, a line per pod (`bench`'s options,
    /// plus the pods').
    Kube(Box<kube::KubeArgs>),
    /// What runs in each pod of `kube` (written by it, not by hand).
    #[command(hide = true)]
    Agent(agent::AgentArgs),
    /// Add runs of one load from several hosts (`bench --json` files) into one exact result:
    /// histograms added, counters summed, a row per run and a total.
    Merge(MergeArgs),
    /// On the server's host: sample a process tree's CPU %, RSS and memory % over a window
    /// (`--start-at`, `-d`), for `merge --server`.
    Watch(WatchArgs),
    /// Draw runs (`bench --json` files): their latency percentile spectrum, a line each and
    /// their merged total, and ops/s and p99 over time, as an SVG.
    Plot(PlotArgs),
    /// Write results (`bench --json`, `merge` files) as one self-contained HTML page: the
    /// figures of each run side by side, latency by percentile and over time, bytes by class,
    /// cores, the audit; opens from disk with no network.
    Report(ReportArgs),
    /// Print the JSON Schema of what a command writes with `--json` (published in
    /// `docs/schema/`).
    Schema(SchemaArgs),
    /// Print a shell's completions (`wirebench completions bash > /etc/bash_completion.d/wirebench`).
    Completions(CompletionsArgs),
    /// Print the manual page of wirebench, or of one command, in roff (`wirebench man bench | man -l -`).
    Man(ManArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The command whose page to print (default: wirebench's own).
    pub command: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `wirebench completions SHELL`: from the same clap definitions the parser uses.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<()> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "wirebench", &mut out);
    crate::report::out(&String::from_utf8_lossy(&out));
    Ok(())
}

/// `wirebench man [COMMAND]`: the manual page of wirebench or of one of its commands, from the
/// clap definitions.
pub fn man(args: &ManArgs) -> anyhow::Result<()> {
    let top = <Cli as clap::CommandFactory>::command();
    let page = match &args.command {
        None => top,
        Some(name) => {
            let sub = top.find_subcommand(name).cloned().ok_or_else(|| {
                let names: Vec<&str> = top.get_subcommands().map(|s| s.get_name()).collect();
                anyhow::anyhow!("no command '{name}': one of {}", names.join(", "))
            })?;
            // The page's name, as man pages of subcommands are named (leaked: printed once).
            let full: &'static str = Box::leak(format!("wirebench-{}", sub.get_name()).into_boxed_str());
            sub.name(full)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    crate::report::out(&String::from_utf8_lossy(&out));
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// Whose: `result` (`bench` and `merge`), `compare`, `sweep`, `watch`, `search`.
    #[arg(value_enum)]
    pub of: SchemaOf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaOf {
    Result,
    Compare,
    Sweep,
    Watch,
    Search,
}

/// `wirebench schema KIND`: the JSON Schema, generated from the types the commands write.
pub fn schema(args: &SchemaArgs) -> anyhow::Result<()> {
    let schema = match args.of {
        SchemaOf::Result => schemars::schema_for!(crate::stats::result::RunResult),
        SchemaOf::Compare => schemars::schema_for!(crate::report::compare::CompareResult),
        SchemaOf::Sweep => schemars::schema_for!(crate::report::sweep::SweepResult),
        SchemaOf::Watch => schemars::schema_for!(crate::stats::result::WatchFile),
        SchemaOf::Search => schemars::schema_for!(crate::report::search::SearchResult),
    };
    crate::report::out(&(serde_json::to_string_pretty(&schema)? + "\n"));
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// `bench --json` or `merge --json` files.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to write the HTML page.
    #[arg(long, value_name = "PATH")]
    pub html: PathBuf,
    /// Put runs of different protocols or targets side by side anyway (their merged latency
    /// is then not drawn).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// `bench --json` files.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to write the SVG.
    #[arg(long, value_name = "PATH")]
    pub svg: PathBuf,
    /// Draw runs of different protocols or targets together anyway.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The process to watch (with its descendants).
    #[arg(long, required_unless_present = "name", conflicts_with = "name")]
    pub pid: Option<u32>,
    /// The process to watch by name (`/proc/PID/comm`): the one whose parent is not so named.
    #[arg(long)]
    pub name: Option<String>,
    /// How long to sample.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// Start sampling at this wall-clock time (the loads' `--start-at`).
    #[arg(long, value_name = "TIME", value_parser = crate::plan::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// Write the samples' summary as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// `bench --json` files, one per host (each named by its `--label`).
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the merged result as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Merge runs of different protocols or targets anyway.
    #[arg(long)]
    pub force: bool,
    /// A `watch --json` file from the server's host: its CPU % and memory % beside the total.
    #[arg(long, value_name = "FILE")]
    pub server: Option<PathBuf>,
    /// Checked on the total.
    #[command(flatten)]
    pub thresholds: Thresholds,
}

/// Pass/fail thresholds ([`crate::check`]).
#[derive(Debug, Clone, Default, Args)]
pub struct Thresholds {
    /// Exit with status 3 when EXPR holds, e.g. `p99>5ms`, `failed>0.1%`, `ops_per_sec<20000`,
    /// `tx_per_op>500`, `audit!=match` (repeatable; figures and units: docs/thresholds.md)
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
    /// Exit with status 0 even when no operation completed (a run against a server expected to
    /// refuse everything); otherwise such a run says why in one line and exits with status 4.
    #[arg(long)]
    pub allow_empty: bool,
}

/// The verdict of a run that completed no operation ([`crate::check::Empty`], exit status 4):
/// its first failure, and what the target's first bytes look like if it spoke at all
/// ([`crate::protocol::recognize`]). `None` when something completed, when nothing was asked
/// (`-n 0`), or when the run was interrupted (its own exit status says so).
/// `--tui` needs stdout to be a terminal, and not to carry `--json -` or `--csv -`.
pub fn tui_allowed(to_stdout: bool) -> anyhow::Result<()> {
    if to_stdout || !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!(
            "--tui draws on a terminal: stdout is not one here (a pipe or a file); leave --tui out"
        );
    }
    Ok(())
}

/// A series' `--tui` (compare, sweep, search): the terminal held for all its runs until the
/// returned screen drops; `limit_us`: the latency limit `search` plots its steps against.
pub fn series_view(
    tui: bool,
    to_stdout: bool,
    limit_us: Option<f64>,
) -> anyhow::Result<Option<crate::report::tui::series::Screen>> {
    if !tui {
        return Ok(None);
    }
    tui_allowed(to_stdout)?;
    Ok(Some(crate::report::tui::series::Screen::open(limit_us)?))
}

pub fn nothing_completed(report: &crate::stats::Report, target: &str) -> Option<String> {
    let tried = report.sent > 0 || report.connects > 0 || report.conn_errors.total() > 0;
    if report.ops > 0 || !tried || crate::interrupt::was_set() {
        return None;
    }
    let why = match report.error_samples.first() {
        Some(sample) => sample.clone(),
        None if report.sent == 0 => "nothing could be sent".to_string(),
        None => "no answer came".to_string(),
    };
    let speaks = report.first_bytes.as_deref().map_or(String::new(), |bytes| {
        let seems = match crate::tls::looks_like_tls(bytes) {
            true => "TLS (a record: a TLS server?)".to_string(),
            false => {
                crate::protocol::recognize(bytes).map_or("no protocol this tool knows".into(), String::from)
            }
        };
        format!("; its first bytes `{}` look like {seems}", printable(bytes))
    });
    Some(format!(
        "no operation completed against {target} ({} sent, {} connections): {why}{speaks}",
        report.sent, report.connects
    ))
}

/// Bytes as a user can read them: printable ASCII as it is, the rest escaped, at most 40.
fn printable(bytes: &[u8]) -> String {
    let mut s: String =
        bytes.iter().take(40).flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect();
    if bytes.len() > 40 {
        s.push('…');
    }
    s
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// (Its help names every scheme of the registry: [`crate::protocol::url_help`].)
    #[arg(required = true, num_args = 1.., value_name = "URL", help = crate::protocol::url_help())]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub load: LoadArgs<crate::protocol::ProtocolOptions>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Write the results as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Sample this server process's CPU % (with its child processes) and memory during the run.
    #[arg(long, value_name = "PID")]
    pub watch_pid: Option<u32>,
    /// Print the full percentile spectrum of the latency (as wrk2 does).
    #[arg(long)]
    pub latency: bool,
    /// Print a summary of a few lines (rate, latency, failures, bytes, audit) for scripts,
    /// instead of the whole report.
    #[arg(short = 'q', long, conflicts_with = "latency")]
    pub quiet: bool,
    /// Speak HTTP/3 over QUIC to `https://` URLs (as oha's `--http3`): the same as `h3://`.
    #[arg(long)]
    pub http3: bool,
    /// Write the latency of every interval (`--report-every`, 1s unless given) as an
    /// HdrHistogram interval log to PATH.
    #[arg(long, value_name = "PATH")]
    pub hlog: Option<PathBuf>,
    /// Name this run in its JSON (`label`), for `merge`'s row per host; default: the host name.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Serve the run's figures in Prometheus's text format at http://ADDR/metrics while it
    /// goes on (per core: operations, failures and bytes by class, latency as a histogram;
    /// each core's copy at most 200 ms old), e.g. 127.0.0.1:9100.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Write every interval (`--report-every`, 1s unless given) as a CSV row to PATH (`-` for
    /// stdout): ops, ops/s, errors, latency p50/p90/p99/max.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Draw the run in the terminal as it goes (ops/s, latency, failures, cores, bytes,
    /// connections; q stops the run as Ctrl-C does, p pauses the drawing); the report follows
    /// when the view closes. Needs a terminal on stdout.
    #[arg(long, conflicts_with = "quiet")]
    pub tui: bool,
    /// Write the run as one self-contained HTML page to PATH (as `wirebench report`: figures,
    /// charts inline, nothing fetched when it is opened).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub thresholds: Thresholds,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Targets to compare (default: the built-in servers, started in-process on loopback).
    /// An nsq:// target gives a PUB row and an MPUB row.
    pub urls: Vec<String>,
    #[command(flatten)]
    pub load: LoadArgs<crate::protocol::ProtocolOptions>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// CPUs for the built-in servers (default: the last online CPU).
    #[arg(long, value_name = "LIST")]
    pub server_cores: Option<String>,
    /// Every row again over TLS (HTTPS, WSS, Socket.IO over TLS, NSQ's tls_v1 PUB and HTTPS
    /// /pub), the built-in servers serving it beside plaintext with a certificate made at start,
    /// then a "what TLS costs" table. With URLs, give TLS ones (https://, …) instead.
    #[arg(long)]
    pub tls: bool,
    /// Every plaintext row again over a Unix domain socket (the built-in servers with one
    /// listener serving on a path beside their TCP port), then a "what TCP/IP on loopback
    /// costs" table: each row over TCP against the same over a Unix socket. Built-in servers, on
    /// the `uring` engine (the one that serves Unix sockets).
    #[arg(long)]
    pub unix: bool,
    /// Write every row as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw bytes per message (payload vs framing) and messages/s as an SVG chart.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// Write every row's figures (the table's columns) as CSV to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Draw the runs in the terminal as they go: the table filling in row by row above the
    /// current run's live view (q stops, as Ctrl-C does); the report follows when it closes.
    #[arg(long)]
    pub tui: bool,
    /// Checked on every row.
    #[command(flatten)]
    pub thresholds: Thresholds,
}

#[derive(Debug, Clone, Args)]
pub struct SearchArgs {
    /// Target URL.
    pub url: String,
    #[command(flatten)]
    pub load: LoadArgs<crate::protocol::ProtocolOptions>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// The p99 latency (from when each operation was due) a passing step stays within, e.g. 5ms.
    #[arg(long, value_name = "TIME")]
    pub p99: String,
    /// The share of the operations sent a passing step may fail.
    #[arg(long, value_name = "PCT", default_value = "0.1%")]
    pub failed: String,
    /// The first step's rate, operations per second.
    #[arg(long, value_name = "R", default_value_t = 1000.0)]
    pub start: f64,
    /// Each step's length.
    #[arg(long, value_name = "D", default_value = "5s", value_parser = crate::plan::parse_duration)]
    pub step: std::time::Duration,
    /// Stop when the highest passing and the lowest failing rates are within this many percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub precision: f64,
    /// At most this many steps.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_steps: usize,
    /// Write every step and the answer as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw the steps in the terminal as they go: the table, each step's p99 against its
    /// rate beside the limit, and the current step's live view (q stops, as Ctrl-C does).
    #[arg(long)]
    pub tui: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Target URL (omit with --serve: the built-in server's own URL is used).
    pub url: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs<crate::protocol::ProtocolOptions>,
    /// Client scaling: engine core counts, e.g. 1,2,4,8,16 (CPUs taken in order from --cpu-set).
    #[arg(long, value_name = "COUNTS", conflicts_with = "server_cores")]
    pub cores: Option<String>,
    /// Server scaling: server core counts, e.g. 1,2,4 (CPUs taken in order from --cpu-set,
    /// the generator's CPUs last).
    #[arg(long, value_name = "COUNTS")]
    pub server_cores: Option<String>,
    /// Server scaling on a built-in server.
    #[arg(long, value_name = "KIND", value_parser = crate::protocol::server_names(), conflicts_with = "server_cmd")]
    pub serve: Option<String>,
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
    /// Write every step as JSON to PATH (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw ops/s and efficiency against cores as an SVG chart.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// Draw the runs in the terminal as they go: the table filling in row by row above the
    /// current run's live view (q stops, as Ctrl-C does); the report follows when it closes.
    #[arg(long)]
    pub tui: bool,
    /// I/O engine of the generator and the built-in servers (default: uring for both).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Which built-in server.
    #[arg(value_parser = crate::protocol::server_names())]
    pub kind: String,
    /// (Its help names every server's default from the registry: [`crate::protocol::listen_help`].)
    #[arg(long, help = crate::protocol::listen_help())]
    pub listen: Option<String>,
    #[command(flatten)]
    pub options: ServerOptions,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What a built-in server allows its clients (see `engine::serve_conn::ServerLimits`).
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
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
    /// Connections served at once, shared out evenly over the server's cores (each of C cores
    /// serves ceil(N / C); the kernel spreads connections by hash, so one core may refuse
    /// while another has room); more are answered 503 (HTTP, WebSocket) or closed (NSQ TCP).
    #[arg(long, default_value_t = crate::engine::serve_conn::DEFAULT_MAX_CONNS)]
    pub max_conns: usize,
    /// Think time: hold each answer this long after its request arrived (as an application
    /// server's work would), e.g. `10ms`; pipelined requests read together share one delay.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub delay: Duration,
}

/// Parse a CPU list (`0`, `0,2`, `0-3,8`) and check each CPU is one this process may run on;
/// none: all of them.
pub fn parse_cores(list: Option<&str>) -> anyhow::Result<Vec<usize>> {
    let online = crate::cpus::online();
    match list {
        None => Ok(online),
        Some(list) => Ok(crate::cpus::parse(list, &online)?),
    }
}
