//! The plan's rules, from the command line as a user types it (clap only, no I/O).

use super::*;
use crate::protocol::{ProtocolOptions, validate, validate_targets};
use clap::Parser;

/// The load options as a user types them (no I/O: clap only).
#[derive(Parser)]
struct Args {
    url: String,
    #[command(flatten)]
    load: LoadArgs<ProtocolOptions>,
    #[command(flatten)]
    engine: EngineArgs,
}

fn plan(argv: &[&str]) -> Result<LoadPlan> {
    let args = Args::try_parse_from(std::iter::once("wirebench").chain(argv.iter().copied()))?;
    validate(&args.url, &args.load, &args.engine, &Defaults::BENCH, &[0, 1, 2, 3])
}

fn error(argv: &[&str]) -> String {
    format!("{:#}", plan(argv).expect_err("refused"))
}

/// Several targets as `bench` takes them.
fn targets(urls: &[&str], argv: &[&str]) -> Result<LoadPlan> {
    let args = Args::try_parse_from(
        std::iter::once("wirebench").chain(std::iter::once("x")).chain(argv.iter().copied()),
    )?;
    let urls: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
    validate_targets(&urls, &args.load, &args.engine, &Defaults::BENCH, &[0, 1])
}

#[test]
fn several_targets_are_one_protocol_with_a_connection_each_at_least() {
    let p = targets(&["http://a:1/", "http://b:2/x"], &[]).unwrap();
    assert_eq!(p.targets().map(|t| t.authority.as_str()).collect::<Vec<_>>(), ["a:1", "b:2"]);
    let mixed = targets(&["http://a/", "ws://b/"], &[]).expect_err("refused").to_string();
    assert!(mixed.contains("one protocol per run"), "{mixed}");
    let few =
        targets(&["http://a/", "http://b/", "http://c/"], &["-c", "2"]).expect_err("refused").to_string();
    assert!(few.contains("at least as many connections"), "{few}");
    assert!(targets(&["http://a/", "nope"], &[]).is_err());
    assert!(error(&["http://h/", "--connect-rate", "0"]).contains("--connect-rate"));
    assert!(error(&["http://h/", "--no-keepalive", "--depth", "2"]).contains("--no-keepalive"));
}

#[test]
fn start_times_in_utc_or_unix_seconds() {
    let at =
        |t: &str| parse_start_at(t).map(|s| s.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64());
    assert_eq!(at("2026-11-30T23:10:00Z"), Ok(1_796_080_200.0));
    assert_eq!(at("1796080200"), Ok(1_796_080_200.0));
    assert_eq!(at("1796080200.5"), Ok(1_796_080_200.5));
    for bad in ["tomorrow", "2026-11-30T23:10:00+02:00", "-5", "1e20"] {
        assert!(parse_start_at(bad).is_err(), "{bad}");
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    assert!(parse_duration("ten").is_err());
    assert!(parse_duration("5 parsecs").is_err());
}

#[test]
fn defaults_come_from_the_command_and_the_protocol() {
    let p = plan(&["http://127.0.0.1:8080/x"]).unwrap();
    assert_eq!(
        (p.protocol.name, p.load.shape.connections, p.load.shape.duration),
        ("http1", 64, Duration::from_secs(10))
    );
    assert_eq!(p.load.cores, [0, 1, 2, 3]);
    assert_eq!(p.load.payload, None);
    let p = plan(&["nsq://h/t", "-n", "5", "-c", "2"]).unwrap();
    assert_eq!(
        (p.load.shape.ops, p.load.shape.duration, p.load.cores.len()),
        (Some(5), Duration::from_secs(600), 2)
    );
    assert_eq!(p.messages_per_op(), 1);
    let p = plan(&["nsq://h/t", "--batch", "10"]).unwrap();
    assert_eq!(p.messages_per_op(), 10);
}

#[test]
fn every_option_is_checked_before_anything_happens() {
    assert!(error(&["http://h/", "-c", "0"]).contains("--connections must be between 1"));
    assert!(error(&["http://h/", "--depth", "0"]).contains("--depth"));
    assert!(error(&["http://h/", "-n", "0"]).contains("at least 1"));
    assert!(error(&["http://h/", "--rate", "1e-18"]).contains("too low"));
    assert!(error(&["http://h/", "--interval", "0s"]).contains("--interval must be longer than zero"));
    assert!(error(&["http://h/", "--interval", "1s", "--rate", "5"]).contains("cannot be used with"));
    let p = plan(&["http://h/", "--interval", "250ms", "-c", "8"]).unwrap();
    assert_eq!(p.load.shape.workload, Workload::FixedRate { interval: Duration::from_millis(250) });
    assert!(error(&["http://h/", "--size", "999999999999"]).contains("larger than"));
    assert!(error(&["http://h/", "-H", "nocolon"]).contains("Name: value"));
    assert!(error(&["http://h/", "--cores", "9"]).contains("not available"));
    assert!(error(&["gopher://h/"]).contains("unsupported scheme"));
}

#[test]
fn bind_takes_addresses_and_ranges() {
    let v = parse_bind("127.0.0.2-127.0.0.4,::1").unwrap();
    let text: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(text, ["127.0.0.2", "127.0.0.3", "127.0.0.4", "::1"]);
    // A range's family is its own ends', whatever else the list holds.
    let v = parse_bind("::1-::2,127.0.0.2").unwrap();
    let text: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(text, ["::1", "::2", "127.0.0.2"]);
    assert_eq!(parse_bind("127.0.0.1-127.0.255.255").unwrap().len(), 65_535);
    assert!(parse_bind("127.0.0.4-127.0.0.2").unwrap_err().contains("upwards"));
    assert!(parse_bind("127.0.0.1-::1").unwrap_err().contains("one family"));
    assert!(parse_bind("localhost").unwrap_err().contains("not an address"));
    assert!(parse_bind("10.0.0.0-10.2.0.0").unwrap_err().contains("at most"));
    assert!(error(&["http://h/", "--bind", "127.0.0.2", "--engine", "glommio"]).contains("--engine uring"));
}

#[test]
fn options_of_another_protocol_are_refused_for_one_target() {
    assert_eq!(
        error(&["http://h/", "--batch", "3"]),
        "--batch applies to nsq://, nsq+http:// and nsq+https:// targets"
    );
    assert_eq!(error(&["nsq://h/t", "--text"]), "--text applies to ws:// and wss:// targets");
    assert_eq!(
        error(&["ws://h/", "-m", "POST"]),
        "-m/--method applies to http://, https://, h2c://, h2:// and h3:// targets"
    );
    assert_eq!(error(&["nsq://h/t", "--binary"]), "--binary applies to nsq+http:// and nsq+https:// targets");
    // The TLS schemes are the registry's: those TLS from the connect, then those that upgrade.
    let tls = crate::protocol::tls_schemes_text();
    assert!(tls.starts_with("https://, ") && tls.ends_with(" or nsq://…?tls=1"), "{tls}");
    assert_eq!(error(&["http://h/", "--insecure"]), format!("--insecure applies to TLS targets: {tls}"));
    assert!(
        error(&["http://h/", "--insecure", "--tls-resume"]).starts_with("--insecure and --tls-resume apply")
    );
    assert!(error(&["nsq://h/t", "--ca", "x.pem"]).contains("nsq://…?tls=1"));
    assert!(plan(&["nsq://h/t?tls=1", "--insecure"]).is_ok());
    assert!(error(&["nsq://h/t?tls=1", "--no-identify"]).contains("tls_v1"));
}

#[test]
fn a_protocol_checks_its_own_rules() {
    assert!(error(&["nsq://h/", "-n", "1"]).contains("names its topic"));
    assert!(error(&["nsq://h/t", "--batch", "100000", "--size", "100000"]).contains("32-bit"));
    assert!(error(&["nsq://h/t", "--batch", "2", "--defer-ms", "5"]).contains("--defer-ms"));
    assert!(error(&["nsq://h/t", "-H", "X: y"]).contains("-H"));
    assert!(error(&["http://h/", "-m", "G T"]).contains("not an HTTP method"));
}

#[test]
fn rate_stages_parse_and_set_the_window() {
    use crate::workload::Stage;
    let s = |from: f64, to: f64, secs: u64| Stage { from, to, length: Duration::from_secs(secs) };
    assert_eq!(parse_rate("2000"), Ok(RateArg::Fixed(2000.0)));
    assert_eq!(
        parse_rate("1000:30s,1000..5000:60s"),
        Ok(RateArg::Stages(vec![s(1000.0, 1000.0, 30), s(1000.0, 5000.0, 60)]))
    );
    for bad in ["1000:", "x:1s", "0:1s", "1000..:1s", "1000:0s", "5000"] {
        if bad != "5000" {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
    let p = plan(&["http://h/", "--rate", "1000:30s,5000:60s"]).unwrap();
    assert_eq!(p.load.shape.duration, Duration::from_secs(90));
    assert_eq!(p.load.shape.report_every, Some(Duration::from_secs(30)));
    assert!(error(&["http://h/", "--rate", "1000:30s", "-d", "10s"]).contains("last 30s in all"));
    assert!(error(&["http://h/", "--rate", "1000:30s", "-n", "10"]).contains("-n cannot apply"));
    assert!(
        error(&["http://h/", "--rate", "1000:30s,5000:60s", "--report-every", "7s"])
            .contains("does not divide")
    );
}
