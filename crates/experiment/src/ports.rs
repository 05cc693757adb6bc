//! Who listens on a target's port: the target's own processes, someone else, or nobody yet.
//!
//! A port chosen for a target (`{port}`) is free when chosen, but nothing holds it until the
//! target binds it: whoever binds it first would get the checks' requests and headers and the
//! load. So before any request is sent, the listening sockets on the port (from
//! `/proc/net/tcp` and `tcp6`, in the runner's network namespace) must all belong to processes
//! of the target's group (their `/proc/PID/fd` links name the sockets' inodes).

use std::collections::HashSet;

use probe::sockets::tcp_entries;

/// TCP's LISTEN state (include/net/tcp_states.h).
const LISTEN: u8 = 10;

/// Who listens on a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// Nothing listens on it.
    Nobody,
    /// Processes of the group, and only they: the first of them that holds a listening
    /// socket and whose parent does not (a cluster's primary, a daemon's master).
    Ours(i32),
    /// Someone else does (also, or only): who, in words.
    Foreign(String),
}

/// The inodes of the sockets listening on `port`.
fn listening(port: u16) -> HashSet<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            tcp_entries(&text)
                .filter(|e| e.local_port == port && e.state == LISTEN && e.inode != 0)
                .map(|e| e.inode)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The socket inodes among `pid`'s descriptors.
fn sockets_of(pid: i32) -> HashSet<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let link = std::fs::read_link(e.path()).ok()?;
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_default()
}

/// Who listens on `port`, given the processes of the target's group.
pub fn listener(port: u16, members: &[i32]) -> Listener {
    let inodes = listening(port);
    if inodes.is_empty() {
        return Listener::Nobody;
    }
    let owners: Vec<(i32, HashSet<u64>)> = members
        .iter()
        .map(|&pid| (pid, &sockets_of(pid) & &inodes))
        .filter(|(_, held)| !held.is_empty())
        .collect();
    let ours: HashSet<u64> = owners.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    if let Some(stranger) = inodes.difference(&ours).next() {
        return Listener::Foreign(owner_of(*stranger));
    }
    let pids: HashSet<i32> = owners.iter().map(|(p, _)| *p).collect();
    let root = owners
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| parent_of(*p).is_none_or(|parent| !pids.contains(&parent)))
        .min();
    root.map_or(Listener::Nobody, Listener::Ours)
}

/// The process holding socket `inode`, in words, from every process this user may look into.
fn owner_of(inode: u64) -> String {
    let found = std::fs::read_dir("/proc").ok().and_then(|dir| {
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .find(|&pid| sockets_of(pid).contains(&inode))
    });
    match found {
        Some(pid) => format!("PID {pid} ({})", comm(pid)),
        None => "a process this user cannot look into (or one that has just exited)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_ours_only_while_we_hold_it() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = socket.local_addr().map(|a| a.port()).unwrap_or_default();
        assert_eq!(listener(port, &[me]), Listener::Ours(me));
        // Held by this process, which is not among the members given: someone else's.
        match listener(port, &[]) {
            Listener::Foreign(who) => assert!(who.contains(&format!("PID {me}")), "{who}"),
            other => panic!("{other:?}"),
        }
        drop(socket);
        // No longer ours. (Nobody, unless another process of the host took the freed port in
        // the meantime: the suite's targets bind ports of their own as this runs.)
        let after = listener(port, &[me]);
        assert!(!matches!(after, Listener::Ours(_)), "{after:?}");
    }
}
