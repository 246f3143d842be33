//! `--metrics-listen ADDR`: the run's figures in Prometheus's text format (version 0.0.4) at
//! `http://ADDR/metrics` while it goes on, for a dashboard to scrape — per core: operations
//! sent and completed, failures and connection errors by class, bytes by direction and class,
//! connects, and the latency as a histogram. Each core copies its figures a few times a second
//! ([`crate::stats::live`]), so a scrape is at most that old; the run's exact figures are its
//! report. One thread serves, one short request at a time, each bounded in size and time; it
//! stops with the run.

use crate::outcome::ErrorClass;
use crate::stats::live::{Live, LiveCore};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The latency histogram's bucket bounds, seconds (Prometheus's `le`).
const BUCKETS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// How long a scraper may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a request read (a scrape's is a few hundred bytes).
const MAX_REQUEST: usize = 8 * 1024;

/// What the run is, on every sample as labels of `wirebench_info`.
pub struct RunLabels {
    pub protocol: String,
    pub target: String,
    pub engine: String,
}

/// The server; dropping it (or [`Metrics::stop`]) stops it.
pub struct Metrics {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub addr: SocketAddr,
}

/// Listen on `addr` and serve `live` until stopped.
pub fn serve(addr: SocketAddr, live: Live, labels: RunLabels) -> Result<Metrics> {
    let listener =
        TcpListener::bind(addr).with_context(|| format!("--metrics-listen {addr}: cannot listen"))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::Builder::new().name("wirebench-metrics".into()).spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => answer(stream, &live, &labels),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    })?;
    Ok(Metrics { stop, thread: Some(thread), addr })
}

impl Metrics {
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Read one request (bounded), answer it, close.
fn answer(mut stream: TcpStream, live: &Live, labels: &RunLabels) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let reply = if line.starts_with(b"GET /metrics ") || line.starts_with(b"GET /metrics?") {
        let body = render(live, labels);
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 22\r\nConnection: close\r\n\r\nonly /metrics is here\n"
            .to_string()
    };
    let _ = stream.write_all(reply.as_bytes());
}

/// A per-core counter: its name, its help, how to read it.
type Counter = (&'static str, &'static str, fn(&LiveCore) -> u64);

/// The text format of every core's latest figures.
pub fn render(live: &Live, labels: &RunLabels) -> String {
    let cores: Vec<LiveCore> = live
        .iter()
        .filter_map(|slot| slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
        .collect();
    let mut s = String::new();
    let esc = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    family(&mut s, "wirebench_info", "gauge", "What is running (always 1).");
    let _ = writeln!(
        s,
        "wirebench_info{{protocol=\"{}\",target=\"{}\",engine=\"{}\"}} 1",
        esc(&labels.protocol),
        esc(&labels.target),
        esc(&labels.engine)
    );
    let counters: [Counter; 4] = [
        ("wirebench_sent_total", "Operations sent in the measured window.", |c| c.sent),
        ("wirebench_ops_total", "Operations completed in the measured window.", |c| c.ops),
        ("wirebench_connects_total", "Connections opened.", |c| c.connects),
        ("wirebench_reconnects_total", "Connections opened again after one ended.", |c| c.reconnects),
    ];
    for (name, help, value) in counters {
        family(&mut s, name, "counter", help);
        for c in &cores {
            let _ = writeln!(s, "{name}{{core=\"{}\"}} {}", c.core, value(c));
        }
    }
    family(&mut s, "wirebench_failed_total", "counter", "Measured operations that failed, by class.");
    for c in &cores {
        for &class in ErrorClass::OPS {
            let _ = writeln!(
                s,
                "wirebench_failed_total{{core=\"{}\",class=\"{}\"}} {}",
                c.core,
                class.name(),
                c.failed.get(class)
            );
        }
    }
    family(&mut s, "wirebench_connection_errors_total", "counter", "Connections that failed, by class.");
    for c in &cores {
        for class in ErrorClass::ALL {
            let n = c.conn_errors.get(class);
            let _ = writeln!(
                s,
                "wirebench_connection_errors_total{{core=\"{}\",class=\"{}\"}} {n}",
                c.core,
                class.name()
            );
        }
    }
    family(&mut s, "wirebench_bytes_total", "counter", "Bytes the syscalls moved, by direction and class.");
    for c in &cores {
        for (direction, split) in [("tx", &c.tx), ("rx", &c.rx)] {
            let classes = [
                ("op", split.op),
                ("warmup", split.warmup_op),
                ("handshake", split.handshake),
                ("control", split.control),
                ("failed", split.failed),
                ("tls", split.tls),
            ];
            for (class, n) in classes {
                let _ = writeln!(
                    s,
                    "wirebench_bytes_total{{core=\"{}\",direction=\"{direction}\",class=\"{class}\"}} {n}",
                    c.core
                );
            }
        }
    }
    family(
        &mut s,
        "wirebench_latency_seconds",
        "histogram",
        "Latency of completed operations, from when each was due to its answer's last byte.",
    );
    for c in &cores {
        let h = &c.latency;
        for le in BUCKETS {
            let n = if h.is_empty() { 0 } else { h.count_between(0, (le * 1e9) as u64) };
            let _ = writeln!(s, "wirebench_latency_seconds_bucket{{core=\"{}\",le=\"{le}\"}} {n}", c.core);
        }
        let _ =
            writeln!(s, "wirebench_latency_seconds_bucket{{core=\"{}\",le=\"+Inf\"}} {}", c.core, h.len());
        let sum = if h.is_empty() { 0.0 } else { h.mean() * h.len() as f64 / 1e9 };
        let _ = writeln!(s, "wirebench_latency_seconds_sum{{core=\"{}\"}} {sum}", c.core);
        let _ = writeln!(s, "wirebench_latency_seconds_count{{core=\"{}\"}} {}", c.core, h.len());
    }
    s
}

/// A metric family's `HELP` and `TYPE` lines.
fn family(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} {kind}");
}
