//! `wirebench compare`: the same payload through every protocol, one run each, on the built-in
//! servers (started in-process on loopback, pinned apart from the generator) or on the given
//! targets; then the table, the "versus" ratios, JSON and an SVG chart. The rows come from the
//! protocol registry: each protocol says which rows it has and how each one's plan differs.

use super::{CompareArgs, parse_cores};
use crate::engine::serve_conn::ServerLimits;
use crate::plan::EngineKind;
use crate::plan::{self, Defaults, EngineArgs, Payload};
use crate::protocol::{self, ServerOptions};
use crate::report::compare::{CompareInfo, Row};
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
    let engine = EngineArgs { cores: Some(crate::cpus::format(&client_cores)), engine: args.engine.engine };
    let mut load = plan::validate_load(&args.load, &engine, &Defaults::COMPARE, &online)?;
    load.payload.get_or_insert(Payload::Size(COMPARE_PAYLOAD));
    let payload = match &load.payload {
        Some(Payload::File(path)) => std::fs::metadata(path)
            .with_context(|| format!("cannot read --body-file {}", path.display()))?
            .len() as usize,
        Some(Payload::Size(n)) => *n,
        None => COMPARE_PAYLOAD,
    };
    let interrupted = crate::interrupt::flag();
    if args.tls && !args.urls.is_empty() {
        anyhow::bail!(
            "--tls starts the built-in servers over TLS; with your own targets, give TLS URLs ({})",
            crate::protocol::tls_schemes_text()
        );
    }
    // The built-in servers, unless targets were given.
    let server_engine = args.engine.engine.unwrap_or(EngineKind::DEFAULT_SERVER);
    let (urls, mut servers) = if args.urls.is_empty() {
        start_servers(server_engine, &server_cores, args.tls, &mut load)?
    } else {
        (args.urls.clone(), Vec::new())
    };
    let rows_planned = planned_rows(&urls, &load)?;
    let same_cpu = client_cores.iter().any(|c| server_cores.contains(c));
    let info = CompareInfo {
        payload,
        connections: load.shape.connections,
        depth: load.shape.depth,
        messages: load.shape.ops.unwrap_or(0),
        duration: load.shape.duration,
        engine: match servers.is_empty() {
            false => format!("{} generator, {} servers", load.engine.name(), server_engine.name()),
            true => format!("{} generator", load.engine.name()),
        },
        client_cores: client_cores.clone(),
        server_cores: (!servers.is_empty()).then(|| server_cores.clone()),
        shared_cpu: same_cpu && !servers.is_empty(),
        label_width: table::label_width(rows_planned.iter().map(|r| r.label.as_str())),
    };
    // With `--json -` or `--csv -` stdout carries that alone.
    let human = [&args.json, &args.csv].iter().all(|p| p.as_deref() != Some(std::path::Path::new("-")));
    let say = |text: &str| {
        if human {
            report::out(&format!("{text}\n"));
        }
    };
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
            ipv6: prepared.addr.is_ipv6(),
        };
        say(&table::line(&row, info.label_width));
        rows.push(row);
        // A built-in server that lost a core would make every later row a measurement of it.
        for handle in &mut servers {
            handle.check().context("a built-in server stopped serving")?;
        }
    }
    for handle in servers {
        handle.stop()?;
    }
    let mut footer = table::footer(&rows);
    if rows.iter().any(|r| r.label.ends_with(table::TLS_MARK)) {
        footer += &table::tls_table(&rows);
    }
    if rows.iter().any(|r| r.result.layers.is_some()) {
        footer += &table::layers_table(&rows);
    }
    if load.shape.per_op {
        footer += &table::per_connection_table(&rows);
    }
    let footer = report::wrap_prose(&footer, 100);
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

/// Every built-in server on `cores` (and again over TLS, whose certificate the load then
/// trusts): their URLs, and their handles to stop them.
fn start_servers(
    engine: EngineKind,
    cores: &[usize],
    tls: bool,
    load: &mut plan::Load,
) -> Result<(Vec<String>, Vec<crate::engine::ServerHandle>)> {
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("literal address");
    // QUIC's servers are TLS only: they start with the TLS ones.
    let plain: Vec<_> = protocol::SERVERS.iter().filter(|s| !s.quic).map(|s| (*s, any)).collect();
    let all: Vec<_> = protocol::SERVERS.iter().map(|s| (*s, any)).collect();
    let start = |servers: &[(&'static crate::plan::Server, std::net::SocketAddr)],
                 options: &ServerOptions| {
        super::serve::start(engine, servers, options, cores, ServerLimits::default(), crate::run::own_stop())
    };
    let started = start(&plain, &ServerOptions::default())?;
    let mut urls = started.urls.concat();
    let mut handles = vec![started.handle];
    if tls {
        // The same servers over TLS, on the same cores; the client trusts their certificate.
        let mut options = ServerOptions::default();
        options.tls.tls = true;
        let started = start(&all, &options)?;
        urls.extend(started.urls.concat());
        load.tls.trust = started.tls.iter().map(|t| t.cert_der.clone()).collect();
        handles.push(started.handle);
    }
    Ok((urls, handles))
}

/// The rows every URL's protocol has (its own `compare_rows`), TLS rows marked.
fn planned_rows(urls: &[String], load: &plan::Load) -> Result<Vec<crate::plan::CompareRow>> {
    let mut rows_planned = Vec::new();
    for url in urls {
        let plan = crate::protocol::aim(load, url)?;
        let mut rows = (plan.protocol.compare_rows)(&plan);
        if plan.target.tls.is_some() {
            for row in &mut rows {
                row.label += table::TLS_MARK;
                row.versus = None; // the versus ratios compare transports in plaintext
            }
        }
        rows_planned.extend(rows);
    }
    Ok(rows_planned)
}
