//! `loadgen gun`: a gun host's side of an experiment fired over SSH (`experiment::fleet`).
//!
//! `--check` says what this gun is (its build's SHA-256, CPUs, clock, whether it reaches the
//! target); `--clock` answers each line with the time, for the runner's offset measurement.
//! Without either, it reads one [`Order`] from standard input, writes the order's files into
//! a private directory, runs `loadgen` with the order's arguments and environment (held to
//! the order's CPUs), and relays its output. Standard input is its lifeline: when it closes
//! (the runner stopped the cell, or the SSH connection is gone) the attack is interrupted as
//! Ctrl-C would, and keeps what it recorded. Nothing secret is ever on a command line here.

use std::io::BufRead;
use std::process::Stdio;
use std::time::Duration;

use experiment::fleet::order::{Check, Order, FILES};

use crate::cli::GunArgs;
use crate::{Error, RunEnd};

/// The most an order may weigh (its requests file included).
const ORDER_LIMIT: u64 = 64 << 20;

pub async fn run(args: &GunArgs, shutdown: &crate::Shutdown) -> Result<RunEnd, Error> {
    if args.clock {
        return tokio::task::spawn_blocking(answer_clock)
            .await
            .map_err(|e| Error::Usage(e.to_string()))?;
    }
    if args.check {
        let check = check(args.reach.as_deref()).await?;
        println!(
            "{}",
            serde_json::to_string(&check).map_err(|e| Error::Usage(e.to_string()))?
        );
        return Ok(RunEnd::Completed);
    }
    let order: Order = tokio::task::spawn_blocking(read_order)
        .await
        .map_err(|e| Error::Usage(e.to_string()))??;
    fire(order, shutdown.subscribe()).await
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn answer_clock() -> Result<RunEnd, Error> {
    use std::io::Write;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        if writeln!(out, "{}", now_ns())
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
    Ok(RunEnd::Completed)
}

async fn check(reach: Option<&str>) -> Result<Check, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::Usage(format!("this loadgen: {e}")))?;
    let build = experiment::fleet::build_of(&exe)
        .map_err(|e| Error::Usage(format!("cannot read {}: {e}", exe.display())))?;
    let cpus = probe::cpus::CpuList::new(
        rustix::thread::sched_getaffinity(None)
            .map(|set| {
                (0..rustix::thread::CpuSet::MAX_CPU)
                    .filter(|c| set.is_set(*c))
                    .collect()
            })
            .unwrap_or_default(),
    );
    let reach = match reach {
        None => None,
        Some(url) => Some(experiment::http::reachable(url, None, Duration::from_secs(3)).await),
    };
    Ok(Check {
        version: env!("CARGO_PKG_VERSION").to_string(),
        build,
        arch: std::env::consts::ARCH.to_string(),
        cpus: cpus.to_string(),
        now_ns: now_ns(),
        reach,
    })
}

/// The order: one JSON line.
fn read_order() -> Result<Order, Error> {
    use std::io::Read;
    let mut line = Vec::new();
    std::io::stdin()
        .lock()
        .take(ORDER_LIMIT)
        .read_until(b'\n', &mut line)
        .map_err(|e| Error::Usage(format!("gun: cannot read the order: {e}")))?;
    serde_json::from_slice(&line).map_err(|e| {
        Error::Usage(format!(
            "gun: the order on standard input is not one: {e} (this command is the experiment runner's, over SSH)"
        ))
    })
}

/// `KEY=value` lines of a shell environment file (the lab's store.env), quotes taken off.
fn env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("export ").unwrap_or(l).split_once('='))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            (k.trim().to_string(), v.to_string())
        })
        .collect()
}

/// The subcommands an order may run, and the variables it may set: what the runner sends, no
/// more (whoever sends an order can already log in, but the gun runs nothing else in its name).
const ORDER_COMMANDS: [&str; 2] = ["attack", "capacity"];
const ORDER_VARIABLES: [&str; 2] = ["SHOWDOWN_DB", "SHOWDOWN_HEADERS"];

/// Refuses an order for anything but a generator's run.
fn check_order(order: &Order) -> Result<(), Error> {
    match order.args.first() {
        Some(first) if ORDER_COMMANDS.contains(&first.as_str()) => {}
        _ => {
            return Err(Error::Usage(
                "gun: an order runs `attack` or `capacity`, nothing else (this command is the experiment runner's, over SSH)".into(),
            ))
        }
    }
    if let Some((name, _)) = order
        .env
        .iter()
        .find(|(name, _)| !ORDER_VARIABLES.contains(&name.as_str()))
    {
        return Err(Error::Usage(format!(
            "gun: an order sets only SHOWDOWN_DB and SHOWDOWN_HEADERS, not {name:?}"
        )));
    }
    Ok(())
}

/// Runs the order; standard input closing (the runner's stop, the connection lost) or a
/// signal to this process (SIGTERM, SIGINT, SIGHUP) interrupts it.
async fn fire(
    order: Order,
    mut stopping: tokio::sync::watch::Receiver<crate::engine::shutdown::Stop>,
) -> Result<RunEnd, Error> {
    check_order(&order)?;
    let dir = tempfile::Builder::new()
        .prefix("showdown-gun-")
        .tempdir()
        .map_err(|e| Error::Usage(format!("gun: cannot make a private directory: {e}")))?;
    for (name, text) in &order.files {
        if name.contains('/') || name.starts_with('.') {
            return Err(Error::Usage(format!("gun: {name:?} is not a file name")));
        }
        experiment::gun::write_private(&dir.path().join(name), text.as_bytes())
            .map_err(|e| Error::Usage(format!("gun: cannot write {name}: {e}")))?;
    }
    let files = dir.path().display().to_string();
    let args: Vec<String> = order
        .args
        .iter()
        .map(|a| a.replace(FILES, &files))
        .collect();
    let mut env = order.env.clone();
    if let Some(path) = &order.store_env_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Usage(format!("gun: cannot read {path}: {e}")))?;
        let db = env_file(&text)
            .into_iter()
            .find(|(k, _)| k == "SHOWDOWN_DB")
            .ok_or_else(|| Error::Usage(format!("gun: {path} sets no SHOWDOWN_DB")))?;
        env.retain(|(k, _)| k != "SHOWDOWN_DB");
        env.push(db);
    }
    let exe = std::env::current_exe().map_err(|e| Error::Usage(format!("this loadgen: {e}")))?;
    // Ended with this process, however it ends; held to the order's CPUs.
    let mut command = tokio::process::Command::new("setpriv");
    command.args(["--pdeathsig", "TERM", "--"]);
    if let Some(cpus) = &order.cpus {
        command.args(["taskset", "-c", cpus]);
    }
    // The store's URL and the headers go on the generator's standard input, not in its
    // environment.
    command
        .arg(&exe)
        .args(experiment::gun::with_secrets_flag(&args));
    let base = experiment::environment::Base::current();
    experiment::environment::apply(
        &mut command,
        &experiment::environment::build(&base, &[], &[]),
    );
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| Error::Usage(format!("gun: cannot run {}: {e}", exe.display())))?;
    if let Some(mut input) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        let _ = input
            .write_all(&experiment::gun::Secrets::of(&env).line())
            .await;
    }
    let pid = child.id();
    // Standard input closing (the runner's stop, or the connection lost) interrupts it.
    let (closed_tx, mut closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = closed_tx.send(());
    });
    let signalled = stopping.wait_for(|s| *s != crate::engine::shutdown::Stop::Running);
    let status = tokio::select! {
        status = child.wait() => status,
        _ = async {
            tokio::select! {
                _ = &mut closed => {}
                Ok(_) = signalled => {}
            }
        } => {
            if let Some(pid) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    let _ = child.kill().await;
                    child.wait().await
                }
            }
        }
    }
    .map_err(|e| Error::Usage(format!("gun: {e}")))?;
    drop(dir);
    match status.code() {
        Some(0) => Ok(RunEnd::Completed),
        Some(3) => Ok(RunEnd::Stopped),
        // Its own error is on standard error already; its code is the gun's.
        Some(code) => std::process::exit(code),
        None => std::process::exit(128 + 9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_runs_a_generator_and_nothing_else() {
        let order = |args: &[&str], env: &[&str]| Order {
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env.iter().map(|k| (k.to_string(), "x".into())).collect(),
            files: Vec::new(),
            cpus: None,
            store_env_file: None,
        };
        assert!(check_order(&order(&["attack", "--rate", "10"], &["SHOWDOWN_DB"])).is_ok());
        assert!(check_order(&order(&["capacity"], &["SHOWDOWN_HEADERS"])).is_ok());
        for (args, env) in [
            (&["runs", "delete", "--all"][..], &[][..]),
            (&["experiment", "run", "x.toml"][..], &[][..]),
            (&[][..], &[][..]),
            (&["attack"][..], &["LD_PRELOAD"][..]),
        ] {
            assert!(check_order(&order(args, env)).is_err(), "{args:?} {env:?}");
        }
    }

    #[test]
    fn the_labs_store_file_gives_its_url() {
        let env = env_file(
            "# the store\nSHOWDOWN_DB='postgres://runs:pw@db/showdown_runs'\nexport A=\"b\"\n",
        );
        assert_eq!(
            env,
            [
                (
                    "SHOWDOWN_DB".to_string(),
                    "postgres://runs:pw@db/showdown_runs".to_string()
                ),
                ("A".to_string(), "b".to_string())
            ]
        );
    }
}
