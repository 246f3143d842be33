//! A result's JSON round trip, and merges of merges.

use super::fixtures::run;
use super::*;

/// A result written and read back, as `merge` reads it.
fn round_trip(r: &RunResult) -> RunResult {
    let text = serde_json::to_string(r).unwrap();
    let mut back: RunResult = serde_json::from_str(&text).unwrap();
    back.derive();
    back
}

#[test]
fn a_result_survives_its_json_exactly() {
    let a = run("a", 1000, 20_000, 2);
    assert_eq!(round_trip(&a), a);
    assert_eq!((a.sent, a.ops, a.failed["total"], a.connection_errors["total"]), (1002, 1000, 2, 1));
    assert!(a.accounted && a.audit.matches, "{:?}", a.audit);
    assert_eq!(a.duration_s, 1.998765, "to the microsecond");
    assert_eq!(a.ops_per_sec, r3(1000.0 / 1.998765));
    assert_eq!((a.bytes.tx_per_op, a.bytes.rx_per_op), (100.0, 50.0));
    assert_eq!(a.status_counts["200"], 1000);
    assert_eq!(a.failures["HTTP 503"], 1);
}

#[test]
fn a_merge_of_merges_is_the_merge_of_all_and_adds_every_count() {
    let (a, b, c) = (run("a", 1000, 20_000, 2), run("b", 500, 90_000, 3), run("c", 10, 1_000_000, 1));
    let ab = round_trip(&RunResult::merge_all([&a, &b]).unwrap());
    let ab_c = round_trip(&RunResult::merge_all([&ab, &c]).unwrap());
    let abc = round_trip(&RunResult::merge_all([&a, &b, &c]).unwrap());
    assert_eq!(ab_c, abc);
    assert_eq!(abc.kind, Kind::Merge);
    assert_eq!(abc.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!((abc.sent, abc.ops), (a.sent + b.sent + c.sent, 1510));
    assert_eq!(abc.failed["timeout"], 3);
    assert_eq!(abc.failed["status"], 3);
    assert_eq!(abc.connection_errors["connect"], 3);
    assert_eq!(abc.failures["HTTP 503"], 3);
    assert_eq!(abc.status_counts["200"], 1510);
    assert_eq!(abc.bytes.op_tx, 151_000);
    assert_eq!(abc.bytes.handshake_tx, 21);
    assert_eq!(abc.audit.sockets, 3);
    assert!(abc.audit.matches && abc.accounted);
    assert_eq!(abc.duration_s, 2.998765, "side by side: the longest window");
    assert_eq!(abc.per_core.len(), 3);
    assert_eq!(abc.per_core[2].run.as_deref(), Some("c"));
    // The percentiles are those of every sample together.
    let mut all = a.histograms.latency.clone();
    all.add(&b.histograms.latency);
    all.add(&c.histograms.latency);
    assert_eq!(abc.histograms.latency, all);
    assert_eq!(abc.latency_us.p99, Spread::of(&all).p99);
    assert_eq!(abc.latency_us.count, 1510);
    let series = abc.series.as_ref().unwrap();
    assert_eq!(series.intervals.iter().map(|i| i.ops).sum::<u64>(), 1510);
}

/// A stage counts the intervals that start in it: the last interval, stretched past the
/// window's end by a folded tail (4.0 to 5.02 s of a 5 s schedule), is the last stage's. (It
/// counted in none: `--rate 500:2s,500..2500:2s,2500:1s` on tokio-uring read 0 ops in its
/// last stage.)
#[test]
fn a_stage_takes_the_intervals_that_start_in_it() {
    let interval = |from_s: f64, to_s: f64, ops: u64| IntervalResult {
        from_s,
        to_s,
        ops,
        errors: 0,
        p50_us: None,
        p99_us: None,
        histogram: Hist::default(),
    };
    let series = SeriesResult {
        every_s: 1.0,
        intervals: vec![interval(0.0, 1.0, 500), interval(3.0, 4.0, 2250), interval(4.0, 5.02, 2510)],
        beyond: None,
    };
    let mut stages = [StageResult::new(500.0, 500.0, 0.0, 2.0), StageResult::new(2500.0, 2500.0, 4.0, 5.0)];
    for s in &mut stages {
        s.derive(Some(&series));
    }
    assert_eq!((stages[0].ops, stages[1].ops), (500, 2510));
}
