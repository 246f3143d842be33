//! wirebench: what network protocols cost on the wire, and how servers scale across cores.
//!
//! # Data flow
//!
//! ```text
//! argv ──clap──▶ cmd::*Args ──validate──▶ BenchPlan ──▶ one pinned engine thread per core ──▶ CoreRecorder ─┐
//!                 (target URL → codec,         (engine drives its connections               │ merge
//!                  workload, cores, outputs)    through a sans-IO protocol codec)            ▼
//!                                                                           stats::Report ──▶ report::{text,json}
//! ```
//!
//! # Layers (one folder each)
//!
//! - [`proto`]: one file per protocol, client and server roles, bytes only (sans-IO).
//! - [`engine`]: one file per I/O driver; sockets, pinning, time; counts every byte where the
//!   syscall returned it and reads the kernel's own counts (`TCP_INFO`) for the audit.
//! - [`workload`]: when each connection's next operation is due.
//! - [`stats`]: per-core recorders and their merge.
//! - [`report`]: text, JSON, progress line.
//! - [`cmd`]: the command line and the composition of the above; [`target`] parses URLs.
//!
//! The command layer picks protocol × engine with one `match`; the engine's loops are generic
//! over the codec, never `dyn`.

pub mod cmd;
pub mod cpus;
pub mod engine;
pub mod outcome;
pub mod plan;
pub mod proto;
pub mod protocol;
pub mod report;
pub mod stats;
pub mod target;
pub mod watch;
pub mod workload;
