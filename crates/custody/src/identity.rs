//! A process named by its PID and its start time (`stat` field 22, in clock ticks since boot),
//! so that a PID the kernel gave to someone else since is never mistaken for it.

use serde::{Deserialize, Serialize};

/// A process, as it was when it was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub pid: i32,
    pub start_ticks: u64,
}

/// What `stat` says of a process: the fields used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: char,
    pub pgrp: i32,
    pub start_ticks: u64,
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp session … starttime …`, the name in
/// parentheses possibly holding spaces and parentheses of its own.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, pgrp 5, starttime 22 (1-based over the whole line).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

pub(crate) fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

impl Identity {
    /// The process `pid` as it is now, if it exists.
    pub fn of(pid: i32) -> Option<Identity> {
        stat(pid).map(|s| Identity {
            pid,
            start_ticks: s.start_ticks,
        })
    }

    /// This process.
    pub fn current() -> Identity {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        Identity::of(pid).unwrap_or(Identity {
            pid,
            start_ticks: 0,
        })
    }

    /// Whether this very process still runs (a zombie has ended).
    pub fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_ticks == self.start_ticks && s.state != 'Z')
    }

    /// Whether the PID is still this process's, ended or not (a zombie still holds its PID
    /// and its process group's number).
    pub fn holds_its_pid(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_ticks == self.start_ticks)
    }

    /// Sends `signal` if the process is still this one. The process is held by a pidfd while
    /// it is checked, so a PID handed out again between the check and the signal is never hit.
    pub fn signal(&self, signal: rustix::process::Signal) -> bool {
        use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags};
        let Some(pid) = Pid::from_raw(self.pid) else {
            return false;
        };
        match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => self.alive() && pidfd_send_signal(&fd, signal).is_ok(),
            // A kernel without pidfds (before 5.3): the check, then the signal.
            Err(rustix::io::Errno::NOSYS) => {
                self.alive() && rustix::process::kill_process(pid, signal).is_ok()
            }
            Err(_) => false,
        }
    }
}

/// Every process now in process group `pgrp` that started at `since` or later (a group whose
/// number was handed out again after the one we knew ended is left alone).
pub(crate) fn in_process_group(pgrp: i32, since: u64) -> Vec<Identity> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let s = stat(pid)?;
            (s.pgrp == pgrp && s.start_ticks >= since && s.state != 'Z').then_some(Identity {
                pid,
                start_ticks: s.start_ticks,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_are_read() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                pgrp: 42,
                start_ticks: 12345
            })
        );
        assert_eq!(parse_stat("nonsense"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_changed_start_is_not_it() {
        let me = Identity::current();
        assert!(me.alive());
        let other = Identity {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(!other.alive());
    }
}
