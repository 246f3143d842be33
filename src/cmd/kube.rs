//! `wirebench kube URL [bench's options] --pods N`: one load from N pods of a Kubernetes
//! cluster, released together, merged exactly — run from the user's machine through the API
//! (kube-rs), with nothing installed in the cluster but the image.
//!
//! The command checks the options as `bench` would, creates the run ([`crate::fleet`]: a
//! barrier ConfigMap, the agents' ServiceAccount and Role, an Indexed Job whose pods run
//! `wirebench agent -- <these options>`), waits until every pod is ready at the barrier, writes
//! one start time a moment ahead, gathers each pod's `RunResult` from its ConfigMap, merges those
//! whose window began within `--start-tolerance` of the start, and prints `bench`'s report of
//! the total with a line per pod. `--fail-if` is checked on the total. A pod that fails, is
//! evicted, is deleted or never gets ready is named, and the rest still make the result.
//! Ctrl-C (or any end) deletes what the run created, unless `--keep`.

use super::BenchArgs;
use crate::fleet::{Agent, Barrier, Run, api};
use crate::stats::result::{FleetResult, PodLine, RunResult};
use anyhow::{Context, Result, bail};
use clap::Args;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Args)]
pub struct KubeArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// Load pods, each a load host (an Indexed Job's pods, spread over nodes where they can be).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub pods: u32,
    /// The image the pods run (`wirebench` on its PATH: deploy/k8s/Dockerfile, or
    /// tools/cluster/image.sh without a daemon).
    #[arg(long, default_value = "wirebench:latest")]
    pub image: String,
    /// The pods' image pull policy.
    #[arg(long, default_value = "IfNotPresent", value_parser = ["IfNotPresent", "Always", "Never"])]
    pub pull: String,
    /// The namespace the run is created in (default: the kubeconfig context's, else `default`).
    #[arg(long)]
    pub namespace: Option<String>,
    /// CPU per pod, requested and limited alike: whole CPUs (`1`, `2`) make the pods Guaranteed,
    /// and a kubelet with the static CPU manager policy gives each exclusive CPUs, which the
    /// engine threads pin inside; `500m` shares the node's pool.
    #[arg(long = "pod-cpu", default_value = "1", value_name = "CPU")]
    pub cpu: String,
    /// Memory per pod, requested and limited alike.
    #[arg(long = "pod-memory", default_value = "512Mi", value_name = "SIZE")]
    pub memory: String,
    /// Only nodes with this label (repeatable), e.g. `role=load`.
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// How long the pods may take to be scheduled, started and ready at the barrier.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "120s")]
    pub ready_timeout: Duration,
    /// The start is this long after the last pod was ready: the pods see it (they ask every
    /// 20 ms) and set up their connections before it.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "2s")]
    pub start_in: Duration,
    /// A pod's result is merged only if it sent its first measured operation within this of the
    /// start (by its node's clock); one outside it is named and left out.
    #[arg(long, value_parser = crate::plan::parse_duration, default_value = "100ms")]
    pub start_tolerance: Duration,
    /// Write each pod's own result (its `bench --json`, merged or not) into DIR as POD.json:
    /// `wirebench merge DIR/*.json` adds them as this command did.
    #[arg(long, value_name = "DIR")]
    pub pod_json: Option<std::path::PathBuf>,
    /// The server's pod (in --namespace): a pod on its node, in the node's process namespace
    /// (`hostPID`), samples its processes' CPU % and memory over the load's window — as
    /// `watch` does beside one load host — shown with the total and kept as its `server_watch`.
    #[arg(long, value_name = "POD")]
    pub watch_pod: Option<String>,
    /// Leave the run's objects in the cluster (to look at them); delete them with
    /// `kubectl delete job,cm,sa,role,rolebinding -l wirebench.dev/run=NAME`.
    #[arg(long)]
    pub keep: bool,
}

/// `kube`'s own options, and `bench`'s that the coordinator answers itself: none is passed to
/// the pods.
const NOT_FORWARDED: &[&str] = &[
    "pods",
    "image",
    "pull",
    "namespace",
    "cpu",
    "memory",
    "node_selector",
    "ready_timeout",
    "start_in",
    "start_tolerance",
    "keep",
    "pod_json",
    "watch_pod",
    "json",
    "quiet",
    "latency",
    "fail_if",
    "allow_empty",
];

/// `bench`'s options that mean one process on one machine.
const REFUSED: &[(&str, &str)] = &[
    ("tui", "--tui draws one process's run"),
    ("metrics_listen", "--metrics-listen serves one process's figures"),
    ("watch_pid", "--watch-pid watches a process on the load host"),
    ("hlog", "--hlog writes a file in each pod"),
    ("csv", "--csv writes a file in each pod"),
    ("html", "--html writes a file in each pod"),
    ("start_at", "--start-at is chosen by kube once every pod is ready"),
    ("label", "--label: each pod is labelled by its name"),
    ("repeat", "--repeat: a fleet's pods run once, side by side"),
    ("cores", "--cores: each pod's engine pins inside the CPUs the pod was given"),
    ("bind", "--bind names addresses of this machine, not the pods'"),
    ("requests", "--requests names a file on this machine, not in the pods"),
    ("body_file", "--body-file names a file on this machine, not in the pods"),
];

/// `bench`'s arguments for the pods, rebuilt from the command line as clap read it: every
/// option given that is `bench`'s and not answered here, as `--name=value` (positional URLs
/// first). Options left at their defaults are left out (the pods' defaults are the same).
pub fn forwarded(argv: &[String]) -> Result<Vec<String>> {
    use clap::parser::ValueSource;
    let command = <super::Cli as clap::CommandFactory>::command();
    let matches = command.clone().try_get_matches_from(argv)?;
    let (Some(sub), Some(kube)) = (matches.subcommand_matches("kube"), command.find_subcommand("kube"))
    else {
        bail!("not a `wirebench kube` command line");
    };
    let (mut urls, mut options) = (Vec::new(), Vec::new());
    for arg in kube.get_arguments() {
        let id = arg.get_id().as_str();
        if sub.value_source(id) != Some(ValueSource::CommandLine) || NOT_FORWARDED.contains(&id) {
            continue;
        }
        if let Some((_, why)) = REFUSED.iter().find(|(r, _)| *r == id) {
            bail!("{why}: not with `wirebench kube`");
        }
        let raw: Vec<String> =
            sub.get_raw(id).into_iter().flatten().map(|v| v.to_string_lossy().into_owned()).collect();
        let name = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => {
                urls.extend(raw);
                continue;
            }
        };
        match arg.get_action() {
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse => options.push(name),
            clap::ArgAction::Count => {
                options.extend(std::iter::repeat_n(name, usize::from(sub.get_count(id))));
            }
            _ if name.starts_with("--") => options.extend(raw.iter().map(|v| format!("{name}={v}"))),
            _ => raw.iter().for_each(|v| options.extend([name.clone(), v.clone()])),
        }
    }
    urls.extend(options);
    Ok(urls)
}

pub fn main(args: &KubeArgs) -> Result<()> {
    let began = Instant::now();
    let conditions = crate::check::parse_all(&args.bench.thresholds.fail_if)?;
    crate::report::check_writable(&[("--json", args.bench.json.as_deref())])?;
    if let Some(dir) = &args.pod_json {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make --pod-json {}", dir.display()))?;
    }
    let bench =
        forwarded(&std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>())?;
    // Checked here as each pod will (any CPU is allowed: the pods' are not known yet).
    let plan = crate::protocol::validate_targets(
        &args.bench.urls,
        &args.bench.load,
        &args.bench.engine,
        &crate::plan::Defaults::BENCH,
        &(0..4096).collect::<Vec<_>>(),
    )?;
    let shape = &plan.load.shape;
    let spec = pod_spec(args, shape, bench)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let client = rt.block_on(api::client())?;
    let run = Run::fresh(args.namespace.as_deref().unwrap_or(client.default_namespace()));
    let stop = crate::interrupt::flag();
    eprintln!(
        "wirebench kube: run {} in namespace {}: {} pod{} of {} (cpu {}, memory {} each)",
        run.name,
        run.namespace,
        args.pods,
        if args.pods == 1 { "" } else { "s" },
        args.image,
        args.cpu,
        args.memory
    );
    // The server's pod first: a name that is wrong is said before anything is made.
    let watched = match &args.watch_pod {
        Some(name) => {
            Some(rt.block_on(api::within("--watch-pod", api::pod_place(&client, &run.namespace, name)))?)
        }
        None => None,
    };
    let created = rt.block_on(async {
        let uid = api::within("creating the run", api::create(&client, &run, &spec)).await?;
        if let Some((node, target_uid, container)) = watched {
            let spec = crate::fleet::objects::WatcherSpec {
                index: args.pods,
                node,
                target_uid,
                container,
                image: args.image.clone(),
                pull: args.pull.clone(),
                after: shape.warmup,
                window: shape.duration,
            };
            api::within("creating the watcher", api::create_watcher(&client, &run, &uid, &spec)).await?;
        }
        anyhow::Ok(())
    });
    let gathered = match created {
        Ok(()) => rt.block_on(drive(&client, &run, args, shape, &stop)),
        Err(e) => Err(e),
    };
    if !args.keep {
        for failure in rt.block_on(api::delete(&client, &run)) {
            eprintln!("wirebench: warning: could not delete {failure}");
        }
    }
    let gathered = gathered?;
    let mut total = finish(args, &run, gathered, began)?;
    let held = crate::check::apply(&conditions, &mut total);
    let to_stdout = args.bench.json.as_deref() == Some(std::path::Path::new("-"));
    if !to_stdout {
        crate::report::out(&pods_table(&total));
        if args.bench.quiet {
            crate::report::out(&crate::report::text::summary(&plan.info(), &total));
        } else {
            crate::report::out(&crate::report::text::render(&plan.info(), &total));
        }
        if args.bench.latency {
            crate::report::out(&crate::report::text::spectrum(&total.histograms.latency));
        }
    }
    if let Some(path) = &args.bench.json {
        crate::report::json::write(path, &total)?;
    }
    if total.ops == 0 && !args.bench.thresholds.allow_empty && !crate::interrupt::was_set() {
        return Err(crate::check::Empty(format!(
            "no operation completed against {} from any of the {} merged pods",
            total.target,
            total.fleet.as_ref().map_or(0, |f| f.merged)
        ))
        .into());
    }
    crate::check::verdict(held.into_iter().map(|c| ("total".to_string(), c)).collect())
}

/// What the load pods are, from the options.
fn pod_spec(
    args: &KubeArgs,
    shape: &crate::workload::Shape,
    bench: Vec<String>,
) -> Result<crate::fleet::objects::PodSpec> {
    let node_selector = args
        .node_selector
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("--node-selector {kv}: give KEY=VALUE"),
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    Ok(crate::fleet::objects::PodSpec {
        pods: args.pods,
        image: args.image.clone(),
        pull: args.pull.clone(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        node_selector,
        bench,
        deadline: args.ready_timeout + run_bound(args, shape),
        // An agent waits at the barrier as long as the coordinator may take to open it.
        wait: args.ready_timeout + args.start_in + GRACE,
        poll: crate::fleet::barrier_poll(args.pods),
    })
}

/// Past the run's own end (duration and timeouts): the time the pods get to write their
/// results and the API to say so.
const GRACE: Duration = Duration::from_secs(60);
/// How often the coordinator looks at the pods and their ConfigMaps.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// What the run gave: each pod's outcome, and the start.
struct Gathered {
    start_at: SystemTime,
    /// When the coordinator began writing the start, and when the write was answered (its clock).
    written_at: SystemTime,
    written_by: SystemTime,
    ready_in: Duration,
    pods: Vec<Outcome>,
    /// `--watch-pod`'s watcher (agent index `pods`).
    watch: Option<Outcome>,
    warmup: Duration,
}

/// One pod's part.
struct Outcome {
    index: u32,
    state: Option<api::PodState>,
    agent: Option<Agent>,
    /// Not ready at the barrier in time.
    not_ready: bool,
}

/// Wait for the pods at the barrier, start them, and wait for their results — each wait
/// bounded, Ctrl-C ending either. A call to the API that fails is tried again at the next look
/// until the phase's time is over: one lost answer does not throw the run away.
async fn drive(
    client: &kube::Client,
    run: &Run,
    args: &KubeArgs,
    shape: &crate::workload::Shape,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Gathered> {
    let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
    // The load pods, and the server's watcher (index `pods`) when asked for.
    let expected = args.pods as usize + usize::from(args.watch_pod.is_some());
    let t0 = Instant::now();
    let mut look = Look::default();
    // 1. Every pod ready, failed, or out of time.
    let mut said = String::new();
    let (ready, settled) = loop {
        look.again(client, run).await;
        let ready: BTreeSet<u32> =
            look.agents.iter().filter(|(_, a)| matches!(a, Agent::Ready { .. })).map(|(i, _)| *i).collect();
        let settled = settled_indexes(&look.pods(), &look.agents);
        let line = format!(
            "  pods: {} created, {} running, {} ready, {} failed",
            look.known.len(),
            look.known.values().filter(|p| p.phase == "Running").count(),
            ready.len(),
            settled.len()
        );
        if line != said {
            eprintln!("{line}");
            said = line;
        }
        // An index ready and then failed (its pod deleted at the barrier) counts once.
        if ready.union(&settled).count() >= expected || t0.elapsed() >= args.ready_timeout || stopped() {
            break (ready, settled);
        }
        tokio::time::sleep(LOOK_EVERY).await;
    };
    // Ready and not failed since: the pods the start is for.
    let admitted: Vec<u32> = ready.difference(&settled).copied().collect();
    if stopped() || !admitted.iter().any(|i| *i < args.pods) {
        api::within("the barrier", api::set_barrier(client, run, Barrier::Abort)).await?;
        if stopped() {
            bail!("interrupted before the start: the run's objects are deleted");
        }
        bail!(
            "no pod was ready at the barrier within {:?}: {}",
            args.ready_timeout,
            why_not(&look.pods(), &look.agents)
                .or(look.error.clone())
                .unwrap_or_else(|| "none was created (a quota, or the namespace?)".into())
        );
    }
    let ready_in = t0.elapsed();
    // 2. One start for all, a moment ahead, for the admitted pods (the others exit: a pod
    // ready late must not load the server outside the total).
    let written_at = SystemTime::now();
    let start_at = written_at + args.start_in;
    let start = Barrier::Start { start_at, written_at, admitted: admitted.clone() };
    api::within("the barrier", api::set_barrier(client, run, start)).await?;
    let written_by = SystemTime::now();
    eprintln!(
        "  {} of {} ready in {:.1} s; start at {} ({:?} ahead)",
        admitted.iter().filter(|i| **i < args.pods).count(),
        args.pods,
        ready_in.as_secs_f64(),
        humantime::format_rfc3339_millis(start_at),
        args.start_in
    );
    // 3. Each started pod's result, or its end without one.
    let until = Instant::now() + run_bound(args, shape);
    loop {
        look.again(client, run).await;
        let settled = settled_indexes(&look.pods(), &look.agents);
        if admitted.iter().all(|i| settled.contains(i)) || Instant::now() >= until || stopped() {
            break;
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
    if stopped() {
        bail!(
            "interrupted during the run: its objects are deleted, the pods stopped where they were, nothing is merged"
        );
    }
    let pods = look.pods();
    let outcome = |index| Outcome {
        index,
        state: pods.iter().find(|p| p.index == Some(index)).cloned(),
        agent: look.agents.iter().find(|(i, _)| *i == index).map(|(_, a)| a.clone()),
        not_ready: !admitted.contains(&index) && !settled.contains(&index),
    };
    let outcomes = (0..args.pods).map(outcome).collect();
    let watch = args.watch_pod.as_ref().map(|_| outcome(args.pods));
    Ok(Gathered { start_at, written_at, written_by, ready_in, pods: outcomes, watch, warmup: shape.warmup })
}

/// How long a run may take from its start until every pod has said how it ended: set-up
/// (connections ramped at `--connect-rate`), warm-up, the window, the last answers' timeouts,
/// and [`GRACE`] to write the results. A pod's cores are the CPUs the node gives it, unknown
/// here: its ramp is bounded as one core's (each core's opener is as fast at the least).
fn run_bound(args: &KubeArgs, shape: &crate::workload::Shape) -> Duration {
    args.start_in
        + shape.ramp_bound(shape.connections, 1)
        + shape.warmup
        + shape.duration
        + 2 * shape.timeout
        + GRACE
}

/// What the coordinator last saw: the pods, each by its index (one gone since is kept, marked
/// deleted: a pod deleted mid-run is still named), the agents' words, and the last failed
/// call (tried again at the next look).
#[derive(Default)]
struct Look {
    known: BTreeMap<u32, api::PodState>,
    agents: Vec<(u32, Agent)>,
    /// The agents' last words, read once each.
    last: BTreeMap<u32, Agent>,
    error: Option<String>,
}

impl Look {
    async fn again(&mut self, client: &kube::Client, run: &Run) {
        let pods = api::within("the pods", api::pods(client, run)).await;
        let agents = api::within("the agents' ConfigMaps", api::agents(client, run, &mut self.last)).await;
        match (pods, agents) {
            (Ok(now), Ok(agents)) => {
                for pod in self.known.values_mut().filter(|p| !now.iter().any(|n| n.name == p.name)) {
                    pod.deleting = true;
                }
                self.known.extend(now.into_iter().filter_map(|p| Some((p.index?, p))));
                self.agents = agents;
                self.error = None;
            }
            (Err(e), _) | (_, Err(e)) => {
                if self.error.is_none() {
                    eprintln!("wirebench: warning: {e:#} (trying again)");
                }
                self.error = Some(format!("{e:#}"));
            }
        }
    }

    fn pods(&self) -> Vec<api::PodState> {
        self.known.values().cloned().collect()
    }
}

/// The indexes that are over: their agent said done or failed, or their pod ended, failed or
/// is being deleted without a word.
fn settled_indexes(pods: &[api::PodState], agents: &[(u32, Agent)]) -> BTreeSet<u32> {
    let mut over: BTreeSet<u32> = agents
        .iter()
        .filter(|(_, a)| matches!(a, Agent::Done { .. } | Agent::Failed { .. }))
        .map(|(i, _)| *i)
        .collect();
    over.extend(
        pods.iter()
            .filter(|p| p.deleting || p.phase == "Failed" || p.phase == "Succeeded")
            .filter_map(|p| p.index),
    );
    over
}

/// Why the pods are not ready, in one line: the first reason each gives.
fn why_not(pods: &[api::PodState], agents: &[(u32, Agent)]) -> Option<String> {
    let mut reasons: Vec<String> = agents
        .iter()
        .filter_map(|(_, a)| match a {
            Agent::Failed { place, why } => Some(format!("{}: {why}", place.pod)),
            _ => None,
        })
        .collect();
    reasons.extend(pods.iter().map(|p| {
        format!("{} {}{}", p.name, p.phase, p.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default())
    }));
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// Each pod's line, and the total of those within the tolerance.
fn finish(args: &KubeArgs, run: &Run, g: Gathered, began: Instant) -> Result<RunResult> {
    let expected = g.start_at + g.warmup;
    let tolerance_ms = args.start_tolerance.as_secs_f64() * 1e3;
    let mut lines = Vec::new();
    let mut merged: Vec<RunResult> = Vec::new();
    for o in &g.pods {
        let mut line = pod_line(o);
        if let Some(Agent::Done { place, saw_start_at, asked_before, result_json }) = &o.agent {
            // A result that does not read (another version's agent, a ConfigMap cut short) is
            // that pod's failure, not the run's.
            let result: RunResult = match serde_json::from_str(result_json) {
                Ok(r) => r,
                Err(e) => {
                    (line.state, line.why) =
                        ("failed".into(), Some(format!("its result does not read: {e}")));
                    lines.push(line);
                    continue;
                }
            };
            if let Some(dir) = &args.pod_json {
                let path = dir.join(format!("{}.json", place.pod));
                if let Err(e) = crate::report::json::write(&path, &result) {
                    eprintln!("wirebench: warning: --pod-json: {e:#}");
                }
            }
            // Where the pod really began: its first measured operation sent, by its own clock
            // (a figure no clock could give is none).
            let began_at = result
                .first_sent_unix_s
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .and_then(|d| std::time::UNIX_EPOCH.checked_add(d));
            line.start_offset_ms = began_at.map(|b| crate::fleet::signed_ms(b, expected));
            line.seen_after_written_ms = Some(crate::fleet::signed_ms(*saw_start_at, g.written_at));
            // The write was stored after `written_at` and before `written_by` (coordinator's
            // clock), after the pod's last ask that said wait and before it saw the start (its
            // clock): the pod's clock minus the coordinator's is at least this.
            line.clock_offset_min_ms = asked_before.map(|t| crate::fleet::signed_ms(t, g.written_by));
            line.engine_cores = result.cores.clone();
            line.ops = result.ops;
            line.ops_per_sec = result.ops_per_sec;
            line.p99_us = Some(result.latency_us.p99);
            line.audit_match = Some(result.audit.matches);
            match line.start_offset_ms {
                Some(off) if off.abs() <= tolerance_ms => {
                    line.state = "merged".into();
                    merged.push(result);
                }
                Some(off) => {
                    line.state = "late".into();
                    line.why = Some(format!(
                        "its window began {off:+.1} ms from the start (tolerance {tolerance_ms:.0} ms)"
                    ));
                }
                None => {
                    line.state = "late".into();
                    line.why = Some("it sent no measured operation".into());
                }
            }
        }
        lines.push(line);
    }
    let Some(mut total) = RunResult::merge_all(&merged) else {
        let why: Vec<String> = lines
            .iter()
            .map(|l| format!("{}: {}", l.pod, l.why.clone().unwrap_or_else(|| l.state.clone())))
            .collect();
        bail!("no pod's result could be merged: {}", why.join("; "));
    };
    let offsets: Vec<f64> =
        lines.iter().filter(|l| l.state == "merged").filter_map(|l| l.start_offset_ms).collect();
    let skew = offsets.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        - offsets.iter().cloned().fold(f64::INFINITY, f64::min);
    total.label = Some(run.name.clone());
    // The server's side of the window, from its watcher.
    let watcher = g.watch.as_ref().map(|w| watched(w, &mut total));
    total.fleet = Some(FleetResult {
        run: run.name.clone(),
        namespace: run.namespace.clone(),
        image: args.image.clone(),
        pods: args.pods,
        merged: merged.len() as u32,
        ready_in_s: g.ready_in.as_secs_f64(),
        start_at_unix_s: g.start_at.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
        tolerance_ms,
        skew_ms: skew.is_finite().then_some(skew),
        command_to_result_s: began.elapsed().as_secs_f64(),
        per_pod: lines,
        watcher,
    });
    Ok(total)
}

/// The watcher's line; its figures become the total's `server_watch`.
fn watched(w: &Outcome, total: &mut RunResult) -> PodLine {
    let mut line = pod_line(w);
    if let Some(Agent::Done { result_json, .. }) = &w.agent {
        match serde_json::from_str::<crate::stats::result::WatchFile>(result_json) {
            Ok(file) => {
                total.server_watch = Some(file.watch);
                line.state = "watched".into();
            }
            Err(e) => {
                (line.state, line.why) = ("failed".into(), Some(format!("its result does not read: {e}")))
            }
        }
    }
    line
}

/// A pod's line before its result is read: where it ran, and why not, if it did not.
fn pod_line(o: &Outcome) -> PodLine {
    let place = o.agent.as_ref().map(|a| a.place().clone()).unwrap_or_default();
    let pod = if place.pod.is_empty() {
        o.state.as_ref().map_or(String::new(), |s| s.name.clone())
    } else {
        place.pod.clone()
    };
    let (state, why) = match (&o.agent, &o.state) {
        (Some(Agent::Done { .. }), _) => ("merged", None),
        (Some(Agent::Failed { why, .. }), _) => ("failed", Some(why.clone())),
        _ if o.not_ready => {
            ("not ready", Some(pod_says(o.state.as_ref(), "not ready at the barrier in time")))
        }
        (_, Some(s)) if s.deleting => ("lost", Some("deleted during the run".into())),
        _ => ("lost", Some(pod_says(o.state.as_ref(), "no result"))),
    };
    PodLine {
        pod: if pod.is_empty() { format!("index {}", o.index) } else { pod },
        index: Some(o.index),
        node: place.node,
        state: state.into(),
        why,
        qos: o.state.as_ref().and_then(|s| s.qos.clone()),
        cpus_allowed: place.cpus_allowed,
        cpus_online: place.cpus_online,
        engine_cores: Vec::new(),
        start_offset_ms: None,
        seen_after_written_ms: None,
        clock_offset_min_ms: None,
        ops: 0,
        ops_per_sec: 0.0,
        p99_us: None,
        audit_match: None,
    }
}

fn pod_says(state: Option<&api::PodState>, otherwise: &str) -> String {
    match state {
        Some(s) => format!(
            "{otherwise}: pod {}{}",
            s.phase,
            s.reason.as_ref().map(|r| format!(", {r}")).unwrap_or_default()
        ),
        None => format!("{otherwise}: no pod (never created, or gone)"),
    }
}

/// The line per pod, and the start's figures.
fn pods_table(total: &RunResult) -> String {
    let Some(f) = &total.fleet else { return String::new() };
    let mut s = format!(
        "wirebench kube: {} of {} pods merged (run {}, namespace {}, image {})\n",
        f.merged, f.pods, f.run, f.namespace, f.image
    );
    let _ = writeln!(
        s,
        "  {:<28} {:<10} {:<11} {:<10} {:>9} {:>17} {:>10} {:>9} {:>9}  state",
        "pod", "node", "qos", "cpus", "start", "clock offset", "ops", "ops/s", "p99"
    );
    for l in &f.per_pod {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.1}ms"));
        let _ = writeln!(
            s,
            "  {:<28} {:<10} {:<11} {:<10} {:>9} {:>17} {:>10} {:>9} {:>9}  {}{}",
            l.pod,
            l.node,
            l.qos.as_deref().unwrap_or("-"),
            cpus(l),
            ms(l.start_offset_ms),
            clock(l),
            l.ops,
            crate::report::si(l.ops_per_sec),
            l.p99_us.map_or("-".into(), crate::report::micros),
            l.state,
            l.why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
        );
    }
    let _ = writeln!(
        s,
        "  start skew {} across the merged pods (tolerance {:.0} ms); start: each pod's first measured operation minus the start, by its node's clock; clock offset: the pod's clock minus this machine's, bounded by when the start was written and when the pod asked for it (its 20 ms polling and the API's round trips)",
        f.skew_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
        f.tolerance_ms
    );
    let _ = writeln!(
        s,
        "  ready in {:.1} s; result {:.1} s after the command",
        f.ready_in_s, f.command_to_result_s
    );
    match (&total.server_watch, &f.watcher) {
        (Some(w), Some(by)) => {
            let _ = writeln!(
                s,
                "  server (pid {} on {}, {} samples over the window): CPU mean {:.0}% max {:.0}%, RSS max {:.0} KiB, memory {} of the node (watched by {})",
                w.pid,
                by.node,
                w.samples,
                w.cpu_pct.mean,
                w.cpu_pct.max,
                w.rss_kib.max,
                w.mem_pct.map_or("?".into(), |m| format!("{m:.2}%")),
                by.pod
            );
        }
        (_, Some(by)) => {
            let _ =
                writeln!(s, "  server: not watched: {} {}", by.state, by.why.as_deref().unwrap_or_default());
        }
        _ => {}
    }
    s
}

/// A pod's clock offset as bounds: `-3.1..+18.1ms`, or `≤+18.1ms` with no lower bound.
fn clock(l: &PodLine) -> String {
    match (l.clock_offset_min_ms, l.seen_after_written_ms) {
        (Some(lo), Some(hi)) => format!("{lo:+.1}..{hi:+.1}ms"),
        (None, Some(hi)) => format!("≤{hi:+.1}ms"),
        _ => "-".into(),
    }
}

/// A pod's CPUs as it saw them: `1 of 0-1` (exclusive or a shared pool smaller than the node)
/// or `0-1` (all of the node's).
fn cpus(l: &PodLine) -> String {
    match (l.cpus_allowed.as_str(), l.cpus_online.as_str()) {
        ("", _) => "-".into(),
        (a, o) if a == o || o.is_empty() => a.to_string(),
        (a, o) => format!("{a} of {o}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_pods_get_benchs_options_and_not_kubes() {
        let got = forwarded(&argv(
            "wirebench kube http://web:8080/ -c 16 -d 10s --pods 3 --image x:1 --pod-cpu 1 --json out.json --fail-if p99>5ms --depth 4 --no-keepalive",
        ))
        .unwrap();
        assert_eq!(got, argv("http://web:8080/ --connections=16 --duration=10s --depth=4 --no-keepalive"));
        // What the pods get parses as `bench`'s arguments.
        let mut bench = argv("wirebench bench");
        bench.extend(got);
        assert!(<crate::cmd::Cli as clap::Parser>::try_parse_from(bench).is_ok());
    }

    #[test]
    fn options_of_one_process_are_refused_in_one_line() {
        for (flag, word) in
            [("--tui", "--tui"), ("--start-at 1900000000", "--start-at"), ("--csv x.csv", "--csv")]
        {
            let e = forwarded(&argv(&format!("wirebench kube http://web/ {flag}"))).unwrap_err().to_string();
            assert!(e.contains(word) && e.contains("not with `wirebench kube`"), "{e}");
        }
    }
}
