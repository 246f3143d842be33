//! The `wirebench` binary: parse the command line, run the command, and turn any error into
//! one clear line and exit status 2.

use clap::Parser;
use wirebench::cmd::{Cli, Command, bench, compare, serve, sweep};

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(args) => bench::main(args),
        Command::Serve(args) => serve::main(args),
        Command::Compare(args) => compare::main(args),
        Command::Sweep(args) => sweep::main(args),
    };
    if let Err(e) = result {
        eprintln!("wirebench: error: {e:#}");
        std::process::exit(2);
    }
}
