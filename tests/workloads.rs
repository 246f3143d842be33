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

#[test]
fn every_answer_is_counted_in_the_protocols_words() {
    use wirebench::outcome::Answer;
    let cpu = client_cpu().to_string();
    let http = start_builtin("http");
    let url = format!("http://{}/", http.addr());
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "-c", "2", "-n", "300", "--cores", &cpu]);
        assert_eq!(r.answers.sorted(), [(Answer::Status(200), 300)], "{engine}");
        // A body over the server's 16 MiB limit: 413 and a close, every time.
        let r = bench_on(
            engine,
            &[&url, "-m", "POST", "--size", "17000000", "-c", "1", "-n", "3", "--cores", &cpu],
        );
        assert_accounted(&r);
        assert_eq!(r.answers.get(Answer::Status(413)), 3, "{engine}: {:?}", r.answers);
        assert_eq!(r.answers.unsuccessful(), 3);
    }
    let ws = start_builtin("ws");
    let r = bench(&[&format!("ws://{}/", ws.addr()), "-c", "3", "-n", "300", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [(Answer::Close(1000), 3)], "each server's answer to our Close");
    let nsq = start_builtin("nsq");
    let r = bench(&[&format!("nsq://{}/t", nsq.addr()), "-c", "2", "-n", "300", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [(Answer::Nsq("OK"), 300)]);
    let r = bench(&[&format!("nsq://{}/bad!", nsq.addr()), "-c", "1", "-n", "4", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [(Answer::Nsq("E_BAD_TOPIC"), 4)]);
}
