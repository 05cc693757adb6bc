//! What `loadgen` does, one module a command: `attack`, `capacity` (and `compare`, its
//! `--against`: targets' searches interleaved), `demo`, `selftest` (what this machine can
//! time), `experiment` (the runner is the
//! `experiment` crate's), `history` (an experiment's sittings and the changes across them),
//! `runs`, `completions` and `man` (the shell's completions and the manual page, from the
//! flags themselves), the built-in `target` (which the demo starts), `gun` (a
//! gun host's side of an experiment fired over SSH) and `order` (one typed order on standard
//! input, how the runner and the guns start a generator). Each takes its checked flags (`cli`)
//! or its order, and gives back how the run ended.

mod attack;
mod capacity;
mod compare;
mod completions;
mod demo;
pub mod experiment;
mod gun;
mod history;
mod order;
mod runs;
mod selftest;
pub mod target;

use crate::cli::Command;
use crate::{Error, RunEnd, Shutdown};

/// Runs one command; `command_line` is what was typed (redacted before it is kept).
pub async fn run(
    command: Command,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    match command {
        Command::Attack(args) => attack::run(&args, shutdown, command_line).await,
        Command::Capacity(args) if !args.against.is_empty() => {
            compare::run(&args, shutdown, command_line).await
        }
        Command::Capacity(args) => capacity::run(&args, shutdown, command_line).await,
        Command::Demo(args) => demo::run(&args, shutdown, command_line).await,
        Command::Selftest(args) => selftest::run(&args, shutdown).await,
        Command::Runs(args) => runs::run(&args).await.map(|()| RunEnd::Completed),
        Command::Experiment(args) => experiment::run(&args, shutdown).await,
        Command::History(args) => history::run(&args).await,
        Command::Completions { shell } => completions::completions(shell),
        Command::Man => completions::man(),
        Command::Gun(args) => gun::run(&args, shutdown).await,
        Command::Order => order::run(shutdown, command_line).await,
        Command::Target(args) => target::serve_until_stdin_closes(&args)
            .await
            .map(|()| RunEnd::Completed),
    }
}
