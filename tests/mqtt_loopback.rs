//! `bench mqtt://` against `serve mqtt` on every engine, both versions, every QoS: the bytes
//! per operation the standards give, every operation accounted for, the broker's own count of
//! PUBLISHes equal to ours, the audit against the kernel's counts.

mod common;
use common::*;

/// A 400-byte PUBLISH on `test` (3.1.1): 1 + 2 (remaining length 408) + 2 + 4 + 2 (packet id,
/// QoS 1 and 2) + 400; 5.0 adds an empty properties block.
fn publish_len(v5: bool, qos: u8, topic: usize) -> f64 {
    let remaining = 2 + topic + if qos > 0 { 2 } else { 0 } + usize::from(v5) + 400;
    (1 + if remaining < 128 { 1 } else { 2 } + remaining) as f64
}

#[test]
fn every_qos_on_every_engine_both_versions() {
    for engine in ENGINES {
        for version in ["3.1.1", "5"] {
            for qos in ["0", "1", "2"] {
                let server = start_builtin("mqtt");
                let url = format!("mqtt://{}/test", server.addrs[0]);
                let cpu = client_cpu().to_string();
                let args =
                    [&url, "-c", "2", "-n", "3000", "--qos", qos, "--mqtt-version", version, "--cores", &cpu];
                let r = bench_on(engine, &args);
                let what = format!("{engine} MQTT {version} QoS {qos}");
                assert_clean(&r);
                assert_eq!(r.ops, 3000, "{what}");
                let (v5, q) = (version == "5", qos.parse::<u8>().unwrap());
                // QoS 0's topic is the connection's own: `test/` and its 23-character client id.
                let topic = if q == 0 { 4 + 1 + 23 } else { 4 };
                let tx = publish_len(v5, q, topic) + if q == 2 { 4.0 } else { 0.0 };
                let rx = match q {
                    0 => publish_len(v5, 0, topic),
                    1 => 4.0 + if v5 { 1.0 } else { 0.0 }, // 5.0: "no matching subscribers"
                    _ => 8.0,
                };
                assert_eq!((r.tx_per_op(), r.rx_per_op()), (tx, rx), "{what}");
                let tally = ServerTally::sum(&server.stop().unwrap());
                assert_eq!(tally.messages, 3000, "{what}: the broker counted every PUBLISH");
            }
        }
    }
}

#[test]
fn the_default_duration_with_depth_and_pacing() {
    // The default 10 s at depth 8 (QoS 1, identifiers in flight answered by id) and paced.
    let server = start_builtin("mqtt");
    let url = format!("mqtt://{}/test", server.addrs[0]);
    let cpu = client_cpu().to_string();
    let r = bench_on("uring", &[&url, "-c", "4", "--depth", "8", "--cores", &cpu]);
    assert_clean(&r);
    let paced =
        bench_on("uring", &[&url, "-c", "2", "--rate", "500", "-d", "2s", "--qos", "2", "--cores", &cpu]);
    assert_clean(&paced);
    assert!((900..=1100).contains(&paced.sent), "{} sent at 500/s for 2 s", paced.sent);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.messages, r.sent + paced.sent, "the broker counted every PUBLISH");
}

#[test]
fn mqtts_over_tls() {
    let started = serve_started("uring", "mqtt", &["--tls"]);
    let url = started.urls[0][0].clone();
    assert!(url.starts_with("mqtts://"), "{url}");
    let cpu = client_cpu().to_string();
    let r = bench_on("uring", &[&url, "-c", "1", "-n", "500", "--insecure", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 500);
    assert!(r.tls.used(), "TLS counted");
    assert_eq!(ServerTally::sum(&started.handle.stop().unwrap()).messages, 500);
}

#[test]
fn bad_mqtt_urls_and_options_are_one_line() {
    for (args, says) in [
        (vec!["mqtt://127.0.0.1:1/"], "names its topic"),
        (vec!["mqtt://127.0.0.1:1/a/+"], "topic filter"),
        (vec!["mqtt://127.0.0.1:1/t", "-H", "X: y"], "MQTT has no headers"),
    ] {
        let mut argv = vec!["wirebench", "bench"];
        argv.extend(&args);
        let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
        let wirebench::cmd::Command::Bench(a) = cli.command else { unreachable!() };
        let Err(err) = wirebench::cmd::bench::run(&a) else { panic!("{args:?}: not refused") };
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
}
