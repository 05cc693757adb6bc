//! The guns as pods of one Kubernetes Indexed Job, the second [`Transport`]: the runner renders
//! the Job and its Secret (`render`; applied by the user, or by the runner with `kubectl` when
//! told), listens on TLS with a certificate made for this sitting (the Secret carries its
//! fingerprint and a token), and each pod's `loadgen gun --dial` connects out to it (`wire`,
//! `rendezvous`): the runner needs no access to the pods, the pods none to the cluster's API.
//! Every session of `loadgen gun` the fleet opens on a gun is a channel of that one connection
//! (`link`); the pod's side is `agent`.

pub mod agent;
mod link;
pub mod render;
mod rendezvous;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use link::{KubeLink, LOST};
pub use render::JobSpec;
pub use rendezvous::Rendezvous;

use crate::transport::{BoxFuture, Link, Transport};
use crate::FleetError;

/// How long the runner waits for every pod to dial in, unless the guns say.
pub const WAIT: Duration = Duration::from_secs(300);

/// Why the Kubernetes guns cannot be rendered, listened for or gathered.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("[guns] kubernetes: count must be 1 or more")]
    Count,
    #[error("[guns] kubernetes: job {0:?} is not a Kubernetes name: lower-case letters, digits and -, a letter first, at most 40")]
    Name(String),
    #[error("[guns] kubernetes: namespace {0:?} is not a Kubernetes name: lower-case letters, digits and -, a letter first")]
    Namespace(String),
    #[error("[guns] kubernetes: cpus must be a whole number of CPUs, 1 or more (Guaranteed QoS)")]
    Cpus,
    #[error("[guns] kubernetes: memory {0:?} is not a quantity Kubernetes takes: e.g. \"1Gi\" or \"512Mi\"")]
    Memory(String),
    #[error(
        "[guns] kubernetes: image is empty: name the image built from the repository's Dockerfile"
    )]
    Image,
    #[error("[guns] kubernetes: {what} {address:?} is not host:port")]
    Address { what: &'static str, address: String },
    #[error("[guns] kubernetes: listen = {address:?}: cannot listen there: {error} (choose a free port, or stop what holds it)")]
    Listen {
        address: String,
        #[source]
        error: std::io::Error,
    },
    #[error("[guns] kubernetes: cannot make the sitting's certificate: {0}")]
    Tls(String),
    #[error("[guns] kubernetes: cannot write the Job to {}: {error}", .path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("[guns] kubernetes: apply = true, but kubectl cannot be run: {0} (install kubectl, or drop apply and apply the manifest yourself)")]
    NoKubectl(#[source] std::io::Error),
    #[error("kubectl {what} failed: {said}")]
    Kubectl { what: &'static str, said: String },
    /// The gathering's failure, as told to every gun that awaited it.
    #[error("{0}")]
    Gather(String),
    #[error("{} of {count} guns did not dial in within {}s: pod {} (kubectl -n {namespace} get pods -l showdown.dev/guns={job}; kubectl -n {namespace} logs …)", .missing.len(), .waited.as_secs(), .missing.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Missing {
        missing: Vec<u32>,
        count: u32,
        waited: Duration,
        namespace: String,
        job: String,
    },
}

impl From<KubeError> for FleetError {
    fn from(e: KubeError) -> FleetError {
        FleetError::Kubernetes(Box::new(e))
    }
}

/// The guns of a Kubernetes Job, resolved: what is rendered, and where the pods dial.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub job: JobSpec,
    pub listen: String,
    pub manifest: PathBuf,
    pub apply: bool,
    pub wait: Duration,
}

/// `spec`'s defaults filled and every field checked, before anything listens or is written;
/// a relative manifest is read from `dir`.
pub fn resolve(spec: &order::Kubernetes, dir: &Path) -> Result<Resolved, KubeError> {
    if spec.count == 0 {
        return Err(KubeError::Count);
    }
    let name = spec.job.clone().unwrap_or_else(|| "showdown-guns".into());
    if !render::valid_name(&name) {
        return Err(KubeError::Name(name));
    }
    let namespace = spec.namespace.clone().unwrap_or_else(|| "default".into());
    if !render::valid_name(&namespace) {
        return Err(KubeError::Namespace(namespace));
    }
    let cpus = spec.cpus.unwrap_or(2);
    if cpus == 0 {
        return Err(KubeError::Cpus);
    }
    let memory = spec.memory.clone().unwrap_or_else(|| "1Gi".into());
    if !render::valid_memory(&memory) {
        return Err(KubeError::Memory(memory));
    }
    if spec.image.trim().is_empty() {
        return Err(KubeError::Image);
    }
    let address = |what, a: &str| match a.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(a.to_string())
        }
        _ => Err(KubeError::Address {
            what,
            address: a.to_string(),
        }),
    };
    let listen = address("listen", &spec.listen)?;
    let advertise = address(
        "advertise",
        spec.advertise.as_deref().unwrap_or(&spec.listen),
    )?;
    let manifest = spec
        .manifest
        .as_ref()
        .map_or_else(|| PathBuf::from(format!("{name}.yaml")), PathBuf::from);
    Ok(Resolved {
        job: JobSpec {
            name,
            namespace,
            count: spec.count,
            image: spec.image.clone(),
            advertise,
            cpus,
            memory,
        },
        listen,
        manifest: if manifest.is_absolute() {
            manifest
        } else {
            dir.join(manifest)
        },
        apply: spec.apply,
        wait: spec.wait_ns.map_or(WAIT, Duration::from_nanos),
    })
}

/// What [`resolve`] can check before anything is opened.
pub fn check(spec: &order::Kubernetes) -> Result<(), KubeError> {
    resolve(spec, Path::new(".")).map(|_| ())
}

/// The guns of one sitting: the Job written, the runner listening for its pods.
#[derive(Debug)]
pub struct Kubernetes {
    resolved: Resolved,
    spec: order::Kubernetes,
    rendezvous: Arc<Rendezvous>,
}

impl Kubernetes {
    /// Listens for the pods (with a certificate and a token made now), writes the Job to its
    /// manifest and returns; the pods are awaited by the first [`Transport::open`], which
    /// applies and resumes the Job first when told to.
    pub fn new(spec: &order::Kubernetes, dir: &Path) -> Result<Kubernetes, KubeError> {
        let resolved = resolve(spec, dir)?;
        let host = resolved
            .job
            .advertise
            .rsplit_once(':')
            .map_or("showdown-runner", |(h, _)| {
                h.trim_start_matches('[').trim_end_matches(']')
            })
            .to_string();
        let tls =
            probe::tls::ServerTls::ephemeral(&[host]).map_err(|e| KubeError::Tls(e.to_string()))?;
        let rendezvous = Rendezvous::listen(&resolved, tls)?;
        let job = render::yaml(&[resolved.job.job()]);
        write_file(&resolved.manifest, job.as_bytes(), 0o644).map_err(|error| {
            KubeError::Manifest {
                path: resolved.manifest.clone(),
                error,
            }
        })?;
        Ok(Kubernetes {
            resolved,
            spec: spec.clone(),
            rendezvous: Arc::new(rendezvous),
        })
    }

    /// The Secret this sitting's pods dial with, as YAML: for `kubectl apply -f -` only (it is
    /// written to no file by the runner).
    pub fn secret_yaml(&self) -> String {
        render::yaml(&[self
            .resolved
            .job
            .secret_object(self.rendezvous.token(), self.rendezvous.fingerprint())])
    }

    /// Where the Job was written.
    pub fn manifest(&self) -> &Path {
        &self.resolved.manifest
    }

    /// What the user runs to start the pods, when the runner does not.
    pub fn commands(&self) -> String {
        let j = &self.resolved.job;
        format!(
            "kubectl apply -f {} && <the Secret, printed by the runner, | kubectl apply -f -> && kubectl -n {} patch job {} --type=merge -p '{{\"spec\":{{\"suspend\":false}}}}'",
            self.resolved.manifest.display(),
            j.namespace,
            j.name
        )
    }

    /// The pods started (applied and resumed, when the runner is told to), then every pod
    /// dialled in, or the missing named once the wait is over.
    async fn gather(&self) -> Result<(), FleetError> {
        if self.resolved.apply {
            self.apply().await?;
        } else {
            eprintln!(
                "guns: the Job is in {}; {} pods are awaited on {} for {}s. Start them: kubectl apply -f {}, the Secret (SHOWDOWN_GUNS_SECRET_FILE names a file to write it to, mode 0600), then kubectl -n {} patch job {} --type=merge -p '{{\"spec\":{{\"suspend\":false}}}}'",
                self.resolved.manifest.display(),
                self.resolved.job.count,
                self.resolved.listen,
                self.resolved.wait.as_secs(),
                self.resolved.manifest.display(),
                self.resolved.job.namespace,
                self.resolved.job.name,
            );
            if let Some(path) = std::env::var_os("SHOWDOWN_GUNS_SECRET_FILE") {
                let path = PathBuf::from(path);
                write_file(&path, self.secret_yaml().as_bytes(), 0o600)
                    .map_err(|error| KubeError::Manifest { path, error })?;
            }
        }
        self.rendezvous.gather().await.map_err(FleetError::from)
    }

    /// `kubectl apply` of the Secret and the Job (a Job of the same name, Showdown's, deleted
    /// first: its pods' template cannot change), then the Job resumed.
    async fn apply(&self) -> Result<(), KubeError> {
        let j = &self.resolved.job;
        kubectl(
            "delete",
            &[
                "-n",
                &j.namespace,
                "delete",
                "job",
                &j.name,
                "--ignore-not-found",
                "--wait=true",
            ],
            None,
        )
        .await?;
        let objects = format!("{}{}", self.secret_yaml(), render::yaml(&[j.job()]));
        kubectl("apply", &["apply", "-f", "-"], Some(objects)).await?;
        kubectl(
            "patch",
            &[
                "-n",
                &j.namespace,
                "patch",
                "job",
                &j.name,
                "--type=merge",
                "-p",
                "{\"spec\":{\"suspend\":false}}",
            ],
            None,
        )
        .await
    }
}

/// `kubectl` with `args`, `input` on its standard input.
async fn kubectl(
    what: &'static str,
    args: &[&str],
    input: Option<String>,
) -> Result<(), KubeError> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("kubectl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(KubeError::NoKubectl)?;
    if let Some(mut stdin) = child.stdin.take() {
        if let Some(input) = input {
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    }
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| KubeError::Kubectl {
            what,
            said: "no answer within 120 s".into(),
        })?
        .map_err(KubeError::NoKubectl)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(KubeError::Kubectl {
            what,
            said: crate::last_line(&String::from_utf8_lossy(&out.stderr))
                .unwrap_or_else(|| out.status.to_string()),
        })
    }
}

/// Writes `bytes` to `path` with `mode`, through a file of its own renamed into place.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

impl Transport for Kubernetes {
    fn over(&self) -> &'static str {
        "as pods of a Kubernetes Job"
    }

    fn names(&self) -> Vec<String> {
        (0..self.resolved.job.count)
            .map(|i| format!("{}/{i}", self.resolved.job.name))
            .collect()
    }

    fn hosts(&self) -> order::GunHosts {
        order::GunHosts::Kubernetes(self.spec.clone())
    }

    fn store_env_file(&self) -> Option<String> {
        None
    }

    fn open(&self, n: usize) -> BoxFuture<'_, Result<Box<dyn Link>, FleetError>> {
        Box::pin(async move {
            self.rendezvous.started(|| self.gather()).await?;
            let link = self.rendezvous.link(n)?;
            Ok::<_, FleetError>(Box::new(link) as Box<dyn Link>)
        })
    }
}
