"""The docs' command lines and links (scripts/check-docs.py), against the release binaries the
suite built: the repository's own docs hold, and a page with a wrong flag, a subcommand that
does not exist and a broken link is caught, each named with its file and line.

    python3 -m pytest -q scripts/tests/test_docs.py
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-docs.py"
BIN = ROOT / "target" / "release"


def run(root):
    return subprocess.run(
        [sys.executable, str(CHECK), "--root", str(root), "--bin", str(BIN)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_command_line_and_link_in_the_docs_holds():
    out = run(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    counted = int(out.stderr.split("check-docs: ")[1].split(" command lines")[0])
    assert counted >= 200, out.stderr


def test_a_wrong_flag_a_missing_subcommand_and_a_broken_link_are_each_named(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A heading\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "# Readme\n\n"
        "```sh\n"
        "loadgen capacity http://127.0.0.1:8080/ --slo 'p99<=10ms' \\\n"
        "  --until 5% --no-such-flag 3   # a comment --not-a-flag\n"
        "cargo run --release -p loadgen -- experiment frobnicate x.toml\n"
        "taskset -c 0 loadgen history --experiment e --fail-within 1 | head\n"
        "```\n\n"
        "See `report --output markdown` and `probe serve --pid 1 --wrong`, "
        "[a heading](docs/other.md#a-heading), [gone](docs/gone.md) and "
        "[no such heading](docs/other.md#nowhere).\n",
        encoding="utf-8",
    )
    out = run(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    said = out.stdout.splitlines()
    assert len(said) == 5, out.stdout
    expected = [
        ("README.md:5: ", "--no-such-flag is not in `loadgen capacity --help`"),
        ("README.md:6: ", "`loadgen experiment` has no subcommand 'frobnicate'"),
        ("README.md:10: ", "--wrong is not in `probe serve --help`"),
        ("README.md:10: ", "link docs/gone.md: no docs/gone.md"),
        ("README.md:10: ", "link docs/other.md#nowhere: other.md has no heading #nowhere"),
    ]
    for where, why in expected:
        assert any(line.startswith(where) and line.endswith(why) for line in said), (why, said)
    assert "5 command lines in the docs" in out.stderr and "5 mismatches" in out.stderr


def test_a_suggestion_in_the_tools_source_that_names_no_command_is_caught(tmp_path):
    """A message of the tools that sends its reader to a command that does not exist, as
    `loadgen probe --pid` once did (the probe is `probe serve --pid`)."""
    (tmp_path / "README.md").write_text("# Readme\n", encoding="utf-8")
    source = tmp_path / "crates" / "x" / "src"
    source.mkdir(parents=True)
    (source / "lib.rs").write_text(
        'fn f() -> String {\n'
        '    "give --probe HOST:PORT (`loadgen probe --pid PID` on the server\'s host)".into()\n'
        '}\n'
        '#[cfg(test)]\n'
        'const T: &str = "`loadgen frob`";\n',
        encoding="utf-8",
    )
    out = run(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines == ["crates/x/src/lib.rs:2: `loadgen probe --pid PID`: `loadgen` has no subcommand 'probe'"], lines


def test_a_secret_on_a_documented_command_line_is_caught(tmp_path):
    """The docs never put a secret where every local user reads it (ps): the store's variable,
    a password in a URL, a secret header's value."""
    (tmp_path / "README.md").write_text(
        "# Readme\n\n"
        "```sh\n"
        'loadgen capacity --db "$SHOWDOWN_DB" --slo \'p99<=10ms\' http://127.0.0.1:8080/\n'
        "loadgen runs list --db postgres://showdown:s3cret@db/showdown\n"
        "loadgen attack -H 'Authorization: Bearer x' --rate 1 -d 1s http://127.0.0.1:8080/\n"
        "loadgen runs list\n"
        "```\n",
        encoding="utf-8",
    )
    out = run(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    said = out.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in said] == ["README.md:4", "README.md:5", "README.md:6"], said
    assert "leave it to the environment" in said[0] and "password in a URL" in said[1] and "SHOWDOWN_HEADERS" in said[2]
