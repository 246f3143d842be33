//! `bench` against a real nginx (installed and found by `.ci/run`; `cargo test -- --ignored`).

mod common;
use common::*;
use std::io::{Read, Write};
use wirebench::proto::http1::{Http1Client, RequestSpec};
use wirebench::proto::{ClientCodec, Decoded};

/// One request over a plain socket; the exact length of nginx's response to it.
fn response_len(addr: std::net::SocketAddr, method: &str, body: usize) -> usize {
    let spec = RequestSpec {
        method: method.into(),
        host: addr.to_string(),
        target: "/".into(),
        headers: vec![],
        body: vec![b'x'; body],
    };
    let mut codec = Http1Client::new(&spec);
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(codec.request()).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    for _ in 0..100 {
        let n = s.read(&mut chunk).unwrap();
        buf.extend_from_slice(&chunk[..n]);
        if let Decoded::Done { consumed, .. } = codec.decode_op(&buf, &mut Vec::new()).unwrap() {
            assert_eq!(consumed, buf.len());
            return consumed;
        }
        assert!(n > 0, "nginx closed early");
    }
    panic!("no whole response from nginx");
}

#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_get_and_post_bytes_per_op_match_its_responses() {
    let (_nginx, addr) = start_nginx();
    let url = format!("http://{addr}/");
    let cpu = client_cpu().to_string();
    for (method, size) in [("GET", 0usize), ("POST", 400)] {
        let expected_rx = response_len(addr, method, size);
        let size_arg = size.to_string();
        let mut args = vec![url.as_str(), "-c", "16", "-n", "20000", "--cores", &cpu, "-m", method];
        if size > 0 {
            args.extend(["--size", &size_arg]);
        }
        let r = bench(&args);
        assert_clean(&r);
        assert_eq!(r.ops, 20000);
        assert_eq!(r.rx_per_op(), expected_rx as f64, "{method}: nginx's response is {expected_rx} bytes");
        let request = Http1Client::new(&RequestSpec {
            method: method.into(),
            host: addr.to_string(),
            target: "/".into(),
            headers: vec![],
            body: vec![b'x'; size],
        });
        assert_eq!(r.tx_per_op(), request.request().len() as f64);
    }
}

#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_pipelined_requests() {
    let (_nginx, addr) = start_nginx();
    let expected_rx = response_len(addr, "GET", 0);
    let r = bench(&[
        &format!("http://{addr}/"),
        "-c",
        "8",
        "--depth",
        "16",
        "-n",
        "50000",
        "--cores",
        &client_cpu().to_string(),
    ]);
    assert_clean(&r);
    assert_eq!(r.ops, 50000);
    assert_eq!(r.rx_per_op(), expected_rx as f64);
}
