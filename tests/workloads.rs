//! Workload shapes and phases on every client engine against the built-in servers: a
//! per-connection interval, connection per operation, phase histograms, status counts.

mod common;
use common::*;

#[test]
fn an_interval_per_connection_sends_on_schedule() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        // 20 connections, one operation every 100 ms each, for 3 s: 600 operations.
        let r = bench_on(engine, &[&url, "--interval", "100ms", "-c", "20", "-d", "3s", "--cores", &cpu]);
        assert_clean(&r);
        assert!((588..=612).contains(&r.ops), "{engine}: {} operations, 600 ± 2 % expected", r.ops);
        assert!(!r.latency_uncorrected.is_empty(), "{engine}: paced runs keep the uncorrected latency");
    }
}
