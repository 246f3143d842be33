//! wirebench: what network protocols cost on the wire, and how servers scale across cores.
//!
//! # Data flow
//!
//! ```text
//! argv ──clap──▶ plan::LoadArgs ──validate (pure)──▶ LoadPlan ──run::prepare──▶ Prepared ──drive──▶ the protocol
//!                 (+ each protocol's options,         (targets → protocol       (resolved, payload,   builds a codec
//!                  from the registry)                  from the registry)        limits, Ctrl-C, TLS   per target
//!                                                                                pre-flight)            │
//!                                                                                                       ▼
//!   report::{text,json,compare,sweep,svg} ◀── RunResult ◀── Report ◀─merge─ CoreRecorder per pinned engine thread
//!                                             (typed, serde)                 (engine drives Conn<Codec>)
//! ```
//!
//! # Floors, top-down (each imports only from those below; `tools/layers.py` counts)
//!
//! - [`cmd`]: the command line and the composition of the floors below.
//! - [`run`]: running a plan (DNS, limits, Ctrl-C, the TLS pre-flight, progress, the engines);
//!   [`props`]: the properties every codec keeps, for the fuzz targets and tests.
//! - [`report`]: text, JSON, tables, SVG, read from the typed result.
//! - [`engine`]: one file per I/O driver; sockets, pinning, time; the shared connection
//!   machines ([`engine::conn`], by concern, and [`engine::serve_conn`]); every byte counted
//!   where the syscall returned it, and the kernel's own counts read at each close for the
//!   audit. The raw io_uring loops share [`engine::rings`] and [`engine::deadlines`].
//! - [`tls`]: TLS as a layer between a codec's plaintext and the socket (rustls, sans-IO):
//!   inside the client's connection machine, and wrapping the built-in servers' codecs.
//! - [`plan`]: plans as plain data, validated purely; [`target`]: URLs.
//! - [`protocol`]: the registry (schemes, option groups, codec from plan, `compare` rows,
//!   built-in servers); [`proto`]: one module per protocol, sans-IO codecs and its entry in the
//!   registry. Commands and reports ask the registry; they never match on a protocol.
//! - [`workload`]: when each operation is due and when the measured window opens; [`cpus`];
//!   [`tls::options`]: TLS options as data; [`requests`]: `--requests` files, and which entry
//!   each operation carries (the connection machine picks, the codec encoded each once).
//! - [`stats`]: per-core recorders and their merge, the audit's arithmetic, the typed
//!   [`stats::result::RunResult`] every command's JSON is.
//! - [`outcome`]: how operations and connections end; [`recv`]: the receive buffer;
//!   [`interrupt`]: the Ctrl-C flag; [`watch`]: a process's CPU and memory; [`clock`];
//!   [`opener`]: `--connect-rate auto`, one core's opening rate.
//!
//! `docs/ARCHITECTURE.md` has the floors in a table, the protocol seam, and the recipe for
//! adding a protocol. The engines' loops are generic over the codec, never `dyn`.

pub mod check;
pub mod clock;
pub mod cmd;
pub mod codec;
pub mod cpus;
pub mod drive;
pub mod engine;
pub mod interrupt;
pub mod metrics;
pub mod opener;
pub mod outcome;
pub mod plan;
pub mod props;
pub mod proto;
pub mod protocol;
pub mod recv;
pub mod report;
pub mod requests;
pub mod run;
pub mod stats;
pub mod tls;
pub mod watch;
pub mod workload;
