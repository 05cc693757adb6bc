//! The `loadgen` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
    match loadgen::run(cli, loadgen::Shutdown::new()) {
        Ok(end) => ExitCode::from(end.exit_code()),
        Err(e) => {
            eprintln!(
                "Error: {}",
                redact::text(&probe::cli::flatten(&e.to_string()))
            );
            // Flags that do not go together are a bad command line, as clap's own refusals are.
            ExitCode::from(if matches!(e, loadgen::Error::Usage(_)) {
                2
            } else {
                1
            })
        }
    }
}
