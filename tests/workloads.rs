//! Workload shapes and phases on every client engine against the built-in servers: a
//! per-connection interval, connection per operation, phase histograms, status counts.

mod common;
use common::*;
use std::time::Duration;

/// The tests here time things (think times, stalls, schedules): one at a time, so that another
/// test's load on the same two CPUs does not move the figures they check.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn an_interval_per_connection_sends_on_schedule() {
    let _alone = alone();
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
    let _alone = alone();
    use wirebench::outcome::Answer;
    let cpu = client_cpu().to_string();
    let http = start_builtin("http");
    let url = format!("http://{}/", http.addr());
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "-c", "2", "-n", "300", "--cores", &cpu]);
        assert_eq!(r.answers.sorted(), [(Answer::status(200), 300)], "{engine}");
        // A body over the server's 16 MiB limit: 413 and a close, every time.
        let r = bench_on(
            engine,
            &[&url, "-m", "POST", "--size", "17000000", "-c", "1", "-n", "3", "--cores", &cpu],
        );
        assert_accounted(&r);
        assert_eq!(r.answers.get(Answer::status(413)), 3, "{engine}: {:?}", r.answers);
        assert_eq!(r.answers.unsuccessful(), 3);
    }
    let ws = start_builtin("ws");
    let r = bench(&[&format!("ws://{}/", ws.addr()), "-c", "3", "-n", "300", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [], "the servers' echoes of our own Close are not counted");
    // A server that closes first, with its reason: 1009, message too big, once per connection.
    let small = start_builtin_with("tokio-uring", "ws", &["--max-message", "100"]);
    let r =
        bench(&[&format!("ws://{}/", small.addr()), "--size", "400", "-c", "2", "-d", "1s", "--cores", &cpu]);
    assert_accounted(&r);
    // Every connection but those the run's end cut (at most one per connection slot).
    let closes = r.answers.get(wirebench::proto::ws::close_answer(1009));
    assert!(
        r.connects >= 2 && (r.connects - 2..=r.connects).contains(&closes),
        "{} connects, {:?}",
        r.connects,
        r.answers
    );
    let nsq = start_builtin("nsq");
    let r = bench(&[&format!("nsq://{}/t", nsq.addr()), "-c", "2", "-n", "300", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [(wirebench::proto::nsq::answer("OK"), 300)]);
    let r = bench(&[&format!("nsq://{}/bad!", nsq.addr()), "-c", "1", "-n", "4", "--cores", &cpu]);
    assert_eq!(r.answers.sorted(), [(wirebench::proto::nsq::answer("E_BAD_TOPIC"), 4)]);
}

#[test]
fn a_connection_per_operation_opens_one_connection_for_each() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let http = start_builtin("http");
    let url = format!("http://{}/", http.addr());
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "--no-keepalive", "-c", "4", "-n", "300", "--cores", &cpu]);
        assert_clean(&r);
        assert_eq!(
            (r.ops, r.connects, r.reconnects),
            (300, 300, 0),
            "{engine}: one connection per operation"
        );
        // The request says `Connection: close`, and so does the answer.
        let host = http.addr().to_string();
        assert_eq!(
            r.tx_per_op(),
            wire::http_request("GET", "/", &host, &["Connection: close"], 0),
            "{engine}"
        );
        assert_eq!(r.rx_per_op(), wire::http_response("200 OK", &["Connection: close"], "Hello World"));
        // Every phase timed once per operation; the whole holds its parts.
        for (name, h) in [("connect", &r.phases.connect), ("waiting", &r.phases.waiting)] {
            assert_eq!(h.len(), 300, "{engine}: {name}");
        }
        assert!(r.phases.handshake.is_empty(), "HTTP has no set-up of its own");
        let connect = r.phases.connect.mean();
        assert!(
            r.latency.mean() >= connect + r.phases.waiting.mean(),
            "{engine}: total holds connect + waiting"
        );
    }
    // The protocols with a set-up do it every time, and say goodbye as they would at the end.
    for kind in ["ws", "nsq", "sio"] {
        let server = start_builtin(kind);
        let url = match kind {
            "nsq" => format!("nsq://{}/t", server.addr()),
            _ => format!("{kind}://{}/", server.addr()),
        };
        for engine in ENGINES {
            let r = bench_on(engine, &[&url, "--no-keepalive", "-c", "3", "-n", "60", "--cores", &cpu]);
            assert_clean(&r);
            assert_eq!((r.ops, r.connects), (60, 60), "{kind} on {engine}");
            assert_eq!(r.phases.handshake.len(), 60, "{kind} on {engine}: a set-up per operation");
            assert!(r.tx.handshake > 0 && r.rx.handshake > 0);
        }
    }
}

#[test]
fn no_keepalive_refuses_a_depth() {
    let _alone = alone();
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from([
        "wirebench",
        "bench",
        "http://127.0.0.1:1/",
        "--no-keepalive",
        "--depth",
        "4",
    ])
    .unwrap();
    let wirebench::cmd::Command::Bench(args) = cli.command else { unreachable!() };
    let Err(err) = wirebench::cmd::bench::run(&args) else { panic!("--depth 4 was accepted") };
    let err = err.to_string();
    assert!(err.contains("--no-keepalive"), "{err}");
}

/// Median and least `waiting` of a paced run (20 connections, one operation every 20 ms each).
fn waiting_ms(engine: &str, addr: std::net::SocketAddr) -> (f64, f64) {
    let cpu = client_cpu().to_string();
    let url = format!("http://{addr}/");
    let r = bench_on(engine, &[&url, "--interval", "20ms", "-c", "20", "-d", "2s", "--cores", &cpu]);
    assert_clean(&r);
    let ms = |ns: u64| ns as f64 / 1e6;
    (ms(r.phases.waiting.value_at_quantile(0.5)), ms(r.phases.waiting.min()))
}

/// Time the hypervisor took from the client's and the server's CPUs so far.
fn stolen() -> std::time::Duration {
    use wirebench::engine::sys::cpu_steal;
    [client_cpu(), server_cpu()].into_iter().filter_map(cpu_steal).sum()
}

#[test]
fn a_server_think_time_shows_in_waiting() {
    let _alone = alone();
    // The same paced load against two servers of one engine that hold each answer 1 ms and
    // 11 ms: the medians of `waiting` differ by the 10 ms between them. Both servers sleep
    // and wake for every answer, so the cost of that second wake-up (0.2-0.8 ms on this VM,
    // and the reason a run against a server without `--delay` cannot be the baseline) is in
    // both medians and cancels. The raw io_uring loop (an io_uring timeout) and tokio-uring
    // (a timerfd) hold it to ±2 %, glommio's own timer to ±5 %.
    //
    // A try counts only if the hypervisor took under 2 % of the two CPUs' time during it:
    // a stolen millisecond between a syscall and its clock reading moves a stamp by as much
    // (this VM lost 14-29 % of a CPU for minutes while this was written, and medians moved
    // by milliseconds). Three quiet tries outside the tolerance fail the test; a pair that
    // never gets a quiet try within its ten is reported, not passed as precise, and more
    // than two such pairs fail it as too noisy to say.
    //
    // No answer can come sooner than its hold, whatever the host does: the uring client
    // stamps a send when the `io_uring_enter` that issued it began, not when its thread next
    // woke (a late wake put the send and its answer in one batch, and `waiting` at 0).
    let mut unchecked = Vec::new();
    for (server, tolerance) in [("uring", 0.02), ("tokio-uring", 0.02), ("glommio", 0.05)] {
        let short = start_builtin_with(server, "http", &["--delay", "1ms"]);
        let long = start_builtin_with(server, "http", &["--delay", "11ms"]);
        for engine in ENGINES {
            let (mut quiet, mut checked) = (Vec::new(), false);
            for _ in 0..10 {
                let before = stolen();
                let (base, base_min) = waiting_ms(engine, short.addr());
                let (delayed, delayed_min) = waiting_ms(engine, long.addr());
                // Of the CPU time the pair had: two CPUs through two runs of 2 s.
                let steal = stolen().saturating_sub(before).as_secs_f64() / (2.0 * 2.0 * 2.0);
                if engine == "uring" {
                    assert!(base_min >= 1.0, "{server} server: held 1 ms, answered after {base_min:.3}");
                    assert!(
                        delayed_min >= 11.0,
                        "{server} server: held 11 ms, answered after {delayed_min:.3}"
                    );
                }
                if steal >= 0.02 {
                    continue;
                }
                if ((delayed - base) - 10.0).abs() <= 10.0 * tolerance {
                    checked = true;
                    break;
                }
                quiet.push(format!("{delayed:.3} − {base:.3} ms"));
                assert!(quiet.len() < 3, "{server} server, {engine} client: {quiet:?}");
            }
            if !checked {
                unchecked.push(format!("{server} server, {engine} client"));
            }
        }
    }
    if !unchecked.is_empty() {
        eprintln!("not checked, the hypervisor took ≥ 2 % of the CPUs in every try: {unchecked:?}");
    }
    assert!(unchecked.len() <= 2, "too noisy a host to check the think time: {unchecked:?}");
}

#[test]
fn a_server_stall_shows_in_the_corrected_latency_and_not_the_uncorrected() {
    let _alone = alone();
    // wrk2's own check: stop the server for a second in a paced run. Every operation due
    // during the stall waited for it (corrected); only those in flight when it began waited
    // from their actual send (uncorrected).
    let (server, addr) = serve_process("http", &[]);
    let pid = server.0.id() as libc::pid_t;
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let url = format!("http://{addr}/");
        let run = std::thread::spawn({
            let cpu = cpu.clone();
            move || bench_on(engine, &[&url, "--rate", "1000", "-c", "4", "-d", "3s", "--cores", &cpu])
        });
        std::thread::sleep(std::time::Duration::from_millis(1000));
        // SAFETY: signals to our own child.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(std::time::Duration::from_millis(1000));
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let r = run.join().unwrap();
        assert_clean(&r);
        let ms = |h: &hdrhistogram::Histogram<u64>, q| h.value_at_quantile(q) as f64 / 1e6;
        let (corrected, uncorrected) = (ms(&r.latency, 0.99), ms(&r.latency_uncorrected, 0.99));
        assert!(corrected > 500.0, "{engine}: corrected p99 {corrected} ms");
        assert!(uncorrected < 100.0, "{engine}: uncorrected p99 {uncorrected} ms");
        assert!(ms(&r.latency_uncorrected, 1.0) > 900.0, "{engine}: the ops in flight did wait");
    }
}

#[test]
fn connections_open_at_the_connect_rate_and_the_window_waits_for_them() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let ws = start_builtin("ws");
    let url = format!("ws://{}/", ws.addr());
    for engine in ENGINES {
        // 20 connections at 50 per second: the last one opens 380 ms after the start.
        let r = bench_on(engine, &[&url, "-c", "20", "--connect-rate", "50", "-d", "500ms", "--cores", &cpu]);
        assert_clean(&r);
        let set_up = r.set_up_in.expect("the window waited for the connections");
        assert!(set_up >= std::time::Duration::from_millis(380), "{engine}: all set up after {set_up:?}");
        assert!(set_up < std::time::Duration::from_millis(1500), "{engine}: {set_up:?}");
        // No operation before the window opened; every connection's set-up was timed.
        assert_eq!(r.tx.warmup_op, 0, "{engine}: the first connections waited for the last");
        assert_eq!((r.connects, r.phases.connect.len(), r.phases.handshake.len()), (20, 20, 20), "{engine}");
        assert!(r.elapsed >= std::time::Duration::from_millis(500), "{engine}: {:?} measured", r.elapsed);
    }
    // With fewer operations than connections, only those with one to send connect, and the
    // window waits for them alone (it once waited for the others until its 10 s bound).
    let started = std::time::Instant::now();
    let r = bench(&[&url, "-c", "50", "-n", "5", "--cores", &cpu]);
    assert_eq!((r.ops, r.connects), (5, 5));
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
    // A connection per operation times its set-up in each operation: no wait.
    let r = bench(&[&url, "-c", "2", "-n", "20", "--no-keepalive", "--cores", &cpu]);
    assert_eq!(r.set_up_in, None);
}

#[test]
fn several_targets_share_the_connections_and_add_up() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let servers = [start_builtin("http"), start_builtin("http"), start_builtin("http")];
    let urls: Vec<String> = servers.iter().map(|s| format!("http://{}/", s.addr())).collect();
    for engine in ENGINES {
        let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
        args.extend(["-c", "6", "-n", "3000", "--cores", &cpu]);
        let r = bench_on(engine, &args);
        assert_clean(&r);
        assert_eq!(r.targets.len(), 3, "{engine}");
        // Two connections each, 500 operations each: the totals are the sums.
        for t in &r.targets {
            assert_eq!((t.sent, t.ops, t.failed()), (1000, 1000, 0), "{engine}");
            assert_eq!(t.latency.len(), 1000);
        }
        assert_eq!(r.targets.iter().map(|t| t.ops).sum::<u64>(), r.ops);
        assert_eq!(r.targets.iter().map(|t| t.latency.len()).sum::<u64>(), r.latency.len());
    }
    // Each server saw its third of every run.
    for s in servers {
        let served = wirebench::stats::ServerTally::sum(&s.stop().unwrap());
        assert_eq!(served.requests, 3000, "each server, over the three engines' runs");
    }
}

#[test]
fn repeated_runs_report_the_median_run_and_every_runs_line() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "-c", "4", "-n", "2000", "--repeat", "3", "--cores", &cpu]);
        assert_clean(&r);
        let rep = r.repeats.as_ref().expect("three runs");
        assert_eq!(rep.runs.len(), 3, "{engine}");
        assert!(rep.runs.iter().all(|run| run.ops == 2000 && run.errors == 0), "{engine}: {rep:?}");
        // The report is one of the runs, the median by ops/s.
        let mut rates: Vec<f64> = rep.runs.iter().map(|run| run.ops_per_sec).collect();
        assert_eq!(rep.runs[rep.median].ops_per_sec, r.ops_per_sec(), "{engine}");
        rates.sort_by(f64::total_cmp);
        assert_eq!(rates[1], r.ops_per_sec(), "{engine}: the middle of three");
    }
    let served = wirebench::stats::ServerTally::sum(&server.stop().unwrap());
    assert_eq!(served.requests, 3 * 3 * 2000, "every run ran");
}

#[test]
fn the_window_opens_at_the_start_time_and_not_before() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let server = start_builtin("ws");
    let url = format!("ws://{}/", server.addr());
    let unix = |ahead: f64| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        format!("{:.3}", now.as_secs_f64() + ahead)
    };
    for engine in ENGINES {
        // Connected and upgraded at once, then every connection waits for the start time.
        let at = unix(1.0);
        let asked = std::time::Instant::now();
        let r = bench_on(engine, &[&url, "-c", "4", "-d", "300ms", "--start-at", &at, "--cores", &cpu]);
        assert_clean(&r);
        let set_up = r.set_up_in.unwrap();
        assert!(set_up >= std::time::Duration::from_millis(900), "{engine}: window after {set_up:?}");
        assert!(
            asked.elapsed() >= std::time::Duration::from_millis(1250),
            "{engine}: start + 300 ms measured"
        );
        assert_eq!((r.connects, r.tx.warmup_op), (4, 0), "{engine}: nothing sent before the start");
        assert!(r.elapsed < std::time::Duration::from_millis(700), "{engine}: {:?}", r.elapsed);
    }
    // A connection per operation starts then too.
    let asked = std::time::Instant::now();
    let r =
        bench(&[&url, "--no-keepalive", "-c", "2", "-n", "20", "--start-at", &unix(0.7), "--cores", &cpu]);
    assert_eq!(r.ops, 20);
    assert!(asked.elapsed() >= std::time::Duration::from_millis(650));
    // A time in the past would not start hosts together: refused.
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from([
        "wirebench",
        "bench",
        &url,
        "--start-at",
        "2020-01-01T00:00:00Z",
    ])
    .unwrap();
    let wirebench::cmd::Command::Bench(args) = cli.command else { unreachable!() };
    let Err(err) = wirebench::cmd::bench::run(&args) else { panic!("a past start was accepted") };
    assert!(err.to_string().contains("in the past"), "{err}");
    // Nor one so far ahead that the run would not stop by itself for days.
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from([
        "wirebench",
        "bench",
        &url,
        "--start-at",
        &unix(2e5),
    ])
    .unwrap();
    let wirebench::cmd::Command::Bench(args) = cli.command else { unreachable!() };
    let Err(err) = wirebench::cmd::bench::run(&args) else { panic!("a start days ahead was accepted") };
    assert!(err.to_string().contains("more than a day ahead"), "{err}");
}

#[test]
fn a_time_series_cuts_the_window_into_intervals_that_add_up() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "-c", "4", "-d", "2s", "--report-every", "500ms", "--cores", &cpu]);
        assert_clean(&r);
        let series = r.series.as_ref().expect("a series");
        // Four intervals of the window, and perhaps one for answers that came in the drain.
        assert!((4..=5).contains(&series.intervals.len()), "{engine}: {} intervals", series.intervals.len());
        assert_eq!(series.intervals.iter().map(|i| i.ops).sum::<u64>(), r.ops, "{engine}");
        assert_eq!(series.intervals.iter().map(|i| i.errors).sum::<u64>(), r.failed.total());
        for i in &series.intervals[..4] {
            assert_eq!(i.latency.len(), i.ops);
            assert!(i.ops > 0, "{engine}: every interval of a closed loop worked");
        }
    }
}

#[test]
fn a_generator_spinning_for_a_paced_send_still_sees_its_answers() {
    let _alone = alone();
    // At 40,000 paced requests/s the next send is always due within the uring engine's spin
    // window (30 µs), so it never sleeps. Its ring defers completions to an enter that asks
    // for events: a spin that did not ask saw no answer until its next sleep, and the
    // server's 30 µs answers were reported as 1.1 ms of `waiting`. The reference is the same
    // run with `--spin 0`, which sleeps for every answer and so sees each as it comes: on an
    // idle machine they read 22 and 35 µs; beside a busy CPU 322 and 167, so the bound is
    // relative (the fault read 20× the reference). Three tries for a noisy neighbour.
    let server = start_builtin_on("uring", "http");
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let base = [url.as_str(), "--rate", "40000", "-c", "64", "-d", "2s", "--cores", &cpu];
    let median_waiting_us =
        |r: &wirebench::stats::Report| r.phases.waiting.value_at_quantile(0.5) as f64 / 1e3;
    let mut medians = Vec::new();
    for _ in 0..3 {
        let r = bench_on("uring", &base);
        assert_clean(&r);
        // That spin is the engine's choice, not load: counted apart, so the report does not
        // call the generator a bottleneck for it (how much it spins is the machine's: under
        // `nice` beside a busy CPU it read 0.000 — a share is no property to assert).
        let core = &r.per_core[0];
        assert!(core.work_util() <= core.cpu_util(), "work is CPU less the spin");
        let sleeping = bench_on("uring", &[&base[..], &["--spin", "0s"]].concat());
        assert_clean(&sleeping);
        let (spun, slept) = (median_waiting_us(&r), median_waiting_us(&sleeping));
        medians.push(format!("{spun:.0} µs spinning, {slept:.0} µs sleeping"));
        if spun < 300f64.max(2.0 * slept) {
            eprintln!("median waiting at 40,000/s: {medians:?}");
            return;
        }
    }
    panic!("median waiting at 40,000/s: {medians:?}");
}

/// `--slack` (uring): the paced sends go out together, up to the slack late — the rate kept,
/// the lateness in the schedule lag (and so in the corrected latency), none hidden; `--spin 0`
/// keeps the rate too. Both are refused on the engines that sleep and wake on their runtimes.
#[test]
fn slack_batches_paced_sends_and_the_lag_says_how_late() {
    let _alone = alone();
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let lag_p99_ms = |r: &wirebench::stats::Report| r.schedule_lag.value_at_quantile(0.99) as f64 / 1e6;
    let base = [url.as_str(), "-c", "8", "--rate", "2000", "-d", "2s", "--cores", &cpu];
    let slack = bench_on("uring", &[&base[..], &["--slack", "5ms"]].concat());
    assert_clean(&slack);
    assert!((3920..=4080).contains(&slack.ops), "{} operations, 4000 ± 2 % expected", slack.ops);
    let lag = lag_p99_ms(&slack);
    assert!((3.0..60.0).contains(&lag), "with 5 ms of slack the lag's p99 is near 5 ms: {lag} ms");
    let spin0 = bench_on("uring", &[&base[..], &["--spin", "0s"]].concat());
    assert_clean(&spin0);
    assert!((3920..=4080).contains(&spin0.ops), "{} operations", spin0.ops);
    assert!(lag_p99_ms(&spin0) < lag, "no slack sends sooner: {} ms", lag_p99_ms(&spin0));
    for engine in ["glommio", "tokio-uring"] {
        for flag in [["--slack", "1ms"], ["--spin", "0s"]] {
            let e = bench_refusal(engine, &[&base[..], &flag[..]].concat());
            assert!(e.contains(&format!("{} applies to --engine uring", flag[0])), "{engine}: {e}");
        }
    }
}

/// `--gather` (uring, closed loop): a wake-up may hold completions for a window of at most
/// the flag's bound and 1/64 of the mean latency; the report gives the longest it used, zero
/// with `--gather 0` or below 8 connections, and the flag is refused where it does not apply.
#[test]
fn gathered_wake_ups_stay_within_their_bounds_and_are_reported() {
    let _alone = alone();
    // Answers 2 ms late: a window of ~31 µs (1/64 of it) by default.
    let server = start_builtin_with("uring", "http", &["--delay", "2ms"]);
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    let base = [url.as_str(), "-c", "16", "-d", "1s", "--cores", &cpu];
    let gathered =
        |r: &wirebench::stats::Report| r.per_core.iter().map(|c| c.gathered).max().unwrap_or_default();
    let (info, auto) = wirebench::cmd::bench::run(&bench_args("uring", &base)).expect("bench runs");
    assert_clean(&auto);
    let (window, mean) = (gathered(&auto), Duration::from_nanos(auto.latency.mean() as u64));
    let text = wirebench::report::text::render(&info, &wirebench::report::json::bench(&info, &auto, None));
    let capped = bench_on("uring", &[&base[..], &["--gather", "5us"]].concat());
    assert_clean(&capped);
    if wirebench::engine::rings::Rings::gather_here() {
        assert!(window > Duration::ZERO && window <= Duration::from_micros(50), "{window:?}");
        // 1/64 of the mean of some 5 ms: at least the run's mean's, at most its slowest answer's.
        let slowest = Duration::from_nanos(auto.latency.max());
        assert!(window >= mean / 128 && window <= slowest / 64, "{window:?} against {mean:?}, {slowest:?}");
        assert_eq!(auto.gathered, window, "the totals carry the longest");
        assert!(text.contains("wake-ups gathered"), "{text}");
        assert!(gathered(&capped) > Duration::ZERO && gathered(&capped) <= Duration::from_micros(5));
    } else {
        // Before Linux 6.12 every completion wakes the engine, and the report says none waited.
        assert_eq!((window, gathered(&capped)), (Duration::ZERO, Duration::ZERO));
        assert!(!text.contains("wake-ups gathered"), "{text}");
    }
    let off = bench_on("uring", &[&base[..], &["--gather", "0s"]].concat());
    assert_clean(&off);
    assert_eq!(gathered(&off), Duration::ZERO);
    let few = bench_on("uring", &[url.as_str(), "-c", "4", "-d", "1s", "--cores", &cpu]);
    assert_clean(&few);
    assert_eq!(gathered(&few), Duration::ZERO, "4 connections are not gathered for");
    for (engine, extra) in [
        ("glommio", &["--gather", "10us"][..]),
        ("uring", &["--gather", "10us", "--rate", "100"][..]),
        ("uring", &["--gather", "2ms"][..]),
    ] {
        let e = bench_refusal(engine, &[&base[..], extra].concat());
        assert!(e.contains("--gather"), "{engine} {extra:?}: {e}");
    }
}

/// `--rate` stages, a step and a ramp, on every client engine: each stage's line counts what
/// its offered rate asks for (a ramp: its mean), the run lasts the stages' total, and the JSON
/// carries the same lines.
#[test]
fn rate_stages_step_and_ramp_on_schedule() {
    let _alone = alone();
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addr());
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let argv = ["wirebench", "bench", "--engine", engine, &url, "-c", "16", "--cores", &cpu];
        let argv = [&argv[..], &["--rate", "500:2s,500..2500:2s,2500:1s"]].concat();
        let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(argv).unwrap();
        let wirebench::cmd::Command::Bench(args) = cli.command else { unreachable!() };
        let (info, report) = wirebench::cmd::bench::run(&args).unwrap();
        assert_clean(&report);
        assert!((report.elapsed.as_secs_f64() - 5.0).abs() < 0.05, "{engine}: {:?}", report.elapsed);
        let result = wirebench::report::json::bench(&info, &report, None);
        let ops: Vec<u64> = result.stages.iter().map(|s| s.ops).collect();
        for (got, want) in ops.iter().zip([1000.0, 3000.0, 2500.0]) {
            assert!((*got as f64 - want).abs() <= want * 0.04, "{engine}: stages {ops:?}, {want} expected");
        }
        let text = wirebench::report::text::render(&info, &result);
        assert!(text.contains("500..2500"), "{engine}: {text}");
    }
}

/// `--requests` with messages on every protocol and client engine: each kind's count in the
/// file's proportion (exactly, in order), its bytes per operation those of its own message
/// each way, and the kinds adding up to the run; with a connection per operation, the
/// entries still take their turns.
#[test]
fn requests_from_a_file_on_every_protocol_and_engine() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let dir = std::env::temp_dir().join(format!("wirebench-messages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.bin"), vec![b'm'; 1000]).unwrap();
    let file = dir.join("messages.jsonl");
    std::fs::write(
        &file,
        "{\"body\":\"abc\",\"label\":\"small\"}\n{\"body_file\":\"m.bin\",\"label\":\"big\"}\n{\"weight\":2,\"label\":\"default\"}\n",
    )
    .unwrap();
    let file = file.to_string_lossy().to_string();
    let (http, ws, sio, nsq) =
        (start_builtin("http"), start_builtin("ws"), start_builtin("sio"), start_builtin("nsq"));
    let host = http.addr().to_string();
    type Sizes = Box<dyn Fn(usize) -> (f64, f64)>;
    let runs: [(String, &[&str], Sizes); 4] = [
        (
            format!("http://{host}/"),
            &["-m", "POST"],
            Box::new(move |n| (wire::http_request("POST", "/", &host, &[], n), wire::ok())),
        ),
        (
            format!("ws://{}/", ws.addr()),
            &[],
            Box::new(|n| (wire::ws_client_frame(n), wire::ws_server_frame(n))),
        ),
        (
            format!("sio://{}/", sio.addr()),
            &[],
            Box::new(|n| (sio_wire::event("/", Some(0), "message", n), sio_wire::ack("/", 0, n))),
        ),
        (
            format!("nsq://{}/test", nsq.addrs[0]),
            &[],
            Box::new(|n| (wire::nsq_pub("test", n), wire::nsq_frame("OK"))),
        ),
    ];
    for (url, extra, sizes) in &runs {
        for engine in ENGINES {
            let mut args = vec![url.as_str(), "-c", "2", "-n", "4000", "--size", "200", "--requests", &file];
            args.extend(["--cores", &cpu]);
            args.extend_from_slice(extra);
            let r = bench_on(engine, &args);
            assert_clean(&r);
            // 2,000 per connection: 500 cycles of small, big, default, default.
            let what = format!("{url} on {engine}");
            assert_eq!(
                r.kinds.iter().map(|k| (k.sent, k.ops)).collect::<Vec<_>>(),
                [(1000, 1000), (1000, 1000), (2000, 2000)],
                "{what}"
            );
            for (k, n) in r.kinds.iter().zip([3, 1000, 200]) {
                let (tx, rx) = sizes(n);
                assert_eq!(
                    (k.tx as f64 / k.ops as f64, k.rx as f64 / k.ops as f64),
                    (tx, rx),
                    "{what}: {n} B"
                );
                assert_eq!(k.latency.len(), k.ops);
            }
            assert_eq!(r.kinds.iter().map(|k| k.tx).sum::<u64>(), r.tx.op, "{what}");
            assert_eq!(r.kinds.iter().map(|k| k.rx).sum::<u64>(), r.rx.op, "{what}");
        }
    }
    let url = &runs[0].0;
    for engine in ENGINES {
        let args =
            [url.as_str(), "-c", "2", "-n", "400", "--no-keepalive", "--requests", &file, "--cores", &cpu];
        let r = bench_on(engine, &args);
        assert_clean(&r);
        assert_eq!(r.kinds.iter().map(|k| k.ops).collect::<Vec<_>>(), [100, 100, 200], "{engine}");
    }
}

/// `--connect-rate auto` on every engine: against a server that keeps up, the rate rises
/// (from 500/s, 500/s more every 250 ms: 2,000 connections take ~1.2 s at the soonest) and
/// every connection is set up; against one that accepts 100 connections a second behind a listen queue of 1,
/// connects start to take a SYN retransmission (1 s) and the rate halves.
#[test]
fn connect_rate_auto_rises_while_set_ups_keep_up_and_halves_when_they_do_not() {
    let _alone = alone();
    let cpu = client_cpu().to_string();
    let ws = start_builtin("ws");
    let url = format!("ws://{}/", ws.addr());
    for engine in ENGINES {
        let r =
            bench_on(engine, &[&url, "-c", "2000", "--connect-rate", "auto", "-d", "300ms", "--cores", &cpu]);
        // (On a loaded machine a set-up may take over a second, or time out, and the rate
        // halve: what it is for. The ops are all accounted for either way.)
        assert_accounted(&r);
        assert!(r.connects >= 2000, "{engine}");
        let set_up = r.set_up_in.expect("the window waited for the connections");
        assert!(set_up >= std::time::Duration::from_millis(1000), "{engine}: all set up after {set_up:?}");
        assert!(set_up < std::time::Duration::from_secs(8), "{engine}: {set_up:?}");
        let o = r.openers.expect("the opener's figures");
        assert!(o.peak >= 2000.0, "{engine}: {o:?}");
    }
    // The slow acceptor: a listen queue of 1, one accept every 10 ms; it holds what it took.
    let listener = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
    listener.listen(1).unwrap();
    let listener: std::net::TcpListener = listener.into();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acceptor = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            // Bounded: it stops when told, or after a minute.
            for _ in 0..6000 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                if let Ok((s, _)) = listener.accept() {
                    held.push(s);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        })
    };
    let r = bench(&[
        &format!("http://{addr}/"),
        "-c",
        "300",
        "--connect-rate",
        "auto",
        "-d",
        "200ms",
        "--timeout",
        "3s",
        "--cores",
        &cpu,
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    acceptor.join().unwrap();
    assert_accounted(&r);
    let o = r.openers.expect("the opener's figures");
    assert!(o.decreases >= 1, "{o:?}: connects {} {:?}", r.connects, r.phases.connect.max());
    assert!(o.last < o.peak, "{o:?}");
    assert!(r.phases.connect.max() >= 1_000_000_000, "a connect took a SYN retransmission");
}
