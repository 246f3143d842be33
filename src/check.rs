//! Pass/fail thresholds: `--fail-if EXPR` on `bench`, on each row of `compare` and on the total
//! of `merge`. A condition names a figure of the result, a comparison and a value —
//! `p99>5ms`, `failed>0.1%`, `ops_per_sec<20000`, `tx_per_op>500`, `audit!=match` — and
//! *holds* when the run is bad: any condition that holds makes the command exit with status 3,
//! each printed with its measured value; the JSON lists every condition and whether it held.
//!
//! The figures (what `wirebench bench --json` calls them):
//!
//! | figure | value |
//! |---|---|
//! | `min`, `mean`, `p50`, `p90`, `p99`, `p99.9`, `max` | latency, with a unit: `ns`, `us`, `ms`, `s` |
//! | `ops`, `sent`, `reconnects`, `connects` | counts |
//! | `ops_per_sec`, `messages_per_sec` | rates |
//! | `failed`, `failed.CLASS` (`closed`, `read`, `write`, `timeout`, `status`, `protocol`, `tls`) | a count, or with `%` a share of `sent` |
//! | `connection_errors`, `connection_errors.CLASS` (those and `connect`) | a count, or with `%` a share of `connects` |
//! | `not_successful` | a count, or with `%` a share of `ops` (HTTP ≥ 400, NSQ `E_*`) |
//! | `tx_per_op`, `rx_per_op` | bytes per completed operation |
//! | `cpu_us_per_op`, `imbalance_pct` | the generator's CPU per operation (µs), its cores' spread (%) |
//! | `audit` | `match` or `mismatch`, with `==` or `!=` (an audit that cannot be checked, UDP's, trips every one) |
//!
//! Comparisons: `>`, `>=`, `<`, `<=`, `==`, `!=`. Parsed before the run: a malformed condition
//! is one line and exit status 2.

pub use crate::stats::result::Checked;
use crate::stats::result::{RunResult, class_total};
use anyhow::{Result, bail};

/// One condition, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// As the user wrote it (spaces removed).
    pub text: String,
    figure: Figure,
    op: Op,
    value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    /// A number in the figure's own unit (latency: µs).
    Plain(f64),
    /// A share, in percent.
    Percent(f64),
    /// `match` (true) or `mismatch`.
    Verdict(bool),
}

#[derive(Debug, Clone, PartialEq)]
enum Figure {
    /// A latency percentile (µs in the result).
    Latency(&'static str),
    /// A number of the result; `share_of`: what a `%` divides it by.
    Number(&'static str, Option<&'static str>),
    /// Failed operations of one class (or all: `None`), a count or a share of `sent`.
    Failed(Option<String>),
    /// Connection errors of one class, a count or a share of `connects`.
    ConnErrors(String),
    Audit,
}

const LATENCY: [&str; 7] = ["min", "mean", "p50", "p90", "p99", "p99.9", "max"];
const NUMBERS: [(&str, Option<&str>); 11] = [
    ("ops", None),
    ("sent", None),
    ("connects", None),
    ("reconnects", None),
    ("ops_per_sec", None),
    ("messages_per_sec", None),
    ("connection_errors", Some("connects")),
    ("not_successful", Some("ops")),
    ("tx_per_op", None),
    ("rx_per_op", None),
    ("cpu_us_per_op", None),
];

impl Condition {
    /// Parse `FIGURE OP VALUE` (spaces allowed anywhere).
    pub fn parse(text: &str) -> Result<Condition> {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = text.find(['<', '>', '=', '!']);
        let Some(at) = at.filter(|&i| i > 0) else {
            bail!("--fail-if '{text}': write FIGURE OP VALUE, e.g. p99>5ms or failed>0.1%");
        };
        let (name, rest) = text.split_at(at);
        let (op, value) = match rest.get(..2) {
            Some(">=") => (Op::Ge, &rest[2..]),
            Some("<=") => (Op::Le, &rest[2..]),
            Some("==") => (Op::Eq, &rest[2..]),
            Some("!=") => (Op::Ne, &rest[2..]),
            _ if rest.starts_with('>') => (Op::Gt, &rest[1..]),
            _ if rest.starts_with('<') => (Op::Lt, &rest[1..]),
            _ => bail!("--fail-if '{text}': the comparison is one of > >= < <= == !="),
        };
        let figure = figure(name).ok_or_else(|| {
            let classes = |of: &[crate::outcome::ErrorClass]| {
                of.iter().map(|c| c.name()).collect::<Vec<_>>().join("|")
            };
            anyhow::anyhow!(
                "--fail-if '{text}': no figure '{name}' (latency: {}; {}, failed, failed.{{{}}}, connection_errors.{{{}}}, imbalance_pct, audit)",
                LATENCY.join(", "),
                NUMBERS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
                classes(crate::outcome::ErrorClass::OPS),
                classes(&crate::outcome::ErrorClass::ALL),
            )
        })?;
        let value = match &figure {
            Figure::Audit => match value {
                "match" => Value::Verdict(true),
                "mismatch" => Value::Verdict(false),
                _ => bail!("--fail-if '{text}': the audit is `match` or `mismatch`"),
            },
            Figure::Latency(_) => Value::Plain(micros(value).ok_or_else(|| {
                anyhow::anyhow!("--fail-if '{text}': a latency needs a unit: ns, us, ms or s (e.g. 5ms)")
            })?),
            figure => match value.strip_suffix('%') {
                Some(share) => {
                    let shared = matches!(
                        figure,
                        Figure::Failed(_) | Figure::ConnErrors(_) | Figure::Number(_, Some(_))
                    );
                    if !shared {
                        bail!("--fail-if '{text}': '{name}' is no share of anything: give a number");
                    }
                    let share = number(share, &text)?;
                    if share > 100.0 {
                        bail!("--fail-if '{text}': a share is at most 100%");
                    }
                    Value::Percent(share)
                }
                None => Value::Plain(number(value, &text)?),
            },
        };
        if matches!(figure, Figure::Audit) && !matches!(op, Op::Eq | Op::Ne) {
            bail!("--fail-if '{text}': the audit compares with == or !=");
        }
        Ok(Condition { text, figure, op, value })
    }

    /// The value it compares with, in the figure's unit (a latency: µs); `None` for a share or
    /// the audit's verdict.
    pub fn limit(&self) -> Option<f64> {
        match self.value {
            Value::Plain(v) => Some(v),
            _ => None,
        }
    }

    /// Check this condition against `r`.
    pub fn check(&self, r: &RunResult) -> Checked {
        let (held, measured) = match (&self.figure, self.value) {
            // An audit that could not be checked (UDP, Unix sockets: the kernel keeps no counts)
            // holds no verdict: every audit condition on it trips, saying so.
            (Figure::Audit, Value::Verdict(_)) if r.audit.unchecked() => {
                (true, "unchecked (UDP or Unix sockets: the kernel keeps no counts to check)".to_string())
            }
            (Figure::Audit, Value::Verdict(want)) => {
                let is = r.audit.matches == want;
                let held = if self.op == Op::Eq { is } else { !is };
                (held, if r.audit.matches { "match" } else { "mismatch" }.to_string())
            }
            (figure, Value::Percent(limit)) => {
                let (count, of) = self.count_and_base(figure, r);
                let share = if of == 0 { 0.0 } else { count as f64 * 100.0 / of as f64 };
                (self.op.holds(share, limit), format!("{share:.3}% ({count} of {of})"))
            }
            (Figure::Latency(name), Value::Plain(limit)) => {
                let us = latency(r, name);
                (self.op.holds(us, limit), crate::report::micros(us))
            }
            (figure, Value::Plain(limit)) => {
                let v = match figure {
                    Figure::Number(name, _) => number_of(r, name),
                    figure => self.count_and_base(figure, r).0 as f64,
                };
                (self.op.holds(v, limit), trim(v))
            }
            (_, Value::Verdict(_)) => (false, String::new()),
        };
        Checked { condition: self.text.clone(), measured, held }
    }

    /// A countable figure's count, and what a share of it is of.
    fn count_and_base(&self, figure: &Figure, r: &RunResult) -> (u64, u64) {
        match figure {
            Figure::Failed(None) => (class_total(&r.failed), r.sent),
            Figure::Failed(Some(class)) => (r.failed.get(class).copied().unwrap_or(0), r.sent),
            Figure::ConnErrors(class) => (r.connection_errors.get(class).copied().unwrap_or(0), r.connects),
            Figure::Number(name, base) => {
                (number_of(r, name) as u64, base.map_or(0, |b| number_of(r, b) as u64))
            }
            _ => (0, 0),
        }
    }
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

fn figure(name: &str) -> Option<Figure> {
    if let Some(&n) = LATENCY.iter().find(|n| **n == name || (name == "p999" && **n == "p99.9")) {
        return Some(Figure::Latency(n));
    }
    if let Some(&(n, base)) = NUMBERS.iter().find(|(n, _)| *n == name) {
        return Some(Figure::Number(n, base));
    }
    match name {
        "imbalance_pct" => Some(Figure::Number("imbalance_pct", None)),
        "failed" => Some(Figure::Failed(None)),
        "audit" => Some(Figure::Audit),
        _ => {
            if let Some(class) = name.strip_prefix("connection_errors.") {
                let known = crate::outcome::ErrorClass::ALL.iter().any(|c| c.name() == class);
                return known.then(|| Figure::ConnErrors(class.to_string()));
            }
            // Operations never fail as `connect` (a connection that never opened carried none).
            let class = name.strip_prefix("failed.")?;
            crate::outcome::ErrorClass::OPS
                .iter()
                .any(|c| c.name() == class)
                .then(|| Figure::Failed(Some(class.to_string())))
        }
    }
}

fn latency(r: &RunResult, name: &str) -> f64 {
    let s = &r.latency_us;
    match name {
        "min" => s.min,
        "mean" => s.mean,
        "p50" => s.p50,
        "p90" => s.p90,
        "p99" => s.p99,
        "p99.9" => s.p999,
        _ => s.max,
    }
}

fn number_of(r: &RunResult, name: &str) -> f64 {
    match name {
        "ops" => r.ops as f64,
        "sent" => r.sent as f64,
        "connects" => r.connects as f64,
        "reconnects" => r.reconnects as f64,
        "ops_per_sec" => r.ops_per_sec,
        "messages_per_sec" => r.messages_per_sec,
        "connection_errors" => class_total(&r.connection_errors) as f64,
        "not_successful" => r.not_successful as f64,
        "tx_per_op" => r.bytes.tx_per_op,
        "rx_per_op" => r.bytes.rx_per_op,
        "cpu_us_per_op" => r.cpu_us_per_op,
        "imbalance_pct" => r.imbalance_pct,
        _ => 0.0,
    }
}

fn number(text: &str, condition: &str) -> Result<f64> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => bail!("--fail-if '{condition}': '{text}' is not a number"),
    }
}

/// A time with its unit, in µs.
fn micros(text: &str) -> Option<f64> {
    let (digits, scale) = [("ns", 1e-3), ("us", 1.0), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|d| (d, *scale)))?;
    digits.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).map(|v| v * scale)
}

/// A figure without float noise: `20000`, `463.5`.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parse every `--fail-if` (before the run: a typo costs no run).
pub fn parse_all(texts: &[String]) -> Result<Vec<Condition>> {
    texts.iter().map(|t| Condition::parse(t)).collect()
}

/// Check `conditions` against `result`, keeping the verdicts in it; the ones that held.
pub fn apply(conditions: &[Condition], result: &mut RunResult) -> Vec<Checked> {
    result.checks = conditions.iter().map(|c| c.check(result)).collect();
    result.checks.iter().filter(|c| c.held).cloned().collect()
}

/// `Ok` when no condition held; else the [`Failed`] error that makes `main` exit with 3.
pub fn verdict(held: Vec<(String, Checked)>) -> Result<()> {
    if held.is_empty() { Ok(()) } else { Err(Failed(held).into()) }
}

/// The run failed its thresholds: main prints each and exits with status 3.
#[derive(Debug)]
pub struct Failed(pub Vec<(String, Checked)>);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (what, c)) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let what = if what.is_empty() { String::new() } else { format!("{what}: ") };
            write!(f, "{what}--fail-if {} held: measured {}", c.condition, c.measured)?;
        }
        Ok(())
    }
}

impl std::error::Error for Failed {}

/// A run that completed no operation: it measured nothing, whatever its report says. main
/// prints the line (why, and what the target seems to speak) and exits with status 4 —
/// unless `--allow-empty` asked for such a run.
#[derive(Debug)]
pub struct Empty(pub String);

impl std::fmt::Display for Empty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Empty {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::result::fixtures;

    fn check(text: &str, r: &RunResult) -> Checked {
        Condition::parse(text).unwrap().check(r)
    }

    #[test]
    fn conditions_hold_or_not_on_a_known_result() {
        // 1000 completed, 2 failed (timeouts) of 1002 sent, in 2 s; latency 20-21 µs.
        let r = fixtures::run("a", 1000, 20_000, 2);
        assert!(check("p99>20us", &r).held);
        assert!(!check("p99 > 5ms", &r).held);
        assert_eq!(check("p99>5ms", &r).measured, "21.0us");
        assert!(check("failed>0.1%", &r).held);
        assert_eq!(check("failed>0.1%", &r).measured, "0.200% (2 of 1002)");
        assert!(!check("failed>1%", &r).held);
        assert!(check("failed>=2", &r).held);
        assert!(check("failed.timeout>0", &r).held);
        assert!(!check("failed.closed>0", &r).held);
        assert!(check("ops_per_sec<20000", &r).held);
        assert_eq!(check("ops_per_sec<20000", &r).measured, "500.309");
        assert!(!check("tx_per_op>500", &r).held);
        assert_eq!(check("audit!=match", &r).held, !r.audit.matches);
        assert_eq!(check("audit==match", &r).held, r.audit.matches);
    }

    #[test]
    fn malformed_conditions_are_one_clear_line() {
        for (text, says) in [
            ("p99", "FIGURE OP VALUE"),
            ("p99>5", "needs a unit"),
            ("p99=>5ms", "one of > >= < <= == !="),
            ("latency>5ms", "no figure 'latency'"),
            ("ops_per_sec>1%", "no share"),
            ("audit>match", "== or !="),
            ("audit==yes", "`match` or `mismatch`"),
            ("failed.nope>0", "no figure"),
            ("ops>-1", "not a number"),
        ] {
            let e = Condition::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{text}: {e}");
        }
    }
}
