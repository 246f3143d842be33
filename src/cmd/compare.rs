//! `wirebench compare`: the same payload through every protocol, one bench run each, on the
//! built-in servers (started in-process on loopback, pinned apart from the generator) or on
//! the given targets; then the table, the HTTP-vs-TCP ratios, JSON and an SVG chart.

use super::{Cli, Command, CompareArgs, parse_cores};
use crate::cmd::bench::{self, BenchPlan};
use crate::cmd::serve::{self, Builtin};
use crate::cpus::format as list_cores;
use crate::engine::EngineKind;
use crate::proto::http1::Http1Server;
use crate::proto::nsq::{NsqHttpServer, NsqServer, SinkLimits};
use crate::proto::ws::{DEFAULT_MAX_MESSAGE, WsServer};
use crate::report::compare::{CompareInfo, Row};
use crate::report::{self, compare as table};
use anyhow::{Context, Result, bail};
use clap::Parser;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One row to run: its label and the `bench` arguments after the URL.
struct Planned {
    label: String,
    url: String,
    extra: Vec<String>,
    messages_per_op: u64,
    /// How many times a message's payload crosses the wire (an echo: twice).
    payload_crossings: u8,
}

fn rows_for(url: &str, batch: usize) -> Result<Vec<Planned>> {
    let target = crate::target::parse(url)?;
    let row = |label: &str, extra: &[&str], per_op: u64| Planned {
        label: label.to_string(),
        url: url.to_string(),
        extra: extra.iter().map(|s| s.to_string()).collect(),
        messages_per_op: per_op,
        payload_crossings: 1,
    };
    let batch_text = batch.to_string();
    Ok(match target.scheme {
        crate::target::Scheme::Http => vec![row("HTTP/1.1 POST", &["-m", "POST"], 1)],
        crate::target::Scheme::Ws => {
            vec![Planned { payload_crossings: 2, ..row("WebSocket binary", &[], 1) }]
        }
        crate::target::Scheme::Nsq => vec![
            row("NSQ TCP PUB", &[], 1),
            row(&format!("NSQ TCP MPUB×{batch}"), &["--batch", &batch_text], batch as u64),
        ],
        crate::target::Scheme::NsqHttp => vec![row("NSQ HTTP /pub", &[], 1)],
    })
}

pub fn main(args: &CompareArgs) -> Result<()> {
    let online = crate::cpus::online();
    let server_cores = match &args.server_cores {
        Some(list) => parse_cores(Some(list))?,
        None => vec![*online.last().unwrap_or(&0)],
    };
    let client_cores = match &args.engine.cores {
        Some(list) => parse_cores(Some(list))?,
        None => {
            let rest: Vec<usize> = online.iter().copied().filter(|c| !server_cores.contains(c)).collect();
            if rest.is_empty() { server_cores.clone() } else { rest }
        }
    };
    if args.batch == 0 || args.messages == 0 || args.connections == 0 {
        bail!("--batch, -n and -c must be at least 1");
    }
    let interrupted = super::interrupted();
    let client_engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_CLIENT);
    // The built-in servers, unless targets were given.
    let stop = Arc::new(AtomicBool::new(false));
    let mut server = None;
    let urls: Vec<String> = if args.urls.is_empty() {
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("literal address");
        let limits = SinkLimits::default();
        let listeners = vec![
            (any, Builtin::Http(Http1Server::default())),
            (any, Builtin::Ws(WsServer::new(DEFAULT_MAX_MESSAGE))),
            (any, Builtin::Nsq(NsqServer::new(limits))),
            (any, Builtin::NsqHttp(NsqHttpServer::new(limits))),
        ];
        let engine = args.engine.engine.map_or(EngineKind::DEFAULT_SERVER, EngineKind::for_server);
        let handle = serve::start(engine, listeners, &server_cores, Default::default(), stop.clone())?;
        let a = handle.addrs.clone();
        server = Some(handle);
        vec![
            format!("http://{}/", a[0]),
            format!("ws://{}/", a[1]),
            format!("nsq://{}/test", a[2]),
            format!("nsq+http://{}/test", a[3]),
        ]
    } else {
        args.urls.clone()
    };
    let mut planned = Vec::new();
    for url in &urls {
        planned.extend(rows_for(url, args.batch)?);
    }
    let same_cpu = client_cores.iter().any(|c| server_cores.contains(c));
    let info = CompareInfo {
        payload: match &args.body_file {
            Some(p) => std::fs::metadata(p)
                .with_context(|| format!("cannot read --body-file {}", p.display()))?
                .len() as usize,
            None => args.size,
        },
        connections: args.connections,
        depth: args.depth,
        messages: args.messages,
        duration: args.duration,
        engine: match &server {
            Some(_) => format!(
                "{} generator, {} servers",
                client_engine.name(),
                args.engine.engine.map_or(EngineKind::DEFAULT_SERVER, EngineKind::for_server).name()
            ),
            None => format!("{} generator", client_engine.name()),
        },
        client_cores: client_cores.clone(),
        server_cores: server.as_ref().map(|_| server_cores.clone()),
        shared_cpu: same_cpu && server.is_some(),
    };
    // With `--json -` stdout carries the JSON alone.
    let human = args.json.as_deref() != Some(std::path::Path::new("-"));
    let say = |text: &str| {
        if human {
            report::out(&format!("{text}\n"));
        }
    };
    say(&table::header(&info));
    let mut rows = Vec::new();
    for p in planned {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        let ops = args.messages.div_ceil(p.messages_per_op).to_string();
        let mut argv: Vec<String> =
            ["wirebench", "bench", &p.url, "-c", &args.connections.to_string(), "-n", &ops]
                .iter()
                .map(|s| s.to_string())
                .collect();
        argv.extend(["-d".into(), format!("{}ms", args.duration.as_millis())]);
        argv.extend(["--depth".into(), args.depth.to_string(), "--cores".into(), list_cores(&client_cores)]);
        argv.extend(["--engine".into(), client_engine.name().into()]);
        match &args.body_file {
            Some(path) => argv.extend(["--body-file".into(), path.display().to_string()]),
            None => argv.extend(["--size".into(), args.size.to_string()]),
        }
        argv.extend(p.extra.iter().cloned());
        let Command::Bench(bench_args) = Cli::try_parse_from(&argv)?.command else { unreachable!() };
        let plan = BenchPlan::from_args(&bench_args)?;
        let (run_info, report) = bench::run(&plan).with_context(|| format!("{} ({})", p.label, p.url))?;
        let row = Row {
            label: p.label,
            info: run_info,
            report,
            payload: info.payload,
            payload_crossings: p.payload_crossings,
            ipv6: plan.target.addr.is_ipv6(),
        };
        say(&table::line(&row));
        rows.push(row);
    }
    if let Some(handle) = server {
        handle.stop()?;
    }
    report::finish_table(
        &table::footer(&rows),
        args.json.as_deref(),
        || table::json(&info, &rows),
        args.svg.as_deref(),
        || report::svg::compare(&info, &rows),
    )
}
