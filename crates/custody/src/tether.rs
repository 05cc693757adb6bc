//! A command tethered to this process: ended when this process ends, even killed outright, and
//! held to a set of CPUs with everything it forks, both set in the child between `fork` and
//! `exec` (no `setpriv`, no `taskset`: the gun's image has no other program).

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::process::Signal;
use rustix::thread::CpuSet;

/// A CPU beyond what the kernel's affinity interface takes.
#[derive(Debug, thiserror::Error)]
#[error(
    "CPU {cpu} is beyond the {} CPUs a process can be held to here",
    CpuSet::MAX_CPU
)]
pub struct BadCpus {
    pub cpu: usize,
}

/// A command that starts `program` tethered to this process: the parent-death signal (SIGTERM)
/// ends it when the thread that started it ends, the process with it, even killed outright;
/// and `cpus` (as `probe::cpus::CpuList` reads a `taskset -c` list) holds it and everything it
/// forks to those CPUs. Its PID is the program's own. Add the program's arguments to what is
/// returned.
pub fn tethered(program: &OsStr, cpus: Option<&[usize]>) -> Result<Command, BadCpus> {
    let set = match cpus {
        None => None,
        Some(cpus) => {
            let mut set = CpuSet::new();
            for &cpu in cpus {
                if cpu >= CpuSet::MAX_CPU {
                    return Err(BadCpus { cpu });
                }
                set.set(cpu);
            }
            Some(set)
        }
    };
    let parent = rustix::process::getpid();
    let mut command = Command::new(program);
    // SAFETY: the closure makes only system calls (prctl, getppid, sched_setaffinity) and
    // allocates nothing: what may run between fork and exec in a threaded process.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
            // The parent gone before the signal was set: nothing would end this one.
            if rustix::process::getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            if let Some(set) = &set {
                rustix::thread::sched_setaffinity(None, set)?;
            }
            Ok(())
        });
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_beyond_the_kernels_set_is_refused() {
        let e = tethered(OsStr::new("true"), Some(&[0, CpuSet::MAX_CPU])).unwrap_err();
        assert_eq!(e.cpu, CpuSet::MAX_CPU);
    }

    /// The child runs on the CPUs named and dies with the process that started it; its PID is
    /// the program's own.
    #[test]
    fn a_tethered_child_is_pinned_and_ends_with_its_parent() {
        let allowed = rustix::thread::sched_getaffinity(None).unwrap();
        let first = (0..CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).unwrap();
        let out = tethered(OsStr::new("sh"), Some(&[first]))
            .unwrap()
            .args(["-c", "grep Cpus_allowed_list /proc/self/status"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().last(),
            Some(first.to_string().as_str()),
            "{text}"
        );

        // A middle process starts a tethered sleep and is killed outright: the sleep ends.
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let mut middle = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tether::tests::middle",
                "--nocapture",
                "--ignored",
            ])
            .env("TETHER_PID_FILE", &pid_file)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "no sleep was started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim(), "sleep");
        middle.kill().unwrap();
        middle.wait().unwrap();
        while std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the tethered sleep outlived its parent"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The middle process of the test above (run only by it).
    #[test]
    #[ignore = "run by a_tethered_child_is_pinned_and_ends_with_its_parent"]
    fn middle() {
        let Some(file) = std::env::var_os("TETHER_PID_FILE") else {
            return;
        };
        let mut child = tethered(OsStr::new("sleep"), None)
            .unwrap()
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(file, child.id().to_string()).unwrap();
        // Killed before this returns (the test above ends this process outright).
        let _ = child.wait();
    }
}
