//! How a gun is reached: a [`Transport`] opens each gun's [`Link`], and a link runs sessions of
//! `loadgen gun` there. What is said over a session (a check, the clock, an order) is the
//! fleet's, written once (`ready`, `volley`); a transport only carries it, finds the build, and
//! where it can installs one and forwards a port (a [`Link`] has defaults for what its transport
//! does not do). The traits are object-safe (their futures boxed), so that the transport is
//! chosen at run time from the order's guns ([`of`]).

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::error::{FleetError, GunFault};
use crate::preparing::Preparing;
use crate::progress::Progress;

/// A future a trait object can return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The guns, and how to reach each.
pub trait Transport: Send + Sync + fmt::Debug {
    /// How the guns are reached, in words: "over SSH".
    fn over(&self) -> &'static str;
    /// The guns' names (an SSH destination each), in order.
    fn names(&self) -> Vec<String>;
    /// The guns as an order names them, resolved (a lab's read): what a search's own generator
    /// opens again.
    fn hosts(&self) -> order::GunHosts;
    /// The file on each gun that sets the store's URL, when the guns' lab says where it is.
    fn store_env_file(&self) -> Option<String>;
    /// Opens the link to gun `n` (of [`Transport::names`]).
    fn open(&self, n: usize) -> BoxFuture<'_, Result<Box<dyn Link>, FleetError>>;
}

/// One gun, reached. A transport implements what only it can do (its name, its sessions);
/// what a transport may not need has a default: no port forwarded, no link lost apart from
/// its sessions, only the `loadgen` asked for tried, no build installed, nothing more to end
/// than the link dropped.
pub trait Link: Send + Sync + fmt::Debug {
    /// The gun's name, as the user gave it.
    fn name(&self) -> &str;
    /// The link's kind in words ("SSH": "the SSH connection was lost").
    fn kind(&self) -> &'static str;
    /// The program that carries a session on this machine ("ssh": "ssh was killed").
    fn program(&self) -> &'static str;
    /// `loadgen gun` started on the gun from `loadgen` (a path there), its standard input,
    /// output and error piped here.
    fn session(&self, loadgen: &str) -> Result<Session, FleetError>;
    /// Whether a session that ended with `code` failed for the link (ssh's own exit 255), not
    /// for loadgen. By default never: a transport whose sessions end only as loadgen ends.
    fn lost(&self, _code: Option<i32>) -> bool {
        false
    }
    /// Where `loadgen` may be on the gun, in the order to try: `asked` (`[guns] loadgen`), or
    /// the transport's own guess, then where [`Link::install`] puts the build `build`. By
    /// default `asked` alone, when given: a transport with no guess of its own and no
    /// install.
    fn candidates(&self, asked: Option<&str>, _build: &str) -> Vec<String> {
        asked.map(str::to_string).into_iter().collect()
    }
    /// Installs this machine's `loadgen` (`local`, whose SHA-256 is `build`) on the gun, whose
    /// architecture is `arch` when a loadgen there said it: where it went. By default refused
    /// ([`GunFault::CannotInstall`]): a transport that cannot put a file on its guns.
    fn install<'a>(
        &'a self,
        _local: &'a Path,
        _build: &'a str,
        _arch: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, FleetError>> {
        let refused =
            FleetError::remote(self.name(), GunFault::CannotInstall { link: self.kind() });
        Box::pin(std::future::ready(Err::<String, _>(refused)))
    }
    /// A port of this machine's loopback forwarded to `host:port` as the gun reaches it;
    /// `None` when this transport does not forward (the target is then reached directly), as
    /// by default.
    fn forward<'a>(
        &'a self,
        _host: &'a str,
        _port: u16,
    ) -> BoxFuture<'a, Result<Option<u16>, FleetError>> {
        Box::pin(std::future::ready(Ok::<Option<u16>, FleetError>(None)))
    }
    /// Ends the link, its sessions with it. By default the link is dropped: a link whose drop
    /// ends it needs no more.
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        drop(self);
        Box::pin(std::future::ready(()))
    }
}

/// `loadgen gun` running on a gun: its standard streams, its end, and a way to end it at once.
pub struct Session {
    /// Its standard input: a request line, then held open (its closing stops an attack).
    pub input: Box<dyn AsyncWrite + Send + Unpin>,
    pub output: Box<dyn AsyncRead + Send + Unpin>,
    pub errors: Box<dyn AsyncRead + Send + Unpin>,
    /// Resolves when the session ends: its exit code (`None`: killed). Dropped, it ends the
    /// session.
    pub ended: BoxFuture<'static, std::io::Result<Option<i32>>>,
    /// Ends the session at once (a gun that hangs past its grace).
    pub kill: Box<dyn FnMut() + Send>,
}

impl Session {
    /// A session of `child`, spawned with its standard streams piped and leading a process
    /// group of its own: ending the group ends the session. `None` where its pipes were not
    /// made.
    pub(crate) fn of_group_leader(mut child: tokio::process::Child) -> Option<Session> {
        let group = child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32));
        let (Some(input), Some(output), Some(errors)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return None;
        };
        Some(Session {
            input: Box::new(input),
            output: Box::new(output),
            errors: Box::new(errors),
            ended: Box::pin(async move { child.wait().await.map(|s| s.code()) }),
            kill: Box::new(move || {
                if let Some(group) = group {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
            }),
        })
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Session")
    }
}

/// One transport's side of an order's guns, before anything is opened.
pub(crate) trait Backend {
    /// What can be checked of the guns before anything is opened (what serde cannot): nothing
    /// is read but what the order says.
    fn check(&self) -> Result<(), FleetError>;

    /// The transport opened: the guns resolved (a lab read from `preparing.dir`, with
    /// `preparing.settings`), ready for each gun's link to be opened; what it tells while the
    /// guns are made ready goes to `told`.
    fn open(
        &self,
        preparing: Preparing<'_>,
        told: mpsc::UnboundedSender<Progress>,
    ) -> Result<Box<dyn Transport>, FleetError>;
}
