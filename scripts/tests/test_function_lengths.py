"""The house's limit on function length (scripts/function-lengths.py): no function of the
workspace is over 150 lines, and the count reads code, not the braces in its strings, comments
and character literals, and leaves test modules out.

    python3 -m pytest -q scripts/tests/test_function_lengths.py
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "function-lengths.py"


def run(root, *more):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *more],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_function_of_the_workspace_is_over_150_lines():
    out = run(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 over 150" in out.stdout, out.stdout


SOURCE = '''//! A crate of three functions { in a comment
pub fn short() -> char {
    let _ = "a brace { in a string";
    let _ = r#"a raw "{" brace"#;
    let _c = '{';
    /* a { block /* nested { */ comment */
    '}'
}

fn generic<'a>(x: &'a str) -> &'a str {
    x
}

pub trait Declared {
    fn no_body(&self);
}

fn long() {
LONG}

#[cfg(test)]
mod tests {
    fn inside_tests() {
        let _ = 1;
    }
}
'''


def test_braces_in_strings_comments_and_characters_are_not_code(tmp_path):
    src = tmp_path / "crates" / "one" / "src"
    src.mkdir(parents=True)
    (src / "lib.rs").write_text(SOURCE.replace("LONG", "    let _ = 0;\n" * 200), encoding="utf-8")
    out = run(tmp_path, "--show", "5")
    # short: its 7 lines; generic: 3 (a lifetime is not a character); long: 202; the trait's
    # declaration and the test module's function are not counted.
    assert out.stdout.splitlines()[0] == "3 functions: 1 over 60 lines, 1 over 150", out.stdout
    assert "  202 crates/one/src/lib.rs:18 long" in out.stdout, out.stdout
    assert "    7 crates/one/src/lib.rs:2 short" in out.stdout, out.stdout
    assert "    3 crates/one/src/lib.rs:10 generic" in out.stdout, out.stdout
    assert "inside_tests" not in out.stdout
    assert out.returncode == 1
    assert "1 over 150 lines: split them" in out.stderr
