//! `bench --tui`: the run as it goes, in a terminal view (ratatui over crossterm), drawn a few
//! times a second from the copies the cores already publish for `--metrics-listen` and
//! `--report-every` (`stats::live`: each core copies its counts and histogram every 200 ms;
//! nothing on the hot path knows the view exists). Panels: ops/s over time, the latency
//! spectrum of the last interval and of the run so far, failures and connection errors by
//! class, the protocol's answers, each core's share and busy % (flagged when it saturates),
//! bytes per operation by class and by layer, a paced run's schedule lag and what came due
//! unsent, connections and open files, the time left. `q` (or Ctrl-C) stops the run early, as Ctrl-C does without the view; `p` pauses the drawing.
//! The report printed after the view closes is the one printed without it. A series
//! (`compare`, `sweep`, `search`) holds the terminal for all its runs ([`series`]).

use super::{micros, si};
use crate::stats::live::{Live, LiveCore};
use hdrhistogram::Histogram;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{execute, terminal};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Row, Sparkline, Table};
use std::collections::VecDeque;
use std::time::Duration;

pub mod series;

/// How often the view is drawn.
pub const DRAW_EVERY: Duration = Duration::from_millis(250);
/// How often ops/s is sampled for its history: the cores' copies are 200 ms apart, so a
/// shorter sample would show their steps, not the rate.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Samples of ops/s kept for the sparkline (four minutes): the view's memory does not grow
/// with the run.
const HISTORY: usize = 240;
/// A generator core busier than this is flagged: the generator, not the server, may be what
/// limits the run.
const SATURATED: f64 = 90.0;

type Term = ratatui::Terminal<ratatui::backend::CrosstermBackend<std::io::Stdout>>;

/// What the view says about the run besides the cores' figures.
pub struct Heading {
    pub title: String,
    pub connections: usize,
    /// How long the run is planned to last (its warm-up and window), if timed.
    pub expected: Option<Duration>,
}

/// The view: the terminal it owns (raw mode, the alternate screen) until it is closed or
/// dropped, and what it remembers between draws.
pub struct View {
    /// The terminal (`None` only once given back); `lent`: a series' (`compare --tui`…),
    /// returned to it, not restored, when this run's view closes.
    term: Option<Term>,
    lent: bool,
    live: Live,
    heading: Heading,
    history: VecDeque<u64>,
    last: (Duration, u64),
    last_latency: Option<Histogram<u64>>,
    interval: Option<Histogram<u64>>,
    /// Each core's copy at the last sample (its CPU time and when), and its busy % since the
    /// one before.
    cpu_then: Vec<(usize, Duration, crate::clock::Instant)>,
    busy: Vec<(usize, f64)>,
    /// The process's open files and its limit, at the last sample.
    files: Option<(u64, u64)>,
    next_draw: Duration,
    paused: bool,
    /// The terminal hung up: no key is read, nothing drawn.
    gone: bool,
    /// Stdin was a terminal when the view opened (crossterm reads keys there; otherwise it
    /// opens `/dev/tty`, which a hang-up ends the process's session with).
    keys_on_stdin: bool,
}

impl View {
    /// Take the terminal ([`take_terminal`]), or borrow the series' that holds it.
    pub fn open(live: Live, heading: Heading) -> std::io::Result<View> {
        let (term, lent) = match series::lend() {
            Some(term) => (term, true),
            None => (take_terminal()?, false),
        };
        Ok(View {
            term: Some(term),
            lent,
            live,
            heading,
            history: VecDeque::with_capacity(HISTORY),
            last: (Duration::ZERO, 0),
            last_latency: None,
            interval: None,
            cpu_then: Vec::new(),
            busy: Vec::new(),
            files: crate::engine::sys::open_files(),
            next_draw: Duration::ZERO,
            paused: false,
            gone: false,
            keys_on_stdin: std::io::IsTerminal::is_terminal(&std::io::stdin()),
        })
    }

    /// Look at the keys, and draw when it is time. `true`: the user asked the run to stop, or
    /// the terminal is gone.
    pub fn tick(&mut self, elapsed: Duration) -> bool {
        // A terminal whose other side closed (a hang-up: the window, the ssh session, tmux gone)
        // is read at its end for ever by crossterm's poll — a run that never ended. Nobody
        // watches: the run stops, as on SIGHUP without the view.
        if self.gone || (self.keys_on_stdin && hung_up()) {
            self.gone = true;
            return true;
        }
        let mut stop = false;
        // Bounded: the keys already waiting, at most 64 a turn.
        for _ in 0..64 {
            if !event::poll(Duration::ZERO).unwrap_or(false) {
                break;
            }
            if let Ok(Event::Key(key)) = event::read()
                && key.kind == KeyEventKind::Press
            {
                match key.code {
                    KeyCode::Char('q') | KeyCode::Esc => stop = true,
                    KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => stop = true,
                    KeyCode::Char('p') => self.paused = !self.paused,
                    _ => {}
                }
            }
        }
        if elapsed >= self.next_draw {
            self.next_draw = elapsed + DRAW_EVERY;
            let cores = self.copies();
            self.sample(elapsed, &cores);
            if !self.paused {
                let _ = self.draw(elapsed, &cores);
            }
        }
        stop
    }

    /// Every core's latest copy.
    fn copies(&self) -> Vec<LiveCore> {
        let lock = |slot: &std::sync::Mutex<Option<LiveCore>>| {
            slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
        };
        self.live.iter().filter_map(lock).collect()
    }

    /// Every [`SAMPLE_EVERY`]: the ops/s since the last sample into the history, and the
    /// latency since it apart.
    fn sample(&mut self, elapsed: Duration, cores: &[LiveCore]) {
        let ops: u64 = cores.iter().map(|c| c.ops).sum();
        let (at, before) = self.last;
        if elapsed < at + SAMPLE_EVERY {
            return;
        }
        let secs = (elapsed - at).as_secs_f64().max(1e-3);
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((ops.saturating_sub(before) as f64 / secs) as u64);
        self.last = (elapsed, ops);
        let total = merged(cores);
        let mut interval = total.clone();
        if let (Some(now), Some(then)) = (&mut interval, &self.last_latency) {
            let _ = now.subtract(then);
        }
        self.interval = interval;
        self.last_latency = total;
        self.busy = cores
            .iter()
            .filter_map(|c| {
                let (_, cpu, at) = self.cpu_then.iter().find(|(core, ..)| *core == c.core)?;
                let wall = c.at.saturating_duration_since(*at).as_secs_f64();
                (wall > 0.0).then(|| (c.core, 100.0 * c.cpu.saturating_sub(*cpu).as_secs_f64() / wall))
            })
            .collect();
        self.cpu_then = cores.iter().map(|c| (c.core, c.cpu, c.at)).collect();
        self.files = crate::engine::sys::open_files();
    }

    fn draw(&mut self, elapsed: Duration, cores: &[LiveCore]) -> std::io::Result<()> {
        let (heading, history, interval, busy) = (&self.heading, &self.history, &self.interval, &self.busy);
        let files = self.files;
        let run = merged(cores);
        // A series' table so far (and `search`'s plot) above the run's own panels.
        let drawn = if self.lent { series::Drawn::now() } else { None };
        let Some(term) = self.term.as_mut() else { return Ok(()) };
        term.draw(|f| {
            let above = drawn.as_ref().map_or(0, series::Drawn::height);
            let all = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Length(above), Constraint::Min(17)])
                .split(f.area());
            if let Some(d) = &drawn {
                d.draw(f, all[0]);
            }
            let rows = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Length(3), Constraint::Min(7), Constraint::Min(7)])
                .split(all[1]);
            f.render_widget(progress(heading, elapsed), rows[0]);
            let top = halves(rows[1]);
            let rate = history.back().copied().unwrap_or(0);
            let data: Vec<u64> = history.iter().copied().collect();
            let spark = Sparkline::default()
                .block(
                    Block::default().borders(Borders::ALL).title(format!(" ops/s: {} now ", si(rate as f64))),
                )
                .data(&data)
                .style(Style::default().fg(Color::Cyan));
            f.render_widget(spark, top[0]);
            f.render_widget(latency_table(interval.as_ref(), run.as_ref()), top[1]);
            let bottom = halves(rows[2]);
            f.render_widget(cores_table(cores, busy), bottom[0]);
            f.render_widget(counts(cores, heading.connections, files), bottom[1]);
        })?;
        Ok(())
    }

    /// Give the terminal back as it was.
    pub fn close(self) {}
}

impl Drop for View {
    fn drop(&mut self) {
        match self.term.take() {
            Some(term) if self.lent => series::take_back(term),
            Some(mut term) => give_back(&mut term),
            None => {}
        }
    }
}

/// Raw mode (keys come one by one; Ctrl-C is a key here) and the alternate screen (what was on
/// the terminal comes back when it is given back).
fn take_terminal() -> std::io::Result<Term> {
    // A panic while the view holds the terminal: the terminal given back first, so that the
    // message is not printed on the alternate screen and erased with it.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = terminal::disable_raw_mode();
            let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen);
            before(info);
        }));
    });
    terminal::enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    if let Err(e) = execute!(stdout, terminal::EnterAlternateScreen) {
        let _ = terminal::disable_raw_mode();
        return Err(e);
    }
    match ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(stdout)) {
        Ok(term) => Ok(term),
        Err(e) => {
            let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen);
            let _ = terminal::disable_raw_mode();
            Err(e)
        }
    }
}

/// The terminal as it was before [`take_terminal`].
fn give_back(term: &mut Term) {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(term.backend_mut(), terminal::LeaveAlternateScreen);
    let _ = term.show_cursor();
}

/// Whether the terminal on stdin hung up (its other side closed).
fn hung_up() -> bool {
    let mut fd = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd of ours, no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// Two columns, side by side.
fn halves(area: Rect) -> std::rc::Rc<[Rect]> {
    Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
        .split(area)
}

/// Every core's latency histogram added.
fn merged(cores: &[LiveCore]) -> Option<Histogram<u64>> {
    let mut all: Option<Histogram<u64>> = None;
    for c in cores {
        match &mut all {
            Some(h) => {
                let _ = h.add(&c.latency);
            }
            None => all = Some(c.latency.clone()),
        }
    }
    all
}

/// The title, the time gone and left, and the keys.
fn progress(heading: &Heading, elapsed: Duration) -> Gauge<'static> {
    let (ratio, left) = match heading.expected {
        Some(total) if !total.is_zero() => {
            let ratio = (elapsed.as_secs_f64() / total.as_secs_f64()).clamp(0.0, 1.0);
            (ratio, format!("{:.0}s left", total.saturating_sub(elapsed).as_secs_f64().ceil()))
        }
        _ => (0.0, "until -n is done".to_string()),
    };
    Gauge::default()
        .block(
            Block::default().borders(Borders::ALL).title(format!(" q stop · p pause — {} ", heading.title)),
        )
        .gauge_style(Style::default().fg(Color::Green))
        .ratio(ratio)
        .label(format!("{:.1}s, {left}", elapsed.as_secs_f64()))
}

/// p50 … max of the last interval and of the run so far (µs from ns).
fn latency_table(interval: Option<&Histogram<u64>>, run: Option<&Histogram<u64>>) -> Table<'static> {
    let q = |h: Option<&Histogram<u64>>, q: f64| {
        h.filter(|h| !h.is_empty()).map_or("-".into(), |h| micros(h.value_at_quantile(q) as f64 / 1e3))
    };
    let rows =
        [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999), ("max", 1.0)]
            .map(|(name, at)| Row::new(vec![name.to_string(), q(interval, at), q(run, at)]));
    Table::new(rows, [Constraint::Length(8), Constraint::Length(12), Constraint::Length(12)])
        .header(
            Row::new(vec!["latency", "last 1s", "run"]).style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::default().borders(Borders::ALL).title(" latency from when due "))
}

/// Each core's operations and share.
fn cores_table(cores: &[LiveCore], busy: &[(usize, f64)]) -> Table<'static> {
    let total: u64 = cores.iter().map(|c| c.ops).sum();
    let rows: Vec<Row> = cores
        .iter()
        .map(|c| {
            let share = 100.0 * crate::stats::ratio(c.ops as f64, total as f64);
            let pct = busy.iter().find(|(core, _)| *core == c.core).map(|(_, p)| *p);
            let row = Row::new(vec![
                c.core.to_string(),
                c.ops.to_string(),
                format!("{share:.1}%"),
                pct.map_or("-".into(), |p| format!("{p:.0}%")),
                c.sent.to_string(),
            ]);
            // A saturated generator core: the run may measure the generator, not the server.
            match pct {
                Some(p) if p >= SATURATED => {
                    row.style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))
                }
                _ => row,
            }
        })
        .collect();
    Table::new(
        rows,
        [
            Constraint::Length(6),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(6),
            Constraint::Length(12),
        ],
    )
    .header(
        Row::new(vec!["core", "ops", "share", "busy", "sent"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(" cores "))
}

/// Failures and connection errors by class, bytes per operation by class and by layer,
/// connections and open files.
fn counts(cores: &[LiveCore], connections: usize, files: Option<(u64, u64)>) -> Paragraph<'static> {
    let (mut ops, mut sent, mut connects, mut reconnects, mut closed) = (0, 0, 0, 0, 0);
    let mut layers = None;
    let (mut tx, mut rx) = (crate::stats::ByteSplit::default(), crate::stats::ByteSplit::default());
    let (mut failed, mut errors) = (Vec::new(), Vec::new());
    for c in cores {
        ops += c.ops;
        sent += c.sent;
        connects += c.connects;
        reconnects += c.reconnects;
        closed += c.closed;
        crate::stats::layers_merge_into(&mut layers, c.layers.as_ref());
        tx.merge(&c.tx);
        rx.merge(&c.rx);
    }
    for class in crate::outcome::ErrorClass::ALL {
        let f: u64 = cores.iter().map(|c| c.failed.get(class)).sum();
        let e: u64 = cores.iter().map(|c| c.conn_errors.get(class)).sum();
        if f > 0 {
            failed.push(format!("{} {f}", class.name()));
        }
        if e > 0 {
            errors.push(format!("{} {e}", class.name()));
        }
    }
    let per = |n: u64| crate::stats::ratio(n as f64, ops as f64);
    let words = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let lines = vec![
        Line::from(format!("sent {sent}, completed {ops}")),
        Line::from(format!("failed: {}", words(failed))),
        Line::from(format!("connection errors: {}", words(errors))),
        Line::from(format!("bytes/op tx {:.1} rx {:.1}", per(tx.op), per(rx.op))),
        Line::from(format!(
            "set-up tx {} rx {}, control tx {} rx {}",
            tx.handshake, rx.handshake, tx.control, rx.control
        )),
        Line::from(format!(
            "connections {} open of {connections} ({connects} opened, {reconnects} reconnects)",
            connects.saturating_sub(closed)
        )),
        Line::from(match files {
            Some((open, limit)) => format!("open files {open} of limit {limit}"),
            None => "open files: not known".to_string(),
        }),
        answers_line(cores),
    ];
    let mut lines = lines;
    lines.extend(layers.as_ref().map(layers_lines).into_iter().flatten());
    if let Some(line) = schedule_line(cores) {
        lines.push(line);
    }
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" operations "))
}

/// Operation bytes per operation by the protocol's layers (HTTP/2 and HTTP/3 count them), of
/// the operations counted so far, a line each way; none when none are.
fn layers_lines(l: &crate::stats::Layers) -> Vec<Line<'static>> {
    let ops = l.first.ops + l.steady.ops;
    if ops == 0 {
        return Vec::new();
    }
    let (mut tx, mut rx) = (l.first.tx, l.first.rx);
    tx.merge(&l.steady.tx);
    rx.merge(&l.steady.rx);
    let names = ["hdr", "trl", "frm", "pfx", "pay"];
    let side = |b: &crate::stats::LayerBytes| {
        let per = b.per(ops);
        let words: Vec<String> =
            names.iter().zip(per).filter(|(_, v)| *v > 0.0).map(|(n, v)| format!("{n} {v:.1}")).collect();
        if words.is_empty() { "0".to_string() } else { words.join(" ") }
    };
    vec![
        Line::from(format!("by layer/op ({ops} ops) tx: {}", side(&tx))),
        Line::from(format!("by layer/op ({ops} ops) rx: {}", side(&rx))),
    ]
}

/// The protocol's answers (HTTP statuses, NSQ responses…), the most frequent first.
fn answers_line(cores: &[LiveCore]) -> Line<'static> {
    let mut answers = crate::outcome::AnswerCounts::default();
    for c in cores {
        answers.merge(&c.answers);
    }
    let mut sorted = answers.sorted();
    sorted.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let words: Vec<String> = sorted.iter().take(4).map(|(a, n)| format!("{a} {n}")).collect();
    Line::from(format!(
        "answers: {}",
        if words.is_empty() { "none yet".to_string() } else { words.join(", ") }
    ))
}

/// A paced run's schedule: how late operations went (p50, p99 of the run so far), and those
/// that came due while their connection was busy or went unsent; `None` for a closed loop.
fn schedule_line(cores: &[LiveCore]) -> Option<Line<'static>> {
    let mut lag: Option<Histogram<u64>> = None;
    let (mut busy, mut unsent) = (0, 0);
    for c in cores {
        busy += c.due_while_busy;
        unsent += c.due_unsent;
        match &mut lag {
            Some(h) => {
                let _ = h.add(&c.schedule_lag);
            }
            None => lag = Some(c.schedule_lag.clone()),
        }
    }
    let lag = lag.filter(|h| !h.is_empty())?;
    let at = |q: f64| micros(lag.value_at_quantile(q) as f64 / 1e3);
    Some(Line::from(format!(
        "schedule lag p50 {} p99 {}; due while busy {busy}, unsent {unsent}",
        at(0.5),
        at(0.99)
    )))
}
