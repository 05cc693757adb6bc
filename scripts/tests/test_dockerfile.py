"""The Dockerfile of the gun and the probe: what it is made of is checked everywhere (its root is
built and run by test_image.py), and where a Docker daemon answers it is built and run.

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


def stages():
    """The Dockerfile's stages: [(base, [instructions after its FROM])]."""
    found = []
    for i in INSTRUCTIONS:
        if i.startswith("FROM "):
            found.append((i.split()[1], []))
        else:
            found[-1][1].append(i)
    return found


def test_its_build_is_pinned_and_its_rust_is_the_one_the_workspace_states():
    (build, _), (image, _) = stages()
    name, _, tag = build.partition(":")
    assert tag and tag != "latest", f"{build}: pin a tag"
    assert build.startswith(f"rust:{rust_version()}-"), (build, rust_version())
    assert image == "scratch", f"the image's base is {image}: the gun's image is empty but for its root"


def test_it_builds_the_static_root_locked_and_the_image_is_that_root_alone():
    (_, build), (_, image) = stages()
    assert "RUN bash scripts/static-build.sh /image" in build, build
    setup = [i for i in build if i.startswith("RUN apt-get")]
    assert setup and "musl-tools" in setup[0] and 'rustup target add "$(uname -m)-unknown-linux-musl"' in setup[0]
    script = (ROOT / "scripts" / "static-build.sh").read_text(encoding="utf-8")
    assert 'cargo build --profile gun-image --locked --target "$target" -p loadgen -p probe' in script
    # The image's profile is the release build's, less only the line tables it strips.
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    profile = cargo.split("[profile.gun-image]", 1)[1].split("\n[", 1)[0]
    assert 'inherits = "release"' in profile and "debug = false" in profile, profile
    for crate in ("loadgen", "probe"):
        assert (ROOT / "crates" / crate / "src" / "main.rs").is_file(), crate
    assert [i for i in image if i.startswith("COPY")] == ["COPY --from=build /image/ /"], image
    assert not [i for i in image if i.startswith("RUN")], "an empty image runs nothing"
    assert image[-2:] == ['ENTRYPOINT ["/usr/local/bin/loadgen"]', 'CMD ["--help"]']


def test_it_runs_as_the_user_its_root_names_and_its_context_leaves_the_build_out():
    (_, _), (_, image) = stages()
    (user,) = [i.split()[1] for i in image if i.startswith("USER ")]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and uid != "0" and gid == uid, user  # numeric: an empty image has no lookup
    script = (ROOT / "scripts" / "static-build.sh").read_text(encoding="utf-8")
    assert f"user={uid}\n" in script, "static-build.sh's passwd names another user"
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
