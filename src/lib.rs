//! wirebench: what network protocols cost on the wire, and how servers scale across cores.
//!
//! # Data flow
//!
//! ```text
//! argv ──clap──▶ plan::LoadArgs ──validate (pure)──▶ LoadPlan ──run::prepare──▶ Prepared ──registry──▶ proto::foo::run::<Engines>
//!                 (+ each protocol's options,         (target → protocol        (resolved, payload,                 │ D::drive(p, |p| codec)
//!                  an OptionSet the registry fills)    from the registry)         limits, Ctrl-C, the pre-flight)    ▼
//!   report::{text,json,compare,sweep,svg} ◀── RunResult ◀── Report ◀─merge─ CoreRecorder per pinned engine thread
//!                                             (typed, serde)                 (the engine drives Conn<Codec>)
//! ```
//!
//! # Floors, top-down (each imports only from those below; `tools/layers.py` holds 0 up, 0 cycles)
//!
//! - [`cmd`]: the command line and the composition of the floors below.
//! - [`run`]: running a plan (DNS, limits, Ctrl-C, the pre-flight, a run that measured nothing);
//!   [`check`]: `--fail-if`; [`metrics`]: `--metrics-listen`.
//! - [`protocol`]: the registry, one line per protocol module; a macro makes the protocol and
//!   server lists, the option groups, each protocol's `run` on the engines and the fuzz targets.
//!   Commands and reports ask the registry; they never match on a protocol.
//! - [`drive`]: [`drive::Engines`], the one [`plan::Drive`]: the engine on its own thread, the
//!   progress line on this one.
//! - [`report`]: text, JSON, tables, SVG, read from the typed result.
//! - [`engine`]: one file per I/O driver; sockets, pinning, time; the client's connection
//!   machine ([`engine::conn`], by concern); every byte counted where the syscall returned it,
//!   and the kernel's own counts read at each close for the audit. The raw io_uring loops share
//!   [`engine::rings`] and [`engine::deadlines`].
//! - [`tls`]: TLS as a layer between a codec's plaintext and the socket (rustls, sans-IO):
//!   inside the client's connection machine, and wrapping the built-in servers' codecs.
//! - [`proto`]: one module per protocol: sans-IO codecs, its declarations (`PROTOCOL`, `SERVER`,
//!   option groups, a generic `run<D: Drive>`) and its fuzz targets.
//! - [`props`]: the properties every codec keeps, for the fuzz targets and tests.
//! - [`plan`]: plans as plain data, validated purely, knowing no protocol (the descriptor types
//!   a protocol fills in, `Prepared`, `ClientJob`, `Drive`; URLs); [`engine::serve_conn`]: the
//!   built-in servers' connection machine.
//! - [`codec`]: the seam, the traits every codec implements; [`workload`]: when each operation
//!   is due; [`cpus`]; [`tls::options`]: TLS options as data; [`requests`]: `--requests` files.
//! - [`stats`]: per-core recorders and their merge, the byte tallies, the audit's arithmetic,
//!   the typed [`stats::result::RunResult`] every command's JSON is.
//! - [`outcome`]: how operations and connections end (a class and the codec's words); [`recv`]:
//!   the receive buffer; [`interrupt`]: the Ctrl-C flag; [`watch`]: a process's CPU and memory;
//!   [`clock`]; [`opener`]: `--connect-rate auto`, one core's opening rate.
//!
//! `docs/ARCHITECTURE.md` has the floors in a table, the protocol seam, and the recipe for
//! adding a protocol. The engines' loops are generic over the codec, never `dyn`.

#[cfg(feature = "mimalloc")]
pub mod allocator;
pub mod check;
pub mod clock;
pub mod cmd;
pub mod codec;
pub mod cpus;
pub mod drive;
pub mod engine;
pub mod fleet;
pub mod interrupt;
pub mod metrics;
pub mod opener;
pub mod outcome;
pub mod plan;
pub mod props;
pub mod proto;
pub mod protocol;
pub mod proxy_header;
pub mod recv;
pub mod report;
pub mod requests;
pub mod run;
pub mod stats;
pub mod tls;
pub mod watch;
pub mod workload;
