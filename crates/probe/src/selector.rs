//! Which process the probe watches: by PID, PID file, name, or the TCP port it listens on.
//!
//! A selector is resolved again whenever the watched process exits, so one probe follows a
//! whole experiment: Node on port 8080, then Go on the same port. When several processes match
//! (a Node cluster's primary and workers all match its name; with `SO_REUSEPORT` several may
//! hold the listening socket), the one whose parent does not match is chosen: the root of the
//! matching tree, under which the others are watched anyway.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use procfs::process::{FDTarget, Process};
use regex::Regex;

use crate::collect::ProcRoot;

/// How to find the target process.
#[derive(Debug, Clone)]
pub enum Selector {
    Pid(i32),
    /// A file holding the PID (re-read at each resolution).
    PidFile(PathBuf),
    /// A regular expression matched against the process name and its command line.
    Name(Regex),
    /// The process listening on this TCP port (IPv4 or IPv6).
    Port(u16),
    /// No process of this host: a participant elsewhere (a managed database), known only by
    /// what it says of itself ([`crate::activity`]).
    Elsewhere,
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Pid(pid) => write!(f, "--pid {pid}"),
            Selector::PidFile(path) => write!(f, "--pidfile {}", path.display()),
            Selector::Name(re) => write!(f, "--name {}", re.as_str()),
            Selector::Port(port) => write!(f, "--port {port}"),
            Selector::Elsewhere => write!(f, "elsewhere"),
        }
    }
}

impl Selector {
    /// The PID of the target, if a process matches now. `exclude` (the probe itself) never
    /// matches.
    pub fn resolve(&self, root: &ProcRoot, exclude: Option<i32>) -> Option<i32> {
        let alive = |pid: i32| root.path().join(pid.to_string()).join("stat").exists();
        match self {
            Selector::Elsewhere => None,
            Selector::Pid(pid) => alive(*pid).then_some(*pid),
            Selector::PidFile(path) => {
                let pid: i32 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
                alive(pid).then_some(pid)
            }
            Selector::Name(re) => topmost(&matching(root, exclude, |proc, comm| {
                let cmdline = proc.cmdline().unwrap_or_default().join(" ");
                re.is_match(comm) || re.is_match(&cmdline)
            })),
            Selector::Port(port) => {
                let inodes = listening_inodes(root, *port);
                if inodes.is_empty() {
                    return None;
                }
                let holds = |fd: &procfs::process::FDInfo| matches!(fd.target, FDTarget::Socket(inode) if inodes.contains(&inode));
                topmost(&matching(root, exclude, |proc, _| {
                    proc.fd()
                        .is_ok_and(|mut fds| fds.any(|fd| fd.is_ok_and(|fd| holds(&fd))))
                }))
            }
        }
    }
}

/// The processes (PID → parent PID) for which `is_match(process, name)` holds.
fn matching(
    root: &ProcRoot,
    exclude: Option<i32>,
    is_match: impl Fn(&Process, &str) -> bool,
) -> HashMap<i32, i32> {
    root.pids()
        .into_iter()
        .filter(|&pid| Some(pid) != exclude)
        .filter_map(|pid| {
            let proc = Process::new_with_root(root.path().join(pid.to_string())).ok()?;
            let stat = proc.stat().ok()?;
            is_match(&proc, &stat.comm).then_some((pid, stat.ppid))
        })
        .collect()
}

/// Of matching processes (PID → parent PID), the one whose parent is not among them; the
/// oldest (lowest PID) if several.
fn topmost(matches: &HashMap<i32, i32>) -> Option<i32> {
    matches
        .iter()
        .filter(|(_, ppid)| !matches.contains_key(ppid))
        .map(|(&pid, _)| pid)
        .min()
}

/// Inodes of the sockets listening on `port`, from `net/tcp` and `net/tcp6`.
fn listening_inodes(root: &ProcRoot, port: u16) -> HashSet<u64> {
    const LISTEN: u8 = 10;
    let mut out = HashSet::new();
    for file in ["net/tcp", "net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(root.file(file)) {
            out.extend(
                crate::sockets::tcp_entries(&text)
                    .filter(|e| e.state == LISTEN && e.local_port == port)
                    .map(|e| e.inode),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_of_the_matching_tree_is_chosen() {
        // 10 ← 11 ← 12 (a primary and its workers), and an unrelated 20.
        let m = HashMap::from([(11, 10), (12, 11), (13, 11), (20, 1)]);
        assert_eq!(topmost(&m), Some(11));
        assert_eq!(topmost(&HashMap::new()), None);
    }

    #[test]
    fn this_process_is_found_by_pid_and_name() {
        let root = ProcRoot::default();
        let me = std::process::id() as i32;
        assert_eq!(Selector::Pid(me).resolve(&root, None), Some(me));
        assert_eq!(Selector::Pid(i32::MAX).resolve(&root, None), None);
        let name = std::fs::read_to_string("/proc/self/comm").unwrap();
        let re = Regex::new(&format!("^{}$", regex::escape(name.trim()))).unwrap();
        // Excluding ourselves, our own name matches nothing else (or another test binary).
        assert_ne!(
            Selector::Name(re.clone()).resolve(&root, Some(me)),
            Some(me)
        );
        assert!(Selector::Name(re).resolve(&root, None).is_some());
    }

    #[test]
    fn a_listening_port_leads_to_its_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let root = ProcRoot::default();
        assert_eq!(
            Selector::Port(port).resolve(&root, None),
            Some(std::process::id() as i32)
        );
        drop(listener);
        assert_eq!(Selector::Port(port).resolve(&root, None), None);
    }
}
