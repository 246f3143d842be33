//! `wirebench watch (--pid PID | --name NAME)`: run on the server's host and sample its
//! process tree over the load's window — CPU %, RSS and memory % of the machine (the socket.io
//! study's server columns), per-CPU load — as `merge --server` takes it.

use super::WatchArgs;
use crate::clock::Instant;
use crate::report;
use anyhow::{Result, bail};
use std::time::{Duration, SystemTime};

/// The process to watch: `--pid`, or the one process named `--name` whose parent is not
/// named so too (the root of a server's tree: nginx's master, node's first process).
fn target(args: &WatchArgs) -> Result<u32> {
    if let Some(pid) = args.pid {
        return Ok(pid);
    }
    let name = args.name.as_deref().unwrap_or_default();
    let named: Vec<(i32, i32)> = procfs::process::all_processes()?
        .filter_map(|p| p.ok()?.stat().ok())
        .filter(|s| s.comm == name && s.pid as u32 != std::process::id())
        .map(|s| (s.pid, s.ppid))
        .collect();
    let roots: Vec<i32> =
        named.iter().filter(|(_, parent)| !named.iter().any(|(p, _)| p == parent)).map(|(p, _)| *p).collect();
    match roots.as_slice() {
        [] => bail!("no process named '{name}' (the name as /proc/PID/comm has it, at most 15 characters)"),
        [pid] => Ok(*pid as u32),
        many => {
            bail!("{} processes are named '{name}' ({many:?}): give the one to watch with --pid", many.len())
        }
    }
}

/// Total memory of the machine, KiB.
fn mem_total_kib() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()
}

pub fn main(args: &WatchArgs) -> Result<()> {
    crate::report::check_writable(&[("--json", args.json.as_deref())])?;
    let pid = target(args)?;
    let flag = if args.pid.is_some() { "--pid" } else { "--name" };
    let (w, file) = sample(flag, pid, args.start_at, args.duration)?;
    if args.json.as_deref() != Some(std::path::Path::new("-")) {
        let mut text = report::text::render_watch(&w);
        if let Some(m) = file.watch.mem_pct {
            text += &format!("              memory {m:.2}% of the machine (peak RSS / MemTotal)\n");
        }
        report::out(&text);
    }
    if let Some(path) = &args.json {
        report::json::write(path, &file)?;
    }
    Ok(())
}

/// Sample process `pid` (found by `flag`) and its descendants from `start_at` (now if none)
/// for `duration`, or until Ctrl-C: what was seen, and as `watch --json` writes it.
pub fn sample(
    flag: &str,
    pid: u32,
    start_at: Option<SystemTime>,
    duration: Duration,
) -> Result<(crate::watch::WatchReport, crate::stats::result::WatchFile)> {
    if let Some(at) = start_at {
        match at.duration_since(SystemTime::now()) {
            Ok(ahead) if ahead <= Duration::from_secs(86_400) => std::thread::sleep(ahead),
            Ok(_) => bail!("--start-at is more than a day ahead"),
            Err(late) if late.duration() > Duration::from_millis(100) => {
                bail!("--start-at is {:.1} s in the past", late.duration().as_secs_f64())
            }
            Err(_) => {}
        }
    }
    let watcher = crate::watch::start_as(flag, pid)?;
    let interrupted = crate::interrupt::flag();
    let end = Instant::now() + duration;
    while Instant::now() < end && !interrupted.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())));
    }
    let w = watcher.finish();
    let mem_pct = mem_total_kib().map(|total| 100.0 * w.rss_kib.max / total);
    use crate::stats::result::{WatchFile, WatchKind, WatchResult};
    let watch = WatchResult { mem_pct: mem_pct.map(crate::stats::result::r3), ..WatchResult::of(&w) };
    let file = WatchFile { kind: WatchKind::Watch, duration_s: duration.as_secs_f64(), watch };
    Ok((w, file))
}
