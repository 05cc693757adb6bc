"""The gate's CI jobs as their runners would run them: the GitHub step's and the GitLab job's
shell, in a real git repository whose base branch holds the gate, with a stand-in `loadgen`
that exits as told and keeps the file it was given. A pull request cannot change its own gate,
and a gate that failed to measure (exit 1) or could not tell (exit 5) fails the job unless the
user opts out of the latter."""

import os
import pathlib
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE_GATE = 'name = "gate"  # the base branch\'s\n'
PR_GATE = 'name = "gate"\nmax_regression = "cpu=500%"  # loosened by the pull request\n'

STUB = """#!/bin/sh
# A stand-in loadgen: keeps its arguments and the gate file it was given, exits as told.
printf '%s\\n' "$@" > "$STUB_OUT/args"
cat "$3" > "$STUB_OUT/gate"
exit "$STUB_EXIT"
"""


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A repository whose main (its origin's, as CI sees it) holds the gate, and whose working
    tree is a pull request that loosened it."""
    repo = tmp_path / "repo"
    (repo / "showdown").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.invalid")
    git(repo, "config", "user.name", "ci")
    (repo / "showdown" / "gate.toml").write_text(BASE_GATE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "gate")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "showdown" / "gate.toml").write_text(PR_GATE)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "loadgen").write_text(STUB)
    (bin_dir / "loadgen").chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    return repo, bin_dir, out


def github_script():
    workflow = yaml.safe_load((ROOT / "ci/github/showdown-gate.yml").read_text())
    job = workflow["jobs"]["gate"]
    step = next(s for s in job["steps"] if s.get("name") == "Compare the pull request with its base")
    return step["run"], dict(job["env"]), {"BASE_REF": "main"}


def gitlab_script():
    job = yaml.safe_load((ROOT / "ci/gitlab/showdown-gate.gitlab-ci.yml").read_text())["showdown-gate"]
    # The lines after the install (the fetch, the token and cargo need GitLab's network).
    script = job["script"]
    lines = script[next(i for i, line in enumerate(script) if line.startswith("cargo install")) + 1 :]
    return "set -e\n" + "\n".join(lines), dict(job["variables"]), {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}


@pytest.mark.parametrize("script", [github_script, gitlab_script], ids=["github", "gitlab"])
@pytest.mark.parametrize(
    "loadgen_exit, allow_inconclusive, job_exit",
    [(0, "false", 0), (4, "false", 4), (1, "false", 1), (5, "false", 5), (5, "true", 0), (1, "true", 1)],
)
def test_the_job_fails_what_the_gate_could_not_measure_and_runs_the_base_branchs_gate(
    repo, script, loadgen_exit, allow_inconclusive, job_exit
):
    repo, bin_dir, out = repo
    run, variables, base = script()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(out),
        "GITHUB_STEP_SUMMARY": str(out / "summary.md"),
        **{k: str(v) for k, v in variables.items()},
        **base,
        "SHOWDOWN_ALLOW_INCONCLUSIVE": allow_inconclusive,
        "STUB_OUT": str(out),
        "STUB_EXIT": str(loadgen_exit),
    }
    done = subprocess.run(["bash", "-c", run], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == job_exit, done.stdout + done.stderr
    assert (out / "gate").read_text() == BASE_GATE, "the pull request's own gate was run"
    args = (out / "args").read_text().split("\n")
    assert args[:3] == ["experiment", "run", "showdown/gate.base.toml"], args


@pytest.mark.parametrize("workflow_file, job", [("showdown-gate.yml", "gate"), ("showdown-nightly.yml", "nightly")])
def test_the_workflows_pin_their_actions_and_keep_no_token(workflow_file, job):
    workflow = yaml.safe_load((ROOT / "ci/github" / workflow_file).read_text())
    steps = workflow["jobs"][job]["steps"]
    for step in steps:
        if "uses" in step:
            ref = step["uses"].split("@", 1)[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), step["uses"]
    checkout = next(s for s in steps if "uses" in s and s["uses"].startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False


def test_the_jobs_pin_what_they_install_and_keep_no_token():
    for text in [
        (ROOT / "ci/github/showdown-gate.yml").read_text(),
        (ROOT / "ci/gitlab/showdown-gate.gitlab-ci.yml").read_text(),
    ]:
        installs = [line for line in text.splitlines() if "cargo install" in line]
        assert installs and all('--rev "$SHOWDOWN_REV"' in line for line in installs), installs
    gitlab = yaml.safe_load((ROOT / "ci/gitlab/showdown-gate.gitlab-ci.yml").read_text())["showdown-gate"]
    assert "allow_failure" not in gitlab
    assert any("git remote set-url origin" in line for line in gitlab["script"])
