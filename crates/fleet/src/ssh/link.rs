//! One gun host over OpenSSH: one multiplexed connection (a control master) opened once, every
//! command after it a session over that connection. No agent of ours listens on the gun; the
//! user's SSH config, keys and agent decide who may log in, as for any `ssh` they type.
//!
//! `ssh` is the user's own tool, so it gets the base environment and their agent
//! (`SSH_AUTH_SOCK`), never the store's URL or the headers ([`custody::environment::NEVER`]).
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

use super::SshError;
use crate::error::{FleetError, GunFault};
use crate::said::last_line;
use crate::transport::{BoxFuture, Link, Session};

/// How long a gun has to accept the connection.
const CONNECT: Duration = Duration::from_secs(15);

/// Where a copied `loadgen` goes on a gun.
const CACHE: &str = "$HOME/.cache/showdown";

/// The multiplexed connection to one gun.
#[derive(Debug)]
pub struct SshLink {
    /// As the user gave it (`user@host`, or a `Host` of the SSH config).
    pub destination: String,
    config: Option<PathBuf>,
    control: PathBuf,
    master: tokio::process::Child,
    /// The master's process group, its socket and its log, in custody.
    group: custody::Group,
}

impl SshLink {
    /// Opens the connection; its control socket goes in `dir` (the runner's private one).
    pub async fn open(
        destination: &str,
        config: Option<&Path>,
        dir: &Path,
        n: usize,
    ) -> Result<SshLink, SshError> {
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
        let master = command.spawn().map_err(SshError::NoSsh)?;
        if let Some(pid) = master.id() {
            group.started(pid);
        }
        let mut link = SshLink {
            destination: destination.to_string(),
            config: config.map(Path::to_path_buf),
            control,
            master,
            group,
        };
        let deadline = tokio::time::Instant::now() + CONNECT;
        loop {
            if let Some(status) = link.master.try_wait().map_err(SshError::NoSsh)? {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(SshError::Connect {
                    gun: destination.to_string(),
                    why: last_line(&said).unwrap_or_else(|| format!("ssh exited ({status})")),
                });
            }
            if link.up().await {
                return Ok(link);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(SshError::Connect {
                    gun: destination.to_string(),
                    why: format!("no connection within {}s", CONNECT.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the connection is up.
    async fn up(&self) -> bool {
        matches!(self.control_command("check").status().await, Ok(s) if s.success())
    }

    /// `ssh -O OPERATION` to this connection's master, its output dropped.
    fn control_command(&self, operation: &str) -> tokio::process::Command {
        let mut command = ssh(self.config.as_deref(), &self.control);
        command.args(["-O", operation, "--", &self.destination]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// A command on the gun, over the connection (a shell command line of the gun's: only
    /// fixed words and paths go in it, never a secret).
    fn command(&self, remote: &str) -> tokio::process::Command {
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
    async fn run(&self, remote: &str, input: &[u8], limit: Duration) -> Result<Output, FleetError> {
        use tokio::io::AsyncWriteExt;
        let mut command = self.command(remote);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(SshError::NoSsh)?;
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
            Ok(out) => out.map_err(|e| FleetError::remote(&self.destination, GunFault::Io(e))),
            Err(_) => Err(FleetError::remote(
                &self.destination,
                GunFault::Timeout {
                    what: remote.to_string(),
                    limit,
                },
            )),
        }
    }

    /// Forwards a port of this machine's loopback to `host:port` as the gun reaches it, over
    /// the connection (`ssh -O forward -L`); the forward ends with the connection.
    async fn forward_port(&self, host: &str, port: u16) -> Result<u16, FleetError> {
        let failed = |why: String| {
            FleetError::remote(
                &self.destination,
                GunFault::Forward {
                    host: host.to_string(),
                    port,
                    why,
                },
            )
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
        let out = command.output().await.map_err(SshError::NoSsh)?;
        if !out.status.success() {
            return Err(failed(
                last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_default(),
            ));
        }
        Ok(local)
    }

    /// This machine's build copied to the gun's cache (see [`Link::install`]): where it went.
    async fn copy(
        &self,
        local: &Path,
        build: &str,
        arch: Option<&str>,
    ) -> Result<String, FleetError> {
        let arch = match arch {
            Some(arch) => arch.to_string(),
            None => {
                let out = self.run("uname -m", b"", Duration::from_secs(10)).await?;
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            }
        };
        if arch != std::env::consts::ARCH {
            return Err(FleetError::remote(
                &self.destination,
                GunFault::Arch {
                    theirs: arch,
                    ours: std::env::consts::ARCH,
                },
            ));
        }
        let bytes = crate::ready::build_bytes(local, build)?;
        let cached = cached(build);
        // A name of its own for each copy (two runners copying at once do not mix), checked
        // against the hash of what was sent before it takes the build's name: a copy cut
        // short (the connection lost, the runner stopped) is removed, never installed.
        let copy = format!(
            "mkdir -p {dir} && t=$(mktemp {dir}/.loadgen-XXXXXX) && {{ cat > \"$t\" && echo {sent}'  '\"$t\" | sha256sum -c --status && chmod 755 \"$t\" && mv -f \"$t\" {to}; }} || {{ rm -f \"$t\"; exit 1; }}",
            dir = word(CACHE),
            to = word(&cached),
            sent = build
        );
        let out = self.run(&copy, &bytes, Duration::from_secs(300)).await?;
        if !out.status.success() {
            return Err(FleetError::remote(
                &self.destination,
                GunFault::Copy {
                    to: cached,
                    said: last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_default(),
                },
            ));
        }
        Ok(cached)
    }

    /// Ends the connection (its sessions with it).
    async fn end(mut self) {
        let mut command = self.control_command("exit");
        let _ = tokio::time::timeout(Duration::from_secs(5), command.status()).await;
        let _ = self.master.kill().await;
        self.group.end();
    }
}

impl Link for SshLink {
    fn name(&self) -> &str {
        &self.destination
    }

    fn kind(&self) -> &'static str {
        "SSH"
    }

    fn program(&self) -> &'static str {
        "ssh"
    }

    fn session(&self, loadgen: &str) -> Result<Session, FleetError> {
        let mut command = self.command(&format!("{} gun", word(loadgen)));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn().map_err(SshError::NoSsh)?;
        // ssh leads a process group of its own: ending it ends the session.
        Session::of_group_leader(child).ok_or_else(|| {
            SshError::NoSsh(std::io::Error::other("ssh's pipes were not made")).into()
        })
    }

    /// ssh's own failure (the connection, not the command) is its exit 255.
    fn lost(&self, code: Option<i32>) -> bool {
        code == Some(255)
    }

    fn candidates(&self, asked: Option<&str>, build: &str) -> Vec<String> {
        vec![asked.unwrap_or("loadgen").to_string(), cached(build)]
    }

    fn install<'a>(
        &'a self,
        local: &'a Path,
        build: &'a str,
        arch: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, FleetError>> {
        Box::pin(self.copy(local, build, arch))
    }

    fn forward<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Option<u16>, FleetError>> {
        Box::pin(async move { self.forward_port(host, port).await.map(Some) })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin((*self).end())
    }
}

/// Where this build goes in a gun's cache.
fn cached(build: &str) -> String {
    format!("{CACHE}/loadgen-{}", &build[..16.min(build.len())])
}

/// A shell word for the gun's shell: the path quoted, `$HOME` left to expand.
fn word(path: &str) -> String {
    let quoted = format!("'{}'", path.replace('\'', r"'\''"));
    match path.strip_prefix("$HOME/") {
        Some(rest) => format!("\"$HOME\"/'{}'", rest.replace('\'', r"'\''")),
        None => quoted,
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
    let base = custody::environment::Base::current();
    let pass = ["SSH_AUTH_SOCK".to_string()];
    custody::environment::apply(
        command.as_std_mut(),
        &custody::environment::build(&base, &[], &pass),
    );
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_word_on_the_guns_shell() {
        assert_eq!(word("/usr/bin/loadgen"), "'/usr/bin/loadgen'");
        assert_eq!(word("$HOME/.cache/x"), "\"$HOME\"/'.cache/x'");
        assert_eq!(word("a'b"), "'a'\\''b'");
    }
}
