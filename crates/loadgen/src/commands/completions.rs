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

/// Prints loadgen's manual page, its subcommands' after it, as roff.
pub fn man() -> Result<RunEnd, Error> {
    let command = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .map_err(written)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("loadgen-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().name(name))
            .render(&mut out)
            .map_err(written)?;
    }
    print(&out)
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
