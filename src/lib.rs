//! wirebench: what network protocols cost on the wire, and how servers scale across cores.
//!
//! # Data flow
//!
//! ```text
//! argv ──clap──▶ plan::LoadArgs ──validate (pure)──▶ LoadPlan ──prepare──▶ Prepared ──run──▶ the protocol
//!                 (+ each protocol's options,         (targets → protocol    (resolved, payload,   builds a codec
//!                  from the registry)                  from the registry)     limits, Ctrl-C)       per target
//!                                                                             (`--repeat`: N runs)  │
//!                                                                                                   ▼
//!   report::{text,json,compare,sweep,svg} ◀── stats::Report ◀─merge─ CoreRecorder per pinned engine thread
//!                                                                    (engine drives Conn<Codec>)
//! ```
//!
//! # Layers (one folder or file each)
//!
//! - [`proto`]: one module per protocol: sans-IO codecs (client and server roles, bytes only)
//!   and, at the end of its `mod.rs`, its entry in the registry.
//! - [`protocol`]: the registry: schemes, options, codec from plan, `compare` rows, built-in
//!   servers. Commands and reports ask it; they never match on a protocol.
//! - [`plan`]: plans as plain data: validate (pure), prepare (I/O), run.
//! - [`engine`]: one file per I/O driver; sockets, pinning, time; the shared connection
//!   machines ([`engine::conn`], [`engine::serve_conn`]); every byte counted where the syscall
//!   returned it, and the kernel's own counts read at each close for the audit. The raw
//!   io_uring loops share [`engine::rings`] (a thread's rings, its sockets as direct
//!   descriptors in their tables) and [`engine::deadlines`] (a million connections' timeouts).
//! - [`tls`]: TLS as a layer between a codec's plaintext and the socket (rustls, sans-IO):
//!   inside the client's connection machine, and wrapping the built-in servers' codecs; every
//!   record's bytes accounted beside the plaintext it carries.
//! - [`workload`]: when each connection's next operation is due and when the measured window
//!   opens (once every connection is set up); [`outcome`]: how operations and connections end.
//! - [`stats`]: per-core recorders and their merge (an operation's latencies counted into
//!   [`stats::Tally`]s, folded into histograms at the merge); [`report`]: text, JSON, tables, SVG.
//! - [`clock`]: the monotonic clock as plain nanoseconds, read by engines and recorders alike.
//! - [`cmd`]: the command line and the composition of the above; [`cpus`], [`target`] and
//!   [`watch`] are small helpers.
//!
//! `docs/ARCHITECTURE.md` has the rooms in a table and the recipe for adding a protocol. The
//! engines' loops are generic over the codec, never `dyn`.

pub mod clock;
pub mod cmd;
pub mod cpus;
pub mod engine;
pub mod interrupt;
pub mod outcome;
pub mod plan;
pub mod props;
pub mod proto;
pub mod protocol;
pub mod recv;
pub mod report;
pub mod run;
pub mod stats;
pub mod target;
pub mod tls;
pub mod watch;
pub mod workload;
