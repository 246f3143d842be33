//! `wirebench agent --run NAME -- BENCH-ARGS`: what runs in each load pod of `wirebench kube`
//! (hidden from the help: the coordinator writes this command line). It checks its options,
//! says it is ready in its own ConfigMap, waits at the barrier for the start, runs `bench`
//! with `--start-at` that start, and writes its `RunResult` back — or one line saying why it
//! could not. The protocol is [`crate::fleet`]'s; what the pod prints is for people
//! (`kubectl logs`), never read back.

use crate::fleet::{Agent, Barrier, Place, Run, api};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The run: its barrier's name.
    #[arg(long)]
    pub run: String,
    /// This agent's index (default: its Indexed Job's `JOB_COMPLETION_INDEX`).
    #[arg(long)]
    pub index: Option<u32>,
    /// Instead of a load: sample the processes of the pod with this uid (on this node, whose
    /// processes this pod sees: `hostPID`) over the load's window.
    #[arg(long, requires = "watch_for")]
    pub watch_pod_uid: Option<String>,
    /// The watched pod's container (its id, as in its cgroup path): its processes, not a
    /// sidecar's.
    #[arg(long, requires = "watch_pod_uid")]
    pub watch_container: Option<String>,
    /// The load's warm-up: the watch begins this long after the start.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "0s")]
    pub watch_after: Duration,
    /// The load's measured window: how long the watch samples.
    #[arg(long, value_parser = crate::plan::parse_duration)]
    pub watch_for: Option<Duration>,
    /// How often to ask the barrier for the start.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "20ms")]
    pub poll: Duration,
    /// How long to wait at the barrier for the start.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "300s")]
    pub wait: Duration,
    /// `bench`'s arguments: the URL and the load options.
    #[arg(last = true, required_unless_present = "watch_pod_uid")]
    pub bench: Vec<String>,
}

/// What the pod's environment says (the Job sets it: downward API, Indexed Job).
struct Pod {
    index: u32,
    place: Place,
}

fn pod(index: Option<u32>) -> Result<Pod> {
    let var = |k: &str| {
        std::env::var(k)
            .with_context(|| format!("{k} is not set: `wirebench agent` runs in a pod of `wirebench kube`"))
    };
    let (cpus_allowed, cpus_online) = crate::fleet::cpus_here();
    let index = match index {
        Some(i) => i,
        None => var("JOB_COMPLETION_INDEX")?.parse().context("JOB_COMPLETION_INDEX is not a number")?,
    };
    Ok(Pod {
        index,
        place: Place {
            pod: var("WB_POD")?,
            node: var("WB_NODE").unwrap_or_default(),
            cpus_allowed,
            cpus_online,
        },
    })
}

/// `bench`'s arguments as `bench` parses them.
fn bench_args(args: &[String]) -> Result<super::BenchArgs> {
    let argv = ["wirebench", "bench"].into_iter().map(String::from).chain(args.iter().cloned());
    match <super::Cli as clap::Parser>::try_parse_from(argv).map(|cli| cli.command) {
        Ok(super::Command::Bench(b)) => Ok(b),
        Ok(_) => bail!("not bench's arguments"),
        Err(e) => bail!("{}", e.to_string().lines().next().unwrap_or("bad arguments")),
    }
}

pub fn main(args: &AgentArgs) -> Result<()> {
    let pod = pod(args.index)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let client = rt.block_on(api::client())?;
    let run = Run { name: args.run.clone(), namespace: client.default_namespace().to_string() };
    let root = rt.block_on(api::within("the barrier", api::root_uid(&client, &run)))?;
    let say = |agent: &Agent| {
        rt.block_on(api::within("its ConfigMap", api::put_agent(&client, &run, pod.index, &root, agent)))
    };
    let failed = |why: String| {
        let _ = say(&Agent::Failed { place: pod.place.clone(), why: why.clone() });
        anyhow!(why)
    };
    if let Some(uid) = &args.watch_pod_uid {
        return watch(args, uid, &pod, &rt, &client, &run, say, failed);
    }
    // The options, checked as `bench` checks them before it reaches the target.
    let mut bench = bench_args(&args.bench).map_err(|e| failed(format!("{e:#}")))?;
    crate::protocol::validate_targets(
        &bench.urls,
        &bench.load,
        &bench.engine,
        &crate::plan::Defaults::BENCH,
        &crate::cpus::online(),
    )
    .map_err(|e| failed(format!("{e:#}")))?;
    say(&Agent::Ready { place: pod.place.clone(), ready_at: SystemTime::now() })?;
    println!(
        "agent {} of {} on {} (CPUs {}): ready",
        pod.index, run.name, pod.place.node, pod.place.cpus_allowed
    );
    let seen = wait_for_start(&rt, &client, &run, pod.index, args.wait, args.poll)
        .map_err(|e| failed(format!("{e:#}")))?;
    // A start already past (seen late) opens the window at once: the coordinator sees by how
    // much, and merges it only within its tolerance.
    bench.load.start_at = Some(seen.start_at.max(SystemTime::now() + Duration::from_millis(5)));
    bench.label = Some(pod.place.pod.clone());
    println!(
        "start at {} (seen {:.1} ms after it was written)",
        humantime::format_rfc3339_millis(seen.start_at),
        crate::fleet::signed_ms(seen.saw, seen.written_at)
    );
    let (info, report) = super::bench::run(&bench).map_err(|e| failed(format!("{e:#}")))?;
    // SIGTERM (the pod deleted or evicted) stopped the run: its part is not the load asked for.
    if crate::interrupt::was_set() {
        return Err(failed(format!(
            "stopped by a signal after {:.2} s of its window (the pod was deleted or evicted)",
            report.elapsed.as_secs_f64()
        )));
    }
    let result = crate::report::json::bench(&info, &report, bench.label.clone());
    crate::report::out(&crate::report::text::summary(&info, &result));
    let result_json = serde_json::to_string(&result)?;
    if result_json.len() > crate::fleet::MAX_RESULT_BYTES {
        return Err(failed(format!(
            "its result is {} KiB, more than a ConfigMap holds ({} KiB): use fewer --report-every intervals or --requests kinds",
            result_json.len() / 1024,
            crate::fleet::MAX_RESULT_BYTES / 1024
        )));
    }
    say(&Agent::Done {
        place: pod.place.clone(),
        saw_start_at: seen.saw,
        asked_before: seen.asked_before,
        result_json,
    })?;
    Ok(())
}

/// The start as an agent saw it.
struct Seen {
    start_at: SystemTime,
    /// The coordinator's clock when it wrote the start.
    written_at: SystemTime,
    /// This pod's clock when the answer with the start came, and when it last asked and the
    /// answer said wait.
    saw: SystemTime,
    asked_before: Option<SystemTime>,
}

/// Ask the barrier every `poll` until it says start, for at most `wait`; a failed read is
/// tried again until then.
fn wait_for_start(
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    run: &Run,
    index: u32,
    wait: Duration,
    poll: Duration,
) -> Result<Seen> {
    let deadline = Instant::now() + wait;
    let (mut last_error, mut asked_before) = (None, None);
    while Instant::now() < deadline {
        let asked = SystemTime::now();
        match rt.block_on(api::within("the barrier", api::barrier(client, run))) {
            Ok(Barrier::Start { admitted, .. }) if !admitted.contains(&index) => {
                bail!(
                    "not admitted: it was not ready at the barrier in time, and the others started without it"
                )
            }
            Ok(Barrier::Start { start_at, written_at, .. }) => {
                return Ok(Seen { start_at, written_at, saw: SystemTime::now(), asked_before });
            }
            Ok(Barrier::Abort) => bail!("the run was called off before it started"),
            Ok(Barrier::Waiting) => asked_before = Some(asked),
            Err(e) => last_error = Some(e),
        }
        std::thread::sleep(poll);
    }
    match last_error {
        Some(e) => Err(e.context(format!("no start in {wait:?}"))),
        None => bail!("no start in {wait:?}: the coordinator did not release the pods"),
    }
}

/// The server's watcher: find the pod's process on this node, be ready, and sample it over the
/// load's window (`watch`'s figures, as `merge --server` takes them).
#[allow(clippy::too_many_arguments)]
fn watch(
    args: &AgentArgs,
    uid: &str,
    pod: &Pod,
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    run: &Run,
    say: impl Fn(&Agent) -> Result<()>,
    failed: impl Fn(String) -> anyhow::Error,
) -> Result<()> {
    // Its containers may still be starting: a few seconds to find them.
    let until = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        match crate::fleet::pod_process(uid, args.watch_container.as_deref()) {
            Some(pid) => break pid,
            None if Instant::now() < until => std::thread::sleep(Duration::from_millis(200)),
            None => {
                return Err(failed(format!(
                    "no process of pod {uid} is on node {} (is its pod on this node, and this pod hostPID?)",
                    pod.place.node
                )));
            }
        }
    };
    say(&Agent::Ready { place: pod.place.clone(), ready_at: SystemTime::now() })?;
    let seen = wait_for_start(rt, client, run, pod.index, args.wait, args.poll)
        .map_err(|e| failed(format!("{e:#}")))?;
    let start_at = seen.start_at;
    let window = args.watch_for.unwrap_or_default();
    println!("watching pid {pid} of pod {uid} for {window:?} from the start");
    let (_, file) = super::watch::sample("--watch-pod", pid, Some(start_at + args.watch_after), window)
        .map_err(|e| failed(format!("{e:#}")))?;
    say(&Agent::Done {
        place: pod.place.clone(),
        saw_start_at: seen.saw,
        asked_before: seen.asked_before,
        result_json: serde_json::to_string(&file)?,
    })
}
