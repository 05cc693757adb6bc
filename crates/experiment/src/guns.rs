//! `[guns]`: the gun hosts an experiment fires each cell from, together, as the file writes
//! them; turned once into the `order::Guns` the fleet makes ready ([`GunsSpec::guns`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use probe::cpus::CpuList;
use serde::{Deserialize, Serialize};

/// The gun hosts, by SSH destination or from the lab that made them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GunsSpec {
    /// SSH destinations: `user@host`, or a `Host` of the SSH config.
    #[serde(default)]
    pub ssh: Vec<String>,
    /// Or the guns of a lab: its Terraform outputs, or the twin's namespaces.
    pub from: Option<GunSource>,
    /// With `from = "terraform"`: the lab's configuration directory (default `terraform`,
    /// beside the experiment file's directory's parent or the current one).
    pub terraform_dir: Option<PathBuf>,
    /// `ssh -F`: an SSH config instead of the user's.
    pub ssh_config: Option<PathBuf>,
    /// The CPUs each gun's generator is held to (`taskset -c` on the gun).
    pub cpus: Option<CpuList>,
    /// Threads of each gun's generator (instead of the load's `threads`).
    pub threads: Option<u32>,
    /// `loadgen` on the guns; this machine's build is copied to them when theirs differs.
    pub loadgen: Option<String>,
    /// A file on each gun that sets `SHOWDOWN_DB` (the lab's: its guns reach the store by an
    /// address this machine does not); by default the guns get this runner's store URL.
    pub store_env_file: Option<String>,
    /// How far a gun's clock may be from this machine's: its shard's start is corrected by
    /// the offset, but an offset this large means a clock that is not kept.
    #[serde(
        default = "clock_tolerance",
        deserialize_with = "crate::file::duration"
    )]
    pub clock_tolerance: Duration,
    /// Or the guns as pods of a Kubernetes Indexed Job this runner renders (docs/guns.md):
    /// the order's own fields, `wait = "5m"` a duration; a relative `manifest` is beside the
    /// file.
    pub kubernetes: Option<order::Kubernetes>,
}

/// Why `[guns]` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GunsError {
    #[error("[guns]: kubernetes = {{ … }} names the guns alone: drop ssh, from, ssh_config and loadgen (the pods run their image's loadgen)")]
    KubernetesAlone,
    #[error("[guns] kubernetes: manifest {0:?} is outside the experiment file's directory: a file writes only beside itself; name it relative to the file, without ..")]
    ManifestOutside(String),
    #[error(transparent)]
    Fleet(#[from] fleet::FleetError),
}

fn clock_tolerance() -> Duration {
    fleet::CLOCK_TOLERANCE
}

/// Where a lab's guns are listed (the order's word for it).
pub use order::Lab as GunSource;

impl GunsSpec {
    /// The guns as an order names them: what the fleet makes ready, and a search's order
    /// carries.
    pub fn guns(&self) -> order::Guns {
        order::Guns {
            hosts: match &self.kubernetes {
                Some(k) => order::GunHosts::Kubernetes(k.clone()),
                None => order::GunHosts::Ssh {
                    destinations: self.ssh.clone(),
                    config: self.ssh_config.as_ref().map(|c| c.display().to_string()),
                    from: self.from,
                    terraform_dir: self.terraform_dir.as_ref().map(|d| d.display().to_string()),
                },
            },
            cpus: self.cpus.as_ref().map(ToString::to_string),
            threads: self.threads,
            loadgen: self.loadgen.clone(),
            store_env_file: self.store_env_file.clone(),
            clock_tolerance_ns: Some(order::nanos(self.clock_tolerance)),
        }
    }

    /// What serde cannot check.
    pub fn check(&self) -> Result<(), GunsError> {
        if self.kubernetes.is_some()
            && (!self.ssh.is_empty()
                || self.from.is_some()
                || self.ssh_config.is_some()
                || self.loadgen.is_some())
        {
            return Err(GunsError::KubernetesAlone);
        }
        if let Some(manifest) = self.kubernetes.as_ref().and_then(|k| k.manifest.as_deref()) {
            use std::path::Component;
            if Path::new(manifest).components().any(|c| {
                matches!(
                    c,
                    Component::RootDir | Component::Prefix(_) | Component::ParentDir
                )
            }) {
                return Err(GunsError::ManifestOutside(redact::printable(manifest)));
            }
        }
        fleet::check(&self.guns()).map_err(GunsError::from)
    }
}
