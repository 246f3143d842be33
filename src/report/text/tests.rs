//! Tests of `report/text.rs`.

use super::*;
use crate::stats::result::fixtures;

fn info() -> RunInfo {
    RunInfo::fixture("http://t/", Some(std::time::Duration::from_micros(30)))
}

/// A fixed result in, the exact text out: every line a user reads.
#[test]
fn a_runs_summary_is_exactly_this() {
    let r = fixtures::run("host-a", 1000, 20_000, 2);
    let expected = "\
http1 http://t/ — uring engine on CPU 0, 4 connections, depth 1, 2.00s measured
  ops         1000 completed in 2.00s = 500 ops/s  (sent 1002 = 1000 completed + 2 failed)
  latency     min 20.0us  mean 20.5us  p50 20.5us  p90 20.9us  p99 21.0us  p99.9 21.0us  max 21.0us
  phases (ms)        min      mean   [+/-sd]    median       max
    total           0.020     0.021     0.000     0.021     0.021  (due to last byte, 1000 samples)
  served in   50% 0.021  66% 0.021  75% 0.021  80% 0.021  90% 0.021  95% 0.021  98% 0.021  99% 0.021  100% 0.021 (ms, of the total)
  bytes/op    tx 100.00  rx 50.00  (bytes of completed operations / completed)
  transfer    tx 97.66 KiB (48.86 KiB/s)  rx 48.83 KiB (24.43 KiB/s) in the measured window
  other bytes handshake tx 7 rx 0  control tx 0 rx 0  warm-up tx 0 rx 0  failed ops tx 0 rx 0
  connections 3 opened, 0 reconnects
  answers     200: 1000
  failed ops  2 (timeout 1, status 1)
  conn errors 1 (connect 1)
              refused: HTTP 503 ×1
              e.g. status: HTTP 503
              e.g. connect: refused
  per core    cpu  ops         share   busy   cpu/op
                0  1000        100.0%     1%  20.00us
  audit       app tx 100007 rx 50000  kernel tx 100007 rx 50000 (TCP_INFO at close, 1 socket, segs out 0 in 0): match
  intervals     from s     to s       ops      ops/s  errors       p50       p99
                  0.00     1.00      1000       1000       0    20.6us    21.0us
";
    assert_eq!(render(&info(), &r), expected);
}

/// Issue 34 item 8: operations due and never sent are blamed on the side the evidence
/// points to — the server when some came due on busy connections, the generator (and its
/// lag) when none did; the kernel's note appears only when this run's own connections
/// retransmitted or packets were dropped, not for other processes' retransmits.
#[test]
fn verdicts_blame_the_side_the_evidence_points_to() {
    let mut r = fixtures::run("host-a", 1000, 20_000, 2);
    r.due_unsent = 33;
    r.schedule_lag_us = Some(Default::default());
    r.due_while_busy = 0;
    assert!(render(&info(), &r).contains("no connection was busy: the generator was late"));
    r.due_while_busy = 5;
    assert!(render(&info(), &r).contains("the server did not keep up"));
    r.kernel_net = Some(crate::stats::result::KernelNet {
        backlog_drops: 0,
        retransmits: 9,
        window: None,
        udp: Default::default(),
    });
    assert!(!render(&info(), &r).contains("retransmitted"), "another process's retransmits");
    r.audit.retransmits = 4;
    assert!(render(&info(), &r).contains("4 TCP segments retransmitted on this run's connections"));
}

/// A merged result reads like a run: every run's core, the totals.
#[test]
fn a_merged_result_is_summed_in_the_summary() {
    let (a, b) = (fixtures::run("host-a", 1000, 20_000, 2), fixtures::run("host-b", 3000, 40_000, 2));
    let m = RunResult::merge_all([&a, &b]).unwrap();
    let text = render(&info(), &m);
    assert!(
        text.contains(
            "  ops         4000 completed in 2.00s = 2001 ops/s  (sent 4004 = 4000 completed + 4 failed)"
        ),
        "{text}"
    );
    assert!(text.contains("                0  1000         25.0%     1%  20.00us  (host-a)\n                0  3000         75.0%     1%  6.67us  (host-b)\n"), "{text}");
    assert!(text.contains("imbalance 100.0%"), "{text}");
    assert!(
        text.contains(
            "audit       app tx 400014 rx 200000  kernel tx 400014 rx 200000 (TCP_INFO at close, 2 sockets"
        ),
        "{text}"
    );
}
