//! `bench --tui` as a user sees it, under tmux (send-keys, capture-pane): the panels appear and
//! their numbers move, `q` ends the run early with the normal report and Ctrl-C's exit status,
//! and a 60×20 terminal is drawn without a panic.

mod common;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session running `command` in a `width`×`height` terminal, killed when dropped.
struct Session(String);

impl Session {
    fn start(width: u16, height: u16, command: &str) -> Session {
        let name = format!("wirebench-tui-{}", free_port());
        let status = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
                command,
            ])
            .status()
            .expect("tmux runs");
        assert!(status.success());
        Session(name)
    }

    fn screen(&self) -> String {
        let out =
            Command::new("tmux").args(["capture-pane", "-p", "-S", "-100", "-t", &self.0]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once it holds `text` (at most `within`).
    fn wait_for(&self, text: &str, within: Duration) -> String {
        let began = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) || began.elapsed() > within {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &str) {
        assert!(Command::new("tmux").args(["send-keys", "-t", &self.0, keys]).status().unwrap().success());
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).status();
    }
}

fn bench_line(url: &str, extra: &str) -> String {
    format!(
        "{} bench {url} -c 2 --tui --cores {} {extra}; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_wirebench"),
        client_cpu()
    )
}

#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn the_view_draws_moves_and_q_ends_the_run_with_its_report() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let tui = Session::start(120, 36, &bench_line(&url, "-d 30s"));
    let first = tui.wait_for("rx 50.0", Duration::from_secs(10));
    for panel in ["q stop", "ops/s:", "latency from when due", "cores", "operations", "rx 50.0"] {
        assert!(first.contains(panel), "{panel}:\n{first}");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let later = tui.screen();
    assert_ne!(first, later, "the numbers move");
    tui.keys("q");
    let end = tui.wait_for("EXIT=", Duration::from_secs(10));
    assert!(end.contains("EXIT=130"), "q stops as Ctrl-C does:\n{end}");
    assert!(end.contains("interrupted q (or Ctrl-C) stopped the run"), "{end}");
    assert!(end.contains("audit") && end.contains("match"), "the normal report follows:\n{end}");
    server.stop().unwrap();
}

#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn a_small_terminal_is_drawn_without_a_panic() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let tui = Session::start(60, 20, &bench_line(&url, "-d 3s"));
    let during = tui.wait_for("q stop", Duration::from_secs(10));
    assert!(during.contains("q stop"), "{during}");
    let end = tui.wait_for("EXIT=", Duration::from_secs(15));
    assert!(end.contains("EXIT=0") && !end.contains("panicked"), "{end}");
    server.stop().unwrap();
}

#[test]
fn without_a_terminal_tui_is_refused_in_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["bench", "http://127.0.0.1:1/", "--tui"])
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tui draws on a terminal") && err.lines().count() == 1, "{err}");
}
