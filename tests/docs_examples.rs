//! Every `wirebench …` example in README.md and docs/*.md (the `sh` code blocks) runs, so a
//! stale one is found here and not by a reader: each against the built-in servers — its URL's
//! host and port replaced by those of the server for its scheme, its durations and connection
//! counts cut short, its files in a scratch directory — and fails on an exit status other than
//! 0 (or 3 where it asks for `--fail-if`) or a line saying `error:`. An example that cannot run
//! here is listed below with why; nothing else is left out.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Examples that need what is not here, by a part of their text, and why.
const CANNOT_RUN_HERE: [(&str, &str); 5] = [
    ("--server-cmd 'nginx", "your own nginx, configured to listen on the URL's port"),
    ("load-2.json load-3.json", "the other hosts' results of a fleet"),
    ("--tui", "a view drawn on a terminal: tests/tui.rs runs it under tmux"),
    ("wirebench kube ", "a Kubernetes cluster and an image: tests/kube_cluster.rs runs it on one"),
    ("--unix-socket", "a server on that path while it runs: tests/unix_sockets.rs runs one"),
];

/// One example: where it is, and its command line (continuations joined).
struct Example {
    at: String,
    line: String,
}

/// The `wirebench …` lines of the `sh` code blocks of `file`.
fn examples(file: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let (mut shell, mut i) = (false, 0);
    while i < lines.len() {
        let l = lines[i];
        if let Some(lang) = l.strip_prefix("```") {
            shell = !shell && matches!(lang.trim(), "sh" | "bash" | "shell" | "console");
            i += 1;
            continue;
        }
        let s = l.trim().trim_start_matches("$ ");
        if shell && (s.starts_with("wirebench ") || s.starts_with("cargo run --release -- ")) {
            let mut line = s.to_string();
            while line.ends_with('\\') && i + 1 < lines.len() {
                i += 1;
                line = format!("{} {}", line.trim_end_matches('\\'), lines[i].trim());
            }
            let at = format!("{}:{}", file.file_name().unwrap().to_string_lossy(), i + 1);
            found.push(Example { at, line });
        }
        i += 1;
    }
    found
}

/// The built-in servers, by the schemes their URLs have: (scheme, host:port).
struct Servers {
    by_scheme: Vec<(&'static str, String)>,
    _handles: Vec<wirebench::engine::ServerHandle>,
    /// A server process, for `watch --pid`.
    process: Peer,
}

fn servers() -> Servers {
    let mut by_scheme = Vec::new();
    let mut handles = Vec::new();
    // Every built-in server of the registry.
    for kind in wirebench::protocol::SERVERS.iter().map(|s| s.name) {
        let started = serve_started("uring", kind, &[]);
        for url in started.urls.concat() {
            let (scheme, rest) = url.split_once("://").unwrap();
            let addr = rest.split('/').next().unwrap().to_string();
            by_scheme.push((leak(scheme), addr));
        }
        handles.push(started.handle);
    }
    // HTTPS, and what rides on HTTP/2 (gRPC) and h2c's TLS twin.
    let tls = serve_started("uring", "http", &["--tls"]);
    by_scheme.push(("https", tls.urls.concat()[0].split("://").nth(1).unwrap().trim_end_matches('/').into()));
    handles.push(tls.handle);
    let h2 = by_scheme.iter().find(|(s, _)| *s == "h2c").map(|(_, a)| a.clone()).unwrap();
    by_scheme.push(("grpc", h2));
    let (process, _) = serve_process("http", &[]);
    Servers { by_scheme, _handles: handles, process }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// The example made to run here: the same command and options, aimed at the built-in
/// servers, cut short.
fn adapt(line: &str, servers: &Servers) -> String {
    let line = line.split(" # ").next().unwrap().trim().trim_end_matches('&').trim();
    let line = line.replacen("cargo run --release -- ", "wirebench ", 1);
    let words = shell_words(&line);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    let start_at = || {
        let at = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
        humantime::format_rfc3339_seconds(at).to_string()
    };
    while i < words.len() {
        let w = &words[i];
        let next = || words.get(i + 1).cloned().unwrap_or_default();
        match w.as_str() {
            "-d" | "--duration" => {
                out.extend([w.clone(), "1s".into()]);
                i += 2;
                continue;
            }
            "-c" | "--connections" => {
                let n: usize = next().parse().unwrap_or(64);
                out.extend([w.clone(), n.min(64).to_string()]);
                i += 2;
                continue;
            }
            "--start-at" => {
                out.extend([w.clone(), start_at()]);
                i += 2;
                continue;
            }
            "--pid" => {
                out.extend([w.clone(), servers.process.0.id().to_string()]);
                i += 2;
                continue;
            }
            "--listen" => {
                out.extend([w.clone(), "127.0.0.1:0".into()]);
                i += 2;
                continue;
            }
            ">" => {
                out.extend([">".into(), "completion.out".into()]);
                i += 2;
                continue;
            }
            "|" => break, // a pipe into another program: the example's own part runs
            _ => {}
        }
        if let Some((scheme, rest)) = w.split_once("://") {
            let path = rest.find('/').map_or("/", |at| &rest[at..]);
            if let Some((_, addr)) = servers.by_scheme.iter().find(|(s, _)| *s == scheme) {
                out.push(format!("{scheme}://{addr}{path}"));
                if matches!(scheme, "https" | "h3" | "wss") && !words.iter().any(|w| w == "--insecure") {
                    out.push("--insecure".into());
                }
                i += 1;
                continue;
            }
        }
        out.push(w.clone());
        i += 1;
    }
    let command = out.get(1).cloned().unwrap_or_default();
    // Commands that run per protocol or step: each step short.
    let has = |flag: &str| out.iter().any(|w| w == flag);
    match command.as_str() {
        "compare" if !has("-d") => out.extend(["-d".into(), "300ms".into()]),
        "sweep" if !has("-d") => out.extend(["-d".into(), "300ms".into()]),
        "search" => out.extend(["--step".into(), "500ms".into(), "--max-steps".into(), "3".into()]),
        "serve" if !has("-d") => out.extend(["-d".into(), "300ms".into()]),
        "bench" if !has("-d") && !has("-n") => out.extend(["-d".into(), "1s".into()]),
        _ => {}
    }
    out.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// Split a command line as sh would (single and double quotes; no expansion but globs, which
/// the shell that runs it does).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// A word for sh: as it is when safe (globs and a redirection kept), else single-quoted.
fn quote(w: &str) -> String {
    if w == ">" {
        return w.to_string();
    }
    let plain = w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+*".contains(c));
    if plain && !w.is_empty() { w.to_string() } else { format!("'{}'", w.replace('\'', "'\\''")) }
}

#[test]
#[ignore = "a minute or two: every example of the docs; run by .ci/run"]
fn every_example_in_the_readme_and_docs_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let servers = servers();
    let dir = std::env::temp_dir().join(format!("wirebench-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The files the examples name: a requests file of each kind.
    std::fs::write(
        dir.join("requests.jsonl"),
        "{\"path\":\"/a\"}\n{\"method\":\"POST\",\"path\":\"/b\",\"body\":\"x\"}\n",
    )
    .unwrap();
    std::fs::write(dir.join("messages.jsonl"), "{\"body\":\"hello\"}\n{}\n").unwrap();
    let binary = env!("CARGO_BIN_EXE_wirebench");
    let (mut ran, mut failures) = (0, Vec::new());
    for file in &files {
        for ex in examples(file) {
            if let Some((_, why)) = CANNOT_RUN_HERE.iter().find(|(part, _)| ex.line.contains(part)) {
                eprintln!("{}: not run here ({why}): {}", ex.at, ex.line);
                continue;
            }
            let adapted = adapt(&ex.line, &servers);
            let script = format!("exec {}", adapted.replacen("wirebench", binary, 1));
            let out = Command::new("timeout")
                .args(["120", "sh", "-c", &script])
                .current_dir(&dir)
                .output()
                .unwrap();
            ran += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            let ok_codes: &[i32] = if ex.line.contains("--fail-if") { &[0, 3] } else { &[0] };
            if !code.is_some_and(|c| ok_codes.contains(&c)) || stderr.contains("error:") {
                failures.push(format!("{}: {}\n  ran: {adapted}\n  exit {code:?}: {stderr}", ex.at, ex.line));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran >= 20, "found only {ran} examples");
    assert!(failures.is_empty(), "{} of {ran} examples failed:\n{}", failures.len(), failures.join("\n"));
}
