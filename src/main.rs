//! The `wirebench` binary: parse the command line, run the command, and turn any error into
//! one clear line and exit status 2 (3 when `--fail-if` thresholds held, 130 after Ctrl-C, 0
//! when its reader closed the pipe).

use clap::Parser;
use wirebench::cmd::{Cli, Command, bench, compare, merge, plot, search, serve, sweep, watch};

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(args) => bench::main(args),
        Command::Serve(args) => serve::main(args),
        Command::Compare(args) => compare::main(args),
        Command::Sweep(args) => sweep::main(args),
        Command::Search(args) => search::main(args),
        Command::Merge(args) => merge::main(args),
        Command::Watch(args) => watch::main(args),
        Command::Plot(args) => plot::main(args),
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
        eprintln!("wirebench: error: {e:#}");
        std::process::exit(2);
    }
    // Interrupted runs print what they measured, then say so in their exit status (as a
    // shell's 128 + SIGINT). A server's normal end is Ctrl-C: status 0.
    if !matches!(cli.command, Command::Serve(_)) && wirebench::interrupt::was_set() {
        std::process::exit(130);
    }
}
