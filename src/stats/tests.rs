//! Tests of `stats/mod.rs`.

use super::*;

fn socket(tx: u64, rx: u64) -> SocketAudit {
    Ok(KernelSocket { tx, rx, ..Default::default() })
}

#[test]
fn the_median_is_a_real_run_and_the_spread_is_relative_to_it() {
    assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
    assert_eq!(median_index(&[4.0, 1.0, 3.0, 2.0]), 3, "the lower middle: 2.0");
    assert_eq!(median_index(&[]), 0);
    let s = Spread::of(&[90.0, 100.0, 110.0]);
    assert_eq!((s.median, s.min, s.max, s.spread_pct), (100.0, 90.0, 110.0, 20.0));
}

#[test]
fn merge_sums_and_keeps_cores_apart() {
    let mut a = CoreRecorder::new(0);
    a.sent = 10;
    a.ops = 10;
    a.record_latency(1_000);
    a.tx.add(Traffic::Op, 100);
    a.tx.add(Traffic::WarmupOp, 7);
    a.rx.add(Traffic::Op, 50);
    a.audit.add(107, 50, socket(107, 50));
    let mut b = CoreRecorder::new(1);
    b.sent = 31;
    b.ops = 30;
    b.ops_failed(ErrorClass::Read, 1);
    b.conn_error(ErrorClass::Read, || "reset".into());
    b.record_latency(3_000);
    b.tx.add(Traffic::Op, 300);
    b.rx.add(Traffic::Op, 150);
    b.rx.add(Traffic::Control, 1);
    b.audit.add(300, 151, socket(300, 151));
    let r = Report::merge(vec![a, b], Duration::from_secs(2));
    assert_eq!((r.sent, r.ops, r.failed.total()), (41, 40, 1));
    assert!(r.accounted());
    assert_eq!(r.ops_per_sec(), 20.0);
    assert_eq!(r.tx_per_op(), 10.0);
    assert_eq!(r.rx_per_op(), 5.0);
    assert_eq!(r.errors_total(), 2);
    assert_eq!(r.error_samples, ["read: reset"]);
    assert!(r.audit_matches());
    assert_eq!(r.per_core.len(), 2);
    assert_eq!(r.imbalance_pct(), 100.0);
}

#[test]
fn audit_notices_a_difference_and_bytes_on_no_socket() {
    let mut a = CoreRecorder::new(0);
    a.tx.add(Traffic::Op, 10);
    a.audit.add(10, 0, socket(9, 0));
    assert!(!Report::merge(vec![a], Duration::from_secs(1)).audit_matches());
    let mut b = CoreRecorder::new(0);
    b.tx.add(Traffic::Op, 10);
    b.audit.add(9, 0, socket(9, 0));
    let r = Report::merge(vec![b], Duration::from_secs(1));
    assert!(r.audit.matches() && !r.bytes_on_closed_sockets() && !r.audit_matches());
}

#[test]
fn inexact_sockets_are_set_apart_by_reason() {
    let mut a = CoreRecorder::new(0);
    a.tx.add(Traffic::Op, 30);
    a.audit.add(10, 0, socket(10, 0));
    a.audit.add(20, 0, Err(Inexact::Unsettled));
    let r = Report::merge(vec![a], Duration::from_secs(1));
    assert!(r.audit_matches());
    assert_eq!(r.audit.inexact_sockets(), 1);
    assert_eq!(r.audit.inexact.get(&Inexact::Unsettled), Some(&1));
}

#[test]
fn failed_bytes_move_out_of_the_operation_class() {
    let mut b = ByteSplit::default();
    b.add(Traffic::Op, 100);
    b.move_bytes(Traffic::Op, Traffic::Failed, 40);
    assert_eq!((b.op, b.failed, b.total()), (60, 40, 100));
    b.move_bytes(Traffic::Op, Traffic::Failed, 1000);
    assert_eq!((b.op, b.failed), (0, 100), "never more than there is");
}

#[test]
fn imbalance_arithmetic() {
    assert_eq!(imbalance_pct(&[100, 100]), 0.0);
    assert_eq!(imbalance_pct(&[50, 150]), 100.0);
    assert_eq!(imbalance_pct(&[5]), 0.0);
    assert_eq!(imbalance_pct(&[0, 0]), 0.0);
}
