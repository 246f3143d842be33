//! The floor against hostile peers, on every client engine: a server that answers half a
//! response and closes, one that never answers, one that answers more than was asked (the
//! extra is the next answer's: the floor has no framing to tell) — and `serve tcp` serving a
//! normal client while another sends a set-up it refuses and a third floods requests without
//! reading its answers.

use super::kit::*;
use std::io::Write;
use std::time::Duration;
use wirebench::outcome::ErrorClass;

#[test]
fn half_a_response_then_a_close_fails_the_operation_as_closed() {
    let addr = server(|mut s| {
        // The set-up and a 4-byte request, then 2 of the 4 bytes asked for.
        if read_some(&mut s).is_some() {
            let _ = s.write_all(b"ab");
        }
    });
    let url = format!("tcp://{addr}");
    SHORT.everywhere(&url, &["-c", "1", "--size", "4", "--response-size", "4"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(r.failed.total() > 0, "{engine}");
        let closed = r.failed.get(ErrorClass::Closed) + r.failed.get(ErrorClass::Read);
        assert_eq!(closed, r.failed.total(), "{engine}: {}", samples(r));
    });
}

#[test]
fn a_server_that_never_answers_times_each_operation_out() {
    let addr = server(|mut s| while read_some(&mut s).is_some() {});
    SHORT.everywhere(&format!("tcp://{addr}"), &["-c", "2"], |engine, r| {
        assert_eq!(r.ops, 0, "{engine}");
        assert!(r.failed.get(ErrorClass::Timeout) > 0, "{engine}");
        assert_eq!(r.failed.get(ErrorClass::Timeout), r.failed.total(), "{engine}: {}", samples(r));
    });
}

#[test]
fn an_endless_response_ends_on_time() {
    let addr = server(|mut s| {
        if read_some(&mut s).is_some() {
            flood_with(&mut s, &[b'z'; 4096], Duration::from_secs(15));
        }
    });
    // Each operation asks for 16 MiB; the server never stops sending: each completes, and the
    // run ends by its window all the same.
    SHORT.everywhere(&format!("tcp://{addr}"), &["-c", "1", "--response-size", "16777216"], |engine, r| {
        assert!(r.rx.total() > 0, "{engine}");
    });
}

#[test]
fn serve_tcp_serves_a_normal_client_beside_a_refused_set_up_and_a_flood() {
    let server = wirebench_serve_tcp();
    let addr = server.addr();
    // A client whose set-up asks for 0-byte requests: closed at once.
    let mut bad = std::net::TcpStream::connect(addr).unwrap();
    bad.write_all(&[0; 8]).unwrap();
    let _ = bad.set_read_timeout(Some(Duration::from_secs(2)));
    assert!(read_some(&mut bad).is_none(), "a refused set-up is closed, not answered");
    // One that pipelines 1-byte requests for 1 MiB answers and never reads them.
    let flood = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let _ = s.set_write_timeout(Some(Duration::from_secs(3)));
        let hello = [0, 0, 0, 1, 0, 0x10, 0, 0];
        let _ = s.write_all(&hello);
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while std::time::Instant::now() < deadline && s.write_all(&[b'r'; 1024]).is_ok() {}
    });
    let cpu = super::common::client_cpu().to_string();
    let r =
        super::common::bench_on("uring", &[&format!("tcp://{addr}"), "-c", "2", "-d", "2s", "--cores", &cpu]);
    super::common::assert_clean(&r);
    assert!(r.ops > 100, "the normal client was served: {}", r.ops);
    let _ = flood.join();
    server.stop().unwrap();
}

fn wirebench_serve_tcp() -> wirebench::engine::ServerHandle {
    super::common::start_builtin("tcp")
}
