"""What the CI jobs' tests share: each job's own shell read from its YAML, the loadgen this tree
builds, and a user's repository as the jobs expect it: showdown/ holding a copy of
experiments/examples/ci/ (gate.toml, nightly.toml and the server they build), scaled down so
that a gate or a night takes about a minute here."""

import os
import pathlib
import shutil
import subprocess
import sys
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "experiments/examples/ci"
GITHUB_GATE = ROOT / "ci/github/showdown-gate.yml"
GITHUB_NIGHTLY = ROOT / "ci/github/showdown-nightly.yml"
GITLAB_GATE = ROOT / "ci/gitlab/showdown-gate.gitlab-ci.yml"
GITLAB_NIGHTLY = ROOT / "ci/gitlab/showdown-nightly.gitlab-ci.yml"


def loadgen():
    """The loadgen this tree builds (`cargo build --release`, which the test command runs first)."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    path = target / "release/loadgen"
    assert path.is_file(), f"{path} is not built: run cargo build --release -p loadgen first"
    return path


def workspace_version():
    """The workspace's version, from Cargo.toml."""
    for line in (ROOT / "Cargo.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise AssertionError("Cargo.toml has no version")


def rust_version():
    for line in (ROOT / "Cargo.toml").read_text().splitlines():
        if line.startswith("rust-version = "):
            return line.split('"')[1]
    raise AssertionError("Cargo.toml has no rust-version")


def github(path, job, step):
    """A GitHub job's step: its shell (run as Actions runs it, `bash -e`) and the job's env."""
    workflow = yaml.safe_load(path.read_text())
    spec = workflow["jobs"][job]
    found = next(s for s in spec["steps"] if s.get("name") == step)
    env = {k: str(v) for k, v in spec["env"].items() if not str(v).startswith("${{")}
    return "set -e\n" + found["run"], env


def gitlab(path, job, install):
    """A GitLab job's script, as its runner runs it (each line in turn, stopping at the first
    that fails), and its variables: `install` the item that installs loadgen, the rest after
    it (True), or the install alone (False); the lines before it need GitLab's own remote."""
    spec = yaml.safe_load(path.read_text())[job]
    script = spec["script"]
    at = next(i for i, item in enumerate(script) if "cargo install" in item)
    items = [script[at]] if install else script[at + 1 :]
    return "set -e\n" + "\n".join(items), {k: str(v) for k, v in spec["variables"].items()}


def scaled(text, replacements):
    """`text` with each (old, new) replaced exactly once: the example's shape is held, so a
    change to it that the test no longer scales fails here, by name."""
    for old, new in replacements:
        assert text.count(old) == 1, f"the example no longer holds {old!r} once"
        text = text.replace(old, new)
    return text


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def user_repository(path, gate=None, nightly=None):
    """A repository at `path` whose main holds showdown/ (the example's server, and the gate and
    nightly files given, else the example's), with origin/main at that commit, as the jobs'
    checkouts see it."""
    showdown = path / "showdown"
    shutil.copytree(EXAMPLE / "server", showdown / "server", ignore=shutil.ignore_patterns("gate-server"))
    (showdown / "gate.toml").write_text(gate or (EXAMPLE / "gate.toml").read_text())
    (showdown / "nightly.toml").write_text(nightly or (EXAMPLE / "nightly.toml").read_text())
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "ci@example.invalid")
    git(path, "config", "user.name", "ci")
    commit(path, "showdown")
    return path


def commit(repo, message):
    """Commits the working tree on the current branch, and points origin/main at main."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    git(repo, "update-ref", "refs/remotes/origin/main", "refs/heads/main")


def edit(path, old, new):
    """Replaces `old` (there once) with `new` in the file at `path`."""
    text = path.read_text()
    assert text.count(old) == 1, f"{path} no longer holds {old!r} once"
    path.write_text(text.replace(old, new))


def with_loadgen(env):
    """`env` with this tree's loadgen first on PATH, as an install would have put it."""
    bin_dir = loadgen().parent
    return {**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def run(shell, cwd, env, timeout):
    """The job's shell, run by bash in `cwd` with `env` (and HOME, and what git needs)."""
    full = {"HOME": os.environ.get("HOME", str(cwd)), "LANG": "C.UTF-8", **env}
    return subprocess.run(["bash", "-c", shell], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


# What a run's diagnosis says when other processes, not the server, held the generator back.
HELD_BACK = "Cause: other processes on the generator's CPUs"


def busy_cores(seconds=2.0):
    """How many CPUs' worth this host was busy over `seconds` (all processes, from /proc/stat's
    first line: everything but idle and iowait), read while this test runs nothing."""

    def ticks():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields), idle

    total0, idle0 = ticks()
    time.sleep(seconds)
    total1, idle1 = ticks()
    elapsed = total1 - total0
    if elapsed <= 0:
        return 0.0
    return (os.cpu_count() or 1) * (elapsed - (idle1 - idle0)) / elapsed


# Below this many CPUs' worth of other processes' work, the host is quiet (the Rust suite's
# common::QUIET is stricter, 0.2, for runs of its own generator).
QUIET = 0.5


def wait_for_quiet(longest=30.0):
    """Waits at most `longest` seconds until other processes keep this host under QUIET CPUs
    busy (said on standard error while it waits); the last reading, in CPUs."""
    started = time.monotonic()
    busy = busy_cores()
    if busy >= QUIET:
        print(f"waiting up to {longest:.0f} s for the host to be quiet: other processes keep {busy:.2f} CPUs busy",
              file=sys.stderr)
    while busy >= QUIET and time.monotonic() - started < longest:
        busy = busy_cores()
    if busy >= QUIET:
        print(f"still {busy:.2f} CPUs busy with other processes after {longest:.0f} s: measuring anyway", file=sys.stderr)
    return busy


def measured(run, holds, longest=30.0):
    """`run(attempt)` once the host is quiet (at most `longest` seconds waited), and judged by
    `holds`: where it does not hold and other processes kept the host busy before or after it,
    run once more (attempt 2) after waiting again. Returns (result, None) where it held or the
    host was quiet around it (a failure there is the test's), or (result, why) where the host
    stayed busy both times: why this test cannot measure here (a busy laptop, a shared runner),
    for pytest.skip."""
    busy = 0.0
    for attempt in (1, 2):
        before = wait_for_quiet(longest)
        result = run(attempt)
        if holds(result):
            return result, None
        busy = max(before, busy_cores())
        if busy < QUIET:
            return result, None
    return result, (
        f"not measurable here: other processes kept {busy:.1f} CPUs busy around the run, twice "
        f"(quiet is under {QUIET}); what it measured did not hold"
    )


def not_measurable_here(said):
    """Where a job's run says other processes held its generator back and, read again after
    it, this host is still at least half a CPU busy with them: the reason this test cannot
    measure here (a busy laptop, a shared runner), else None (a held-back run on a quiet host
    stays the test's failure)."""
    if HELD_BACK not in said:
        return None
    busy = busy_cores()
    if busy < 0.5:
        return None
    line = next((text.strip() for text in said.splitlines() if HELD_BACK in text), "")
    return (
        f"not measurable here: {busy:.1f} CPUs busy with other processes after the run; "
        f"the run said: {line[:300]}"
    )

