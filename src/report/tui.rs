//! `bench --tui`: the run as it goes, in a terminal view (ratatui over crossterm), drawn a few
//! times a second from the copies the cores already publish for `--metrics-listen` and
//! `--report-every` (`stats::live`: each core copies its counts and histogram every 200 ms;
//! nothing on the hot path knows the view exists). Panels: ops/s over time, the latency
//! spectrum of the last interval and of the run so far, failures and connection errors by
//! class, each core's share, bytes per operation by class, connections, the time left. `q`
//! (or Ctrl-C) stops the run early, as Ctrl-C does without the view; `p` pauses the drawing.
//! The report printed after the view closes is the one printed without it.

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

/// How often the view is drawn.
pub const DRAW_EVERY: Duration = Duration::from_millis(250);
/// How often ops/s is sampled for its history: the cores' copies are 200 ms apart, so a
/// shorter sample would show their steps, not the rate.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Samples of ops/s kept for the sparkline (four minutes): the view's memory does not grow
/// with the run.
const HISTORY: usize = 240;

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
    term: Term,
    live: Live,
    heading: Heading,
    history: VecDeque<u64>,
    last: (Duration, u64),
    last_latency: Option<Histogram<u64>>,
    interval: Option<Histogram<u64>>,
    next_draw: Duration,
    paused: bool,
}

impl View {
    /// Take the terminal: raw mode (keys come one by one; Ctrl-C is a key here) and the
    /// alternate screen (what was on the terminal comes back when the view closes).
    pub fn open(live: Live, heading: Heading) -> std::io::Result<View> {
        terminal::enable_raw_mode()?;
        let mut stdout = std::io::stdout();
        if let Err(e) = execute!(stdout, terminal::EnterAlternateScreen) {
            let _ = terminal::disable_raw_mode();
            return Err(e);
        }
        let term = match ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(stdout)) {
            Ok(term) => term,
            Err(e) => {
                let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen);
                let _ = terminal::disable_raw_mode();
                return Err(e);
            }
        };
        Ok(View {
            term,
            live,
            heading,
            history: VecDeque::with_capacity(HISTORY),
            last: (Duration::ZERO, 0),
            last_latency: None,
            interval: None,
            next_draw: Duration::ZERO,
            paused: false,
        })
    }

    /// Look at the keys, and draw when it is time. `true`: the user asked the run to stop.
    pub fn tick(&mut self, elapsed: Duration) -> bool {
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
    }

    fn draw(&mut self, elapsed: Duration, cores: &[LiveCore]) -> std::io::Result<()> {
        let (heading, history, interval) = (&self.heading, &self.history, &self.interval);
        let run = merged(cores);
        self.term.draw(|f| {
            let rows = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Length(3), Constraint::Min(7), Constraint::Min(7)])
                .split(f.area());
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
            f.render_widget(cores_table(cores), bottom[0]);
            f.render_widget(counts(cores, heading.connections), bottom[1]);
        })?;
        Ok(())
    }

    /// Give the terminal back as it was.
    pub fn close(self) {}
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(self.term.backend_mut(), terminal::LeaveAlternateScreen);
        let _ = self.term.show_cursor();
    }
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
fn cores_table(cores: &[LiveCore]) -> Table<'static> {
    let total: u64 = cores.iter().map(|c| c.ops).sum();
    let rows: Vec<Row> = cores
        .iter()
        .map(|c| {
            let share = 100.0 * crate::stats::ratio(c.ops as f64, total as f64);
            Row::new(vec![c.core.to_string(), c.ops.to_string(), format!("{share:.1}%"), c.sent.to_string()])
        })
        .collect();
    Table::new(
        rows,
        [Constraint::Length(6), Constraint::Length(12), Constraint::Length(8), Constraint::Length(12)],
    )
    .header(
        Row::new(vec!["core", "ops", "share", "sent"]).style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(" cores "))
}

/// Failures and connection errors by class, bytes per operation by class, connections.
fn counts(cores: &[LiveCore], connections: usize) -> Paragraph<'static> {
    let (mut ops, mut sent, mut connects, mut reconnects) = (0, 0, 0, 0);
    let (mut tx, mut rx) = (crate::stats::ByteSplit::default(), crate::stats::ByteSplit::default());
    let (mut failed, mut errors) = (Vec::new(), Vec::new());
    for c in cores {
        ops += c.ops;
        sent += c.sent;
        connects += c.connects;
        reconnects += c.reconnects;
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
        Line::from(format!("connections {connects} opened of {connections}, {reconnects} reconnects")),
    ];
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" operations "))
}
