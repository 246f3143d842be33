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
        self.wait_until(|screen| screen.contains(text), within)
    }

    /// The screen once `shows` holds for it (at most `within`).
    fn wait_until(&self, shows: impl Fn(&str) -> bool, within: Duration) -> String {
        let began = Instant::now();
        loop {
            let screen = self.screen();
            if shows(&screen) || began.elapsed() > within {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The screen with its colours (`capture-pane -e`: SGR escape sequences).
    fn screen_in_colour(&self) -> String {
        let out = Command::new("tmux").args(["capture-pane", "-p", "-e", "-t", &self.0]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
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
    // Each core's busy share, once two samples of it are a second apart (a row with its share
    // and its busy %); the answers.
    let busy_shown = |screen: &str| screen.lines().any(|l| l.matches('%').count() >= 2);
    let later = tui.wait_until(busy_shown, Duration::from_secs(5));
    assert!(busy_shown(&later), "share and busy %:\n{later}");
    assert!(later.contains("busy") && later.contains("answers: 200 "), "{later}");
    // The view as a picture (README's), a few seconds of history in: its colours drawn by
    // Chromium, checked not blank.
    std::thread::sleep(Duration::from_secs(4));
    let dir = std::env::temp_dir().join(format!("wirebench-tui-shot-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let (page, png) = (dir.join("tui.html"), dir.join("tui.png"));
    std::fs::write(&page, terminal_page(&tui.screen_in_colour())).unwrap();
    screenshot_sized(&page, &png, (1180, 640));
    let (pixels, _) = pixels(&png);
    let lit = pixels.iter().filter(|p| !near(p, [30, 30, 30])).count();
    assert!(lit > pixels.len() / 50, "the view is drawn: {lit} of {} pixels", pixels.len());
    keep_screenshot(&png, "tui.png");
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

#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn a_paced_run_shows_its_schedule_lag() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let tui = Session::start(120, 36, &bench_line(&url, "--rate 2000 -d 20s"));
    let during = tui.wait_for("schedule lag p50", Duration::from_secs(10));
    assert!(during.contains("schedule lag p50") && during.contains("due while busy"), "{during}");
    tui.keys("q");
    let end = tui.wait_for("EXIT=", Duration::from_secs(10));
    assert!(end.contains("EXIT=130"), "{end}");
    server.stop().unwrap();
}

#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn http2_shows_its_bytes_by_layer_and_the_open_files_as_it_runs() {
    let server = start_builtin("h2");
    let url = format!("h2c://{}/", server.addrs[0]);
    let tui = Session::start(140, 40, &bench_line(&url, "-d 20s"));
    // While both connections are still open: each request is one HEADERS frame (a 9-octet
    // head) and its answer a HEADERS and a DATA frame (two), whatever the header blocks weigh.
    let during = tui.wait_for("by layer/op", Duration::from_secs(10));
    assert!(during.contains("ops) tx: hdr ") && during.contains(" frm 9.0 "), "{during}");
    assert!(during.contains("ops) rx: hdr ") && during.contains(" frm 18.0 pay "), "{during}");
    assert!(during.contains("connections 2 open of 2"), "{during}");
    assert!(during.contains("open files ") && during.contains(" of limit "), "{during}");
    tui.keys("q");
    let end = tui.wait_for("EXIT=", Duration::from_secs(10));
    assert!(end.contains("EXIT=130") && end.contains("layers/op"), "{end}");
    server.stop().unwrap();
}

/// `search --tui`: the steps' table and their p99 against the rate above each step's own live
/// view; when it ends, the terminal comes back and the report is the one without `--tui`
/// (the same lines, in the same order).
#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn search_draws_its_steps_and_their_plot_then_prints_its_report() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let line = format!(
        "{} search {url} --p99 50ms --step 1s --start 500 --max-steps 3 -c 2 --cores {} --tui; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_wirebench"),
        client_cpu()
    );
    let tui = Session::start(140, 50, &line);
    // The second step's view: the first step's row is in the table above it, and a point.
    let during = tui.wait_for("    1 ", Duration::from_secs(10));
    for panel in ["so far", "p99 against rate", "step    offered", "q stop", "latency from when due"] {
        assert!(during.contains(panel), "{panel}:\n{during}");
    }
    let end = tui.wait_for("EXIT=", Duration::from_secs(20));
    assert!(end.contains("EXIT=0") && !end.contains("q stop"), "the terminal given back:\n{end}");
    let report: Vec<&str> = end.lines().skip_while(|l| !l.starts_with("wirebench search")).collect();
    let rows = report.iter().filter(|l| l.contains("  pass")).count();
    assert_eq!(rows, 3, "every step's row, once:\n{end}");
    assert!(report.iter().any(|l| l.starts_with("answer: at least 2000 ops/s")), "{end}");
    server.stop().unwrap();
}

/// `compare --tui` on two targets: the table fills in above each row's run; `q` during the
/// second stops the series as Ctrl-C does, and the table printed has the rows that ran.
#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn compare_fills_its_table_as_it_goes_and_q_stops_the_series() {
    let (http, h2) = (start_builtin("http"), start_builtin("h2"));
    let line = format!(
        "{} compare http://{}/ h2c://{}/ -d 30s --warmup 0s -c 2 --cores {} --tui; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_wirebench"),
        http.addrs[0],
        h2.addrs[0],
        client_cpu()
    );
    let tui = Session::start(140, 45, &line);
    let first = tui.wait_for("q stop", Duration::from_secs(10));
    assert!(first.contains("so far") && first.contains("protocol  "), "{first}");
    tui.keys("q");
    let end = tui.wait_for("EXIT=", Duration::from_secs(20));
    assert!(
        !end.contains("q stop") && !end.contains("h2c://"),
        "one row ran, the terminal given back:\n{end}"
    );
    assert!(end.lines().any(|l| l.starts_with("HTTP/1.1 POST")), "its row printed:\n{end}");
    assert!(end.contains("EXIT=130"), "stopped as by Ctrl-C:\n{end}");
    http.stop().unwrap();
    h2.stop().unwrap();
}

/// A terminal screen with SGR colour sequences (what `capture-pane -e` gives) as an HTML page:
/// the 16 colours and the 256-colour cube, bold and reverse; the rest of the sequences dropped.
fn terminal_page(screen: &str) -> String {
    const BASE: [&str; 16] = [
        "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5", "#666666",
        "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
    ];
    let colour = |n: u16| -> String {
        match n {
            0..=15 => BASE[n as usize].to_string(),
            16..=231 => {
                let n = n - 16;
                let level = |v: u16| if v == 0 { 0 } else { 55 + 40 * v };
                format!("#{:02x}{:02x}{:02x}", level(n / 36), level(n / 6 % 6), level(n % 6))
            }
            _ => {
                let g = 8 + 10 * (n.min(255) - 232);
                format!("#{g:02x}{g:02x}{g:02x}")
            }
        }
    };
    let (mut html, mut open) = (String::new(), false);
    let (mut fg, mut bg, mut bold, mut reverse): (Option<String>, Option<String>, bool, bool) =
        (None, None, false, false);
    let mut chars = screen.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            let mut params = String::new();
            for p in chars.by_ref() {
                if p.is_ascii_alphabetic() {
                    if p != 'm' {
                        params.clear(); // not a colour: dropped
                    }
                    break;
                }
                params.push(p);
            }
            let codes: Vec<u16> = params.split(';').map(|p| p.parse().unwrap_or(0)).collect();
            let mut i = 0;
            while i < codes.len() {
                match codes[i] {
                    0 => (fg, bg, bold, reverse) = (None, None, false, false),
                    1 => bold = true,
                    7 => reverse = true,
                    22 => bold = false,
                    27 => reverse = false,
                    n @ 30..=37 => fg = Some(colour(n - 30)),
                    n @ 90..=97 => fg = Some(colour(n - 90 + 8)),
                    n @ 40..=47 => bg = Some(colour(n - 40)),
                    n @ 100..=107 => bg = Some(colour(n - 100 + 8)),
                    39 => fg = None,
                    49 => bg = None,
                    n @ (38 | 48) if codes.get(i + 1) == Some(&5) => {
                        let c = Some(colour(*codes.get(i + 2).unwrap_or(&0)));
                        if n == 38 {
                            fg = c
                        } else {
                            bg = c
                        }
                        i += 2;
                    }
                    _ => {}
                }
                i += 1;
            }
            if open {
                html += "</span>";
            }
            let (f, b) = match reverse {
                false => (fg.clone().unwrap_or("#d4d4d4".into()), bg.clone().unwrap_or("#1e1e1e".into())),
                true => (bg.clone().unwrap_or("#1e1e1e".into()), fg.clone().unwrap_or("#d4d4d4".into())),
            };
            let weight = if bold { "bold" } else { "normal" };
            html += &format!("<span style=\"color:{f};background:{b};font-weight:{weight}\">");
            open = true;
            continue;
        }
        match c {
            '<' => html += "&lt;",
            '>' => html += "&gt;",
            '&' => html += "&amp;",
            c => html.push(c),
        }
    }
    if open {
        html += "</span>";
    }
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{{margin:0;background:#1e1e1e}}pre{{margin:8px;color:#d4d4d4;font:14px/1.2 'DejaVu Sans Mono',monospace}}</style></head><body><pre>{html}</pre></body></html>"
    )
}

/// A terminal that goes away mid-run (its window, its ssh session, here its tmux session) ends
/// the run: crossterm's key reader would spin on the hung-up terminal for ever (a `-d 30s` run
/// found still running 24 minutes later at half a CPU).
#[test]
#[ignore = "needs tmux: run by .ci/run"]
fn a_terminal_that_hangs_up_ends_the_run() {
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let marker = format!("hangup-{}", free_port());
    let tui = Session::start(120, 36, &bench_line(&url, &format!("-d 30s --label {marker}")));
    tui.wait_for("q stop", Duration::from_secs(10));
    let running = || {
        let out = Command::new("pgrep").args(["-f", "--", &format!("label {marker}")]).output().unwrap();
        !out.stdout.is_empty()
    };
    assert!(running(), "the run is there before the hang-up");
    drop(tui); // tmux kill-session: the terminal hangs up
    let began = Instant::now();
    while running() && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let lingered = running();
    if lingered {
        // A failed test leaves nothing running.
        let _ = Command::new("pkill").args(["-f", "--", &format!("label {marker}")]).status();
    }
    assert!(!lingered, "the run ended after its terminal hung up");
    server.stop().unwrap();
}
