//! A run that measured nothing, or the wrong thing, never ends with exit 0 and a tidy report
//! (issue 34): each case as a new user meets it, through the binary — a target that speaks
//! another protocol, a port another program holds, a threshold that names a figure no run can
//! produce, an audit of nothing, an output path that cannot be written, a last interval a few
//! milliseconds wide.

mod common;
use common::*;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn wirebench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().expect("binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `bench URL -d 1s` with a short timeout, on the generator's CPU.
fn short(url: &str, extra: &[&str]) -> Output {
    let cpu = client_cpu().to_string();
    let mut args = vec!["bench", url, "-d", "1s", "--timeout", "300ms", "--cores", &cpu];
    args.extend_from_slice(extra);
    wirebench(&args)
}

/// Item 3: a run in which nothing completed exits with status 4 and one line naming why and
/// what the target seems to speak instead — `ws://`, `h2c://` and `nsq://` against an HTTP
/// server, `http://` against a TLS port, `sio://` against a WebSocket server, a server that
/// accepts and never answers (each printed `0 completed` and exited 0). `--allow-empty`: 0.
#[test]
fn runs_that_complete_nothing_say_why_and_exit_4() {
    let (_http, http) = serve_process("http", &[]);
    let (_ws, ws) = serve_process("ws", &[]);
    let (_tls, tls) = serve_process("http", &["--tls"]);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let _held = std::thread::spawn(move || {
        let conns: Vec<_> = silent.incoming().take(64).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(conns);
    });
    for (url, says) in [
        (format!("ws://{http}/"), "look like HTTP/1.1"),
        (format!("h2c://{http}/"), "look like HTTP/1.1"),
        (format!("nsq://{http}/t"), "no operation completed"),
        (format!("http://{tls}/"), "look like TLS"),
        (format!("sio://{ws}/"), "no operation completed"),
        (format!("http://{silent_addr}/"), "no response within the timeout"),
    ] {
        let out = short(&url, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{url}: {err}");
        assert!(err.contains(says) && err.contains("no operation completed"), "{url}: {err}");
        assert_eq!(err.lines().count(), 1, "{url}: one line: {err}");
    }
    let out = short(&format!("ws://{http}/"), &["--allow-empty"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Item 2: a second `serve` on a port in use is refused in one line, its error said once (it
/// took a share of the connections, SO_REUSEPORT; or said `Address already in use` twice).
#[test]
fn serve_refuses_a_port_in_use_in_one_line() {
    let (_first, addr) = serve_process("http", &[]);
    let out = wirebench(&["serve", "http", "--listen", &addr, "-d", "2s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in use by another program"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.matches("already in use").count() <= 1, "said once: {err}");
}

/// Item 4: every figure a threshold names is one a run can produce: `failed.connect` is
/// refused (an operation never fails so; it could never hold), the refusal lists the classes
/// there are, connection errors have their own names, and a share over 100% is refused.
#[test]
fn thresholds_name_only_figures_a_run_can_produce() {
    let out = wirebench(&["bench", "http://127.0.0.1:1/", "--fail-if", "failed.connect>0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("failed.{closed|read|write|timeout|status|protocol|tls}"), "{err}");
    assert!(err.contains("connection_errors.{connect|"), "{err}");
    let out = wirebench(&["bench", "http://127.0.0.1:1/", "--fail-if", "failed>150%"]);
    assert!(stderr(&out).contains("at most 100%"), "{}", stderr(&out));
    // A connection-error class a run produces, checked: the upgrades an HTTP server refuses.
    let (_http, http) = serve_process("http", &[]);
    let out =
        short(&format!("ws://{http}/"), &["--allow-empty", "--fail-if", "connection_errors.protocol>0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("connection_errors.protocol>0 held"), "{err}");
}

/// Item 5: HTTP/3's audit checked nothing (UDP: no per-socket counts) and said `match`; now it
/// says `unchecked`, and every `audit` condition on it trips, saying it could not be checked
/// (`audit==mismatch` would otherwise pass a run nothing checked).
#[test]
fn an_audit_of_nothing_is_no_match() {
    let (_h3, addr) = serve_process("h3", &[]);
    let url = format!("h3://{addr}/");
    for condition in ["audit!=match", "audit==mismatch"] {
        let out = wirebench(&["bench", &url, "--insecure", "-n", "100", "--fail-if", condition]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{condition}: {text}{}", stderr(&out));
        assert!(text.contains("audit       unchecked"), "{text}");
        assert!(stderr(&out).contains("measured unchecked"), "{condition}: {}", stderr(&out));
    }
}

/// Item 6: an output path that cannot be written is refused before the first connection (a
/// 3 s run ran, then said `cannot write`, exit 2) — for each command's outputs.
#[test]
fn output_paths_are_checked_before_the_run() {
    let (_http, http) = serve_process("http", &[]);
    let url = format!("http://{http}/");
    for (flag, args) in [
        ("--json", vec!["bench", &url, "-d", "10s"]),
        ("--csv", vec!["bench", &url, "-d", "10s"]),
        ("--hlog", vec!["bench", &url, "-d", "10s"]),
        ("--svg", vec!["compare", "-d", "10s"]),
    ] {
        let started = Instant::now();
        let mut args = args.clone();
        args.extend([flag, "/nonexistent/out"]);
        let out = wirebench(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(&format!("cannot write {flag} /nonexistent/out")), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{flag}: refused after {:?}", started.elapsed());
    }
}

/// Item 7: the last interval of `--report-every` (CSV, JSON, the table) is never a few
/// milliseconds wide with a rate many times the run's (`2,2.002,16,8000`): a tail shorter
/// than a tenth of the period goes into the interval before.
#[test]
fn no_interval_is_a_sliver() {
    let (_http, http) = serve_process("http", &[]);
    let cpu = client_cpu().to_string();
    let out = wirebench(&[
        "bench",
        &format!("http://{http}/"),
        "-d",
        "2s",
        "-c",
        "4",
        "--report-every",
        "500ms",
        "--csv",
        "-",
        "--cores",
        &cpu,
    ]);
    let csv = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(4).map(|f| f.parse::<f64>().unwrap_or(0.0)).collect())
        .collect();
    assert!(rows.len() >= 4, "{csv}");
    for r in &rows {
        assert!(r[1] - r[0] >= 0.05, "an interval of {} s: {csv}", r[1] - r[0]);
    }
}

/// Item 8: `search` never answers from a percentile of a handful of samples (`7 ops/s` from a
/// p99 of 8): a first step that cannot offer 100 operations is refused in one line, and the
/// search stops before a step that would not.
#[test]
fn search_refuses_steps_too_short_for_their_p99() {
    let out = wirebench(&["search", "http://127.0.0.1:1/", "--p99", "5ms", "--start", "7", "--step", "5s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("too few for a p99"), "{err}");
}

/// What users of wrk and iperf3 expect when stdout is not a terminal: a first line as soon as
/// the run starts (what, where, how long), and `--report-every`'s rows as each interval ends,
/// not all at the end; `-q`, a summary of two lines.
#[test]
fn a_piped_run_says_it_began_and_prints_its_rows_as_they_end() {
    use std::io::BufRead;
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let cpu = client_cpu().to_string();
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["bench", &url, "-c", "2", "-d", "3s", "--report-every", "500ms", "--cores", &cpu])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Each line and when it came, in seconds after the start.
    let timed: Vec<(f64, String)> =
        lines.map_while(Result::ok).map(|l| (started.elapsed().as_secs_f64(), l)).collect();
    assert!(child.wait().unwrap().success());
    let (first_at, first) = &timed[0];
    assert!(first.starts_with("running 3s of http1 @ "), "{first}");
    assert!(*first_at < 1.5, "the first line came {first_at} s after the start");
    // The live rows (a row's first field is its start, in s): the first came long before the end.
    let rows: Vec<&(f64, String)> =
        timed.iter().filter(|(_, l)| l.trim_start().starts_with("0.00 ")).collect();
    assert_eq!(rows.len(), 2, "a live row from 0 s, and the report's: {timed:?}");
    let last_at = timed.last().unwrap().0;
    assert!(rows[0].0 + 1.5 < last_at, "the first row came at {} s, the report at {last_at} s", rows[0].0);
    let quiet = wirebench(&["bench", &url, "-c", "2", "-d", "500ms", "-q", "--cores", &cpu]);
    let text = String::from_utf8_lossy(&quiet.stdout);
    assert!(quiet.status.success() && text.lines().count() <= 3, "{text}");
    assert!(text.contains("ops/s") && text.contains("audit match"), "{text}");
    server.stop().unwrap();
}

/// The same rules where the tests did not reach: a `compare` row that completed
/// nothing exits 4 naming the row; a `sweep --server-cmd` whose command exits before it
/// accepts is refused; `serve h3` on a UDP port already held is refused in one line.
#[test]
fn a_compare_row_a_sweep_server_and_a_udp_port_get_their_verdicts() {
    let server = start_builtin("http");
    let ws = format!("ws://{}/", server.addrs[0]);
    let out = wirebench(&["compare", &ws, "-d", "500ms"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("no operation completed against WebSocket binary"), "{}", stderr(&out));
    server.stop().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = wirebench(&["sweep", &url, "--server-cmd", "true", "--server-cores", "1", "-d", "500ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited (exit status: 0) before accepting connections"),
        "{}",
        stderr(&out)
    );
    let h3 = start_builtin("h3");
    let listen = h3.addr().to_string();
    let out = wirebench(&["serve", "h3", "--listen", &listen, "--duration", "1s"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("the port is in use by another program"), "{}", stderr(&out));
    let _ = h3.stop();
}
