//! Why the guns could not be made ready or fired ([`FleetError`]), what was wrong with one gun
//! ([`GunFault`]), and why one gun's shard came to nothing ([`ShotError`]): each says what
//! went wrong and, where there is one, what to do.

use std::path::PathBuf;
use std::time::Duration;

/// Why the guns could not be made ready or fired, or this machine's generator not run.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// What the guns' transport says (their spec, their lab, a connection, the pods gathered),
    /// in its own words.
    #[error(transparent)]
    Transport(TransportError),
    /// One gun refused, or lost, with why.
    #[error("gun {gun}: {why}")]
    Remote { gun: String, why: GunFault },
    /// The first gun's run of an order alone came to nothing.
    #[error("gun {gun}: {why}")]
    Shot { gun: String, why: Box<ShotError> },
    #[error("[guns] threads must be at least 1")]
    Threads,
    #[error("[guns] clock_tolerance must be above 0, e.g. \"50ms\"")]
    ClockTolerance,
    #[error("the guns' CPUs: {0}")]
    Cpus(#[source] probe::cpus::CpuListError),
    /// The guns keep their shards in one store: a file on this machine is not one.
    #[error("the guns write their shards to one store every gun reaches: a PostgreSQL one (--db postgres://…, or SHOWDOWN_DB); a SQLite file cannot be shared")]
    UnsharedStore,
    #[error("cannot read {}: {error}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{} changed while the guns were prepared (a build?): run again once it is done", .0.display())]
    Changed(PathBuf),
    /// A volley asked of a generator without guns, or of guns that are none.
    #[error("no guns")]
    NoGuns,
    /// This machine's `loadgen order`, not started.
    #[error("cannot run {}: {error}", .path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// This machine's `loadgen order`, lost while it ran.
    #[error("loadgen: {0}")]
    Wait(#[source] std::io::Error),
    #[error("cannot find this executable: {0}")]
    NoExe(#[source] std::io::Error),
    #[error("no loadgen binary found: build it (cargo build --release -p loadgen) or set SHOWDOWN_LOADGEN")]
    NoLoadgen,
}

impl FleetError {
    /// `why` of the gun `gun`.
    pub(crate) fn remote(gun: &str, why: GunFault) -> FleetError {
        FleetError::Remote {
            gun: gun.to_string(),
            why,
        }
    }
}

/// What was wrong with one gun.
#[derive(Debug, thiserror::Error)]
pub enum GunFault {
    #[error("[guns] cpus = {asked}, but it may run on CPU {have} only")]
    Cpus { asked: String, have: String },
    #[error("its clock is {} off this machine's (more than clock_tolerance, {}): keep both with NTP (chrony) and run again", crate::said::signed_ms(*.offset_ns), humantime::format_duration(*.tolerance))]
    ClockOff { offset_ns: i64, tolerance: Duration },
    #[error("it is {theirs}, this machine's loadgen is {ours}: build loadgen there and name it in [guns] loadgen")]
    Arch { theirs: String, ours: &'static str },
    /// A copy of this build that did not arrive whole (`said`: the gun's last words).
    #[error("cannot copy loadgen to {to}: {said}")]
    Copy { to: String, said: String },
    #[error("the loadgen copied to {0} is not this build")]
    NotThisBuild(String),
    /// Its check of the target (`why`, in the gun's words: it travels on the wire as text).
    #[error("it cannot reach the target: {0}")]
    Unreachable(String),
    /// A session that ended as the link's failure, not loadgen's (`said`: its last line).
    #[error("the {link} connection failed: {said}")]
    LinkFailed { link: &'static str, said: String },
    #[error("cannot read its clock: {0}")]
    Clock(#[source] ClockFault),
    #[error("cannot forward a port to {host}:{port}: {why}")]
    Forward {
        host: String,
        port: u16,
        why: String,
    },
    #[error("{what} took longer than {}s", .limit.as_secs())]
    Timeout { what: String, limit: Duration },
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// What a pod's image is not.
    #[error("{0}")]
    Image(String),
    /// Its `loadgen` is not this build, and its transport (`link`, its kind) cannot install
    /// one: the default of [`crate::Link::install`].
    #[error("its loadgen is not this runner's build, and a {link} link cannot install one: put this build there and name it in [guns] loadgen")]
    CannotInstall { link: &'static str },
}

/// Why a gun's clock could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ClockFault {
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("it closed the session")]
    Closed,
    /// A line that is not a time (shown quoted).
    #[error("{0:?}")]
    NotATime(String),
    #[error("no answer within 20 s")]
    Silent,
}

/// Why a gun's shard came to nothing: the link lost, the gun killed, loadgen failed.
#[derive(Debug, thiserror::Error)]
pub enum ShotError {
    /// Its session could not be started.
    #[error("{0}")]
    Session(Box<FleetError>),
    #[error("cannot send the order: {0}")]
    Send(#[source] std::io::Error),
    /// No result by the shard's end and the grace after it: told to stop, then ended.
    #[error("no result by the shard's end and {}s more: {}", .grace.as_secs(), if *.ended { "its session was ended" } else { "it was told to stop" })]
    Overdue { grace: Duration, ended: bool },
    #[error("{0}")]
    Wait(#[source] std::io::Error),
    /// The link failed under the session (ssh's own exit 255): `said` is what it said last.
    #[error("the {link} connection was lost: {said}")]
    Lost { link: &'static str, said: String },
    #[error("loadgen exited {code}: {said}")]
    Exited { code: i32, said: String },
    /// The session's own program (`ssh`) was killed.
    #[error("{program} was killed: {said}")]
    Killed { program: &'static str, said: String },
}

/// A transport's own error, whichever transport it is: shown as it says itself, its causes
/// its own. Each transport turns its error into a [`FleetError`] through this, so that the
/// fleet's error names no transport.
#[derive(Debug)]
pub struct TransportError(Box<dyn std::error::Error + Send + Sync>);

impl TransportError {
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError(Box::new(error))
    }
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
