//! `compare`, `sweep` and `search` with `--tui`: one view for the whole series of runs. The
//! command opens a [`Screen`] before its first run; while it is open, what the command would
//! print ([`report::out`](crate::report::out)) is kept instead and drawn as the table filling
//! in row by row, above the current run's own live panels (each run's view borrows the
//! screen's terminal, so the screen does not flicker between runs); `search` adds each step's
//! rate and p99 as a point beside the limit. When the screen closes the terminal is given back
//! and everything kept is printed: the report is the one printed without `--tui`.

use super::Term;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};
use std::sync::{Mutex, PoisonError};

/// Lines of the table kept for drawing (the text is kept whole for the end).
const SHOWN: usize = 12;

/// The open series: its terminal while no run's view holds it, what was said, `search`'s
/// points.
struct Shared {
    term: Option<Term>,
    said: String,
    /// (offered rate, p99 in µs, passed).
    points: Vec<(f64, f64, bool)>,
    /// `search`'s `--p99`, µs.
    limit_us: Option<f64>,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

fn shared() -> std::sync::MutexGuard<'static, Option<Shared>> {
    SHARED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The series' hold on the terminal: dropped, the terminal is given back and what was said
/// printed.
pub struct Screen(());

impl Screen {
    /// Take the terminal for the series (raw mode, the alternate screen); `limit_us`: the
    /// latency limit `search` plots its steps against.
    pub fn open(limit_us: Option<f64>) -> std::io::Result<Screen> {
        let term = super::take_terminal()?;
        // Between runs nobody reads keys: Ctrl-C is a signal there, as without the view.
        let _ = ratatui::crossterm::terminal::disable_raw_mode();
        *shared() = Some(Shared { term: Some(term), said: String::new(), points: Vec::new(), limit_us });
        Ok(Screen(()))
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let Some(mut s) = shared().take() else { return };
        if let Some(term) = &mut s.term {
            super::give_back(term);
        }
        crate::report::out(&s.said);
    }
}

/// Whether a series holds the terminal (each run of it then draws its view there).
pub fn active() -> bool {
    shared().is_some()
}

/// Keep `text` for the series' table and the end, if a series is open; `false`: none is (the
/// caller prints it).
pub fn said(text: &str) -> bool {
    match shared().as_mut() {
        Some(s) => {
            s.said.push_str(text);
            true
        }
        None => false,
    }
}

/// `search`: a step's offered rate and p99, and whether it passed.
pub fn point(rate: f64, p99_us: f64, passed: bool) {
    if let Some(s) = shared().as_mut() {
        s.points.push((rate, p99_us, passed));
    }
}

/// The series' terminal, for a run's view; `None` when no series is open.
pub(super) fn lend() -> Option<Term> {
    let term = shared().as_mut().and_then(|s| s.term.take())?;
    // The run's view reads keys (`q`, Ctrl-C as a key) in raw mode.
    let _ = ratatui::crossterm::terminal::enable_raw_mode();
    Some(term)
}

/// A run's view is done with the series' terminal.
pub(super) fn take_back(term: Term) {
    match shared().as_mut() {
        Some(s) => {
            let _ = ratatui::crossterm::terminal::disable_raw_mode();
            s.term = Some(term);
        }
        None => {
            let mut term = term;
            super::give_back(&mut term);
        }
    }
}

/// What the series draws above a run: the table so far (its last lines), and `search`'s plot.
pub(super) struct Drawn {
    lines: Vec<String>,
    points: Vec<(f64, f64, bool)>,
    limit_us: Option<f64>,
}

impl Drawn {
    pub(super) fn now() -> Option<Drawn> {
        let guard = shared();
        let s = guard.as_ref()?;
        let all: Vec<&str> = s.said.lines().collect();
        let lines = all[all.len().saturating_sub(SHOWN)..].iter().map(|l| l.to_string()).collect();
        Some(Drawn { lines, points: s.points.clone(), limit_us: s.limit_us })
    }

    /// Rows it needs, its borders included (a plot needs a few to be read).
    pub(super) fn height(&self) -> u16 {
        let least = if self.limit_us.is_some() { 10 } else { 3 };
        self.lines.len().max(least) as u16 + 2
    }

    pub(super) fn draw(&self, f: &mut ratatui::Frame, area: Rect) {
        let text: Vec<Line> = self.lines.iter().map(|l| Line::from(l.clone())).collect();
        let table = Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" so far "));
        match self.limit_us {
            None => f.render_widget(table, area),
            Some(limit) => {
                let halves = Layout::default()
                    .direction(Direction::Horizontal)
                    .constraints([Constraint::Percentage(60), Constraint::Percentage(40)])
                    .split(area);
                f.render_widget(table, halves[0]);
                f.render_widget(Plot::of(&self.points, limit).chart(), halves[1]);
            }
        }
    }
}

/// `search`'s steps on a log scale of p99: a point (rate, log10 µs) each, passing and failing
/// apart, and the limit as a line across.
struct Plot {
    pass: Vec<(f64, f64)>,
    fail: Vec<(f64, f64)>,
    limit: [(f64, f64); 2],
    x_max: f64,
    y: (f64, f64),
}

impl Plot {
    fn of(points: &[(f64, f64, bool)], limit_us: f64) -> Plot {
        let log = |us: f64| us.max(1.0).log10();
        let x_max = points.iter().map(|p| p.0).fold(1.0, f64::max) * 1.1;
        let ys = points.iter().map(|p| log(p.1)).chain([log(limit_us)]);
        let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
        let side = |passed: bool| points.iter().filter(|p| p.2 == passed).map(|p| (p.0, log(p.1))).collect();
        Plot {
            pass: side(true),
            fail: side(false),
            limit: [(0.0, log(limit_us)), (x_max, log(limit_us))],
            x_max,
            y: ((lo - 0.3).max(0.0), hi + 0.3),
        }
    }

    /// Passing steps green, failing ones red, the limit yellow.
    fn chart(&self) -> Chart<'_> {
        let us = |y: f64| crate::report::micros(10f64.powf(y));
        let dots = |name: &'static str, data, colour| {
            Dataset::default()
                .name(name)
                .marker(Marker::Braille)
                .style(Style::default().fg(colour))
                .data(data)
        };
        Chart::new(vec![
            Dataset::default()
                .graph_type(GraphType::Line)
                .marker(Marker::Braille)
                .style(Style::default().fg(Color::Yellow))
                .data(&self.limit),
            dots("pass", &self.pass, Color::Green),
            dots("fail", &self.fail, Color::Red),
        ])
        .block(Block::default().borders(Borders::ALL).title(" p99 against rate "))
        .x_axis(
            Axis::default()
                .bounds([0.0, self.x_max])
                .labels(["0".to_string(), crate::report::si(self.x_max)]),
        )
        .y_axis(Axis::default().bounds([self.y.0, self.y.1]).labels([us(self.y.0), us(self.y.1)]))
    }
}
