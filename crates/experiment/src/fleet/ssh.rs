//! One gun host over OpenSSH: one multiplexed connection (a control master) opened once, every
//! command after it a session over that connection. No agent of ours listens on the gun; the
//! user's SSH config, keys and agent decide who may log in, as for any `ssh` they type.
//!
//! `ssh` is the user's own tool, so it gets the base environment and their agent
//! (`SSH_AUTH_SOCK`), never the store's URL or the headers ([`crate::environment::NEVER`]).
//! Whatever the SSH config says, a gun's host key must be known (`StrictHostKeyChecking=yes`),
//! the agent and X11 are not forwarded to it, and no local command runs: options on the command
//! line win over a config's.
//!
//! The master is held like every process Showdown starts ([`custody::Group`]): a process group
//! of its own (a Ctrl-C on the terminal reaches the runner, which ends the guns' work in order),
//! ended with its control socket on every exit path, and by the next runner's sweep when this
//! one was killed outright. What it says goes to a log file beside the socket (`-E`), not to a
//! pipe nobody reads, which would stall the connection once full.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use super::FleetError;

/// How long a gun has to accept the connection.
const CONNECT: Duration = Duration::from_secs(15);

/// The multiplexed connection to one gun.
#[derive(Debug)]
pub struct Link {
    /// As the user gave it (`user@host`, or a `Host` of the SSH config).
    pub destination: String,
    config: Option<PathBuf>,
    control: PathBuf,
    master: tokio::process::Child,
    /// The master's process group, its socket and its log, in custody.
    group: custody::Group,
}

impl Link {
    /// Opens the connection; its control socket goes in `dir` (the runner's private one).
    pub async fn open(
        destination: &str,
        config: Option<&Path>,
        dir: &Path,
        n: usize,
    ) -> Result<Link, FleetError> {
        let control = dir.join(format!("gun{n}.ssh"));
        let log = dir.join(format!("gun{n}.log"));
        let mut command = ssh(config, &control);
        command.arg("-E").arg(&log);
        command.args([
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            // A gun that stops answering is noticed within 15 s, and its sessions end.
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-N",
            "--",
            destination,
        ]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut group = custody::Group::new(&format!("ssh to {destination}"));
        group.hold(command.as_std_mut());
        group.remove_with(control.clone());
        group.remove_with(log.clone());
        let master = command.spawn().map_err(FleetError::NoSsh)?;
        if let Some(pid) = master.id() {
            group.started(pid);
        }
        let mut link = Link {
            destination: destination.to_string(),
            config: config.map(Path::to_path_buf),
            control,
            master,
            group,
        };
        let deadline = tokio::time::Instant::now() + CONNECT;
        loop {
            if let Some(status) = link.master.try_wait().map_err(FleetError::NoSsh)? {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(FleetError::Connect {
                    gun: destination.to_string(),
                    why: last_line(&said).unwrap_or_else(|| format!("ssh exited ({status})")),
                });
            }
            if link.check().await {
                return Ok(link);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(FleetError::Connect {
                    gun: destination.to_string(),
                    why: format!("no connection within {}s", CONNECT.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the connection is up.
    pub async fn check(&self) -> bool {
        let mut command = ssh(self.config.as_deref(), &self.control);
        command.args(["-O", "check", "--", &self.destination]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        matches!(command.status().await, Ok(s) if s.success())
    }

    /// A command on the gun, over the connection (a shell command line of the gun's: only
    /// fixed words and paths go in it, never a secret).
    pub fn command(&self, remote: &str) -> tokio::process::Command {
        let mut command = ssh(self.config.as_deref(), &self.control);
        command.args([
            "-o",
            "ControlMaster=no",
            "-T",
            "--",
            &self.destination,
            remote,
        ]);
        command
    }

    /// Runs `remote` to its end with `input` on its standard input, within `limit`.
    pub async fn run(
        &self,
        remote: &str,
        input: &[u8],
        limit: Duration,
    ) -> Result<Output, FleetError> {
        use tokio::io::AsyncWriteExt;
        let mut command = self.command(remote);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(FleetError::NoSsh)?;
        let mut stdin = child.stdin.take();
        let work = async {
            if let Some(stdin) = stdin.as_mut() {
                // A remote command that ends without reading its input (no such program on the
                // gun) closes the pipe: its exit status and output say why, not this write.
                match stdin.write_all(input).await {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
                    _ => {}
                }
            }
            drop(stdin);
            child.wait_with_output().await
        };
        match tokio::time::timeout(limit, work).await {
            Ok(out) => out.map_err(|e| FleetError::Remote {
                gun: self.destination.clone(),
                why: e.to_string(),
            }),
            Err(_) => Err(FleetError::Remote {
                gun: self.destination.clone(),
                why: format!("{remote} took longer than {}s", limit.as_secs()),
            }),
        }
    }

    /// Forwards a port of this machine's loopback to `host:port` as the gun reaches it, over
    /// the connection (`ssh -O forward -L`); the forward ends with the connection.
    pub async fn forward(&self, host: &str, port: u16) -> Result<u16, FleetError> {
        let failed = |why: String| FleetError::Remote {
            gun: self.destination.clone(),
            why: format!("cannot forward a port to {host}:{port}: {why}"),
        };
        let local = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| failed(e.to_string()))?
            .port();
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let mut command = ssh(self.config.as_deref(), &self.control);
        command.args(["-O", "forward", "-L"]);
        command.arg(format!("127.0.0.1:{local}:{host}:{port}"));
        command.args(["--", &self.destination]);
        command.stdin(Stdio::null());
        let out = command.output().await.map_err(FleetError::NoSsh)?;
        if !out.status.success() {
            return Err(failed(
                last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_default(),
            ));
        }
        Ok(local)
    }

    /// Ends the connection (its sessions with it).
    pub async fn close(mut self) {
        let mut command = ssh(self.config.as_deref(), &self.control);
        command.args(["-O", "exit", "--", &self.destination]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = tokio::time::timeout(Duration::from_secs(5), command.status()).await;
        let _ = self.master.kill().await;
        self.group.end();
    }
}

/// `ssh` with the user's config (or the one named), batch mode, the guns' hardening, and the
/// control socket, in a process group of its own.
fn ssh(config: Option<&Path>, control: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("ssh");
    if let Some(config) = config {
        command.arg("-F").arg(config);
    }
    for option in [
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "ForwardAgent=no",
        "ForwardX11=no",
        "PermitLocalCommand=no",
        "LogLevel=ERROR",
    ] {
        command.args(["-o", option]);
    }
    command.arg("-o");
    command.arg(format!("ControlPath={}", control.display()));
    // Signals from the terminal are the runner's to handle: it ends the guns' work in order.
    command.process_group(0);
    let base = crate::environment::Base::current();
    let pass = ["SSH_AUTH_SOCK".to_string()];
    crate::environment::apply(&mut command, &crate::environment::build(&base, &[], &pass));
    command
}

/// The last non-empty line of what a command said.
pub(super) fn last_line(said: &str) -> Option<String> {
    said.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_string)
}
