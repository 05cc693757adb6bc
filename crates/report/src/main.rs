//! The `report` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match report::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "Error: {}",
                redact::text(&probe::cli::one_line(&e, "report"))
            );
            return ExitCode::from(2);
        }
    };
    match report::run(&cli) {
        Ok(report::Outcome::Site(site)) => {
            println!(
                "wrote {} pages ({:.1} MB) to {}: open {}",
                site.pages,
                site.bytes as f64 / 1e6,
                cli.out.display(),
                site.index.display()
            );
            if site.failures.is_empty() {
                return ExitCode::SUCCESS;
            }
            for (what, why) in &site.failures {
                eprintln!(
                    "Error: {what} could not be drawn: {}",
                    probe::cli::flatten(why)
                );
            }
            ExitCode::from(1)
        }
        Ok(report::Outcome::Tables) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "Error: {}",
                redact::text(&probe::cli::flatten(&e.to_string()))
            );
            ExitCode::from(1)
        }
    }
}
