//! The same MQTT runs against a real mosquitto and against `serve mqtt`: equal bytes per
//! operation both ways at every QoS and version, zero errors, and mosquitto's own count equal
//! to ours — at QoS 0 and 1 the PUBLISHes it says it received
//! (`$SYS/broker/publish/messages/received`; mosquitto 2.0.11 leaves QoS 2 out of that count),
//! at QoS 2 the messages it delivered to a `mosquitto_sub` subscribed at QoS 2 (a subscriber
//! changes no byte of QoS 2's exchange; at QoS 1 it would: 5.0's PUBACK then drops its "no
//! matching subscribers").
//! Needs mosquitto and mosquitto_sub (`tools/install-peers.sh`); run by `.ci/run` with
//! `--include-ignored`.

mod common;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// mosquitto on a free loopback port, its `$SYS` topics updated every second.
fn start_mosquitto() -> (Peer, u16) {
    let port = free_port();
    let conf = std::env::temp_dir().join(format!("wirebench-mosquitto-{port}.conf"));
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\nsys_interval 1\npersistence false\nmax_queued_messages 0\n"),
    )
    .unwrap();
    let mosquitto =
        ["/usr/sbin/mosquitto", "mosquitto"].into_iter().find(|p| Command::new(p).arg("-h").output().is_ok());
    let child = Command::new(mosquitto.expect("mosquitto is installed (tools/install-peers.sh)"))
        .args(["-c", conf.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto starts");
    wait_listening(format!("127.0.0.1:{port}").parse().unwrap());
    (Peer(child), port)
}

/// `$SYS/broker/publish/messages/received`: its retained value, read by mosquitto_sub.
fn received(port: u16) -> u64 {
    let out = Command::new("mosquitto_sub")
        .args(["-p", &port.to_string(), "-t", "$SYS/broker/publish/messages/received", "-C", "1", "-W", "5"])
        .output()
        .expect("mosquitto_sub runs");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// The count once it holds `at_least` (mosquitto publishes it once a second), and a second
/// later, so that a count still growing is seen.
fn settled(port: u16, at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while received(port) < at_least && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(2100));
    received(port)
}

#[test]
#[ignore = "needs mosquitto: run by .ci/run"]
fn mosquitto_and_serve_mqtt_cost_the_same_bytes_and_mosquitto_counts_every_publish() {
    let (_mosquitto, port) = start_mosquitto();
    let ours = start_builtin("mqtt");
    let cpu = client_cpu().to_string();
    let mut expected = settled(port, 0);
    for version in ["3.1.1", "5"] {
        for qos in ["0", "1", "2"] {
            let what = format!("MQTT {version} QoS {qos}");
            // At QoS 2, a subscriber counts what mosquitto delivers (one line a message).
            let subscriber = (qos == "2").then(|| {
                let sub = Command::new("mosquitto_sub")
                    .args(["-p", &port.to_string(), "-t", "bench", "-q", "2", "-C", "4000", "-W", "60"])
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("mosquitto_sub runs");
                std::thread::sleep(Duration::from_millis(500)); // subscribed
                sub
            });
            let mut reports = Vec::new();
            for addr in [format!("127.0.0.1:{port}"), ours.addrs[0].to_string()] {
                let url = format!("mqtt://{addr}/bench");
                let args =
                    [&url, "-c", "2", "-n", "4000", "--qos", qos, "--mqtt-version", version, "--cores", &cpu];
                let r = bench(&args);
                assert_clean(&r);
                assert_eq!(r.ops, 4000, "{what} against {addr}");
                reports.push(r);
            }
            let (real, sink) = (&reports[0], &reports[1]);
            assert_eq!((real.tx_per_op(), real.rx_per_op()), (sink.tx_per_op(), sink.rx_per_op()), "{what}");
            assert_eq!(real.tx.handshake, sink.tx.handshake, "{what}: CONNECT (and SUBSCRIBE) alike");
            if let Some(sub) = subscriber {
                let out = sub.wait_with_output().unwrap();
                let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
                assert_eq!(lines, real.sent, "{what}: mosquitto delivered every message we sent");
                continue;
            }
            expected += real.sent;
            assert_eq!(settled(port, expected), expected, "{what}: mosquitto counted every PUBLISH we sent");
        }
    }
    assert_eq!(ServerTally::sum(&ours.stop().unwrap()).messages, 6 * 4000);
}

#[test]
#[ignore = "needs mosquitto: run by .ci/run"]
fn mosquitto_refusing_anonymous_clients_is_one_clear_line() {
    let port = free_port();
    let conf = std::env::temp_dir().join(format!("wirebench-mosquitto-{port}.conf"));
    std::fs::write(&conf, format!("listener {port} 127.0.0.1\nallow_anonymous false\n")).unwrap();
    let _mosquitto = Peer(
        Command::new("/usr/sbin/mosquitto")
            .args(["-c", conf.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto starts"),
    );
    wait_listening(format!("127.0.0.1:{port}").parse().unwrap());
    let cpu = client_cpu().to_string();
    for version in ["3.1.1", "5"] {
        let url = format!("mqtt://127.0.0.1:{port}/t");
        let r = bench(&[&url, "-c", "1", "-d", "1s", "--mqtt-version", version, "--cores", &cpu]);
        assert_eq!(r.ops, 0);
        let samples = r.error_samples.join(" | ");
        assert!(samples.contains("the broker refused CONNECT: not authorized"), "{version}: {samples}");
    }
}
