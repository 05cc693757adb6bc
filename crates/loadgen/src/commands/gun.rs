//! `loadgen gun`: a gun host's side of an experiment fired from several (the `fleet` crate).
//!
//! It reads one [`GunRequest`] from standard input (nothing is on its command line): `check`
//! says what this gun is (its build's SHA-256, CPUs, clock, whether it reaches the target);
//! `clock` answers each further line with the time, for the runner's offset measurement;
//! `fire` runs an [`order::Order`] in a `loadgen order` process of its own (`fleet::Local`,
//! held to the request's CPUs), its store resolved from the gun's own file when the order
//! names one, and relays its outcome. Standard input is its lifeline: when it closes (the runner stopped the
//! cell, or the SSH connection is gone) the attack is interrupted as Ctrl-C would, and keeps
//! what it recorded.

use std::io::BufRead;
use std::time::Duration;

use order::{GunCheck, GunRequest};
use store::run::now_ns;

use crate::{Error, RunEnd};

pub async fn run(args: &crate::cli::GunArgs, shutdown: &crate::Shutdown) -> Result<RunEnd, Error> {
    if let (Some(address), Some(secrets)) = (&args.dial, &args.secrets) {
        return dial(address, secrets).await;
    }
    let request: GunRequest =
        tokio::task::spawn_blocking(|| order::read_line(std::io::stdin().lock()))
            .await?
            .map_err(Error::GunRequest)?;
    match request {
        GunRequest::Clock => tokio::task::spawn_blocking(answer_clock).await?,
        GunRequest::Check { reach } => {
            let check = check(reach.as_deref()).await?;
            println!("{}", serde_json::to_string(&check).map_err(Error::Json)?);
            Ok(RunEnd::Completed)
        }
        GunRequest::Fire { order, cpus } => fire(*order, cpus, shutdown.subscribe()).await,
    }
}

/// A Kubernetes Job's pod: dials the runner and serves its sessions until it says goodbye;
/// a connection lost is an error, which fails the pod's index.
async fn dial(address: &str, secrets: &std::path::Path) -> Result<RunEnd, Error> {
    let name = |var: &str| std::env::var(var).unwrap_or_else(|_| "?".into());
    let index = std::env::var("JOB_COMPLETION_INDEX").unwrap_or_default();
    let dial = fleet::kubernetes::agent::Dial {
        address: address.to_string(),
        secrets: secrets.to_path_buf(),
        index: fleet::kubernetes::agent::parse_index(&index).map_err(Error::Dial)?,
        pod: name("POD_NAME"),
        node: name("NODE_NAME"),
        loadgen: std::env::current_exe().map_err(Error::Exe)?,
    };
    fleet::kubernetes::agent::serve(&dial, || {
        eprintln!("gun {}: in, at {}", dial.index, dial.address)
    })
    .await
    .map_err(Error::Dial)?;
    Ok(RunEnd::Completed)
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

async fn check(reach: Option<&str>) -> Result<GunCheck, Error> {
    let exe = std::env::current_exe().map_err(Error::Exe)?;
    let build = fleet::build_of(&exe).map_err(|source| Error::ReadExe {
        path: exe.clone(),
        source,
    })?;
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
        // Why not, in words: the answer goes back to the runner over its session.
        Some(url) => Some(
            match experiment::http::reachable(url, None, Duration::from_secs(3)).await {
                Ok(()) => order::Reach::Reached,
                Err(e) => order::Reach::Unreachable { why: e.to_string() },
            },
        ),
    };
    Ok(GunCheck {
        version: env!("CARGO_PKG_VERSION").to_string(),
        build,
        arch: std::env::consts::ARCH.to_string(),
        cpus: cpus.to_string(),
        now_ns: now_ns(),
        reach,
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

/// Runs the order; standard input closing (the runner's stop, the connection lost) or a
/// signal to this process (SIGTERM, SIGINT, SIGHUP) interrupts it.
async fn fire(
    mut order: order::Order,
    cpus: Option<String>,
    mut stopping: tokio::sync::watch::Receiver<crate::engine::shutdown::Stop>,
) -> Result<RunEnd, Error> {
    // A gun fires what it is given: a search carrying guns of its own would send the order on,
    // over this host's SSH, to hosts the gun's operator never named.
    if order.search().is_some_and(|s| s.guns.is_some()) {
        return Err(crate::prepare::Refusal::GunsOnAGun.into());
    }
    if let Some(order::StoreAt::GunFile { path }) = &order.keeping.store {
        let text = std::fs::read_to_string(path).map_err(|source| Error::GunStoreFile {
            path: path.clone(),
            source,
        })?;
        let (_, url) = env_file(&text)
            .into_iter()
            .find(|(k, _)| k == "SHOWDOWN_DB")
            .ok_or_else(|| Error::GunNoStore(path.clone()))?;
        order.keeping.store = Some(order::StoreAt::Url {
            url: order::Secret(url),
        });
    }
    let exe = std::env::current_exe().map_err(Error::Exe)?;
    // Ended with this process, however it ends; held to the order's CPUs. The order (the
    // store's URL and the headers in it) goes on the generator's standard input, not on its
    // command line or in its environment; what it prints is relayed over the session.
    let local = fleet::Local { loadgen: exe, cpus };
    // Standard input closing (the runner's stop, or the connection lost) interrupts it.
    let (closed_tx, closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = closed_tx.send(());
    });
    let stop = async move {
        let signalled = stopping.wait_for(|s| *s != crate::engine::shutdown::Stop::Running);
        tokio::select! {
            _ = closed => {}
            Ok(_) = signalled => {}
        }
    };
    let ran = local
        .run(&order, fleet::Output::Relay, stop)
        .await
        .map_err(|e| match e {
            fleet::FleetError::Spawn { path, error } => Error::GunRun {
                path,
                source: error,
            },
            fleet::FleetError::Wait(error) => Error::GunWait(error),
            other => Error::Guns(other),
        })?;
    match ran.code {
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
