//! How a protocol's codec reaches an engine: [`Engines`], the one [`Drive`] there is, which
//! the registry hands to each protocol's `run`. It runs the engine `--engine` names (or the
//! QUIC engine) on its own thread while this one draws the progress line and, where no
//! progress line shows, `--report-every`'s rows.

use crate::clock::Instant;
use crate::codec::ClientCodec;
use crate::plan::{Drive, Prepared};
use crate::proto::h3::client::H3Client;
use crate::stats::Report;
use anyhow::{Context, Result};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A progress line is drawn for runs expected to last longer than this.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// The engines, as a [`Drive`].
pub struct Engines;

impl Drive for Engines {
    type Streams = H3Client;

    /// Drive the engine with `codec` on its own thread while this one draws the progress line
    /// (on a terminal, for runs longer than a moment). The one place a protocol's codec meets
    /// an engine: everything below is generic over it.
    /// `codec` builds the codec for a plan aimed at one target; it is asked once per target.
    fn drive<C, F>(p: &Prepared, codec: F) -> Result<Report>
    where
        C: ClientCodec + Send + 'static,
        F: Fn(&Prepared) -> C,
    {
        let codecs: Vec<C> = (0..p.job.addrs.len()).map(|i| p.on_target(i).codec(&codec)).collect();
        let engine = p.plan.load.engine;
        Engines::drive_with(p, move |job| crate::engine::run_client(engine, job, codecs))
    }

    /// Run HTTP/3 over QUIC: the client each target's plan builds (`h3`), the target's TLS in
    /// QUIC's configuration, on the QUIC engine.
    fn drive_quic<F>(p: &Prepared, h3: F) -> Result<Report>
    where
        F: Fn(&Prepared) -> H3Client,
    {
        let targets = (0..p.job.addrs.len())
            .map(|i| {
                let p = p.on_target(i);
                let tls = p.job.tls.get(i).cloned().flatten().context("h3:// without TLS")?;
                Ok(crate::engine::quic_io::Target {
                    h3: p.entries(&h3, H3Client::add_entries),
                    config: crate::engine::quic::client_config(tls.config.clone())?,
                    server_name: p.plan.target.host.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Engines::drive_with(p, move |job| crate::engine::quic_io::run_client(job, targets))
    }
}

impl Engines {
    /// Run `engine` on the job (its threads, its connections), showing progress meanwhile:
    /// the one way every protocol's run reaches an engine (the TCP engines through
    /// [`drive`](Drive::drive), HTTP/3's QUIC engine through [`drive_quic`](Drive::drive_quic)).
    fn drive_with<E>(p: &Prepared, engine: E) -> Result<Report>
    where
        E: FnOnce(&crate::plan::ClientJob) -> Result<crate::engine::ClientRun, crate::engine::EngineError>
            + Send
            + 'static,
    {
        // The view takes the terminal before the engine starts: if it cannot, nothing runs.
        let mut view = match (p.tui, &p.job.live) {
            (true, Some(live)) => Some(crate::report::tui::View::open(live.clone(), heading(p))?),
            _ => None,
        };
        let job = p.job.clone();
        let started = Instant::now();
        let worker = std::thread::spawn(move || engine(&job));
        let expected = p.job.shape.warmup + p.job.shape.duration;
        let visible = std::io::IsTerminal::is_terminal(&std::io::stdout())
            && (expected > PROGRESS_AFTER || p.job.shape.ops.is_some())
            && !p.tui;
        let progress = crate::report::Progress::new(visible, p.job.shape.ops, expected);
        let mut rows = p.live_rows.zip(p.job.live.clone()).map(|(every, live)| LiveRows::new(every, live));
        while !worker.is_finished() {
            std::thread::sleep(if view.is_some() {
                Duration::from_millis(25)
            } else {
                Duration::from_millis(100)
            });
            let done: u64 = p.job.progress.iter().map(|p| p.load(Ordering::Relaxed)).sum();
            progress.update(done, started.elapsed());
            if let Some(rows) = &mut rows {
                rows.tick(started.elapsed());
            }
            // `q` in the view stops the run as Ctrl-C does.
            if let Some(v) = &mut view
                && v.tick(started.elapsed())
            {
                p.job.stop.store(true, Ordering::Relaxed);
            }
        }
        drop(view);
        progress.finish();
        let run = worker.join().map_err(|_| anyhow::anyhow!("the engine thread panicked"))??;
        Ok(run.report())
    }
}

/// What the terminal view says about the run: what, where, on what, and how long.
fn heading(p: &Prepared) -> crate::report::tui::Heading {
    let shape = &p.job.shape;
    crate::report::tui::Heading {
        title: format!(
            "{} {} — {} engine on CPU {}, {} connections",
            p.plan.protocol.name,
            p.plan.target.url,
            p.plan.load.engine.name(),
            crate::cpus::format(&p.job.cores),
            shape.connections
        ),
        connections: shape.connections,
        expected: shape.ops.is_none().then_some(shape.warmup + shape.duration),
    }
}

/// `--report-every`'s rows as the run goes ([`Prepared::live_rows`](crate::plan::Prepared::live_rows)): at each interval's end,
/// what the cores' latest copies say happened since the last row. The copies are at most
/// [`crate::engine::PROGRESS_EVERY`] old, so a row's edges are that fuzzy; the exact table
/// comes at the end.
struct LiveRows {
    every: Duration,
    live: crate::stats::live::Live,
    next: Duration,
    ops: u64,
    errors: u64,
    latency: Option<hdrhistogram::Histogram<u64>>,
}

impl LiveRows {
    fn new(every: Duration, live: crate::stats::live::Live) -> LiveRows {
        crate::report::out(&crate::report::text::live_heading());
        LiveRows { every, live, next: every, ops: 0, errors: 0, latency: None }
    }

    fn tick(&mut self, elapsed: Duration) {
        if elapsed < self.next {
            return;
        }
        let (mut ops, mut errors, mut latency) = (0, 0, None::<hdrhistogram::Histogram<u64>>);
        for slot in self.live.iter() {
            let copy = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(c) = copy.as_ref() else { continue };
            ops += c.ops;
            errors += c.failed.total();
            match &mut latency {
                Some(h) => {
                    let _ = h.add(&c.latency);
                }
                None => latency = Some(c.latency.clone()),
            }
        }
        let mut interval = latency.clone();
        if let (Some(now), Some(before)) = (&mut interval, &self.latency) {
            let _ = now.subtract(before);
        }
        crate::report::out(&crate::report::text::live_row(
            self.next.saturating_sub(self.every),
            self.next,
            ops.saturating_sub(self.ops),
            errors.saturating_sub(self.errors),
            interval.as_ref(),
        ));
        (self.ops, self.errors, self.latency) = (ops, errors, latency);
        self.next += self.every;
    }
}
