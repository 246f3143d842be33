//! `--requests FILE`: operations that differ from one another, read from a file of JSON lines,
//! and the order in which each connection picks them ([`Picks`], [`Picker`]).
//!
//! One entry per line; blank lines and lines starting with `#` are skipped:
//!
//! ```text
//! {"method":"POST","path":"/users?id=7","headers":{"Content-Type":"application/json"},"body":"{\"name\":\"x\"}"}
//! {"path":"/static/logo.png","label":"static","weight":3}
//! {"body_file":"upload.bin"}
//! ```
//!
//! - `method`, `path` (with its query), `headers` (an object, or a list of `[name, value]`
//!   pairs, added after `-H`'s): HTTP's (`http://`, `https://`); the URL's path and `-m` (or
//!   GET) where an entry gives none. Other protocols refuse them: their entries are messages.
//! - `body` (text) or `body_file` (a path, relative to the requests file): the request body or
//!   the message (WebSocket, Socket.IO, NSQ); an entry with neither carries the run's payload
//!   (`--size`, `--body-file`, or the protocol's default).
//! - `weight` (1 to 1,000, default 1): how many times the entry comes in each cycle.
//! - `label`: the kind the entry's operations are reported under (default: `METHOD /path`
//!   without the query for HTTP, the message's length for the others). Bytes per operation,
//!   latency and failures are reported per kind; entries with one label add up.
//!
//! Each entry is encoded once, at start-up, by the protocol's codec (so an operation costs a
//! copy, as without a file). `--order seq` (the default): every connection goes through the
//! entries in the file's order from the first, each entry `weight` times in a row, and again;
//! `--order random`: each operation picks an entry at random, in proportion to the weights.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `--order`: how each connection goes through the entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// In the file's order, from the first, again and again.
    #[default]
    Seq,
    /// At random, in proportion to the weights.
    Random,
}

/// More entries than this is a file meant for something else.
pub const MAX_ENTRIES: usize = 100_000;
/// Kinds are reported one line each.
pub const MAX_KINDS: usize = 64;
/// A cycle (every entry, each `weight` times) longer than this is refused.
pub const MAX_CYCLE: usize = 1_000_000;
/// Every body of the file together (each is at most the largest payload as well).
pub const MAX_BODIES: usize = 256 << 20;
const MAX_WEIGHT: u32 = 1000;

/// One line of the file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    method: Option<String>,
    path: Option<String>,
    #[serde(default)]
    headers: Option<Headers>,
    body: Option<String>,
    body_file: Option<PathBuf>,
    weight: Option<u32>,
    label: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Headers {
    Map(BTreeMap<String, String>),
    Pairs(Vec<(String, String)>),
}

/// One entry: what it changes from the run's plan (`None`: the plan's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its line in the file (from 1), for errors found later.
    pub line: usize,
    pub method: Option<String>,
    pub path: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Arc<[u8]>>,
    pub weight: u32,
    /// Its kind's index in [`Requests::kinds`].
    pub kind: usize,
}

impl Entry {
    /// The HTTP fields it gives, by name (a protocol without them refuses the entry).
    pub fn http_fields(&self) -> impl Iterator<Item = &'static str> {
        [
            self.method.is_some().then_some("method"),
            self.path.is_some().then_some("path"),
            (!self.headers.is_empty()).then_some("headers"),
        ]
        .into_iter()
        .flatten()
    }
}

/// A requests file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requests {
    pub entries: Vec<Entry>,
    /// Each kind's label, in order of first appearance, with how many entries it has.
    pub kinds: Vec<(String, usize)>,
    pub order: Order,
}

/// What an entry is reported under when it names no label.
pub struct Defaults<'a> {
    /// The method and path of an HTTP request that gives none.
    pub method: &'a str,
    pub path: &'a str,
    /// Whether the protocol's operations are HTTP requests (labelled by method and path) or
    /// messages (by length).
    pub http: bool,
    /// The run's payload length, for a message that gives no body.
    pub payload: usize,
}

impl Requests {
    /// Parse a requests file's `text`; `read` reads a `body_file` (its path already made
    /// relative to the file's folder). Errors name the line.
    pub fn parse(
        text: &str,
        folder: &Path,
        order: Order,
        defaults: &Defaults<'_>,
        mut read: impl FnMut(&Path) -> Result<Vec<u8>, String>,
    ) -> Result<Requests, String> {
        let mut entries = Vec::new();
        let mut kinds: Vec<(String, usize)> = Vec::new();
        let (mut cycle, mut bodies) = (0usize, 0usize);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |why: String| format!("line {}: {why}", i + 1);
            if entries.len() == MAX_ENTRIES {
                return Err(at(format!("more than {MAX_ENTRIES} entries")));
            }
            let l: Line = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
            let body = match (l.body, &l.body_file) {
                (Some(_), Some(_)) => return Err(at("give `body` or `body_file`, not both".into())),
                (Some(text), None) => Some(text.into_bytes()),
                (None, Some(file)) => Some(read(&folder.join(file)).map_err(at)?),
                (None, None) => None,
            };
            bodies += body.as_ref().map_or(0, Vec::len);
            let body: Option<Arc<[u8]>> = body.map(Into::into);
            if bodies > MAX_BODIES {
                return Err(at(format!("the bodies add up to more than {} MiB", MAX_BODIES >> 20)));
            }
            if let Some(m) = &l.method {
                check_method(m).map_err(at)?;
            }
            if let Some(p) = &l.path
                && (!p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f))
            {
                return Err(at(format!(
                    "path '{p}' must start with '/' and hold no spaces or control bytes"
                )));
            }
            let headers: Vec<(String, String)> = match l.headers {
                None => vec![],
                Some(Headers::Map(m)) => m.into_iter().collect(),
                Some(Headers::Pairs(p)) => p,
            };
            for (name, value) in &headers {
                check_header(name, value).map_err(at)?;
            }
            let weight = l.weight.unwrap_or(1);
            if !(1..=MAX_WEIGHT).contains(&weight) {
                return Err(at(format!("weight {weight}: give 1 to {MAX_WEIGHT}")));
            }
            cycle += weight as usize;
            if cycle > MAX_CYCLE {
                return Err(at(format!("the weights add up to more than {MAX_CYCLE}")));
            }
            let label = l.label.unwrap_or_else(|| {
                if defaults.http {
                    let method = l.method.as_deref().unwrap_or(defaults.method).to_ascii_uppercase();
                    let path = l.path.as_deref().unwrap_or(defaults.path);
                    format!("{method} {}", path.split('?').next().unwrap_or(path))
                } else {
                    format!("{} B", body.as_ref().map_or(defaults.payload, |b| b.len()))
                }
            });
            let kind = match kinds.iter().position(|(k, _)| *k == label) {
                Some(k) => k,
                None if kinds.len() == MAX_KINDS => {
                    return Err(at(format!(
                        "more than {MAX_KINDS} kinds of entry: give entries a shared `label`"
                    )));
                }
                None => {
                    kinds.push((label, 0));
                    kinds.len() - 1
                }
            };
            kinds[kind].1 += 1;
            entries.push(Entry { line: i + 1, method: l.method, path: l.path, headers, body, weight, kind });
        }
        if entries.is_empty() {
            return Err("it holds no entry (one JSON object per line)".into());
        }
        Ok(Requests { entries, kinds, order })
    }

    /// The order the connections pick entries in.
    pub fn picks(&self) -> Picks {
        let table: Vec<u32> = (self.entries.iter().enumerate())
            .flat_map(|(i, e)| std::iter::repeat_n(i as u32, e.weight as usize))
            .collect();
        let kinds = self.entries.iter().map(|e| e.kind as u16).collect::<Vec<_>>();
        Picks { table: table.into(), kinds: kinds.into(), random: self.order == Order::Random }
    }
}

/// An HTTP method as this tool sends one: letters only (`-m` and `--requests` entries alike).
pub fn check_method(method: &str) -> Result<(), String> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("'{method}' is not an HTTP method"));
    }
    Ok(())
}

/// A header's name and value as HTTP allows them (a token; no line breaks in the value).
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!("'{name}' is not a header name"));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!("the value of header '{name}' holds a line break"));
    }
    Ok(())
}

/// The entries' cycle, shared by every connection of a run: entry indices, each entry
/// `weight` times in a row, and each entry's kind.
#[derive(Debug, Clone)]
pub struct Picks {
    table: Arc<[u32]>,
    kinds: Arc<[u16]>,
    random: bool,
}

impl Picks {
    /// One connection's own way through them, from the first entry (`seed`: its random picks).
    pub fn picker(&self, seed: u64) -> Picker {
        Picker { picks: self.clone(), next: 0, rng: fastrand::Rng::with_seed(seed) }
    }
}

/// One connection's place in the cycle; it outlives the connection's reconnects (a
/// connection per operation still goes through the entries).
#[derive(Debug, Clone)]
pub struct Picker {
    picks: Picks,
    next: usize,
    rng: fastrand::Rng,
}

impl Picker {
    /// The next operation's entry and its kind.
    #[inline]
    pub fn pick(&mut self) -> (usize, usize) {
        let table = &self.picks.table;
        let i = if self.picks.random {
            self.rng.usize(..table.len())
        } else {
            let i = self.next;
            self.next = if i + 1 == table.len() { 0 } else { i + 1 };
            i
        };
        let entry = table[i] as usize;
        (entry, self.picks.kinds[entry] as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTTP: Defaults<'static> = Defaults { method: "GET", path: "/", http: true, payload: 0 };

    fn parse(text: &str, order: Order) -> Result<Requests, String> {
        Requests::parse(text, Path::new("/d"), order, &HTTP, |p| Ok(p.to_string_lossy().as_bytes().to_vec()))
    }

    #[test]
    fn entries_fields_kinds_and_files() {
        let r = parse(
            "# a comment\n\n{\"method\":\"post\",\"path\":\"/u?id=7\",\"headers\":{\"A\":\"1\"},\"body\":\"hi\"}\n\
             {\"path\":\"/u?id=8\",\"headers\":[[\"B\",\"2\"],[\"B\",\"3\"]],\"weight\":2}\n\
             {\"body_file\":\"x.bin\",\"label\":\"upload\"}\n{\"method\":\"POST\",\"path\":\"/u\"}\n",
            Order::Seq,
        )
        .unwrap();
        assert_eq!(r.entries.len(), 4);
        assert_eq!(r.entries[0].body.as_deref(), Some(&b"hi"[..]));
        assert_eq!(r.entries[1].headers, vec![("B".into(), "2".into()), ("B".into(), "3".into())]);
        assert_eq!(r.entries[2].body.as_deref(), Some(&b"/d/x.bin"[..]));
        let kinds: Vec<_> = r.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(kinds, [("POST /u", 2), ("GET /u", 1), ("upload", 1)]);
        assert_eq!(r.entries.iter().map(|e| e.kind).collect::<Vec<_>>(), [0, 1, 2, 0]);
        assert_eq!(r.entries[1].http_fields().collect::<Vec<_>>(), ["path", "headers"]);
    }

    #[test]
    fn messages_are_labelled_by_length() {
        let d = Defaults { method: "GET", path: "/", http: false, payload: 400 };
        let r = Requests::parse(
            "{\"body\":\"abc\"}\n{}\n{\"body\":\"xyz\"}",
            Path::new("."),
            Order::Seq,
            &d,
            |_| Err("no".into()),
        )
        .unwrap();
        assert_eq!(r.kinds, [("3 B".to_string(), 2), ("400 B".to_string(), 1)]);
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, want) in [
            ("{\"paht\":\"/\"}", "line 1: unknown field `paht`"),
            ("\n{\"path\":\"x\"}", "line 2: path 'x' must start with '/'"),
            ("{\"path\":\"/a b\"}", "line 1: path '/a b' must start"),
            ("{\"method\":\"G T\"}", "line 1: 'G T' is not an HTTP method"),
            ("{\"weight\":0}", "line 1: weight 0: give 1 to 1000"),
            ("{\"body\":\"a\",\"body_file\":\"b\"}", "line 1: give `body` or `body_file`"),
            ("{\"headers\":{\"A\\r\\nB\":\"1\"}}", "line 1: 'A\r\nB' is not a header name"),
            ("{\"headers\":{\"A\":\"1\\r\\nX: 2\"}}", "line 1: the value of header 'A' holds a line break"),
            ("not json", "line 1: expected"),
            ("# only a comment\n", "it holds no entry"),
        ] {
            let e = parse(text, Order::Seq).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        let many: String = (0..=MAX_KINDS).map(|i| format!("{{\"label\":\"k{i}\"}}\n")).collect();
        assert!(parse(&many, Order::Seq).unwrap_err().contains("more than 64 kinds"));
        let heavy: String = (0..1001).map(|_| "{\"weight\":1000}\n").collect();
        assert!(parse(&heavy, Order::Seq).unwrap_err().starts_with("line 1001: the weights add up"));
    }

    #[test]
    fn seq_cycles_with_weights_and_random_keeps_the_proportion() {
        let text = "{\"path\":\"/a\"}\n{\"path\":\"/b\",\"weight\":3}\n{\"path\":\"/a\",\"label\":\"other\"}";
        let mut p = parse(text, Order::Seq).unwrap().picks().picker(1);
        let seq: Vec<_> = (0..10).map(|_| p.pick()).collect();
        assert_eq!(seq, [(0, 0), (1, 1), (1, 1), (1, 1), (2, 2), (0, 0), (1, 1), (1, 1), (1, 1), (2, 2)]);
        let mut p = parse(text, Order::Random).unwrap().picks().picker(7);
        let mut counts = [0u32; 3];
        for _ in 0..50_000 {
            counts[p.pick().0] += 1;
        }
        // 1 : 3 : 1 within 3 % of each share (50,000 draws: a share's deviation is ~0.2 %).
        for (n, share) in counts.iter().zip([0.2, 0.6, 0.2]) {
            assert!((*n as f64 / 50_000.0 - share).abs() < 0.03 * share, "{counts:?}");
        }
    }
}
