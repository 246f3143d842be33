//! MQTT against hostile brokers, on every client engine: one that accepts and never
//! acknowledges, one that floods PINGRESPs without an acknowledgement, one that acknowledges a
//! packet identifier never sent, one that refuses CONNECT, one that sends PUBREC and never
//! PUBCOMP — and a normal client served by `serve mqtt` while another sends what 3.1.1 forbids.

use super::kit::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;
use wirebench::outcome::ErrorClass;

/// Read CONNECT (whatever first arrives) and accept it: 3.1.1's CONNACK.
fn accept(s: &mut TcpStream) -> Option<()> {
    read_some(s)?;
    s.write_all(&[0x20, 2, 0, 0]).ok()
}

#[test]
fn a_broker_that_never_acknowledges_fails_each_publish_at_its_timeout() {
    let addr = server(|mut s| {
        if accept(&mut s).is_some() {
            while read_some(&mut s).is_some() {}
        }
    });
    SHORT.everywhere(&format!("mqtt://{addr}/t"), &["-c", "1"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(r.failed.get(ErrorClass::Timeout) > 0, "{engine}: {:?}", r.failed);
        assert_eq!(r.failed.get(ErrorClass::Timeout), r.failed.total(), "{engine}: {}", samples(r));
    });
}

#[test]
fn a_flood_of_pingresps_completes_nothing_and_the_run_ends_on_time() {
    let addr = server(|mut s| {
        if accept(&mut s).is_some() {
            flood_with(&mut s, &[0xD0, 0], Duration::from_secs(15));
        }
    });
    SHORT.everywhere(&format!("mqtt://{addr}/t"), &["-c", "1"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(
            r.failed.total() > 0 && r.failed.get(ErrorClass::Timeout) == r.failed.total(),
            "{engine}: {:?}",
            r.failed
        );
        assert!(r.rx.control > 0, "{engine}: the PINGRESPs are control bytes");
    });
}

#[test]
fn an_acknowledgement_for_an_identifier_never_sent_is_a_protocol_error() {
    let addr = server(|mut s| {
        if accept(&mut s).is_some() && read_some(&mut s).is_some() {
            let _ = s.write_all(&[0x40, 2, 0x7f, 0x7f]);
            while read_some(&mut s).is_some() {}
        }
    });
    SHORT.everywhere(&format!("mqtt://{addr}/t"), &["-c", "1"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(samples(r).contains("packet identifier not in flight"), "{engine}: {}", samples(r));
        assert!(r.conn_errors.get(ErrorClass::Protocol) > 0, "{engine}: {:?}", r.conn_errors);
    });
}

#[test]
fn a_refused_connect_names_the_brokers_reason() {
    let addr = server(|mut s| {
        if read_some(&mut s).is_some() {
            let _ = s.write_all(&[0x20, 2, 0, 5]);
        }
    });
    SHORT.everywhere(&format!("mqtt://{addr}/t"), &["-c", "1"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(
            samples(r).contains("the broker refused CONNECT: not authorized (0x05)"),
            "{engine}: {}",
            samples(r)
        );
    });
}

#[test]
fn pubrec_without_pubcomp_fails_at_the_timeout_after_pubrel() {
    let addr = server(|mut s| {
        if accept(&mut s).is_none() {
            return;
        }
        // PUBREC for each PUBLISH (its identifier at bytes 2+2+1..), nothing after PUBREL.
        while let Some(bytes) = read_some(&mut s) {
            if bytes[0] >> 4 == 3 && bytes.len() > 9 {
                let at = 2 + 2 + 1 + usize::from(bytes[1] & 0x80 != 0);
                let id = [bytes[at], bytes[at + 1]];
                let _ = s.write_all(&[0x50, 2, id[0], id[1]]);
            }
        }
    });
    SHORT.everywhere(&format!("mqtt://{addr}/t"), &["-c", "1", "--qos", "2", "--size", "10"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert_eq!(r.failed.get(ErrorClass::Timeout), r.failed.total(), "{engine}: {:?}", r.failed);
        assert!(r.failed.total() > 0, "{engine}");
    });
}

#[test]
fn serve_mqtt_keeps_serving_while_another_client_breaks_the_rules() {
    let server = wirebench_server();
    let addr = server.addr();
    // A client sending QoS 3 after its CONNECT, again and again, beside a normal run.
    let abuser = std::thread::spawn(move || {
        let connect = wirebench::proto::mqtt::fuzz::connect(wirebench::proto::mqtt::Version::V311);
        let until = std::time::Instant::now() + Duration::from_secs(2);
        let mut closed = 0;
        while std::time::Instant::now() < until {
            let Ok(mut s) = TcpStream::connect(addr) else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.write_all(&[connect.as_slice(), &[0x36, 5, 0, 1, b't', 0, 1]].concat());
            let _ = read_some(&mut s); // CONNACK
            closed += usize::from(read_some(&mut s).is_none());
        }
        closed
    });
    let (r, _) = SHORT.on("uring", &format!("mqtt://{addr}/t"), &["-c", "1"]);
    assert!(r.ops > 0 && r.errors_total() == 0, "{:?} {}", r.failed, samples(&r));
    assert!(abuser.join().unwrap() > 0, "serve mqtt closed the connections that sent QoS 3");
}

fn wirebench_server() -> wirebench::engine::ServerHandle {
    super::common::start_builtin("mqtt")
}
