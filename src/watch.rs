//! Watching a server process from `/proc`: CPU % of the process and its descendants (all
//! threads; nginx's workers are children of its master), per CPU where the threads' last CPU
//! is known, and resident memory, sampled a few times a second during a run — what people
//! otherwise read off `top`.

use crate::clock::Instant;
use procfs::process::Process;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the process tree is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// min / mean / max of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread { min, mean: values.iter().sum::<f64>() / values.len() as f64, max }
    }
}

/// What a watch saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchReport {
    pub pid: u32,
    pub samples: usize,
    /// CPU % of the whole tree per interval (100 = one CPU busy).
    pub cpu_pct: Spread,
    /// Resident memory of the whole tree, KiB.
    pub rss_kib: Spread,
    /// Mean CPU % per CPU over the run, by the CPU each thread last ran on.
    pub per_cpu_pct: BTreeMap<usize, f64>,
}

/// Resident memory of one process, KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    Process::new(pid as i32).ok()?.status().ok()?.vmrss
}

/// The pid and all its descendants, from every process's parent in `/proc`.
fn tree(root: u32) -> Vec<i32> {
    let parent: HashMap<i32, i32> = procfs::process::all_processes()
        .map(|all| all.flatten().filter_map(|p| p.stat().ok()).map(|st| (st.pid, st.ppid)).collect())
        .unwrap_or_default();
    let mut out = vec![root as i32];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// CPU ticks per thread (keyed by tid) with their last CPU, and the tree's RSS.
fn sample(root: u32) -> (HashMap<i32, (u64, usize)>, u64) {
    let mut threads = HashMap::new();
    let mut rss = 0;
    for pid in tree(root) {
        let Ok(process) = Process::new(pid) else { continue };
        rss += process.status().ok().and_then(|s| s.vmrss).unwrap_or(0);
        let Ok(tasks) = process.tasks() else { continue };
        for stat in tasks.flatten().filter_map(|t| t.stat().ok()) {
            let cpu = stat.processor.unwrap_or(0).max(0) as usize;
            threads.insert(stat.pid, (stat.utime + stat.stime, cpu));
        }
    }
    (threads, rss)
}

/// A watch in progress on its own thread.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<WatchReport>,
}

/// Start watching `pid` (and its descendants).
pub fn start(pid: u32) -> anyhow::Result<Watcher> {
    start_as("--watch-pid", pid)
}

/// The same, a process that does not exist named by the flag that gave it (`--pid`).
pub fn start_as(flag: &str, pid: u32) -> anyhow::Result<Watcher> {
    if Process::new(pid as i32).and_then(|p| p.stat()).is_err() {
        anyhow::bail!("{flag} {pid}: no such process");
    }
    let hz = procfs::ticks_per_second().max(1) as f64;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let (mut last, first_rss) = sample(pid);
        let mut last_at = Instant::now();
        let mut cpu = Vec::new();
        let mut rss = vec![first_rss as f64];
        let mut per_cpu: BTreeMap<usize, f64> = BTreeMap::new();
        let started = last_at;
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(SAMPLE_EVERY);
            let (now, now_rss) = sample(pid);
            let at = Instant::now();
            let secs = (at - last_at).as_secs_f64().max(1e-6);
            let mut total = 0.0;
            for (tid, (ticks, on)) in &now {
                let before = last.get(tid).map_or(0, |(t, _)| *t);
                let used = ticks.saturating_sub(before) as f64 / hz;
                total += used;
                *per_cpu.entry(*on).or_default() += used;
            }
            cpu.push(100.0 * total / secs);
            rss.push(now_rss as f64);
            last = now;
            last_at = at;
        }
        let wall = (last_at - started).as_secs_f64().max(1e-6);
        WatchReport {
            pid,
            samples: cpu.len(),
            cpu_pct: Spread::of(&cpu),
            rss_kib: Spread::of(&rss),
            per_cpu_pct: per_cpu.into_iter().map(|(c, s)| (c, 100.0 * s / wall)).collect(),
        }
    });
    Ok(Watcher { stop, handle })
}

impl Watcher {
    pub fn finish(self) -> WatchReport {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The processes holding a TCP socket that listens on `port` (any address), from `/proc`: the
/// kernel's listening sockets (`/proc/net/tcp`, `tcp6`: state 0A), their inodes, and the
/// processes with those inodes among their descriptors. Empty where `/proc` cannot be read.
pub fn listening_pids(port: u16) -> Vec<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port =
                f.get(1).and_then(|a| a.rsplit(':').next()).and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && f.get(3) == Some(&"0A") {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut pids = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return pids };
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| inodes.iter().any(|i| t.as_os_str() == i.as_str()))
        });
        if holds {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_of_this_process() {
        assert!(rss_kib(std::process::id()).is_some_and(|kib| kib > 0));
        assert_eq!(rss_kib(u32::MAX >> 1), None);
    }

    #[test]
    fn spread() {
        assert_eq!(Spread::of(&[1.0, 2.0, 6.0]), Spread { min: 1.0, mean: 3.0, max: 6.0 });
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn watching_a_busy_child_sees_its_cpu_and_memory() {
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let w = start(std::process::id()).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        let r = w.finish();
        let _ = child.kill();
        let _ = child.wait();
        assert!(r.samples >= 3);
        assert!(r.cpu_pct.max > 20.0, "the spinning child counts: {:?}", r.cpu_pct);
        assert!(r.rss_kib.min > 0.0);
        assert!(!r.per_cpu_pct.is_empty());
    }
}
