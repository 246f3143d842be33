//! Every server engine against every client engine: the same bytes per operation for each
//! protocol, zero errors, every byte audited.

mod common;
use common::*;
use wirebench::cmd::ServeKind;

#[test]
fn every_engine_pair_counts_the_same_bytes() {
    let cpu = client_cpu().to_string();
    for server_engine in SERVER_ENGINES {
        let http = start_builtin_on(server_engine, ServeKind::Http);
        let ws = start_builtin_on(server_engine, ServeKind::Ws);
        let nsq = start_builtin_on(server_engine, ServeKind::Nsq);
        let runs: [(String, &[&str], (f64, f64)); 5] = [
            (
                format!("http://{}/", http.addr()),
                &["-m", "POST", "--size", "400", "--depth", "4"],
                (0.0, 40.0),
            ),
            (format!("ws://{}/", ws.addr()), &["--size", "500"], (508.0, 504.0)),
            (format!("nsq://{}/test", nsq.addrs[0]), &["--size", "400"], (413.0, 10.0)),
            (format!("nsq://{}/test", nsq.addrs[0]), &["--batch", "10"], (4058.0, 10.0)),
            (format!("nsq+http://{}/test", nsq.addrs[1]), &["-H", "Host: 127.0.0.1:4151"], (476.0, 156.0)),
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
            if *tx > 0.0 {
                assert_eq!(per_engine[0], (*tx, *rx), "{url}");
            } else {
                assert_eq!(per_engine[0].1, *rx, "{url}");
            }
        }
    }
}
