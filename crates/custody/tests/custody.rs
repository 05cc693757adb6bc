//! Groups end whole (a server that daemonizes included, where a cgroup holds it), and a runner
//! killed outright has what it left ended by the next one's sweep.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use custody::{Group, Holding, Identity};

/// A shell that daemonizes a `sleep` (a new session, its parent gone) and prints its PID.
fn daemonizing_shell() -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", "setsid sh -c 'sleep 300 & echo $!' ; sleep 300"]);
    c.stdin(Stdio::null()).stdout(Stdio::piped());
    c
}

fn gone(pid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        if !alive {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_group_ends_whole_with_what_left_its_process_group() {
    let mut group = Group::new("daemonizing shell");
    let mut command = daemonizing_shell();
    group.hold(&mut command);
    let mut child = command.spawn().unwrap();
    group.started(child.id());
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let daemon: i32 = line.trim().parse().unwrap();
    let members = group.members();
    assert!(members.contains(&(child.id() as i32)), "{members:?}");
    match group.holding().clone() {
        Holding::Cgroup(dir) => {
            assert!(members.contains(&daemon), "the daemon is held: {members:?}");
            assert!(group.end() >= 2);
            assert!(gone(daemon, Duration::from_secs(5)), "the daemon was ended");
            assert!(!dir.exists(), "the cgroup was removed");
        }
        Holding::ProcessGroup => {
            // Without a cgroup, a process that left the group is out of reach: the docs say so.
            assert!(!members.contains(&daemon));
            group.end();
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(daemon).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
    }
    let _ = child.wait();
    assert!(gone(child.id() as i32, Duration::from_secs(5)));
}

/// Plays a runner: a group with a `sleep` in it and a directory to remove, then waits to be
/// killed. Run by the next test as a process of its own.
#[test]
#[ignore = "run by a_runner_killed_outright_has_what_it_left_ended"]
// Never waited for: this runner is killed before it could, which is the point.
#[allow(clippy::zombie_processes)]
fn runner_role() {
    if std::env::var_os("CUSTODY_ROLE").is_none() {
        return;
    }
    let dir = std::env::var("CUSTODY_DIR").unwrap();
    let mut group = Group::new("target");
    let mut command = Command::new("sleep");
    command.arg("300");
    group.hold(&mut command);
    let child = command.spawn().unwrap();
    group.started(child.id());
    group.remove_with(dir.into());
    println!("ready {}", child.id());
    std::thread::sleep(Duration::from_secs(300));
    drop(group);
}

#[test]
fn a_runner_killed_outright_has_what_it_left_ended() {
    let scratch = tempfile::tempdir().unwrap();
    let left_dir = scratch.path().join("pgdata");
    std::fs::create_dir(&left_dir).unwrap();
    let mut runner = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "runner_role", "--ignored", "--nocapture"])
        .env("CUSTODY_ROLE", "runner")
        .env("CUSTODY_DIR", &left_dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(runner.stdout.take().unwrap());
    let mut sleeper = None;
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        if let Some(pid) = line.trim().strip_prefix("ready ") {
            sleeper = Some(pid.parse::<i32>().unwrap());
            break;
        }
        line.clear();
    }
    let sleeper = sleeper.expect("the runner started its target");
    let runner_pid = runner.id() as i32;
    let identity = Identity::of(sleeper).unwrap();
    runner.kill().unwrap();
    runner.wait().unwrap();
    assert!(
        identity.alive(),
        "a SIGKILLed runner leaves its target running"
    );

    let swept = custody::sweep();
    assert!(
        gone(sleeper, Duration::from_secs(5)),
        "the sweep ended it: {swept:?}"
    );
    assert!(!left_dir.exists(), "the sweep removed the path: {swept:?}");
    let left = swept
        .left
        .iter()
        .find(|l| l.runner == runner_pid)
        .unwrap_or_else(|| panic!("the sweep says what it ended: {swept:?}"));
    let said = left.to_string();
    assert!(said.contains("target (1 process)"), "{said}");
    assert!(said.contains(&left_dir.display().to_string()), "{said}");
    // A second sweep finds nothing of that runner's.
    assert!(custody::sweep().left.iter().all(|l| l.runner != runner_pid));
}
