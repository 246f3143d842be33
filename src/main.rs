//! The `wirebench` binary: parse the command line, run the command, and turn any error into
//! one clear line and exit status 2 (3 when `--fail-if` thresholds held, 4 when a run completed
//! no operation, 130 after Ctrl-C or SIGTERM, 0 when its reader closed the pipe).

use clap::Parser;
use wirebench::cmd::{Cli, Command, bench, compare, merge, plot, report, search, serve, sweep, watch};

/// mimalloc, the default feature (`wirebench::allocator`).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: wirebench::allocator::Mimalloc = wirebench::allocator::Mimalloc;

/// An error and its causes in one line, each cause once: one whose words end the line already
/// (an error that prints its source, as `cannot listen on …: Address already in use`) is not
/// said again.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !line.ends_with(&text) {
            line = format!("{line}: {text}");
        }
    }
    line
}

fn main() {
    // What `no_thp` does not cover: a kernel in THP mode `always` needs no advice to use them.
    wirebench::engine::sys::no_huge_pages();
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(args) => bench::main(args),
        Command::Serve(args) => serve::main(args),
        Command::Compare(args) => compare::main(args),
        Command::Sweep(args) => sweep::main(args),
        Command::Search(args) => search::main(args),
        Command::Merge(args) => merge::main(args),
        Command::Kube(args) => wirebench::cmd::kube::main(args),
        Command::Agent(args) => wirebench::cmd::agent::main(args),
        Command::Watch(args) => watch::main(args),
        Command::Plot(args) => plot::main(args),
        Command::Report(args) => report::main(args),
        Command::Schema(args) => wirebench::cmd::schema(args),
        Command::Completions(args) => wirebench::cmd::completions(args),
        Command::Man(args) => wirebench::cmd::man(args),
    };
    if let Err(e) = result {
        // A run that failed its `--fail-if` thresholds: each that held, status 3.
        if let Some(failed) = e.downcast_ref::<wirebench::check::Failed>() {
            for line in failed.to_string().lines() {
                eprintln!("wirebench: {line}");
            }
            std::process::exit(3);
        }
        // A run that completed no operation: why, and status 4.
        if let Some(empty) = e.downcast_ref::<wirebench::check::Empty>() {
            for line in empty.to_string().lines() {
                eprintln!("wirebench: {line}");
            }
            std::process::exit(4);
        }
        eprintln!("wirebench: error: {}", one_line(&e));
        // An error that Ctrl-C (or SIGTERM) brought about is an interruption: status 130.
        std::process::exit(if wirebench::interrupt::was_set() { 130 } else { 2 });
    }
    // Interrupted runs print what they measured, then say so in their exit status (as a
    // shell's 128 + SIGINT). A server's normal end is Ctrl-C: status 0.
    if !matches!(cli.command, Command::Serve(_)) && wirebench::interrupt::was_set() {
        std::process::exit(130);
    }
}
