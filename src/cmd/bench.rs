//! `wirebench bench URL`: validate the options into a plan, prepare it, run it with a progress
//! line, print the report.

use super::BenchArgs;
use crate::plan::Defaults;
use crate::report::{self, RunInfo};
use crate::stats::Report;
use anyhow::{Context, Result};

/// Validate, prepare and run a `bench` (what `main` does, less the printing).
pub fn run(args: &BenchArgs) -> Result<(RunInfo, Report)> {
    crate::run::run(&prepare(args)?)
}

/// Check the options against this machine's CPUs, resolve and reach the targets.
fn prepare(args: &BenchArgs) -> Result<crate::plan::Prepared> {
    let online = crate::cpus::online();
    let mut load = args.load.clone();
    // An interval log or CSV needs intervals: a second each unless asked otherwise.
    if args.hlog.is_some() || args.csv.is_some() {
        load.report_every.get_or_insert(std::time::Duration::from_secs(1));
    }
    let urls = if args.http3 { http3_urls(&args.urls)? } else { args.urls.clone() };
    crate::run::prepare(crate::protocol::validate_targets(
        &urls,
        &load,
        &args.engine,
        &Defaults::BENCH,
        &online,
    )?)
}

/// `--http3`: each `https://` URL as `h3://` (already `h3://`: kept); any other refused.
fn http3_urls(urls: &[String]) -> Result<Vec<String>> {
    urls.iter()
        .map(|url| match url.trim().split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => Ok(format!("h3://{rest}")),
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("h3") => Ok(url.clone()),
            _ => anyhow::bail!("--http3 speaks HTTP/3 to https:// URLs; {url} is not one"),
        })
        .collect()
}

/// `wirebench bench`: run and print.
pub fn main(args: &BenchArgs) -> Result<()> {
    let conditions = crate::check::parse_all(&args.thresholds.fail_if)?;
    report::check_writable(&[
        ("--json", args.json.as_deref()),
        ("--csv", args.csv.as_deref()),
        ("--hlog", args.hlog.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let on_stdout = [&args.json, &args.csv].iter().any(|p| p.as_deref() == Some(std::path::Path::new("-")));
    if args.tui {
        super::tui_allowed(on_stdout)?;
    }
    let mut prepared = prepare(args)?;
    let metrics = match args.metrics_listen {
        Some(addr) => Some(serve_metrics(addr, &mut prepared)?),
        None => None,
    };
    let watcher = args.watch_pid.map(crate::watch::start).transpose()?;
    let to_stdout = [&args.json, &args.csv].iter().any(|p| p.as_deref() == Some(std::path::Path::new("-")));
    // Where no progress line shows (stdout not a terminal), a line at once says what runs
    // (as wrk's `Running 10s test @ …`).
    if !to_stdout && !args.quiet && !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        report::out(&report::text::starting(&prepared.plan));
        // `--report-every`'s rows as each interval ends, from the cores' copies.
        if let Some(every) = args.load.report_every {
            if prepared.job.live.is_none() {
                prepared.job.live = Some(crate::stats::live::live(prepared.job.cores.len()));
            }
            prepared.live_rows = Some(every);
        }
    }
    if args.tui {
        if prepared.job.live.is_none() {
            prepared.job.live = Some(crate::stats::live::live(prepared.job.cores.len()));
        }
        prepared.tui = true;
    }
    let (info, report) = crate::run::run(&prepared)?;
    let watched = watcher.map(crate::watch::Watcher::finish);
    let label = args.label.clone().unwrap_or_else(|| prepared.hostname.clone());
    if let (Some(path), Some(series)) = (&args.hlog, &report.series) {
        report::write_hlog(path, series, report.elapsed, &label)?;
    }
    let mut result = report::json::bench(&info, &report, Some(label));
    result.server_watch = watched.as_ref().map(crate::stats::result::WatchResult::of);
    let held = crate::check::apply(&conditions, &mut result);
    if args.quiet && !to_stdout {
        report::out(&report::text::summary(&info, &result));
    } else if !to_stdout {
        report::out(&report::text::render(&info, &result));
        if crate::interrupt::was_set() {
            report::out(&format!(
                "  interrupted {} stopped the run after {:.2}s measured of its {:?}: the figures are of that part\n",
                if args.tui { "q (or Ctrl-C)" } else { "Ctrl-C" },
                report.elapsed.as_secs_f64(),
                prepared.plan.load.shape.duration
            ));
        }
        if args.latency {
            report::out(&report::text::spectrum(&result.histograms.latency));
        }
        if let Some(w) = &watched {
            report::out(&report::text::render_watch(w));
        }
    }
    // TLS refused on every connection (a run that could not start): one line, exit status 2.
    if report.ops == 0
        && report.conn_errors.get(crate::outcome::ErrorClass::Tls) == report.conn_errors.total()
        && let Some(why) = report.error_samples.iter().find(|s| s.starts_with("tls"))
    {
        anyhow::bail!("every connection failed its TLS set-up: {why}");
    }
    if let Some(path) = &args.json {
        report::json::write(path, &result)?;
    }
    if let Some(path) = &args.csv {
        report::csv::write(path, &report::csv::intervals(&result))?;
    }
    if let Some(path) = &args.html {
        let name = result.label.clone().unwrap_or_else(|| result.target.clone());
        let page = report::html::page(&[report::html::Doc::Run(name, Box::new(result.clone()))], None)?;
        std::fs::write(path, page).with_context(|| format!("cannot write --html {}", path.display()))?;
    }
    drop(metrics);
    // A run that completed nothing measured nothing: said, and exit status 4.
    if !args.thresholds.allow_empty
        && let Some(line) = super::nothing_completed(&report, &info.target)
    {
        return Err(crate::check::Empty(line).into());
    }
    crate::check::verdict(held.into_iter().map(|c| (String::new(), c)).collect())
}

/// `--metrics-listen`: the cores copy their figures for it, and a thread serves them.
fn serve_metrics(
    addr: std::net::SocketAddr,
    prepared: &mut crate::plan::Prepared,
) -> Result<crate::metrics::Metrics> {
    if prepared.plan.load.repeat > 1 {
        anyhow::bail!("--metrics-listen serves one run: it cannot go with --repeat");
    }
    let live = crate::stats::live::live(prepared.job.cores.len());
    prepared.job.live = Some(live.clone());
    let labels = crate::metrics::RunLabels {
        protocol: prepared.plan.protocol.name.to_string(),
        target: prepared.plan.target.url.clone(),
        engine: prepared.plan.load.engine.name().to_string(),
    };
    crate::metrics::serve(addr, live, labels)
}
