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
mod said;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use link::{KubeLink, LOST};
pub use render::JobSpec;
pub use rendezvous::Rendezvous;
pub use said::{job_in_words, plan_lines};

use crate::error::FleetError;
use crate::preparing::Preparing;
use crate::progress::Progress;
use crate::transport::{Backend, BoxFuture, Link, Transport};

/// The most pods a Job of guns holds: each is a slot, a name and a connection of the runner's,
/// and a thousand guns is more than any generator needs.
pub const MAX_COUNT: u32 = 1000;

/// How long the runner waits for every pod to dial in, unless the guns say.
pub const WAIT: Duration = Duration::from_secs(300);

/// Why the Kubernetes guns cannot be rendered, listened for or gathered.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("[guns] kubernetes: count must be 1 to {MAX_COUNT}")]
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
    /// A wait under a second: a bare number is read as nanoseconds (the order's own unit).
    #[error("[guns] kubernetes: wait is under a second (a bare number is nanoseconds): write a duration such as wait = \"5m\"")]
    Wait,
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
    #[error("[guns] kubernetes: kubectl has no current context: choose the cluster with kubectl config use-context NAME")]
    NoContext,
    /// A Job or Secret of the guns' name that Showdown did not make.
    #[error("[guns] kubernetes: a {kind} {namespace}/{name} exists in kubectl's context {context} that Showdown did not make (no app.kubernetes.io/managed-by: showdown): it is not replaced; name the guns' Job otherwise (job = \"…\"), or remove it yourself")]
    NotOurs {
        kind: &'static str,
        name: String,
        namespace: String,
        context: String,
    },
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
        FleetError::Transport(crate::error::TransportError::new(e))
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
    if spec.count == 0 || spec.count > MAX_COUNT {
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
    let listen = host_port("listen", &spec.listen)?;
    let advertise = host_port(
        "advertise",
        spec.advertise.as_deref().unwrap_or(&spec.listen),
    )?;
    if spec.wait_ns.is_some_and(|ns| ns < 1_000_000_000) {
        return Err(KubeError::Wait);
    }
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

/// `a` when it is host:port with a port above 0; `what` names it in the error.
fn host_port(what: &'static str, a: &str) -> Result<String, KubeError> {
    match a.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(a.to_string())
        }
        _ => Err(KubeError::Address {
            what,
            address: a.to_string(),
        }),
    }
}

/// What [`resolve`] can check before anything is opened.
pub fn check(spec: &order::Kubernetes) -> Result<(), KubeError> {
    resolve(spec, Path::new(".")).map(|_| ())
}

/// The Kubernetes guns as an order names them (`order::GunHosts::Kubernetes`, borrowed): their
/// [`Backend`], checked by [`check`] and opened as [`Kubernetes`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct KubeBackend<'a>(pub(crate) &'a order::Kubernetes);

impl Backend for KubeBackend<'_> {
    fn check(&self) -> Result<(), FleetError> {
        check(self.0).map_err(FleetError::from)
    }

    fn open(
        &self,
        preparing: Preparing<'_>,
        told: tokio::sync::mpsc::UnboundedSender<Progress>,
    ) -> Result<Box<dyn Transport>, FleetError> {
        let secret_file = preparing.settings.secret_file.clone();
        let guns = Kubernetes::new(self.0, preparing.dir, secret_file, told)?;
        Ok(Box::new(guns))
    }
}

/// The guns of one sitting: the Job written, the runner listening for its pods.
#[derive(Debug)]
pub struct Kubernetes {
    resolved: Resolved,
    spec: order::Kubernetes,
    rendezvous: Arc<Rendezvous>,
    /// The kubectl that applies the Job (`kubectl` on PATH).
    kubectl: PathBuf,
    /// Where the Secret is written when the runner does not apply it
    /// ([`crate::Settings::secret_file`]).
    secret_file: Option<PathBuf>,
    /// Where what the guns' gathering says goes (the preparation's [`Progress`]).
    told: tokio::sync::mpsc::UnboundedSender<Progress>,
}

impl Kubernetes {
    /// Listens for the pods (with a certificate and a token made now), writes the Job to its
    /// manifest and returns; the pods are awaited by the first [`Transport::open`], which
    /// applies and resumes the Job first when told to, or else writes the Secret to
    /// `secret_file` when given. What it does meanwhile, and each pod it refuses, is told to
    /// `told`.
    pub fn new(
        spec: &order::Kubernetes,
        dir: &Path,
        secret_file: Option<PathBuf>,
        told: tokio::sync::mpsc::UnboundedSender<Progress>,
    ) -> Result<Kubernetes, KubeError> {
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
        let rendezvous = Rendezvous::listen(&resolved, tls, told.clone())?;
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
            kubectl: PathBuf::from("kubectl"),
            secret_file,
            told,
        })
    }

    /// The Secret this sitting's pods dial with, as YAML: for `kubectl apply -f -`, or the
    /// 0600 file the settings name (`SHOWDOWN_GUNS_SECRET_FILE`); `owner` the applied Job's
    /// uid.
    pub fn secret_yaml(&self, owner: Option<&str>) -> String {
        render::yaml(&[self.resolved.job.secret_object(
            self.rendezvous.token(),
            self.rendezvous.fingerprint(),
            owner,
        )])
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
            let _ = self.told.send(Progress::PodsAwaited {
                manifest: self.resolved.manifest.clone(),
                count: self.resolved.job.count,
                listen: self.resolved.listen.clone(),
                wait: self.resolved.wait,
                namespace: self.resolved.job.namespace.clone(),
                job: self.resolved.job.name.clone(),
            });
            if let Some(path) = &self.secret_file {
                write_file(path, self.secret_yaml(None).as_bytes(), 0o600).map_err(|error| {
                    KubeError::Manifest {
                        path: path.clone(),
                        error,
                    }
                })?;
            }
        }
        self.rendezvous.gather().await.map_err(FleetError::from)
    }

    /// `kubectl apply` of the Job and its Secret, then the Job resumed, all in the context
    /// kubectl has now (read once, said, and named on every call after). A Job or Secret of the
    /// same name that Showdown did not make (no `app.kubernetes.io/managed-by: showdown`) is
    /// refused, not replaced; Showdown's own Job of that name is deleted first (its pods'
    /// template cannot change). The Secret is applied as the Job's dependent, so Kubernetes
    /// removes it with the Job.
    async fn apply(&self) -> Result<(), KubeError> {
        let j = &self.resolved.job;
        let context = context_of(&self.kubectl).await?;
        let _ = self.told.send(Progress::ApplyingJob {
            namespace: j.namespace.clone(),
            job: j.name.clone(),
            count: j.count,
            image: j.image.clone(),
            context: context.clone(),
        });
        let at = ["--context", context.as_str(), "-n", j.namespace.as_str()];
        self.refuse_not_ours(&at, &context).await?;
        let uid = self.replace_job(&at).await?;
        kubectl(
            &self.kubectl,
            "apply",
            &[&at[..], &["apply", "-f", "-"]].concat(),
            Some(self.secret_yaml(Some(uid.trim()))),
        )
        .await?;
        kubectl(
            &self.kubectl,
            "patch",
            &[
                &at[..],
                &[
                    "patch",
                    "job",
                    &j.name,
                    "--type=merge",
                    "-p",
                    "{\"spec\":{\"suspend\":false}}",
                ],
            ]
            .concat(),
            None,
        )
        .await
        .map(|_| ())
    }

    /// A Job or Secret of the guns' name, found in `context`, that Showdown did not make:
    /// refused before anything is deleted or applied.
    async fn refuse_not_ours(&self, at: &[&str; 4], context: &str) -> Result<(), KubeError> {
        let j = &self.resolved.job;
        for (kind, name) in [("job", j.name.clone()), ("secret", j.secret())] {
            let found = kubectl(
                &self.kubectl,
                "get",
                &[
                    &at[..],
                    &[
                        "get",
                        kind,
                        &name,
                        "--ignore-not-found",
                        "-o",
                        "jsonpath={.metadata.name}/{.metadata.labels.app\\.kubernetes\\.io/managed-by}",
                    ],
                ]
                .concat(),
                None,
            )
            .await?;
            let found = found.trim();
            if !found.is_empty() && found != format!("{name}/{}", render::MANAGED_BY) {
                return Err(KubeError::NotOurs {
                    kind,
                    name,
                    namespace: j.namespace.clone(),
                    context: context.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Showdown's own Job of the name deleted, then the Job applied, suspended: its uid.
    async fn replace_job(&self, at: &[&str; 4]) -> Result<String, KubeError> {
        let j = &self.resolved.job;
        kubectl(
            &self.kubectl,
            "delete",
            &[
                &at[..],
                &[
                    "delete",
                    "job",
                    &j.name,
                    "--ignore-not-found",
                    "--wait=true",
                ],
            ]
            .concat(),
            None,
        )
        .await?;
        // The Job first, suspended: its uid makes the Secret its dependent.
        kubectl(
            &self.kubectl,
            "apply",
            &[
                &at[..],
                &["apply", "-f", "-", "-o", "jsonpath={.metadata.uid}"],
            ]
            .concat(),
            Some(render::yaml(&[j.job()])),
        )
        .await
    }
}

/// The cluster kubectl would apply to now (its current context), as `plan` shows it and
/// `apply` names it on every call.
pub async fn current_context() -> Result<String, KubeError> {
    context_of(Path::new("kubectl")).await
}

async fn context_of(program: &Path) -> Result<String, KubeError> {
    let context = kubectl(program, "context", &["config", "current-context"], None).await?;
    match context.trim() {
        "" => Err(KubeError::NoContext),
        context => Ok(context.to_string()),
    }
}

/// `kubectl` with `args`, `input` on its standard input: its standard output (at most 64 KiB
/// of it). It runs with the base environment and `KUBECONFIG` only: never the runner's store
/// URL or headers.
async fn kubectl(
    program: &Path,
    what: &'static str,
    args: &[&str],
    input: Option<String>,
) -> Result<String, KubeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    custody::environment::apply(
        command.as_std_mut(),
        &custody::environment::build(
            &custody::environment::Base::current(),
            &[],
            &["KUBECONFIG".to_string()],
        ),
    );
    let mut child = command.spawn().map_err(KubeError::NoKubectl)?;
    if let Some(mut stdin) = child.stdin.take() {
        if let Some(input) = input {
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    }
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let read = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        if let Some(s) = stdout.as_mut() {
            let _ = s.take(64 << 10).read_to_end(&mut out).await;
        }
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(64 << 10).read_to_end(&mut err).await;
        }
        let status = child.wait().await;
        (out, err, status)
    };
    let (out, err, status) = tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .map_err(|_| KubeError::Kubectl {
            what,
            said: "no answer within 120 s".into(),
        })?;
    let status = status.map_err(KubeError::NoKubectl)?;
    if status.success() {
        Ok(String::from_utf8_lossy(&out).into_owned())
    } else {
        Err(KubeError::Kubectl {
            what,
            said: redact::printable(
                &crate::said::last_line(&String::from_utf8_lossy(&err))
                    .unwrap_or_else(|| status.to_string()),
            ),
        })
    }
}

/// Writes `bytes` to `path` with `mode`, whole and never through a link (`probe::files`).
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    probe::files::replace(path, bytes, mode)
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

#[cfg(test)]
mod apply_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A stand-in for kubectl (no API server is reachable here): it keeps each command line,
    /// answers the current context, says whether a Job of the guns' name exists and whose it is
    /// (the file `job` in `dir`), keeps what it is asked to apply, and gives the Job a uid.
    fn stand_in(dir: &Path) -> PathBuf {
        let script = dir.join("kubectl");
        let d = dir.display();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {d}/calls\ncase \"$*\" in\n  'config current-context') echo kind-lab ;;\n  *' get job '*) cat {d}/job 2>/dev/null ;;\n  *' get secret '*) ;;\n  *'apply -f - -o jsonpath'*) cat > {d}/job.yaml; echo 0f6d3c1e-7a1b-4f0e-9d1c-2b3a4c5d6e7f ;;\n  *'apply -f -'*) cat > {d}/secret.yaml ;;\nesac\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    fn guns(dir: &Path) -> Kubernetes {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let spec = order::Kubernetes {
            count: 2,
            image: "registry.example/showdown/loadgen:0.2.0".into(),
            listen: format!("127.0.0.1:{port}"),
            advertise: None,
            namespace: None,
            job: None,
            cpus: None,
            memory: None,
            manifest: None,
            apply: true,
            wait_ns: None,
        };
        let (told, _) = tokio::sync::mpsc::unbounded_channel();
        let mut k = Kubernetes::new(&spec, dir, None, told).unwrap();
        k.kubectl = stand_in(dir);
        k
    }

    /// A Job of the guns' name that Showdown did not make is refused, naming the context,
    /// before anything is deleted or applied.
    #[tokio::test]
    async fn a_job_showdown_did_not_make_is_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let k = guns(dir.path());
        std::fs::write(dir.path().join("job"), "showdown-guns/").unwrap();
        let said = k.apply().await.unwrap_err().to_string();
        assert!(
            said.contains("a job default/showdown-guns exists in kubectl's context kind-lab that Showdown did not make"),
            "{said}"
        );
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        assert!(
            !calls.contains(" delete ") && !calls.contains(" apply "),
            "{calls}"
        );
    }

    /// Showdown's own Job is replaced, every call in the context read first, and the Secret
    /// applied after the Job as its dependent (Kubernetes removes it with the Job).
    #[tokio::test]
    async fn its_own_job_is_replaced_in_the_context_read_once_and_the_secret_is_the_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let k = guns(dir.path());
        std::fs::write(dir.path().join("job"), "showdown-guns/showdown").unwrap();
        k.apply().await.unwrap();
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(calls.first(), Some(&"config current-context"), "{calls:?}");
        assert!(
            calls
                .iter()
                .skip(1)
                .all(|c| c.starts_with("--context kind-lab -n default ")),
            "{calls:?}"
        );
        let verbs: Vec<&str> = calls
            .iter()
            .skip(1)
            .map(|c| c.split(' ').nth(4).unwrap_or_default())
            .collect();
        assert_eq!(
            verbs,
            ["get", "get", "delete", "apply", "apply", "patch"],
            "{calls:?}"
        );
        let secret = std::fs::read_to_string(dir.path().join("secret.yaml")).unwrap();
        assert!(
            secret.contains("\"ownerReferences\"")
                && secret.contains("\"uid\": \"0f6d3c1e-7a1b-4f0e-9d1c-2b3a4c5d6e7f\"")
                && secret.contains("\"kind\": \"Job\""),
            "{secret}"
        );
        let job = std::fs::read_to_string(dir.path().join("job.yaml")).unwrap();
        assert!(
            job.contains("\"kind\": \"Job\"") && !job.contains("token"),
            "{job}"
        );
    }
}
