//! Results made by hand, for the tests of what reads them (the renderers, merge).

use super::*;
use crate::outcome::{Answer, ErrorClass, Failure};
use crate::stats::{CoreRecorder, Traffic};
use std::time::Duration;

/// A run's result from a recorder filled by hand: `ops` answered (latencies from
/// `latency_ns` up, a nanosecond apart), one refused with a 503, one lost to a timeout,
/// one failed connect; 100 bytes out and 50 in per operation; 10 ms of CPU a second.
pub fn run(label: &str, ops: u64, latency_ns: u64, secs: u64) -> RunResult {
    let mut c = CoreRecorder::new(0).with_series(Some(Duration::from_secs(1)));
    let t0 = crate::clock::Instant::now();
    for i in 0..ops {
        c.sent += 1;
        c.ops += 1;
        c.record_latency(latency_ns + i);
        c.series_op(t0, t0 + Duration::from_millis(i % (secs * 1000)), latency_ns + i);
        c.tx.add(Traffic::Op, 100);
        c.rx.add(Traffic::Op, 50);
        c.answered(Answer::status(200));
    }
    c.sent += 2;
    c.refused(Failure::status(503));
    c.ops_failed(ErrorClass::Timeout, 1);
    c.conn_error(ErrorClass::Connect, || "refused".into());
    c.connects = 3;
    c.tx.add(Traffic::Handshake, 7);
    c.audit.add(
        100 * ops + 7,
        50 * ops,
        Ok(crate::stats::KernelSocket { tx: 100 * ops + 7, rx: 50 * ops, ..Default::default() }),
    );
    c.cpu = Duration::from_millis(10 * secs);
    c.wall = Duration::from_secs(secs);
    let report = Report::merge(vec![c], Duration::from_nanos(secs * 1_000_000_000 - 1_234_567));
    let ran = Ran {
        label: Some(label.into()),
        target: "http://t/".into(),
        also: vec![],
        protocol: "http1".into(),
        engine: "uring".into(),
        cores: vec![0],
        connections: 4,
        depth: 1,
        messages_per_op: 1,
        kinds: vec![],
        stages: vec![],
    };
    RunResult::of(&ran, &report)
}
