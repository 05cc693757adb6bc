"""The Dockerfile of the gun and the probe: what it is made of is checked everywhere, and where a
Docker daemon answers it is built and run.

    python3 -m pytest -q scripts/tests/test_dockerfile.py
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
INSTRUCTIONS = [
    line.strip()
    for line in re.sub(r"\\\n\s*", " ", DOCKERFILE).splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]


def rust_version():
    m = re.search(r'^rust-version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M)
    return m.group(1)


def test_its_bases_are_pinned_and_its_rust_is_the_one_the_workspace_states():
    bases = [i.split()[1] for i in INSTRUCTIONS if i.startswith("FROM ")]
    assert len(bases) == 2, bases
    for base in bases:
        name, _, tag = base.partition(":")
        assert tag and tag != "latest", f"{base}: pin a tag"
    assert bases[0].startswith(f"rust:{rust_version()}-"), (bases[0], rust_version())


def test_it_builds_the_workspaces_two_binaries_locked_and_copies_those():
    build = [i for i in INSTRUCTIONS if i.startswith("RUN cargo build")]
    assert build == ["RUN cargo build --release --locked -p loadgen -p probe"], build
    for crate in ("loadgen", "probe"):
        assert (ROOT / "crates" / crate / "src" / "main.rs").is_file(), crate
    copy = [i for i in INSTRUCTIONS if i.startswith("COPY --from=build")]
    assert copy == [
        "COPY --from=build /src/target/release/loadgen /src/target/release/probe /usr/local/bin/"
    ], copy
    assert INSTRUCTIONS[-2:] == ['ENTRYPOINT ["loadgen"]', 'CMD ["--help"]']


def test_it_runs_as_a_user_of_its_own_and_its_context_leaves_the_build_out():
    users = [i.split()[1] for i in INSTRUCTIONS if i.startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), users
    assert INSTRUCTIONS.index(f"USER {users[-1]}") > max(
        n for n, i in enumerate(INSTRUCTIONS) if i.startswith("RUN ")
    ), "USER after the last RUN"
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert "target/" in ignored and ".git/" in ignored


def docker_answers():
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30).returncode == 0


@pytest.mark.skipif(not docker_answers(), reason="no Docker daemon answers here")
def test_where_docker_answers_it_builds_and_loadgen_runs_inside():
    tag = "showdown-test:dockerfile"
    subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, timeout=3600)
    out = subprocess.run(
        ["docker", "run", "--rm", tag, "--version"], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.startswith("loadgen "), out.stdout
    subprocess.run(["docker", "rmi", tag], check=False, timeout=120)
