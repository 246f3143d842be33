//! `bench nsq://` and `bench nsq+http://` against the built-in nsqd-compatible sink.

mod common;
use common::*;
use wirebench::cmd::ServeKind;
use wirebench::outcome::ErrorClass;

fn tcp_url(server: &wirebench::engine::ServerHandle, topic: &str) -> String {
    format!("nsq://{}/{topic}", server.addrs[0])
}
fn http_url(server: &wirebench::engine::ServerHandle, topic: &str) -> String {
    format!("nsq+http://{}/{topic}", server.addrs[1])
}

#[test]
fn pub_100000_by_400_bytes_is_413_written_10_read() {
    for engine in ENGINES {
        pub_100000_by_400_bytes_is_413_written_10_read_on(engine);
    }
}

fn pub_100000_by_400_bytes_is_413_written_10_read_on(engine: &str) {
    let server = start_builtin(ServeKind::Nsq);
    let cpu = client_cpu().to_string();
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-n", "100000", "--size", "400", "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!(r.ops, 100_000);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (413.0, 10.0));
    // Magic + IDENTIFY out, its OK frame back: handshake, apart from the operations.
    assert!(r.tx.handshake > 4 + 9 + 4);
    assert_eq!(r.rx.handshake, 10);
    let tally = ServerTally::sum(&server.stop().unwrap());
    assert_eq!(tally.messages, 100_000);
}

#[test]
fn mpub_of_10_by_400_is_4058_and_counts_messages() {
    for engine in ENGINES {
        mpub_of_10_by_400_is_4058_and_counts_messages_on(engine);
    }
}

fn mpub_of_10_by_400_is_4058_and_counts_messages_on(engine: &str) {
    let server = start_builtin(ServeKind::Nsq);
    let cpu = client_cpu().to_string();
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "2", "-n", "1000", "--batch", "10", "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (4058.0, 10.0));
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 10_000);
}

#[test]
fn http_pub_and_mpub_bytes() {
    for engine in ENGINES {
        http_pub_and_mpub_bytes_on(engine);
    }
}

fn http_pub_and_mpub_bytes_on(engine: &str) {
    let server = start_builtin(ServeKind::Nsq);
    let cpu = client_cpu().to_string();
    let host = "Host: 127.0.0.1:4151";
    let r =
        bench_on(engine, &[&http_url(&server, "test"), "-c", "1", "-n", "2000", "-H", host, "--cores", &cpu]);
    assert_clean(&r);
    // POST /pub?topic=test … with a 400-byte body; nsqd 1.3.0's 200 answer is 156 bytes.
    assert_eq!((r.tx_per_op(), r.rx_per_op()), (476.0, 156.0));
    let r = bench_on(
        engine,
        &[&http_url(&server, "test"), "-c", "1", "-n", "500", "--batch", "10", "-H", host, "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!(r.rx_per_op(), 156.0);
    let r = bench_on(
        engine,
        &[&http_url(&server, "test"), "-n", "500", "--batch", "10", "--binary", "-H", host, "--cores", &cpu],
    );
    assert_clean(&r);
    assert_eq!(ServerTally::sum(&server.stop().unwrap()).messages, 2000 + 5000 + 5000);
}

#[test]
fn heartbeats_are_answered_with_nop_as_control_bytes() {
    for engine in ENGINES {
        heartbeats_are_answered_with_nop_as_control_bytes_on(engine);
    }
}

fn heartbeats_are_answered_with_nop_as_control_bytes_on(engine: &str) {
    let server = start_builtin(ServeKind::Nsq);
    let cpu = client_cpu().to_string();
    let identify = r#"{"client_id":"hb","heartbeat_interval":1000}"#;
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-d", "2500ms", "--identify", identify, "--cores", &cpu],
    );
    assert_clean(&r);
    let beats = r.rx.control / 19;
    assert!(beats >= 2, "heartbeats: {beats}");
    assert_eq!(r.rx.control, 19 * beats, "each heartbeat frame is 19 bytes");
    assert_eq!(r.tx.control, 4 * beats, "each answered with NOP\\n");
}

#[test]
fn refused_publishes_are_counted_by_code_and_the_run_goes_on() {
    for engine in ENGINES {
        refused_publishes_are_counted_by_code_and_the_run_goes_on_on(engine);
    }
}

fn refused_publishes_are_counted_by_code_and_the_run_goes_on_on(engine: &str) {
    let server = start_builtin(ServeKind::Nsq);
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&tcp_url(&server, "bad!"), "-c", "2", "-d", "500ms", "--cores", &cpu]);
    assert_eq!(r.ops, 0);
    assert!(r.failed.get(ErrorClass::Protocol) > 2);
    assert!(r.accounted());
    assert!(r.failures.keys().any(|f| f.to_string() == "E_BAD_TOPIC"));
    assert!(r.reconnects > 2, "nsqd closes after an error; the client reconnects");
    assert!(r.elapsed.as_millis() < 2500);
    let r = bench_on(
        engine,
        &[&tcp_url(&server, "test"), "-c", "1", "-d", "300ms", "--size", "2000000", "--cores", &cpu],
    );
    assert!(r.failures.keys().any(|f| f.to_string() == "E_BAD_MESSAGE"));
}
