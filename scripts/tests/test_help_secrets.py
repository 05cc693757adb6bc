"""No help text prints a secret from the environment: with a password set in every variable the
tools read, `--help` of every command of loadgen, probe and report (the hidden ones too) and
their `--version` never show it. clap prints an `env` flag's value in its help unless told not
to (`hide_env_values`); `report --help` once showed `[env: SHOWDOWN_DB=postgres://u:PW@h/db]`.

    python3 -m pytest -q scripts/tests/test_help_secrets.py
"""

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
BIN = (BIN if BIN.is_absolute() else ROOT / BIN) / "release"
SECRET = "HelpS3cretPw"

# Every variable the tools read (docs/loadgen.md lists them; `loadgen --help` too), each
# holding the secret the way a user would put it there.
ENVIRONMENT = {
    "SHOWDOWN_DB": f"postgres://showdown:{SECRET}@db.example.invalid/showdown",
    "SHOWDOWN_HEADERS": f"Authorization: Bearer {SECRET}",
    "DATABASE_URL": f"postgres://app:{SECRET}@db.example.invalid/app",
    "SHOWDOWN_TEST_POSTGRES_URL": f"postgres://postgres:{SECRET}@127.0.0.1:1/postgres",
    "SHOWDOWN_GUNS_SECRET_FILE": f"/tmp/{SECRET}.yaml",
    "SHOWDOWN_TARGETS": f"/tmp/{SECRET}",
    "SHOWDOWN_LOADGEN": f"/tmp/{SECRET}/loadgen",
    "TWIN_STATE_DIR": f"/tmp/{SECRET}",
    "POD_NAME": SECRET,
    "NODE_NAME": SECRET,
    "JOB_COMPLETION_INDEX": "0",
}
HIDDEN = {"loadgen": ["gun", "order", "target"], "probe": [], "report": []}


def helped(path):
    out = subprocess.run(
        [str(BIN / path[0]), *path[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **ENVIRONMENT},
        check=False,
    )
    return out.returncode, out.stdout + out.stderr


def subcommands(text):
    names, listing = [], False
    for line in text.splitlines():
        if line.startswith("Commands:"):
            listing = True
            continue
        if listing:
            m = re.match(r"^  (\S+)", line)
            if m:
                names.append(m.group(1))
            elif line and not line.startswith(" "):
                break
    return [n for n in names if n != "help"]


def test_no_help_or_version_prints_a_secret_from_the_environment():
    seen = 0
    for tool in ("loadgen", "probe", "report"):
        stack = [(tool,)] + [(tool, hidden) for hidden in HIDDEN[tool]]
        while stack:
            path = stack.pop()
            code, text = helped(path)
            assert code == 0, f"{' '.join(path)} --help: {text}"
            seen += 1
            assert SECRET not in text, f"`{' '.join(path)} --help` printed a secret from the environment:\n{text}"
            stack.extend(path + (sub,) for sub in subcommands(text))
        version = subprocess.run(
            [str(BIN / tool), "--version"], capture_output=True, text=True, timeout=30, env={**os.environ, **ENVIRONMENT}
        )
        assert SECRET not in version.stdout + version.stderr
    # loadgen's commands and subcommands, probe's and report's: all of them walked.
    assert seen >= 20, seen
