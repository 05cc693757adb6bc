#!/usr/bin/env python3
"""How long the workspace's functions are: every `fn` with a body in the crates' and the Rust
contestant's sources, outside tests, measured in lines from its `fn` line to its closing brace.

    python3 scripts/function-lengths.py [--root DIR] [--show N] [--most LINES]

Prints how many are over 60 and over 150 lines, and the N longest (10). Exits 1 when one is over
--most lines (150): the house's limit (issue 77). Comments, strings (raw ones too) and character
literals are read as such, so a brace inside one is not counted; a `#[cfg(test)]` module and the
files of `tests/` directories are left out.
"""

import argparse
import pathlib
import re
import sys

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_only(text):
    """The text with comments, strings and character literals blanked (newlines kept), so that
    what is left are the code's own braces and words at their places."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        two = text[i : i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text[j : j + 2] == "/*":
                    depth, j = depth + 1, j + 2
                elif text[j : j + 2] == "*/":
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"[A-Za-z0-9_]", text[i - 1 : i] or " "):
            hashes = len(re.match(r"r(#*)", text[i:]).group(1))
            end = '"' + "#" * hashes
            j = text.find(end, i + 2 + hashes)
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A character literal ('a', '\n', '\u{1F600}', '{'), or a lifetime ('a): blanked
            # only when it closes as a literal.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, lines) of every function with a body, outside `#[cfg(test)]` modules."""
    code = code_only(text)
    found = []
    skip_to = -1
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{|\bfn\s+[A-Za-z_]", code):
        if m.start() < skip_to:
            continue
        if m.group(0).startswith("#"):
            skip_to = close_of(code, m.end() - 1)
            continue
        name = FN.match(code, m.start()).group(1)
        # Its body: the first `{` before a `;` (a declaration in a trait has none).
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        end = close_of(code, j)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        found.append((name, first, last - first + 1))
    return found


def close_of(code, open_at):
    """The index of the brace that closes the one at `open_at`."""
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def sources(root):
    """The Rust sources measured: each crate's and the Rust contestant's, not their tests."""
    for path in sorted(root.glob("crates/*/src/**/*.rs")) + sorted(root.glob("targets/rust/src/**/*.rs")):
        if "tests" in path.relative_to(root).parts or path.name == "tests.rs":
            continue
        yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--show", type=int, default=10)
    parser.add_argument("--most", type=int, default=150)
    args = parser.parse_args()
    all_fns = []
    for path in sources(args.root):
        rel = path.relative_to(args.root)
        all_fns += [(lines, f"{rel}:{line}", name) for name, line, lines in functions(path.read_text())]
    all_fns.sort(reverse=True)
    over = lambda n: sum(1 for f in all_fns if f[0] > n)
    print(f"{len(all_fns)} functions: {over(60)} over 60 lines, {over(150)} over 150")
    for lines, where, name in all_fns[: args.show]:
        print(f"{lines:5} {where} {name}")
    too_long = [f for f in all_fns if f[0] > args.most]
    if too_long:
        print(f"function-lengths: {len(too_long)} over {args.most} lines: split them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
