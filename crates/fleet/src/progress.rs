//! What making the guns ready tells its caller as it goes ([`Progress`]): the guns found, each
//! one ready, and what a transport says meanwhile (a Job's pods awaited, a pod refused). Below
//! the preparation and the transports, which both send it; the caller words it (its `Display`
//! is the words the terminal shows). What a transport tells is heard while the guns are made
//! ready: a pod that a Job's rendezvous refuses after every gun is in (a late one, finishing its
//! handshake) is refused without a word.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What the preparation is doing, for the caller to say.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The guns found, about to be opened and made ready (`over`: "over SSH").
    Preparing {
        over: &'static str,
        guns: Vec<String>,
    },
    /// One gun, ready: how it was found ([`crate::Fleet::describe`]).
    Ready(String),
    /// Kubernetes guns the runner does not apply: the Job written to `manifest`, its `count`
    /// pods awaited on `listen` for `wait`, and how the user starts them.
    PodsAwaited {
        manifest: PathBuf,
        count: u32,
        listen: String,
        wait: Duration,
        namespace: String,
        job: String,
    },
    /// Kubernetes guns the runner applies: the Job `namespace/job`, its `count` pods of
    /// `image`, applied in kubectl's `context` (both shown printable).
    ApplyingJob {
        namespace: String,
        job: String,
        count: u32,
        image: String,
        context: String,
    },
    /// A connection from `peer` that claimed to be a pod of the guns' Job, refused (`why`).
    PodRefused { peer: SocketAddr, why: String },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::Preparing { over, guns } => write!(
                f,
                "Preparing {} gun host(s) {over}: {}",
                guns.len(),
                guns.join(", ")
            ),
            Progress::Ready(line) => write!(f, "  {line}"),
            Progress::PodsAwaited {
                manifest,
                count,
                listen,
                wait,
                namespace,
                job,
            } => write!(
                f,
                "guns: the Job is in {}; {count} pods are awaited on {listen} for {}s. Start them: kubectl apply -f {}, the Secret (SHOWDOWN_GUNS_SECRET_FILE names a file to write it to, mode 0600), then kubectl -n {namespace} patch job {job} --type=merge -p '{{\"spec\":{{\"suspend\":false}}}}'",
                manifest.display(),
                wait.as_secs(),
                manifest.display(),
            ),
            Progress::ApplyingJob {
                namespace,
                job,
                count,
                image,
                context,
            } => write!(
                f,
                "guns: applying the Job {namespace}/{job} ({count} pods of {}) with kubectl's context {}",
                redact::printable(image),
                redact::printable(context)
            ),
            Progress::PodRefused { peer, why } => {
                write!(f, "guns: a pod from {peer} refused: {why}")
            }
        }
    }
}
