//! `wirebench compare`: the same payload through every protocol, one run each, on the built-in
//! servers (started in-process on loopback, pinned apart from the generator) or on the given
//! targets; then the table, the "versus" ratios, JSON and an SVG chart. The rows come from the
//! protocol registry: each protocol says which rows it has and how each one's plan differs.

use super::{CompareArgs, parse_cores};
use crate::engine::serve_conn::ServerLimits;
use crate::plan::EngineKind;
use crate::plan::{self, Defaults, EngineArgs, Payload};
use crate::protocol::{self, ServerOptions};
use crate::report::compare::{CompareInfo, CompareSetup, Row};
use crate::report::{self, compare as table};
use anyhow::{Context, Result};
use std::sync::atomic::Ordering;

/// The payload compared when neither `--size` nor `--body-file` is given: the NSQ study's.
const COMPARE_PAYLOAD: usize = 400;

pub fn main(args: &CompareArgs) -> Result<()> {
    let conditions = crate::check::parse_all(&args.thresholds.fail_if)?;
    report::check_writable(&[
        ("--json", args.json.as_deref()),
        ("--csv", args.csv.as_deref()),
        ("--svg", args.svg.as_deref()),
    ])?;
    let online = crate::cpus::online();
    let (server_cores, client_cores) = cores(args, &online)?;
    let engine = EngineArgs { cores: Some(crate::cpus::format(&client_cores)), engine: args.engine.engine };
    let mut load = plan::validate_load(&args.load, &engine, &Defaults::COMPARE, &online)?;
    load.payload.get_or_insert(Payload::Size(COMPARE_PAYLOAD));
    let payload = payload_size(&load)?;
    let interrupted = crate::interrupt::flag();
    if args.tls && !args.urls.is_empty() {
        anyhow::bail!(
            "--tls starts the built-in servers over TLS; with your own targets, give TLS URLs ({})",
            crate::protocol::tls_schemes_text()
        );
    }
    if args.unix && !args.urls.is_empty() {
        anyhow::bail!(
            "--unix starts the built-in servers on Unix sockets too; for your own server on one, give --unix-socket PATH"
        );
    }
    // The built-in servers, unless targets were given.
    let server_engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_SERVER);
    let (urls, mut servers, _sockets) = if args.urls.is_empty() {
        start_servers(server_engine, &server_cores, (args.tls, args.unix), payload, &mut load)?
    } else {
        (args.urls.iter().map(|u| (u.clone(), None)).collect(), Vec::new(), None)
    };
    let rows_planned = planned_rows(&urls, &load)?;
    let built_in = (!servers.is_empty()).then_some(server_engine);
    let label_width = table::label_width(rows_planned.iter().map(|r| r.label.as_str()));
    let info = info(&load, payload, built_in, client_cores, server_cores, label_width);
    // With `--json -` or `--csv -` stdout carries that alone.
    let human = [&args.json, &args.csv].iter().all(|p| p.as_deref() != Some(std::path::Path::new("-")));
    let say = |text: &str| {
        if human {
            report::out(&format!("{text}\n"));
        }
    };
    let screen = super::series_view(args.tui, !human, None)?;
    say(&table::header(&info));
    let mut rows = Vec::new();
    let mut held = Vec::new();
    let mut empty = Vec::new();
    for planned in rows_planned {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        let where_ = format!("{} ({})", planned.label, planned.plan.target.url);
        let context = || where_.clone();
        let prepared = crate::run::prepare(planned.plan).with_context(context)?;
        let (run_info, report) = crate::run::run(&prepared).with_context(context)?;
        if let Some(line) = super::nothing_completed(&report, &where_) {
            empty.push(line);
        }
        let mut result = crate::report::json::bench(&run_info, &report, Some(planned.label.clone()));
        held.extend(
            crate::check::apply(&conditions, &mut result).into_iter().map(|c| (planned.label.clone(), c)),
        );
        let row = Row {
            label: planned.label,
            info: run_info,
            result,
            payload,
            payload_crossings: planned.payload_crossings,
            versus: planned.versus,
            floor: planned.floor,
            ipv6: prepared.addr.is_ipv6(),
        };
        say(&table::line(&row, info.label_width));
        rows.push(row);
        // A built-in server that lost a core would make every later row a measurement of it.
        for handle in &mut servers {
            handle.check().context("a built-in server stopped serving")?;
        }
    }
    servers.into_iter().try_for_each(|handle| handle.stop().map(drop))?;
    drop(screen);
    let footer = footer(&rows, load.shape.per_op);
    if let Some(path) = &args.csv {
        report::csv::write(path, &report::csv::compare_rows(&table::json(&info, &rows)))?;
    }
    report::finish_table(
        &if human { footer } else { String::new() },
        args.json.as_deref(),
        || table::json(&info, &rows),
        args.svg.as_deref(),
        || report::svg::compare(&info, &rows),
    )?;
    // A row that completed nothing measured nothing: said, and exit status 4.
    if !empty.is_empty() && !args.thresholds.allow_empty {
        return Err(crate::check::Empty(empty.join("\n")).into());
    }
    crate::check::verdict(held)
}

/// What the comparison runs with, for its header and JSON: `built_in` is the built-in
/// servers' engine (`None`: the targets were the user's own).
fn info(
    load: &plan::Load,
    payload: usize,
    built_in: Option<EngineKind>,
    client_cores: Vec<usize>,
    server_cores: Vec<usize>,
    label_width: usize,
) -> CompareInfo {
    let same_cpu = client_cores.iter().any(|c| server_cores.contains(c));
    CompareInfo {
        setup: CompareSetup {
            payload,
            connections: load.shape.connections,
            depth: load.shape.depth,
            messages: load.shape.ops.unwrap_or(0),
            client_cores,
            server_cores: built_in.map(|_| server_cores),
        },
        duration: load.shape.duration,
        engine: match built_in {
            Some(server) => format!("{} generator, {} servers", load.engine.name(), server.name()),
            None => format!("{} generator", load.engine.name()),
        },
        shared_cpu: same_cpu && built_in.is_some(),
        label_width,
    }
}

/// The servers' cores (`--server-cores`, or the last CPU) and the generator's (`--cores`, or
/// every other CPU; the servers' own on a 1-CPU machine).
fn cores(args: &CompareArgs, online: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
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
    Ok((server_cores, client_cores))
}

/// The payload's size in bytes (a `--body-file`'s length).
fn payload_size(load: &plan::Load) -> Result<usize> {
    Ok(match &load.payload {
        Some(Payload::File(path)) => std::fs::metadata(path)
            .with_context(|| format!("cannot read --body-file {}", path.display()))?
            .len() as usize,
        Some(Payload::Size(n)) => *n,
        None => COMPARE_PAYLOAD,
    })
}

/// The footers under the table: the notes, and the floor, TLS, layers and per-connection tables
/// where rows have them, wrapped at 100 columns.
fn footer(rows: &[Row], per_op: bool) -> String {
    let mut footer = table::footer(rows);
    if rows.iter().any(|r| r.floor) {
        footer += &table::floor_table(rows);
    }
    if rows.iter().any(|r| r.label.ends_with(table::TLS_MARK)) {
        footer += &table::tls_table(rows);
    }
    if rows.iter().any(|r| r.label.ends_with(table::UNIX_MARK)) {
        footer += &table::unix_table(rows);
    }
    if rows.iter().any(|r| r.result.layers.is_some()) {
        footer += &table::layers_table(rows);
    }
    if per_op {
        footer += &table::per_connection_table(rows);
    }
    report::wrap_prose(&footer, 100)
}

/// A target: its URL, and the Unix socket its connections go to instead of the URL's port.
type Aim = (String, Option<std::sync::Arc<std::path::Path>>);

/// A folder of the run's Unix sockets, removed with what is left in it.
struct SocketDir(std::path::PathBuf);

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every built-in server on `cores` (and again over TLS, whose certificate the load then
/// trusts; and on a Unix socket each, those with one listener): their targets, their handles
/// to stop them, and the sockets' folder.
fn start_servers(
    engine: EngineKind,
    cores: &[usize],
    (tls, unix): (bool, bool),
    payload: usize,
    load: &mut plan::Load,
) -> Result<(Vec<Aim>, Vec<crate::engine::ServerHandle>, Option<SocketDir>)> {
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("literal address");
    // QUIC's servers are TLS only: they start with the TLS ones.
    // UDP's (the floor under QUIC) run under --tls alone, in plaintext beside QUIC's rows, where
    // UDP_RR runs: on the `uring` engine, with sockets that stay, one request in flight, each
    // message a datagram (else QUIC's rows say no floor was measured for them).
    let udp = tls
        && load.engine == EngineKind::Uring
        && !load.shape.per_op
        && load.shape.depth == 1
        && payload <= crate::proto::tcp::udp::MAX_DATAGRAM as usize;
    let plain: Vec<_> = protocol::SERVERS
        .iter()
        .filter(|s| !s.quic && (s.datagrams.is_none() || udp))
        .map(|s| (*s, any.into()))
        .collect();
    let all: Vec<_> =
        protocol::SERVERS.iter().filter(|s| s.datagrams.is_none()).map(|s| (*s, any.into())).collect();
    let start = |servers: &[(&'static crate::plan::Server, crate::plan::Endpoint)],
                 options: &ServerOptions| {
        super::serve::start(engine, servers, options, cores, ServerLimits::default(), crate::run::own_stop())
    };
    let started = start(&plain, &ServerOptions::default())?;
    let mut urls: Vec<Aim> = started.urls.concat().into_iter().map(|u| (u, None)).collect();
    let mut handles = vec![started.handle];
    let mut dir = None;
    if unix {
        // Each server with one listener again on a socket of its own, in a folder of the run's.
        let folder =
            SocketDir(std::env::temp_dir().join(format!("wirebench-compare-{}", std::process::id())));
        std::fs::create_dir_all(&folder.0).with_context(|| format!("cannot make {}", folder.0.display()))?;
        let on_paths: Vec<_> = protocol::SERVERS
            .iter()
            .filter(|s| {
                !s.quic
                    && (s.listeners)(any, &ServerOptions::default().set(), false).is_ok_and(|l| l.len() == 1)
            })
            .map(|s| (*s, crate::plan::Endpoint::Unix(folder.0.join(format!("{}.sock", s.name)).into())))
            .collect();
        let started = start(&on_paths, &ServerOptions::default())?;
        for ((_, path), server_urls) in on_paths.iter().zip(&started.urls) {
            let crate::plan::Endpoint::Unix(path) = path else { continue };
            urls.extend(server_urls.iter().map(|u| (u.clone(), Some(path.clone()))));
        }
        handles.push(started.handle);
        dir = Some(folder);
    }
    if tls {
        // The same servers over TLS, on the same cores; the client trusts their certificate.
        let mut options = ServerOptions::default();
        options.tls.tls = true;
        let started = start(&all, &options)?;
        urls.extend(started.urls.concat().into_iter().map(|u| (u, None)));
        load.tls.trust = started.tls.iter().map(|t| t.cert_der.clone()).collect();
        handles.push(started.handle);
    }
    Ok((urls, handles, dir))
}

/// The rows every URL's protocol has (its own `compare_rows`), TLS rows and rows over a Unix
/// socket marked.
fn planned_rows(urls: &[Aim], load: &plan::Load) -> Result<Vec<crate::plan::CompareRow>> {
    let mut rows_planned = Vec::new();
    for (url, unix) in urls {
        let mut plan = crate::protocol::aim(load, url)?;
        // A built-in server's own socket (`--unix`), or the user's `--unix-socket` for theirs.
        let path = unix.clone().or_else(|| load.unix.clone());
        plan.load.unix = path.clone();
        let mut rows = (plan.protocol.compare_rows)(&plan);
        for row in &mut rows {
            row.plan.load.unix = path.clone();
            let mark = match (plan.target.tls.is_some(), unix.is_some()) {
                (true, _) => table::TLS_MARK,
                (false, true) => table::UNIX_MARK,
                (false, false) => continue,
            };
            row.label += mark;
            row.versus = None; // the versus ratios compare protocols over TCP in plaintext
        }
        rows_planned.extend(rows);
    }
    Ok(rows_planned)
}
