//! The guns as allocations of a Nomad-like scheduler on this machine, a stand-in transport: the
//! order names a file that lists the allocations, one a line (`NAME DIR`: the allocation's
//! name, then its working directory here), and every session of `loadgen gun` is a child
//! process of this one in the allocation's directory, as Nomad's `raw_exec` driver runs a task.
//! The allocations are this machine's, so nothing is forwarded (the target is reached from
//! here), a session ends only as its `loadgen` ends, and this build is installed by copying it
//! into the allocation's directory.
//!
//! A transport is this file, a variant of `order::GunHosts` and one arm of
//! `backend::backend`: the checks, the clock, the shards and both callers are the fleet's.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::sync::mpsc;

use crate::error::{FleetError, GunFault};
use crate::preparing::Preparing;
use crate::progress::Progress;
use crate::transport::{Backend, BoxFuture, Link, Session, Transport};

/// The largest list of allocations read: a line an allocation, and a file this large is not
/// one.
pub const MAX_LIST: u64 = 1 << 20;

/// The shell a session starts in, as a remote one would: a `loadgen` that is not there is its
/// exit 127, and the next place it may be is tried.
const SHELL: &str = "/bin/sh";

/// Why the allocations cannot be listed.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    #[error("[guns] allocations: file is empty: name the file that lists the allocations, one a line: NAME DIR")]
    NoFile,
    #[error("[guns] allocations: cannot read {}: {error}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("[guns] allocations: {} is over 1 MiB: a list of allocations is a line each", .0.display())]
    TooLarge(PathBuf),
    #[error("[guns] allocations: {}:{line}: write NAME DIR (the allocation's name, printable, then its directory on this machine)", .path.display())]
    Line { path: PathBuf, line: usize },
    #[error("[guns] allocations: {}:{line}: allocation {name:?} is listed twice", .path.display())]
    Twice {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("[guns] allocations: {} lists no allocation", .0.display())]
    NoGuns(PathBuf),
    #[error("[guns] allocations: allocation {name:?}: {} is not a directory", .dir.display())]
    NotADirectory { name: String, dir: PathBuf },
}

impl From<AllocError> for FleetError {
    fn from(e: AllocError) -> FleetError {
        FleetError::Transport(crate::error::TransportError::new(e))
    }
}

/// One allocation: its name, and its working directory on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub name: String,
    pub dir: PathBuf,
}

/// The allocations `text` lists, one a line, `NAME DIR` (the name, whitespace, then the
/// directory, which may hold spaces); blank lines and lines starting with `#` are skipped. A
/// relative directory is read from the directory of `path`, the list's file, which the errors
/// name.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Allocation>, AllocError> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut allocations: Vec<Allocation> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = i + 1;
        let Some((name, dir)) = line
            .split_once(char::is_whitespace)
            .filter(|(name, _)| !name.chars().any(char::is_control))
        else {
            return Err(AllocError::Line {
                path: path.to_path_buf(),
                line: at,
            });
        };
        if allocations.iter().any(|a| a.name == name) {
            return Err(AllocError::Twice {
                path: path.to_path_buf(),
                line: at,
                name: name.to_string(),
            });
        }
        allocations.push(Allocation {
            name: name.to_string(),
            dir: base.join(dir.trim()),
        });
    }
    if allocations.is_empty() {
        return Err(AllocError::NoGuns(path.to_path_buf()));
    }
    Ok(allocations)
}

/// The allocations as an order names them (the file of `order::GunHosts::Allocations`,
/// borrowed): their [`Backend`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocBackend<'a> {
    pub(crate) file: &'a str,
}

impl Backend for AllocBackend<'_> {
    fn check(&self) -> Result<(), FleetError> {
        if self.file.trim().is_empty() {
            return Err(AllocError::NoFile.into());
        }
        Ok(())
    }

    fn open(
        &self,
        preparing: Preparing<'_>,
        _told: mpsc::UnboundedSender<Progress>,
    ) -> Result<Box<dyn Transport>, FleetError> {
        Ok(Box::new(Allocations::read(self.file, preparing.dir)?))
    }
}

/// The allocations of one sitting, listed.
#[derive(Debug)]
pub struct Allocations {
    /// The list's file, absolute: what a search's own generator reads again, from wherever it
    /// runs.
    list: PathBuf,
    allocations: Vec<Allocation>,
}

impl Allocations {
    /// The allocations the file `file` lists (a relative one read from `dir`: the experiment
    /// file's directory, or the current one for flags), every directory there.
    pub fn read(file: &str, dir: &Path) -> Result<Allocations, AllocError> {
        let path = dir.join(file);
        let list = std::fs::canonicalize(&path).map_err(|error| AllocError::Read {
            path: path.clone(),
            error,
        })?;
        let mut text = String::new();
        std::fs::File::open(&list)
            .and_then(|f| f.take(MAX_LIST + 1).read_to_string(&mut text))
            .map_err(|error| AllocError::Read {
                path: list.clone(),
                error,
            })?;
        if text.len() as u64 > MAX_LIST {
            return Err(AllocError::TooLarge(list));
        }
        let allocations = parse(&text, &list)?;
        if let Some(a) = allocations.iter().find(|a| !a.dir.is_dir()) {
            return Err(AllocError::NotADirectory {
                name: a.name.clone(),
                dir: a.dir.clone(),
            });
        }
        Ok(Allocations { list, allocations })
    }
}

impl Transport for Allocations {
    fn over(&self) -> &'static str {
        "as allocations on this machine"
    }

    fn names(&self) -> Vec<String> {
        self.allocations.iter().map(|a| a.name.clone()).collect()
    }

    fn hosts(&self) -> order::GunHosts {
        order::GunHosts::Allocations {
            file: self.list.display().to_string(),
        }
    }

    fn store_env_file(&self) -> Option<String> {
        None
    }

    fn open(&self, n: usize) -> BoxFuture<'_, Result<Box<dyn Link>, FleetError>> {
        let link = self
            .allocations
            .get(n)
            .cloned()
            .map(|a| Box::new(AllocLink(a)) as Box<dyn Link>)
            .ok_or(FleetError::NoGuns);
        Box::pin(std::future::ready(link))
    }
}

/// One allocation, reached: a directory of this machine, its sessions child processes there.
#[derive(Debug)]
pub struct AllocLink(Allocation);

impl AllocLink {
    /// Where this build (`build`, its SHA-256) is installed in the allocation.
    fn installed(&self, build: &str) -> PathBuf {
        self.0
            .dir
            .join(format!("loadgen-{}", &build[..16.min(build.len())]))
    }

    /// This machine's build (`local`, whose SHA-256 is `build`) copied into the allocation's
    /// directory, whole or not at all (`probe::files`): where it went.
    fn copy(&self, local: &Path, build: &str) -> Result<String, FleetError> {
        let bytes = crate::ready::build_bytes(local, build)?;
        let to = self.installed(build);
        probe::files::replace(&to, &bytes, 0o755).map_err(|e| {
            FleetError::remote(
                &self.0.name,
                GunFault::Copy {
                    to: to.display().to_string(),
                    said: e.to_string(),
                },
            )
        })?;
        Ok(to.display().to_string())
    }
}

impl Link for AllocLink {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn kind(&self) -> &'static str {
        "allocation"
    }

    /// The session's process here is `loadgen` itself (the shell execs it).
    fn program(&self) -> &'static str {
        "loadgen"
    }

    /// `loadgen gun` in the allocation's directory: tethered to this process (ended with it),
    /// a process group of its own (ending it ends the session), its environment built from
    /// nothing as every process the fleet starts.
    fn session(&self, loadgen: &str) -> Result<Session, FleetError> {
        let spawn = |error: std::io::Error| FleetError::Spawn {
            path: PathBuf::from(SHELL),
            error,
        };
        let tethered = crate::local::tethered(std::ffi::OsStr::new(SHELL), None).map_err(spawn)?;
        let mut command = tokio::process::Command::from(tethered);
        command
            .args(["-c", "exec \"$0\" gun", loadgen])
            .current_dir(&self.0.dir);
        let base = custody::environment::Base::current();
        custody::environment::apply(
            command.as_std_mut(),
            &custody::environment::build(&base, &[], &[]),
        );
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let child = command.spawn().map_err(spawn)?;
        Session::of_group_leader(child)
            .ok_or_else(|| spawn(std::io::Error::other("its pipes were not made")))
    }

    /// `asked`, or a `loadgen` on this machine's PATH; then this build in the allocation.
    fn candidates(&self, asked: Option<&str>, build: &str) -> Vec<String> {
        vec![
            asked.unwrap_or("loadgen").to_string(),
            self.installed(build).display().to_string(),
        ]
    }

    /// This build copied into the allocation (`arch` is this machine's: not asked).
    fn install<'a>(
        &'a self,
        local: &'a Path,
        build: &'a str,
        _arch: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, FleetError>> {
        Box::pin(async move { self.copy(local, build) })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::AsyncReadExt;

    fn executable(path: &Path, script: &str) {
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A `loadgen gun` in shell, answering a check with its own SHA-256 as its build, and the
    /// clock with this machine's: what the real one says, for the fleet to make it ready.
    const GUN: &str = "#!/bin/sh\nread -r request\ncase \"$request\" in\n  *'\"ask\":\"check\"'*) printf '{\"version\":\"stand-in\",\"build\":\"%s\",\"arch\":\"%s\",\"cpus\":\"0\",\"now_ns\":%s,\"reach\":null}\\n' \"$(sha256sum \"$0\" | cut -d' ' -f1)\" \"$(uname -m)\" \"$(date +%s%N)\" ;;\n  *'\"ask\":\"clock\"'*) while read -r _; do date +%s%N; done ;;\nesac\n";

    #[test]
    fn a_list_is_a_name_and_a_directory_a_line() {
        let path = Path::new("/srv/allocs/list");
        let listed = parse(
            "# the job's allocations\n\ngun-0 a\n  gun-1\t/var/alloc/b c  \n",
            path,
        )
        .unwrap();
        assert_eq!(
            listed,
            [
                Allocation {
                    name: "gun-0".into(),
                    dir: "/srv/allocs/a".into()
                },
                Allocation {
                    name: "gun-1".into(),
                    dir: "/var/alloc/b c".into()
                },
            ]
        );
        for (text, says) in [
            ("gun-0\n", "/srv/allocs/list:1: write NAME DIR"),
            ("a x\nb y\na z\n", "/srv/allocs/list:3: allocation \"a\" is listed twice"),
            ("# nothing\n\n", "/srv/allocs/list lists no allocation"),
            ("g\u{1b}[2J x\n", "/srv/allocs/list:1: write NAME DIR"),
        ] {
            let said = parse(text, path).unwrap_err().to_string();
            assert!(said.contains(says), "{text:?}: {said}");
        }
    }

    /// The order names them, and the fleet checks them through their backend before anything
    /// is opened.
    #[test]
    fn an_order_names_them_and_the_fleet_checks_them() {
        let hosts: order::GunHosts =
            serde_json::from_str(r#"{"transport":"allocations","file":" "}"#).unwrap();
        let guns = order::Guns {
            hosts,
            ..Default::default()
        };
        let said = crate::check(&guns).unwrap_err().to_string();
        assert_eq!(
            said,
            "[guns] allocations: file is empty: name the file that lists the allocations, one a line: NAME DIR"
        );
    }

    /// A session is `loadgen gun` run here, in the allocation's directory; one where there is
    /// no loadgen ends as a shell's would (127), so the next place is tried.
    #[tokio::test]
    async fn a_session_runs_loadgen_gun_in_the_allocations_directory() {
        let dir = tempfile::tempdir().unwrap();
        let alloc = dir.path().join("a");
        std::fs::create_dir(&alloc).unwrap();
        let loadgen = dir.path().join("loadgen");
        executable(&loadgen, "#!/bin/sh\necho \"$1\"\npwd -P\n");
        let link = AllocLink(Allocation {
            name: "gun-0".into(),
            dir: alloc.clone(),
        });
        let session = link.session(&loadgen.display().to_string()).unwrap();
        drop(session.input);
        let mut out = String::new();
        let mut output = session.output;
        output.read_to_string(&mut out).await.unwrap();
        assert_eq!(session.ended.await.unwrap(), Some(0));
        let here = std::fs::canonicalize(&alloc).unwrap();
        assert_eq!(out, format!("gun\n{}\n", here.display()));
        let missing = link.session("/nonexistent/loadgen").unwrap();
        assert_eq!(missing.ended.await.unwrap(), Some(127));
    }

    /// The guns of a list made ready by the fleet's own preparation: this build (a `loadgen
    /// gun` in shell) installed in each allocation, checked, and its clock measured.
    #[tokio::test]
    async fn the_fleet_makes_the_allocations_ready() {
        let dir = tempfile::tempdir().unwrap();
        for a in ["a", "b"] {
            std::fs::create_dir(dir.path().join(a)).unwrap();
        }
        std::fs::write(dir.path().join("allocs"), "gun-0 a\ngun-1 b\n").unwrap();
        let local = dir.path().join("this-loadgen");
        executable(&local, GUN);
        let build = crate::build_of(&local).unwrap();
        let guns = order::Guns {
            hosts: order::GunHosts::Allocations {
                file: "allocs".into(),
            },
            loadgen: Some("/nonexistent/loadgen".into()),
            ..Default::default()
        };
        let settings = crate::Settings::default();
        let (_stop, stop) = tokio::sync::watch::channel(false);
        let mut said = Vec::new();
        let fleet = crate::prepare(
            Preparing {
                guns: &guns,
                dir: dir.path(),
                local: &local,
                reach: None,
                settings: &settings,
            },
            stop,
            &mut |p| said.push(p),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(fleet.names(), ["gun-0", "gun-1"]);
        assert_eq!(
            said.first(),
            Some(&Progress::Preparing {
                over: "as allocations on this machine",
                guns: vec!["gun-0".into(), "gun-1".into()],
            })
        );
        let list = std::fs::canonicalize(dir.path().join("allocs")).unwrap();
        assert_eq!(
            fleet.guns().hosts,
            order::GunHosts::Allocations {
                file: list.display().to_string()
            }
        );
        for a in ["a", "b"] {
            let installed = dir.path().join(a).join(format!("loadgen-{}", &build[..16]));
            assert!(installed.is_file(), "{}", installed.display());
        }
        fleet.close().await;
    }
}
