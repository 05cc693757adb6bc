//! The `loadgen` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Not dumpable before anything else (its order may already wait on standard input): the
    // built-in target alone is left readable, its figures come from its /proc files.
    if std::env::args_os().nth(1).is_none_or(|a| a != "target") {
        probe::keep_secrets_in();
    }
    let cli = match loadgen::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // A refused value may be a secret: the message is redacted as anything kept is.
            let mut line = probe::cli::one_line(&e, "loadgen");
            if let Some(hint) = loadgen::cli::hint(&e) {
                line = format!("{line}; {hint}");
            }
            eprintln!("Error: {}", redact::text(&line));
            return ExitCode::from(2);
        }
    };
    // `loadgen order` and `loadgen gun` read their orders from a pipe, not the command line.
    let command_line = !matches!(
        cli.command,
        loadgen::cli::Command::Order | loadgen::cli::Command::Gun(_)
    );
    match loadgen::run(cli, loadgen::Shutdown::new()) {
        Ok(end) => ExitCode::from(end.exit_code()),
        Err(e) => {
            // One line, its secrets out and its escapes written out rather than obeyed: an
            // error may carry a name from a file, a store or a gun.
            eprintln!(
                "Error: {}",
                redact::printable(&redact::text(&probe::cli::flatten(&e.to_string())))
            );
            ExitCode::from(e.exit_code(command_line))
        }
    }
}
