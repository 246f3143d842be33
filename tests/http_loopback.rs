//! `bench` against the built-in `serve http` on loopback: exact bytes per operation, zero
//! errors, and app byte totals equal to the kernel's.

mod common;
use common::*;
use wirebench::cmd::ServeKind;
use wirebench::outcome::ErrorClass;
use wirebench::proto::http1::{RESPONSE_HELLO, RESPONSE_OK, RequestSpec, encode_request};

fn request(addr: std::net::SocketAddr, method: &str, body: usize) -> Vec<u8> {
    encode_request(&RequestSpec {
        method: method.into(),
        host: addr.to_string(),
        target: "/".into(),
        headers: vec![],
        body: vec![b'x'; body],
    })
}

#[test]
fn get_bytes_per_op_are_exact_and_audited() {
    for engine in ENGINES {
        get_bytes_per_op_are_exact_and_audited_on(engine);
    }
}

fn get_bytes_per_op_are_exact_and_audited_on(engine: &str) {
    let server = start_builtin(ServeKind::Http);
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&url, "-c", "8", "-n", "20000", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 20000);
    assert_eq!(r.tx_per_op(), request(server.addr(), "GET", 0).len() as f64);
    assert_eq!(r.rx_per_op(), RESPONSE_HELLO.len() as f64);
    assert_eq!(r.tx.handshake + r.rx.handshake + r.tx.control + r.rx.control, 0);
    let served = wirebench::engine::ServerTally::sum(&server.stop().unwrap());
    // The server saw every request, and the pre-flight connection besides.
    assert_eq!(served.requests, 20000);
    assert_eq!(served.rx, r.tx.total());
    assert_eq!(served.tx, r.rx.total());
}

#[test]
fn pipelined_post_with_warmup_counts_only_measured_ops() {
    for engine in ENGINES {
        pipelined_post_with_warmup_counts_only_measured_ops_on(engine);
    }
}

fn pipelined_post_with_warmup_counts_only_measured_ops_on(engine: &str) {
    let server = start_builtin(ServeKind::Http);
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let r = bench_on(
        engine,
        &[
            &url, "-c", "4", "-d", "700ms", "--warmup", "200ms", "--depth", "8", "-m", "POST", "--size",
            "400", "--cores", &cpu,
        ],
    );
    assert_clean(&r);
    assert!(r.ops > 0);
    assert!(r.tx.warmup_op > 0, "warm-up traffic is audited");
    assert_eq!(r.tx_per_op(), request(server.addr(), "POST", 400).len() as f64);
    assert_eq!(r.rx_per_op(), RESPONSE_OK.len() as f64);
    assert!(r.elapsed.as_millis() >= 690 && r.elapsed.as_millis() < 2000, "{:?}", r.elapsed);
}

#[test]
fn server_that_closes_each_connection_means_reconnects_not_errors() {
    for engine in ENGINES {
        server_that_closes_each_connection_means_reconnects_not_errors_on(engine);
    }
}

fn server_that_closes_each_connection_means_reconnects_not_errors_on(engine: &str) {
    let server = start_builtin(ServeKind::Http);
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&url, "-c", "2", "-n", "200", "-H", "Connection: close", "--cores", &cpu]);
    assert_clean(&r);
    assert_eq!(r.ops, 200);
    assert!(r.reconnects >= 198, "reconnects {}", r.reconnects);
}

#[test]
fn status_errors_are_counted_and_the_run_goes_on() {
    for engine in ENGINES {
        status_errors_are_counted_and_the_run_goes_on_on(engine);
    }
}

fn status_errors_are_counted_and_the_run_goes_on_on(engine: &str) {
    // A header block over 8 KiB gets 431 and a close from the built-in server: every
    // operation fails with `status`, the run reconnects and ends on time.
    let server = start_builtin(ServeKind::Http);
    let url = format!("http://{}/", server.addr());
    let big = format!("X-Big: {}", "a".repeat(9000));
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&url, "-c", "2", "-d", "300ms", "-H", &big, "--cores", &cpu]);
    assert_eq!(r.ops, 0);
    assert!(r.failed.get(ErrorClass::Status) > 0);
    assert!(r.accounted());
    assert!(r.failures.keys().any(|f| f.to_string() == "HTTP 431"));
    assert!(r.elapsed.as_millis() < 2000);
}

#[test]
fn fixed_rate_holds_its_rate_and_keeps_both_latencies() {
    for engine in ENGINES {
        fixed_rate_holds_its_rate_and_keeps_both_latencies_on(engine);
    }
}

fn fixed_rate_holds_its_rate_and_keeps_both_latencies_on(engine: &str) {
    let server = start_builtin(ServeKind::Http);
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let r = bench_on(engine, &[&url, "-c", "4", "-d", "1s", "--rate", "2000", "--cores", &cpu]);
    assert_clean(&r);
    // 2000 due in the window; a slow machine may leave the last few in flight at the deadline.
    assert!((1800..=2004).contains(&r.ops), "{engine}: {} ops at 2000/s for 1 s", r.ops);
    assert_eq!(r.latency_uncorrected.len(), r.ops, "{engine}: both latencies for every op");
    assert!(r.latency_uncorrected.value_at_quantile(0.5) <= r.latency.value_at_quantile(0.5));
    let closed = bench_on(engine, &[&url, "-c", "2", "-n", "100", "--cores", &cpu]);
    assert!(closed.latency_uncorrected.is_empty(), "closed loops keep one latency");
}
