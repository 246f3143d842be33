//! A plan made ready to run: [`Prepared`] (resolved, its payload read, its limits raised) and
//! the [`ClientJob`] an engine drives; [`Drive`], how a protocol's codec reaches an engine
//! without this floor or the protocols knowing the engines.

use super::LoadPlan;
use crate::codec::ClientCodec;
use crate::stats::Report;
use crate::workload::Shape;
use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

/// How a protocol's client reaches an engine: implemented once by the layer that runs plans
/// (`drive::Engines`), handed to each protocol's `run` as its type by the registry — so the
/// codecs are monomorphized into the engines' loops (never `dyn`) while every call runs
/// downwards.
pub trait Drive {
    /// The client the QUIC engine drives (HTTP/3's): streams, not a byte stream.
    type Streams;

    /// Drive the engine `--engine` names with the codec `codec` builds for each target.
    fn drive<C, F>(p: &Prepared, codec: F) -> Result<Report>
    where
        C: ClientCodec + Send + 'static,
        F: Fn(&Prepared) -> C;

    /// Drive the QUIC engine with the client `streams` builds for each target.
    fn drive_quic<F>(p: &Prepared, streams: F) -> Result<Report>
    where
        F: Fn(&Prepared) -> Self::Streams;
}

/// A protocol's `run`: its codec built and driven by `D` (the registry names `D`).
pub type Run = fn(&Prepared) -> Result<Report>;

/// Everything an engine needs to drive the client side of a run.
#[derive(Debug, Clone)]
pub struct ClientJob {
    /// The targets' addresses: connection i goes to `addrs[i % addrs.len()]`.
    pub addrs: Vec<super::Endpoint>,
    /// CPUs to pin one engine thread each to.
    pub cores: Vec<usize>,
    pub shape: Shape,
    /// The run's seed for the codecs' randomness (each connection's is derived from it).
    pub seed: u64,
    /// Set by Ctrl-C: connections stop sending, drain and close.
    pub stop: Arc<AtomicBool>,
    /// Operations completed so far per core, published a few times a second for the progress line.
    pub progress: Arc<[AtomicU64]>,
    /// When the measured window opens (a fresh one per run: see `engine::run_client_threads`).
    pub window: Arc<crate::workload::Window>,
    /// Per target, its TLS set-up (`None`: plaintext); empty: none speaks TLS.
    pub tls: Vec<Option<Arc<crate::tls::options::ClientTls>>>,
    /// Source addresses, connection i from `bind[i % len]` (`uring` engine); empty: any.
    pub bind: Vec<std::net::IpAddr>,
    /// A PROXY header first on every connection (`--proxy-protocol`), and the client it claims.
    pub proxy: Option<(crate::proxy_header::ProxyVersion, Option<std::net::IpAddr>)>,
    /// How long before a paced send the `uring` engine stays awake for it (`--spin`).
    pub spin: Duration,
    /// `--close-reset`: each connection closed with a reset (no `TIME_WAIT` here).
    pub reset_close: bool,
    /// How late the `uring` engine may wake for paced sends (`--slack`).
    pub slack: Duration,
    /// How long the `uring` engine may wait to wake once for several completions (`--gather`).
    pub gather: Duration,
    /// Where each core copies its figures a few times a second while the run goes on
    /// (`--metrics-listen`); `None`: nobody reads them.
    pub live: Option<crate::stats::live::Live>,
    /// `--requests`: the order connections pick the entries in, and how many kinds they
    /// are reported under (0: no file).
    pub picks: Option<crate::requests::Picks>,
    pub kinds: usize,
}

/// A plan made ready to run (by `run::prepare`), then run by its protocol's `run`, which builds
/// its codec and hands it to a [`Drive`]: the layer above, given to it by the registry.
#[derive(Clone)]
pub struct Prepared {
    pub plan: LoadPlan,
    /// The address of `plan.target`; the job holds every target's.
    pub addr: super::Endpoint,
    /// The payload of every operation (of a `--requests` entry that gives none).
    pub body: Arc<[u8]>,
    /// `--requests`: the entries (each protocol builds its codec once per entry).
    pub requests: Option<Arc<crate::requests::Requests>>,
    /// This machine's name: a run's default label, and what a protocol may say it is (NSQ's
    /// `IDENTIFY`).
    pub hostname: String,
    /// The method a `--requests` entry names, for the protocols whose entries are HTTP
    /// requests ([`Protocol::http_method`](super::Protocol::http_method) is `Some`); `None`: the options' own.
    pub method: Option<String>,
    pub job: ClientJob,
    /// What the pre-flight connections carried (before any engine; in the report apart).
    pub preflight: crate::stats::Preflight,
    /// `--report-every` where no progress line shows: a row printed as each interval ends (as
    /// `iperf3 -i`), from the copies the cores publish ([`ClientJob::live`]), before the exact
    /// table at the end.
    pub live_rows: Option<Duration>,
    /// `--tui`: the run drawn in a terminal view as it goes, from the same copies.
    pub tui: bool,
}

impl Prepared {
    /// The same plan aimed at its target `i` alone (0: the first), to build that target's codec.
    pub fn on_target(&self, i: usize) -> Prepared {
        let mut p = self.clone();
        if i > 0 {
            p.plan.target = self.plan.also[i - 1].clone();
            p.addr = self.job.addrs[i].clone();
        }
        p.plan.also.clear();
        p
    }

    /// The client codec `build` makes for this plan: with `--requests`, one per entry (this
    /// plan with the entry's changes), gathered into the first by
    /// [`add_entries`](ClientCodec::add_entries), each entry encoded once.
    pub fn codec<C: ClientCodec>(&self, build: &impl Fn(&Prepared) -> C) -> C {
        self.entries(build, C::add_entries)
    }

    /// The same for any client that gathers entries (`add`: HTTP/3's, which is no
    /// `ClientCodec`: its engine drives streams, not a byte stream).
    pub fn entries<C>(&self, build: &impl Fn(&Prepared) -> C, add: impl Fn(&mut C, C)) -> C {
        let Some(requests) = &self.requests else { return build(self) };
        let mut codec: Option<C> = None;
        for entry in &requests.entries {
            let c = build(&self.for_entry(entry));
            match &mut codec {
                Some(first) => add(first, c),
                None => codec = Some(c),
            }
        }
        codec.unwrap_or_else(|| build(self))
    }

    /// This plan with a `--requests` entry's changes: its body, method, path and headers.
    fn for_entry(&self, entry: &crate::requests::Entry) -> Prepared {
        let mut p = self.clone();
        if let Some(body) = &entry.body {
            p.body = body.clone();
        }
        if let Some(method) = &entry.method {
            p.method = Some(method.clone());
        }
        if let Some(path) = &entry.path {
            p.plan.target.path = path.clone();
        }
        p.plan.load.headers.extend(entry.headers.iter().cloned());
        p
    }

    /// The `Host` to name in requests: the target's authority as written.
    pub fn authority(&self) -> &str {
        &self.plan.target.authority
    }
}

impl ClientJob {
    /// What connection `index` to target `target` sends first (`--proxy-protocol`'s header).
    pub fn preamble(&self, target: usize, index: usize) -> Option<Vec<u8>> {
        crate::proxy_header::for_connection(self.proxy, self.addrs[target].ip()?, index)
    }

    /// A core's recorder for this job: per target with several, with a time series when asked.
    pub fn recorder(&self, cpu: usize) -> crate::stats::CoreRecorder {
        let mut rec = crate::stats::CoreRecorder::for_shares(cpu, self.addrs.len(), self.kinds)
            .with_series(self.shape.report_every);
        rec.opener = match self.shape.connect_rate {
            Some(crate::workload::ConnectRate::Auto { max }) => {
                Some(crate::opener::Opener::new(max / self.cores.len().max(1) as f64))
            }
            Some(crate::workload::ConnectRate::Fixed(_)) => None,
            None => Some(crate::opener::Opener::first_openings()),
        };
        rec
    }

    /// The run's window: it opens once every connection is set up, and at the latest once the
    /// last connection's connect could have timed out (a connection per operation measures
    /// its set-up in each operation, and opens it at the start). `cores`: how many open them.
    pub fn fresh_window(shape: &Shape, cores: usize) -> Arc<crate::workload::Window> {
        let ramp = shape.ramp_bound(shape.connections, cores);
        let connections = if shape.per_op { 0 } else { shape.connecting() };
        // The wall-clock start as this process's monotonic instant (one clock for the run).
        let not_before = shape.start_at.map(|at| {
            let ahead = at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO);
            crate::clock::Instant::now() + ahead
        });
        Arc::new(crate::workload::Window::new(connections, ramp + 2 * shape.timeout, not_before))
    }
}
