//! `loadgen completions SHELL` and `loadgen man`: generated from the flags themselves (clap's
//! generators), so that they cannot fall behind them.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::{Error, RunEnd};

/// Prints `shell`'s completion script for loadgen.
pub fn completions(shell: clap_complete::Shell) -> Result<RunEnd, Error> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "loadgen", &mut out);
    print(&out)
}

/// Prints loadgen's manual page and every command's after it, to any depth (`loadgen-runs-show`,
/// `loadgen-experiment-run`), as roff: one page a command, each with its own flags.
pub fn man() -> Result<RunEnd, Error> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let mut out = Vec::new();
    pages(&command, "loadgen", &mut out)?;
    print(&out)
}

/// `command`'s page, named `name`, then its visible subcommands' pages, depth first.
fn pages(command: &clap::Command, name: &str, out: &mut Vec<u8>) -> Result<(), Error> {
    clap_mangen::Man::new(command.clone().name(name.to_string()))
        .render(out)
        .map_err(written)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub, &format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(())
}

fn written(source: std::io::Error) -> Error {
    Error::Write {
        path: "standard output".into(),
        source,
    }
}

fn print(bytes: &[u8]) -> Result<RunEnd, Error> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(written)?;
    Ok(RunEnd::Completed)
}
