//! `custody`: every process Showdown starts is held whole and ended whole, and what a runner
//! killed outright left behind is found and ended by the next one.
//!
//! A [`Group`] is one thing started (a target, a build, a database server, a generator). Its
//! first process joins the group before it runs anything (between `fork` and `exec`): a cgroup
//! of its own where the machine lets us make one ([`Holding::Cgroup`]), so that every process it
//! forks is held, a daemon that leaves its process group and session included; else its own
//! process group ([`Holding::ProcessGroup`]), which a daemon can leave. [`Group::end`] (and
//! dropping it) kills every member and removes the cgroup.
//!
//! What the groups hold is kept in a lease on disk ([`lease`]); [`sweep`] reads the leases of
//! runners that are gone and ends what they left.
//!
//! Modules:
//!
//! - [`environment`]: what every process Showdown starts is given, built from nothing (never
//!   the user's secrets).
//! - `cgroup`: finding, joining, killing and removing a cgroup v2 of our own.
//! - `identity`: a process named by PID and start time, so that a reused PID is never taken
//!   for it.
//! - [`lease`]: the file each runner keeps of what it started, and the sweep of a dead one's.
//! - `tether`: a command ended with the process that started it and held to its CPUs, set
//!   between `fork` and `exec` ([`tethered`]).

mod cgroup;
pub mod environment;
mod identity;
pub mod lease;
mod tether;

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

pub use identity::Identity;
use lease::{GroupRecord, Lease};
pub use lease::{LeaseDirError, Left, Swept};
pub use tether::{tethered, BadCpus};

/// How a group holds its processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    /// A cgroup v2 of its own: nothing it forks leaves.
    Cgroup(PathBuf),
    /// Its own process group: a process that calls `setsid` or `setpgid` leaves it.
    ProcessGroup,
}

/// Why a group's own cgroup cannot be given the v2 controllers asked for.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("no cgroup of its own")]
    NoCgroup,
    #[error("no cgroup v2 hierarchy")]
    NoV2,
    #[error("the cgroup v2 hierarchy has no {0} controller")]
    Missing(String),
    /// Its cgroup is not under the hierarchy's root.
    #[error(transparent)]
    Outside(#[from] std::path::StripPrefixError),
    #[error("cannot enable {controllers} in {}: {source}", .at.display())]
    Enable {
        controllers: String,
        at: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// This process's custody: its identity, where its lease is kept, its cgroups' directory.
struct Custody {
    runner: Identity,
    lease_dir: PathBuf,
    /// The parent of every runner's cgroup directory (`…/showdown`), if we may make cgroups.
    cgroup_parent: Option<PathBuf>,
    lease: Mutex<Lease>,
    next: AtomicU64,
}

fn custody() -> &'static Custody {
    static CUSTODY: OnceLock<Custody> = OnceLock::new();
    CUSTODY.get_or_init(|| {
        let runner = Identity::current();
        Custody {
            runner,
            lease_dir: lease::directory(),
            cgroup_parent: cgroup::parent(),
            lease: Mutex::new(Lease {
                runner,
                cgroup_dir: None,
                groups: Default::default(),
            }),
            next: AtomicU64::new(1),
        }
    })
}

impl Custody {
    /// A cgroup for group `id`, in this runner's cgroup directory (made on first use; under
    /// the lease's lock, so that the last group's end cannot remove it meanwhile).
    fn new_cgroup(&self, id: u64, name: &str) -> Option<PathBuf> {
        let parent = self.cgroup_parent.as_ref()?;
        let mut lease = self.lease.lock().ok()?;
        let dir = parent.join(format!(
            "runner-{}-{}",
            self.runner.pid, self.runner.start_ticks
        ));
        std::fs::create_dir_all(&dir).ok()?;
        lease.cgroup_dir = Some(dir.clone());
        let path = dir.join(format!("{id}-{}", slug(name)));
        std::fs::create_dir(&path).ok().map(|()| path)
    }

    fn update(&self, f: impl FnOnce(&mut Lease)) {
        if let Ok(mut lease) = self.lease.lock() {
            f(&mut lease);
            let _ = lease.save(&self.lease_dir);
        }
    }
}

/// Ends what runners that are gone left behind (their leases, and cgroups named for them), and
/// says what it found. Call it once, before starting anything.
pub fn sweep() -> Swept {
    let custody = custody();
    let dir = &custody.lease_dir;
    // A lease names processes to kill: one read from a directory someone else could write
    // would let them choose which.
    if std::fs::symlink_metadata(dir).is_ok() {
        if let Err(why) = lease::ensure(dir) {
            return Swept {
                left: Vec::new(),
                problems: vec![format!(
                    "no lease is kept ({why}): what a runner killed outright starts is not ended by the next"
                )],
            };
        }
    }
    lease::sweep_in(dir, custody.cgroup_parent.as_deref())
}

/// Whether groups are cgroups here (a server that daemonizes is held too).
pub fn by_cgroup() -> bool {
    custody().cgroup_parent.is_some()
}

/// How this machine holds groups, in words (for the docs and the run's setup).
pub fn holding() -> String {
    match &custody().cgroup_parent {
        Some(dir) => format!("a cgroup each, under {}", dir.display()),
        None => "a process group each (no cgroup v2 of ours here: run as root, or in a delegated cgroup, so that a server that daemonizes is held too)".into(),
    }
}

/// One thing started, held whole; ended (every member killed, its cgroup removed) when
/// [`Group::end`] is called or it is dropped.
#[derive(Debug)]
pub struct Group {
    id: u64,
    record: GroupRecord,
    holding: Holding,
    /// The `cgroup.procs` files the first process writes itself into before it runs.
    joins: Vec<PathBuf>,
    ended: bool,
}

impl Group {
    /// A new group named `name` (a target's name, `build of go`, `postgres`).
    pub fn new(name: &str) -> Group {
        let custody = custody();
        let id = custody.next.fetch_add(1, Ordering::Relaxed);
        let cgroup = custody.new_cgroup(id, name);
        let holding = match &cgroup {
            Some(path) => Holding::Cgroup(path.clone()),
            None => Holding::ProcessGroup,
        };
        let record = GroupRecord {
            name: name.to_string(),
            cgroups: cgroup.iter().cloned().collect(),
            ..Default::default()
        };
        let group = Group {
            id,
            joins: cgroup.iter().map(|c| c.join("cgroup.procs")).collect(),
            record,
            holding,
            ended: false,
        };
        group.save();
        group
    }

    pub fn name(&self) -> &str {
        &self.record.name
    }

    pub fn holding(&self) -> &Holding {
        &self.holding
    }

    /// A name unique to this group on this machine (`showdown-PID-START-ID-NAME`), for the
    /// cgroups it is given on v1 hierarchies.
    pub fn unique_name(&self) -> String {
        let runner = custody().runner;
        format!(
            "showdown-{}-{}-{}-{}",
            runner.pid,
            runner.start_ticks,
            self.id,
            slug(&self.record.name)
        )
    }

    /// Its own cgroup with the v2 `controllers` enabled for it (each ancestor's
    /// `cgroup.subtree_control` from the hierarchy's root down), to set limits in; `Err` says
    /// why not (no cgroup of its own, or the hierarchy lacks them).
    pub fn with_controllers(&self, controllers: &[&str]) -> Result<PathBuf, ControllerError> {
        let Holding::Cgroup(dir) = &self.holding else {
            return Err(ControllerError::NoCgroup);
        };
        let root = cgroup::v2_mount().ok_or(ControllerError::NoV2)?;
        let available =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        if let Some(missing) = controllers
            .iter()
            .find(|c| !available.split_whitespace().any(|a| a == **c))
        {
            return Err(ControllerError::Missing(missing.to_string()));
        }
        let mut at = root.clone();
        let relative = dir.strip_prefix(&root)?;
        for part in relative.iter() {
            let enable: String = controllers.iter().map(|c| format!("+{c} ")).collect();
            std::fs::write(at.join("cgroup.subtree_control"), enable.trim_end()).map_err(
                |source| ControllerError::Enable {
                    controllers: controllers.join(", "),
                    at: at.clone(),
                    source,
                },
            )?;
            at.push(part);
        }
        Ok(dir.clone())
    }

    /// Another cgroup its first process joins (a v1 hierarchy's, holding its CPU quota or
    /// memory limit), removed with it.
    pub fn join_also(&mut self, cgroup: PathBuf) {
        self.joins.push(cgroup.join("cgroup.procs"));
        self.record.cgroups.push(cgroup);
        self.save();
    }

    /// A path to remove when the group ends, or when a sweep finds its runner gone.
    pub fn remove_with(&mut self, path: PathBuf) {
        self.record.paths.push(path);
        self.save();
    }

    /// Makes `command`'s process a member of this group from its start: a process group of its
    /// own, and its cgroups joined before it runs anything.
    pub fn hold(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        let joins: Vec<CString> = self
            .joins
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
            .collect();
        if joins.is_empty() {
            return;
        }
        // SAFETY: the closure runs in the child between fork and exec, where only
        // async-signal-safe calls are allowed: it allocates nothing (the paths were made
        // before the fork) and makes raw open, write and close system calls through rustix.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                for path in &joins {
                    use rustix::fs::{Mode, OFlags};
                    let fd = rustix::fs::open(
                        path.as_c_str(),
                        OFlags::WRONLY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )?;
                    // "0" is the writing process itself.
                    rustix::io::write(&fd, b"0")?;
                }
                Ok(())
            });
        }
    }

    /// Records the group's first process once it is started (its process group's leader).
    pub fn started(&mut self, pid: u32) {
        if let Some(p) = i32::try_from(pid).ok().and_then(Identity::of) {
            self.record.leader = Some(p);
            self.save();
        }
    }

    /// Records a process of the group that may have left its process group (a server that
    /// started a session of its own), to end it with the group even without a cgroup.
    pub fn also(&mut self, pid: i32) {
        if let Some(p) = Identity::of(pid) {
            self.record.processes.push(p);
            self.save();
        }
    }

    /// The processes now in the group.
    pub fn members(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = match &self.holding {
            Holding::Cgroup(dir) => cgroup::all_members(dir),
            Holding::ProcessGroup => self
                .record
                .leader
                .map(|l| {
                    identity::in_process_group(l.pid, l.start_ticks)
                        .into_iter()
                        .map(|p| p.pid)
                        .collect()
                })
                .unwrap_or_default(),
        };
        pids.extend(
            self.record
                .processes
                .iter()
                .filter(|p| p.alive())
                .map(|p| p.pid),
        );
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Kills every member, waits (a few seconds at most) until they are gone, removes the
    /// cgroups and the paths given to [`Group::remove_with`]. Returns how many processes were
    /// still running.
    pub fn end(&mut self) -> usize {
        if self.ended {
            return 0;
        }
        self.ended = true;
        let found = lease::end_group(&self.record, None, Duration::from_secs(5)).found;
        for path in &self.record.paths {
            if path.is_dir() {
                let _ = std::fs::remove_dir_all(path);
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
        let id = self.id;
        custody().update(|lease| {
            lease.groups.remove(&id);
            // The runner's cgroup directory goes with its last group (made again if needed).
            if lease.groups.is_empty()
                && lease
                    .cgroup_dir
                    .as_ref()
                    .is_some_and(|dir| std::fs::remove_dir(dir).is_ok())
            {
                lease.cgroup_dir = None;
            }
        });
        found
    }

    fn save(&self) {
        let (id, record) = (self.id, self.record.clone());
        custody().update(|lease| {
            lease.groups.insert(id, record);
        });
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.end();
    }
}

/// A name as it may appear in a cgroup's.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}
