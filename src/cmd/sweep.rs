//! `wirebench sweep`: the same bench at several core counts. What scales is either the
//! generator (`--cores 1,2,4`), a built-in server (`--serve KIND --server-cores 1,2,4`), or the
//! user's own server, started pinned for each step (`--server-cmd '… {cores} … {cpus}'`).
//! Each step prints its placement; the table shows speedup, efficiency and imbalance.

use super::{SweepArgs, parse_cores};
use crate::clock::Instant;
use crate::cpus::format as list_cores;
use crate::engine::serve_conn::ServerLimits;
use crate::plan::EngineKind;
use crate::plan::{self, Defaults, EngineArgs};
use crate::protocol::{self, ServerOptions};
use crate::report::sweep::{Step, SweepInfo};
use crate::report::{self, sweep as table};
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a `--server-cmd` server has to start accepting connections.
const SERVER_START_LIMIT: Duration = Duration::from_secs(10);
/// How long it has to exit after SIGTERM before it is killed.
const SERVER_STOP_LIMIT: Duration = Duration::from_secs(5);

/// Parse `1,2,4,8,16` into counts.
pub fn parse_counts(text: &str) -> Result<Vec<usize>> {
    let counts: Vec<usize> = text
        .split(',')
        .map(|c| c.trim().parse::<usize>().ok().filter(|n| *n > 0))
        .collect::<Option<_>>()
        .with_context(|| format!("'{text}' is not a list of core counts: use e.g. 1,2,4,8,16"))?;
    if counts.is_empty() {
        bail!("no core count given");
    }
    Ok(counts)
}

/// One CPU list per count, taken in order from `cpu_set`; counts above what it holds are
/// skipped with a warning.
pub fn plan_steps(counts: &[usize], cpu_set: &[usize]) -> (Vec<Vec<usize>>, Vec<String>) {
    let mut steps = Vec::new();
    let mut warnings = Vec::new();
    for &n in counts {
        if n > cpu_set.len() {
            warnings.push(format!(
                "skipping {n} cores: only {} CPUs in the set ({})",
                cpu_set.len(),
                list_cores(cpu_set)
            ));
        } else {
            steps.push(cpu_set[..n].to_vec());
        }
    }
    (steps, warnings)
}

/// The CPU order for server steps: CPUs the generator does not use first, then its own.
pub fn server_order(cpu_set: &[usize], client: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = cpu_set.iter().copied().filter(|c| !client.contains(c)).collect();
    order.extend(cpu_set.iter().copied().filter(|c| client.contains(c)));
    order
}

/// `{cores}` and `{cpus}` filled in.
pub fn server_command(template: &str, cpus: &[usize]) -> String {
    template.replace("{cores}", &cpus.len().to_string()).replace("{cpus}", &list_cores(cpus))
}

/// A user's server for one step: its own process group, pinned, stopped for sure on drop.
struct OwnServer {
    child: Child,
}

impl OwnServer {
    fn start(command: &str, cpus: &[usize], target: SocketAddr) -> Result<OwnServer> {
        use std::os::unix::process::CommandExt;
        // Whatever answers must be the server this step starts: not one left running.
        if std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_ok() {
            bail!(
                "something already accepts connections on {target} before --server-cmd started (pids {:?}): a server left running by an earlier step or run? Stop it first",
                crate::watch::listening_pids(target.port())
            );
        }
        let cpus_owned = cpus.to_vec();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", command]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec (setpgid, sched_setaffinity).
        unsafe {
            cmd.pre_exec(move || {
                libc::setpgid(0, 0);
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in &cpus_owned {
                    libc::CPU_SET(c, &mut set);
                }
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().with_context(|| format!("cannot start --server-cmd '{command}'"))?;
        let mut server = OwnServer { child };
        let deadline = Instant::now() + SERVER_START_LIMIT;
        loop {
            if std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_ok() {
                server.ours(command, target)?;
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                bail!("--server-cmd '{command}' exited ({status}) before accepting connections on {target}");
            }
            if Instant::now() >= deadline {
                server.stop();
                bail!(
                    "--server-cmd '{command}' did not accept connections on {target} within {SERVER_START_LIMIT:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether what listens on `target` is this step's server: in the process group it was
    /// started in, which is still running. A server that daemonizes (nginx's default
    /// `daemon on`) leaves the group and lets its starter exit: it would be measured with no
    /// CPU figure, and never stopped. Its processes are stopped, and the step refused.
    fn ours(&mut self, command: &str, target: SocketAddr) -> Result<()> {
        let group = self.child.id() as i32;
        // SAFETY: getpgid reads another process's group; a pid gone meanwhile gives -1.
        let strangers: Vec<u32> = (crate::watch::listening_pids(target.port()).into_iter())
            .filter(|&pid| unsafe { libc::getpgid(pid as i32) } != group)
            .collect();
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        if strangers.is_empty() && !exited {
            return Ok(());
        }
        for &pid in &strangers {
            // SAFETY: signals to the processes that listen where this step's server should.
            unsafe {
                let group = libc::getpgid(pid as i32);
                libc::kill(pid as i32, libc::SIGTERM);
                if group > 1 {
                    libc::kill(-group, libc::SIGTERM);
                }
            }
        }
        bail!(
            "--server-cmd '{command}' left its process group: pids {strangers:?} listen on {target} while the command {} — it daemonized, so it could be neither measured nor stopped (those were sent SIGTERM). Run it in the foreground (nginx: -g 'daemon off;')",
            if exited { "exited" } else { "runs apart" }
        );
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM to the group, bounded wait, then SIGKILL.
    fn stop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + SERVER_STOP_LIMIT;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; harmless if the group is gone.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn main(args: &SweepArgs) -> Result<()> {
    let server_mode = check_what_scales(args)?;
    crate::report::check_writable(&[("--json", args.json.as_deref()), ("--svg", args.svg.as_deref())])?;
    let cpu_set = parse_cores(args.cpu_set.as_deref())?;
    let online = crate::cpus::online();
    let client_cores = match &args.client_cores {
        Some(list) => parse_cores(Some(list))?,
        None => vec![online[0]],
    };
    let (counts, order) = if server_mode {
        (
            parse_counts(args.server_cores.as_deref().unwrap_or_default())?,
            server_order(&cpu_set, &client_cores),
        )
    } else {
        (parse_counts(args.cores.as_deref().unwrap_or_default())?, cpu_set.clone())
    };
    let (steps, warnings) = plan_steps(&counts, &order);
    for w in &warnings {
        eprintln!("wirebench: warning: {w}");
    }
    if steps.is_empty() {
        bail!("no step fits this machine's CPUs ({})", list_cores(&cpu_set));
    }
    // Every load option reaches every step: one validated load, re-aimed and re-pinned per step.
    let engine = EngineArgs { cores: None, engine: args.engine };
    let load = plan::validate_load(&args.load, &engine, &Defaults::SWEEP, &online)?;
    let builtin_server = match &args.serve {
        Some(name) => Some(protocol::server(name).with_context(|| format!("no built-in server '{name}'"))?),
        None => None,
    };
    if let Some(url) = &args.url {
        crate::protocol::refuse_foreign_options(&crate::protocol::aim(&load, url)?)?;
    }
    let info = SweepInfo {
        what: match (server_mode, builtin_server) {
            (false, _) => "client cores".into(),
            (true, Some(server)) => format!("built-in {} server cores", server.name),
            (true, None) => "server cores".into(),
        },
        target: args.url.clone().unwrap_or_default(),
        connections: load.shape.connections,
        duration: load.shape.duration,
        engine: load.engine.name(),
    };
    // With `--json -` stdout carries the JSON alone.
    let human = args.json.as_deref() != Some(std::path::Path::new("-"));
    let say = |text: &str| {
        if human {
            report::out(&format!("{text}\n"));
        }
    };
    let screen = super::series_view(args.tui, !human, None)?;
    say(&table::header(&info));
    let interrupted = crate::interrupt::flag();
    let step_of = StepOf { args, load: &load, builtin_server, server_mode, client_cores: &client_cores };
    let mut rows: Vec<Step> = Vec::new();
    for cpus in steps {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        let step = step_of.run(cpus)?;
        say(&table::line(&step, rows.first()));
        rows.push(step);
    }
    drop(screen);
    report::finish_table(
        &table::footer(&rows),
        args.json.as_deref(),
        || table::json(&info, &rows),
        args.svg.as_deref(),
        || report::svg::sweep(&info, &rows),
    )
}

/// Whether the sweep scales a server (true) or the generator, refusing options that do not
/// say one or the other whole.
fn check_what_scales(args: &SweepArgs) -> Result<bool> {
    let server_mode = args.server_cores.is_some() || args.serve.is_some() || args.server_cmd.is_some();
    if server_mode && args.server_cores.is_none() {
        bail!("server sweeps need --server-cores, e.g. --server-cores 1,2,4");
    }
    if server_mode && args.serve.is_none() && args.server_cmd.is_none() {
        bail!("--server-cores needs --serve KIND (built-in) or --server-cmd 'CMD' (your own server)");
    }
    if !server_mode && args.cores.is_none() {
        bail!(
            "say what to scale: --cores 1,2,4 (the generator) or --server-cores 1,2,4 with --serve or --server-cmd"
        );
    }
    if args.serve.is_none() && args.url.is_none() {
        bail!("a sweep needs a URL (or --serve KIND for a built-in server)");
    }
    Ok(server_mode)
}

/// What every step shares: the load, and what is scaled.
struct StepOf<'a> {
    args: &'a SweepArgs,
    load: &'a plan::Load,
    builtin_server: Option<&'static crate::plan::Server>,
    server_mode: bool,
    client_cores: &'a [usize],
}

impl StepOf<'_> {
    /// One step on `cpus`: its server started (built-in or the user's) when the sweep scales
    /// one, the load run, the server stopped and its tallies kept.
    fn run(&self, cpus: Vec<usize>) -> Result<Step> {
        let args = self.args;
        let step_client = if self.server_mode { self.client_cores.to_vec() } else { cpus.clone() };
        let mut builtin = None;
        let mut own = None;
        // A built-in server's certificate (one that serves TLS always: `serve h3`), trusted.
        let mut trust = Vec::new();
        let url = match (self.builtin_server, &args.server_cmd) {
            (Some(server), _) if self.server_mode => {
                let any: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
                let started = super::serve::start(
                    args.engine.unwrap_or(EngineKind::DEFAULT_SERVER),
                    &[(server, any.into())],
                    &ServerOptions::default(),
                    &cpus,
                    ServerLimits::default(),
                    crate::run::own_stop(),
                )?;
                let url = started.urls[0][0].clone();
                trust = started.tls.iter().map(|t| t.cert_der.clone()).collect();
                builtin = Some(started.handle);
                url
            }
            (_, Some(template)) => {
                let url = args.url.clone().unwrap_or_default();
                let addr = crate::protocol::target(&url)?.resolve()?;
                let command = server_command(template, &cpus);
                own = Some(OwnServer::start(&command, &cpus, addr)?);
                url
            }
            _ => args.url.clone().unwrap_or_default(),
        };
        let placement = if self.server_mode {
            format!("server on CPU {}, generator on CPU {}", list_cores(&cpus), list_cores(&step_client))
        } else {
            format!("generator on CPU {}", list_cores(&cpus))
        };
        let watch_pid = own.as_ref().map(OwnServer::pid).or(args.watch_pid);
        let mut step_load = self.load.clone();
        step_load.cores = step_client.into_iter().take(self.load.shape.connections).collect();
        if !trust.is_empty() {
            step_load.tls.trust = trust;
        }
        let prepared = crate::run::prepare(crate::protocol::aim(&step_load, &url)?)
            .with_context(|| format!("step {placement}"))?;
        let watcher = watch_pid.map(crate::watch::start).transpose()?;
        let result = crate::run::run(&prepared);
        let watched = watcher.map(crate::watch::Watcher::finish);
        let tallies = builtin.map(|h| h.stop()).transpose()?;
        drop(own);
        let (info, report) = result.with_context(|| format!("step {placement}"))?;
        let server_scales = self.server_mode;
        Ok(Step { info, cores: cpus.len(), placement, cpus, report, watched, server: tallies, server_scales })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_steps() {
        assert_eq!(parse_counts("1,2,4").unwrap(), vec![1, 2, 4]);
        assert!(parse_counts("1,x").is_err());
        assert!(parse_counts("0").is_err());
        let (steps, warnings) = plan_steps(&[1, 2, 4, 8, 16], &[0, 1, 2, 3]);
        assert_eq!(steps, vec![vec![0], vec![0, 1], vec![0, 1, 2, 3]]);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("skipping 8 cores"));
    }

    #[test]
    fn server_cpus_avoid_the_generator_first() {
        assert_eq!(server_order(&[0, 1, 2, 3], &[0]), vec![1, 2, 3, 0]);
        let (steps, _) = plan_steps(&[1, 2], &server_order(&[0, 1], &[0]));
        assert_eq!(steps, vec![vec![1], vec![1, 0]]);
    }

    #[test]
    fn server_command_placeholders() {
        assert_eq!(
            server_command("nginx -g 'worker_processes {cores};' # {cpus}", &[2, 3, 4, 8]),
            "nginx -g 'worker_processes 4;' # 2-4,8"
        );
    }
}
