"""The nightly jobs as their runners would run them: the GitHub step's and the GitLab job's
shell, with a stand-in `loadgen` that keeps each command line it was given and exits as told.
Each night runs a new sitting (--again) into the store named by SHOWDOWN_DB from the
environment (never a --db on the command line, which would show its password), writes the
history as Markdown, and fails the night whose sitting made a measure worse (exit 4)."""

import os
import pathlib
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]

STUB = """#!/bin/sh
# A stand-in loadgen: keeps its command line, prints a history, and exits as told.
printf '%s\\n' "$*" >> "$STUB_OUT/calls"
case "$*" in
  *--fail-within*) exit "$STUB_HISTORY_EXIT" ;;
  history*) echo "### History of \\`nightly-example\\`" ;;
esac
exit 0
"""


def github_script():
    workflow = yaml.safe_load((ROOT / "ci/github/showdown-nightly.yml").read_text())
    job = workflow["jobs"]["nightly"]
    step = next(s for s in job["steps"] if s.get("name") == "Run a sitting and judge the history")
    env = {k: str(v) for k, v in job["env"].items() if not str(v).startswith("${{")}
    return "set -e\n" + step["run"], env, "summary.md"


def gitlab_script():
    job = yaml.safe_load((ROOT / "ci/gitlab/showdown-nightly.gitlab-ci.yml").read_text())["showdown-nightly"]
    # The lines after the install (cargo needs the network).
    script = job["script"]
    lines = script[next(i for i, line in enumerate(script) if line.startswith("cargo install")) + 1 :]
    return "set -e\n" + "\n".join(lines), {k: str(v) for k, v in job["variables"].items()}, "showdown-history.md"


def stub(tmp_path):
    """The stand-in loadgen's directory, and where it keeps what it was given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "loadgen").write_text(STUB)
    (bin_dir / "loadgen").chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    return bin_dir, out


@pytest.mark.parametrize("script", [github_script, gitlab_script], ids=["github", "gitlab"])
@pytest.mark.parametrize("history_exit, job_exit", [(0, 0), (4, 4), (1, 1)])
def test_a_night_runs_a_new_sitting_and_fails_when_it_made_a_measure_worse(tmp_path, script, history_exit, job_exit):
    run, variables, summary = script()
    bin_dir, out = stub(tmp_path)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(out),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        **variables,
        "SHOWDOWN_DB": "postgres://showdown:s3cret@db.example.invalid/showdown",
        "STUB_OUT": str(out),
        "STUB_HISTORY_EXIT": str(history_exit),
    }
    done = subprocess.run(["bash", "-c", run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == job_exit, done.stdout + done.stderr
    calls = (out / "calls").read_text().splitlines()
    assert calls[0].startswith("experiment run showdown/nightly.toml --again"), calls
    # The references are the file's `[history] references`: none on the command line.
    assert calls[1] == "history --experiment nightly-example --output markdown", calls
    assert calls[2] == "history --experiment nightly-example --fail-within 1", calls
    assert not any("s3cret" in c or "--db" in c for c in calls), "the store's URL went on a command line"
    assert "History of" in (tmp_path / summary).read_text()


@pytest.mark.parametrize("script", [github_script, gitlab_script], ids=["github", "gitlab"])
def test_a_night_without_a_store_says_so_and_runs_nothing(tmp_path, script):
    run, variables, _ = script()
    bin_dir, out = stub(tmp_path)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        **variables,
        "SHOWDOWN_DB": "",
        "STUB_OUT": str(out),
        "STUB_HISTORY_EXIT": "0",
    }
    done = subprocess.run(["bash", "-c", run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "SHOWDOWN_DB is not set" in done.stdout + done.stderr
    assert not (out / "calls").exists()


def test_the_nightly_jobs_pin_what_they_install_and_never_cancel_a_sitting():
    # The actions' pins and the checkout's token: test_gate_jobs checks both workflows.
    workflow = yaml.safe_load((ROOT / "ci/github/showdown-nightly.yml").read_text())
    assert workflow["concurrency"]["cancel-in-progress"] is False
    for path in ["ci/github/showdown-nightly.yml", "ci/gitlab/showdown-nightly.gitlab-ci.yml"]:
        installs = [line for line in (ROOT / path).read_text().splitlines() if "cargo install" in line]
        assert installs and all('--rev "$SHOWDOWN_REV"' in line for line in installs), installs
