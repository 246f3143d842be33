//! Every server engine against every client engine: the same bytes per operation for each
//! protocol, zero errors, every byte audited.

mod common;
use common::*;

#[test]
fn every_engine_pair_counts_the_same_bytes() {
    let cpu = client_cpu().to_string();
    for server_engine in SERVER_ENGINES {
        let http = start_builtin_on(server_engine, "http");
        let ws = start_builtin_on(server_engine, "ws");
        let nsq = start_builtin_on(server_engine, "nsq");
        let host = "Host: 127.0.0.1:4151";
        let runs: [(String, &[&str], (f64, f64)); 5] = [
            (
                format!("http://{}/", http.addr()),
                &["-m", "POST", "--size", "400", "--depth", "4"],
                (wire::http_request("POST", "/", &http.addr().to_string(), &[], 400), wire::ok()),
            ),
            (
                format!("ws://{}/", ws.addr()),
                &["--size", "500"],
                (wire::ws_client_frame(500), wire::ws_server_frame(500)),
            ),
            (
                format!("nsq://{}/test", nsq.addrs[0]),
                &["--size", "400"],
                (wire::nsq_pub("test", 400), wire::nsq_frame("OK")),
            ),
            (
                format!("nsq://{}/test", nsq.addrs[0]),
                &["--batch", "10"],
                (wire::nsq_mpub("test", 10, 400), wire::nsq_frame("OK")),
            ),
            (
                format!("nsq+http://{}/test", nsq.addrs[1]),
                &["-H", host],
                (
                    wire::http_request("POST", "/pub?topic=test", "127.0.0.1:4151", &[], 400),
                    wire::nsqd_pub_ok(),
                ),
            ),
        ];
        for (url, extra, (tx, rx)) in &runs {
            let mut per_engine = Vec::new();
            for client_engine in ENGINES {
                let mut args = vec![url.as_str(), "-c", "4", "-n", "2000", "--cores", &cpu];
                args.extend_from_slice(extra);
                let r = bench_on(client_engine, &args);
                assert_clean(&r);
                assert_eq!(r.ops, 2000, "{server_engine} server, {client_engine} client, {url}");
                per_engine.push((r.tx_per_op(), r.rx_per_op()));
            }
            assert!(per_engine.windows(2).all(|w| w[0] == w[1]), "{url}: {per_engine:?}");
            assert_eq!(per_engine[0], (*tx, *rx), "{url}");
        }
    }
}
