//! This machine's `loadgen order` ([`Local`]): one process told one typed order on its standard
//! input, run as a process of its own (tethered: ended with this one, held to its CPUs, by
//! [`custody::tethered`]), its environment built from nothing ([`custody::environment`]). Nothing of the
//! order is on its command line, which every local user can read in `ps`, nor in its
//! environment: the store's URL (with its password), the headers, the requests and the
//! probe's token are in the order, on a pipe only this process holds.
//!
//! The runner reads what it prints (its outcome, its last words: [`Output::Read`]); a gun's
//! `loadgen gun` leaves it on its own standard output and error, which its session relays to
//! the runner ([`Output::Relay`]). Both interrupt it as Ctrl-C would when told to stop.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use order::Order;
use tokio::io::AsyncWriteExt;

use crate::error::FleetError;

/// How long a gun's generator has to end after its interrupt before it is killed.
const RELAY_GRACE: Duration = Duration::from_secs(30);

/// The user's SSH agent: given to a generator only when its order's search fires from guns,
/// for its own `ssh` to them.
const AGENT: &str = "SSH_AUTH_SOCK";

/// This machine's generator: `loadgen order`.
#[derive(Debug, Clone)]
pub struct Local {
    /// The `loadgen` binary.
    pub loadgen: PathBuf,
    /// `taskset -c` CPU list, if pinned.
    pub cpus: Option<String>,
}

/// What becomes of the generator's output, and how it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Read here (its outcome, its last words), the process held in a custody group of its own
    /// and waited for after its interrupt: the runner's generators.
    Read,
    /// Left to this process's standard output and error, and killed if it has not ended 30 s
    /// after its interrupt: a gun's, relayed over its session.
    Relay,
}

/// How one `loadgen order` ended.
#[derive(Debug)]
pub struct Ran {
    /// Its exit code (`None`: killed).
    pub code: Option<i32>,
    /// What it printed, when read ([`Output::Read`]).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// [`custody::tethered`] with its CPUs as a `taskset -c` list (read by
/// [`probe::cpus::CpuList`]); a list that is none is an `InvalidInput` error naming it.
pub fn tethered(
    program: &std::ffi::OsStr,
    cpus: Option<&str>,
) -> std::io::Result<std::process::Command> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let cpus = cpus
        .map(str::parse::<probe::cpus::CpuList>)
        .transpose()
        .map_err(|e| invalid(e.to_string()))?;
    custody::tethered(program, cpus.as_ref().map(probe::cpus::CpuList::cpus))
        .map_err(|e| invalid(e.to_string()))
}

impl Local {
    /// Runs `order` in a `loadgen order` process of its own; when `stop` resolves meanwhile,
    /// interrupts it (SIGINT, as Ctrl-C would: loadgen keeps what it recorded and says it
    /// stopped).
    pub async fn run(
        &self,
        order: &Order,
        output: Output,
        stop: impl Future<Output = ()>,
    ) -> Result<Ran, FleetError> {
        let mut command = self.command(order, output)?;
        let mut group = (output == Output::Read).then(|| {
            custody::Group::new(&format!(
                "generator of {}",
                order.keeping.name.as_deref().unwrap_or("an order")
            ))
        });
        if let Some(group) = &group {
            group.hold(command.as_std_mut());
        }
        let mut child = command.spawn().map_err(|error| FleetError::Spawn {
            path: self.loadgen.clone(),
            error,
        })?;
        if let (Some(group), Some(pid)) = (group.as_mut(), child.id()) {
            group.started(pid);
        }
        if let Some(mut input) = child.stdin.take() {
            // A generator that ended before reading says why on its standard error.
            let _ = input.write_all(&order.line()).await;
        }
        let pid = child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32));
        let signal = |signal: rustix::process::Signal| {
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, signal);
            }
        };
        let waiting = read_and_wait(&mut child);
        tokio::pin!(waiting);
        tokio::pin!(stop);
        let (stdout, stderr, status) = tokio::select! {
            done = &mut waiting => done,
            () = &mut stop => {
                signal(rustix::process::Signal::INT);
                match output {
                    Output::Read => (&mut waiting).await,
                    Output::Relay => match tokio::time::timeout(RELAY_GRACE, &mut waiting).await {
                        Ok(done) => done,
                        Err(_) => {
                            signal(rustix::process::Signal::KILL);
                            (&mut waiting).await
                        }
                    },
                }
            }
        };
        let status = status.map_err(FleetError::Wait)?;
        drop(group);
        Ok(Ran {
            code: status.code(),
            stdout,
            stderr,
        })
    }

    /// `loadgen order`, tethered to this process and held to the gun's CPUs, its environment
    /// built from nothing (with the SSH agent for a search fired from guns), its output read
    /// or relayed.
    fn command(
        &self,
        order: &Order,
        output: Output,
    ) -> Result<tokio::process::Command, FleetError> {
        let tethered =
            tethered(self.loadgen.as_os_str(), self.cpus.as_deref()).map_err(|error| {
                FleetError::Spawn {
                    path: self.loadgen.clone(),
                    error,
                }
            })?;
        let mut command = tokio::process::Command::from(tethered);
        command.arg("order");
        // A search fired from guns opens its own SSH connections to them, signed in by the
        // user's agent as the runner's are; no other generator gets it.
        let pass: Vec<String> = if order.search().is_some_and(|s| s.guns.is_some()) {
            vec![AGENT.to_string()]
        } else {
            Vec::new()
        };
        let base = custody::environment::Base::current();
        custody::environment::apply(
            command.as_std_mut(),
            &custody::environment::build(&base, &[], &pass),
        );
        let out = || match output {
            Output::Read => Stdio::piped(),
            Output::Relay => Stdio::inherit(),
        };
        command
            .stdin(Stdio::piped())
            .stdout(out())
            .stderr(out())
            .kill_on_drop(true);
        Ok(command)
    }
}

/// The child's standard output and error read (each up to its cap), and its exit.
async fn read_and_wait(
    child: &mut tokio::process::Child,
) -> (Vec<u8>, Vec<u8>, std::io::Result<std::process::ExitStatus>) {
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = async {
        match stdout.as_mut() {
            Some(o) => crate::fired::read_capped(o, crate::fired::KEEP_OUTPUT, false).await,
            None => Vec::new(),
        }
    };
    let read_err = async {
        match stderr.as_mut() {
            Some(e) => crate::fired::read_capped(e, crate::fired::KEEP_ERRORS, true).await,
            None => Vec::new(),
        }
    };
    let (o, e) = tokio::join!(read_out, read_err);
    (o, e, child.wait().await)
}

/// The `loadgen` binary: `asked` (the caller's `SHOWDOWN_LOADGEN`), or this executable if it
/// is loadgen, or a `loadgen` next to it (or one directory up, as from a test binary in
/// `target/…/deps`).
pub fn find_loadgen(asked: Option<&Path>) -> Result<PathBuf, FleetError> {
    if let Some(p) = asked {
        return Ok(p.to_path_buf());
    }
    let exe = std::env::current_exe().map_err(FleetError::NoExe)?;
    if exe.file_name().is_some_and(|n| n == "loadgen") {
        return Ok(exe);
    }
    let candidates = [
        exe.parent().map(|d| d.join("loadgen")),
        exe.parent()
            .and_then(Path::parent)
            .map(|d| d.join("loadgen")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .ok_or(FleetError::NoLoadgen)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `loadgen` that reads its order and prints its environment.
    fn printing_its_environment(dir: &Path) -> Local {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("loadgen");
        std::fs::write(&path, "#!/bin/sh\ncat >/dev/null\nenv\n").expect("a script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("executable");
        Local {
            loadgen: path,
            cpus: None,
        }
    }

    fn order(work: order::Work) -> Order {
        Order {
            version: order::VERSION,
            work,
            requests: order::Requests::default(),
            pacing: order::Pacing::default(),
            keeping: order::Keeping::default(),
            probes: None,
            shard: None,
        }
    }

    /// The user's agent goes to a generator only for its own `ssh` to the guns of a search.
    #[tokio::test]
    async fn only_a_search_from_guns_is_given_the_users_agent() {
        let dir = tempfile::tempdir().expect("a directory");
        let local = printing_its_environment(dir.path());
        std::env::set_var("SSH_AUTH_SOCK", "/tmp/agent.of-this-test");
        let attack = order(order::Work::Attack(order::Attack::new(
            order::Load::Closed {
                connections: 1,
                requests: Some(1),
                duration_ns: None,
            },
        )));
        let search = order(order::Work::Search(Box::new(order::Search {
            guns: Some(order::Guns::default()),
            ..order::Search::new(Vec::new())
        })));
        let mut said = Vec::new();
        for order in [&attack, &search] {
            let ran = local
                .run(order, Output::Read, std::future::pending())
                .await
                .expect("it ran");
            assert_eq!(ran.code, Some(0));
            said.push(String::from_utf8_lossy(&ran.stdout).contains("SSH_AUTH_SOCK="));
        }
        assert_eq!(said, [false, true]);
    }
}
