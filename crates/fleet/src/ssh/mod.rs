//! The guns over OpenSSH, the first [`Transport`]: who they are (`lab`: destinations, or a
//! lab's outputs, each one host and nothing else), and one multiplexed connection to each
//! (`link`: a control master opened once, every session over it, the guns' hardening on every
//! `ssh`, this build copied to `~/.cache/showdown` on a gun whose loadgen differs).

mod lab;
mod link;

use std::path::{Path, PathBuf};

pub use lab::{
    check, config_proxies, config_refusal, parse_ssh_guns, read_config, resolve, Lab, Resolved,
    LAB_STORE_ENV, MAX_CONFIG,
};
pub use link::SshLink;

use tokio::sync::mpsc;

use crate::error::FleetError;
use crate::preparing::Preparing;
use crate::progress::Progress;
use crate::transport::{Backend, BoxFuture, Link, Transport};

/// Why the SSH guns cannot be named, found or reached.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("cannot run ssh: {0} (install OpenSSH's client)")]
    NoSsh(#[source] std::io::Error),
    #[error("gun {gun}: cannot connect over SSH: {why}")]
    Connect { gun: String, why: String },
    #[error("cannot make a directory for SSH: {0}")]
    SocketDir(#[source] std::io::Error),
    #[error("[guns]: give ssh = [\"user@host\", …] or from = \"terraform\" | \"twin\", not both")]
    Both,
    #[error("[guns]: name the guns: ssh = [\"user@host\", …], or from = \"terraform\" | \"twin\"")]
    Neither,
    #[error("[guns] {0:?} is not an SSH destination: user@host, or a Host of your SSH config (letters, digits and . _ @ : [ ] -)")]
    Destination(String),
    #[error("[guns] ssh_config {:?} is not a file: name your SSH config, or drop it for ~/.ssh/config", .0.display().to_string())]
    ConfigNotAFile(PathBuf),
    #[error("[guns] from = \"twin\": cannot read {}: {error} (scripts/twin.sh up --guns N first)", .path.display())]
    Twin {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("[guns] from = \"terraform\": cannot run terraform: {0}")]
    Terraform(#[source] std::io::Error),
    #[error("[guns] from = \"terraform\": terraform output in {} failed: {said} (terraform apply the lab first, or set terraform_dir)", .dir.display())]
    TerraformFailed { dir: PathBuf, said: String },
    #[error("[guns] from = \"terraform\": ssh_guns is not a list of strings: {0}")]
    SshGuns(#[source] serde_json::Error),
    #[error("[guns]: the lab has no guns")]
    NoGuns,
    /// A directive of a file's SSH config (`at`: its file and line) that is not one a gun's
    /// config may set.
    #[error("[guns] ssh_config: {at} sets {keyword}, which the guns' SSH does not take from a file (it could void their hardening: known hosts, forwards, commands, libraries, other files); a file's config may set who the guns are and how to sign in: Host, HostName, User, Port, IdentityFile, timeouts and algorithms")]
    Voiding { at: String, keyword: String },
    /// A keyword ssh would read otherwise than it is written (quoted, or not plain letters).
    #[error("[guns] ssh_config: {at} has a keyword that is not plain letters and digits (ssh drops quotes inside a keyword, so it would read another one than is shown): write it plain")]
    Unplain { at: String },
    #[error("[guns] ssh_config: cannot read {}: {error}", .path.display())]
    ConfigRead {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("[guns] ssh_config: {} is over 1 MiB: a config is a few lines, and one this large is not read in part (ssh would read the rest)", .0.display())]
    ConfigTooLarge(PathBuf),
    #[error("[guns] ssh_config: {} is not UTF-8 text", .0.display())]
    ConfigNotText(PathBuf),
    /// A proxy of a file's SSH config the user did not confirm.
    #[error("[guns] ssh_config: {at} sets {keyword}, which runs a command or reaches a host besides the guns: if it is your bastion, run again with --trust-ssh-proxy")]
    Proxy { at: String, keyword: String },
}

impl From<SshError> for FleetError {
    fn from(e: SshError) -> FleetError {
        FleetError::Transport(crate::error::TransportError::new(e))
    }
}

/// The SSH guns as an order names them (the fields of `order::GunHosts::Ssh`, borrowed): their
/// [`Backend`], checked as a [`Lab`] and opened as [`Ssh`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SshBackend<'a> {
    pub(crate) destinations: &'a [String],
    pub(crate) config: Option<&'a str>,
    pub(crate) from: Option<order::Lab>,
    pub(crate) terraform_dir: Option<&'a str>,
}

impl SshBackend<'_> {
    /// The guns as a [`Lab`], the twin's state where `twin_state` says.
    fn lab<'b>(&'b self, twin_state: Option<&'b Path>) -> Lab<'b> {
        Lab {
            destinations: self.destinations,
            config: self.config.map(Path::new),
            from: self.from,
            terraform_dir: self.terraform_dir.map(Path::new),
            twin_state,
        }
    }
}

impl Backend for SshBackend<'_> {
    fn check(&self) -> Result<(), FleetError> {
        // Nothing of the twin is read before the guns are opened.
        check(&self.lab(None)).map_err(FleetError::from)
    }

    fn open(
        &self,
        preparing: Preparing<'_>,
        _told: mpsc::UnboundedSender<Progress>,
    ) -> Result<Box<dyn Transport>, FleetError> {
        let lab = self.lab(preparing.settings.twin_state.as_deref());
        Ok(Box::new(Ssh::new(&lab, preparing.dir)?))
    }
}

/// The SSH guns, resolved, and the private directory of their control sockets.
#[derive(Debug)]
pub struct Ssh {
    resolved: Resolved,
    /// The control sockets' directory (private, short: a socket path has 108 bytes).
    sockets: tempfile::TempDir,
}

impl Ssh {
    /// The guns `lab` names, its outputs read from `dir`.
    pub fn new(lab: &Lab<'_>, dir: &Path) -> Result<Ssh, SshError> {
        let resolved = resolve(lab, dir)?;
        let sockets = tempfile::Builder::new()
            .prefix("sd-guns-")
            .tempdir_in("/tmp")
            .map_err(SshError::SocketDir)?;
        Ok(Ssh { resolved, sockets })
    }
}

impl Transport for Ssh {
    fn over(&self) -> &'static str {
        "over SSH"
    }

    fn names(&self) -> Vec<String> {
        self.resolved.destinations.clone()
    }

    fn hosts(&self) -> order::GunHosts {
        order::GunHosts::Ssh {
            destinations: self.resolved.destinations.clone(),
            config: self
                .resolved
                .config
                .as_ref()
                .map(|c| c.display().to_string()),
            from: None,
            terraform_dir: None,
        }
    }

    fn store_env_file(&self) -> Option<String> {
        self.resolved.store_env_file.clone()
    }

    fn open(&self, n: usize) -> BoxFuture<'_, Result<Box<dyn Link>, FleetError>> {
        Box::pin(async move {
            let destination = self
                .resolved
                .destinations
                .get(n)
                .ok_or(FleetError::NoGuns)?;
            let link = SshLink::open(
                destination,
                self.resolved.config.as_deref(),
                self.sockets.path(),
                n,
            )
            .await?;
            Ok::<_, FleetError>(Box::new(link) as Box<dyn Link>)
        })
    }
}
