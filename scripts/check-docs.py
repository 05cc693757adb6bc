#!/usr/bin/env python3
"""Every command line the docs show or the tools suggest, held to the tools' own --help; every
relative link, to a file; a manual page for every command.

    python3 scripts/check-docs.py [--root DIR] [--bin DIR]

Reads README.md and docs/**/*.md under --root (the repository by default). A command line is a
line of a code block, or an inline code span, that starts with loadgen, probe or report (also
after `cargo run --release -p NAME --`, `target/release/NAME`, `taskset -c CPUS` or
`scripts/twin.sh op --`). Its subcommands are followed as `--help` lists them, and each flag it
gives must be in the help of the deepest one. A relative link must name a file that exists, and
an anchor into a Markdown file one of its headings (GitHub's rule for their ids). Prints one
line per mismatch and exits 1 if there is any; the binaries come from --bin (target/release).

The tools' own suggestions are held the same way: a backquoted command line in any command's
--help, or in a string of the tools' source (an error's "run `loadgen …`"), outside tests. And
`loadgen man` must hold a page for every visible command, to any depth. No command line may
put a secret where every local user can read it: `$SHOWDOWN_DB` or another secret variable, a
password in a URL, a secret header's value.
"""

import argparse
import functools
import pathlib
import re
import shlex
import subprocess
import sys

TOOLS = ("loadgen", "probe", "report")
# What may come before a tool's name on a command line, and is not its.
PREFIXES = [
    re.compile(r"^cargo run (?:--release )?-p (loadgen|probe|report) -- "),
    re.compile(r"^(?:\./)?target/release/(loadgen|probe|report) "),
    re.compile(r"^\./(loadgen|probe|report) "),
]
# A secret on a command line, which every local user can read (ps, /proc/PID/cmdline): the
# store's URL or the headers from the variables that hold them, a password in a URL, a secret
# header's value.
SECRET_VARIABLES = re.compile(r"\$\{?(SHOWDOWN_DB|SHOWDOWN_HEADERS|DATABASE_URL|PGPASSWORD)\b")
PASSWORD_IN_URL = re.compile(r"://[^/@\s:]+:[^/@\s]+@")
SECRET_HEADER = re.compile(r"^\s*(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token)\s*:", re.I)
WRAPPERS = [
    re.compile(r"^(?:sudo |env (?:[A-Z_]+=\S+ )*)"),
    re.compile(r"^taskset -c \S+ "),
    re.compile(r"^scripts/twin\.sh op -- "),
    re.compile(r"^(?:[A-Z_]+=\S+ )+"),
]
OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", ")", "("}


@functools.cache
def help_of(bin_dir, path):
    """The --help text of `path` (the tool and its subcommands), or None if it has none."""
    out = subprocess.run(
        [str(pathlib.Path(bin_dir) / path[0]), *path[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return out.stdout if out.returncode == 0 else None


@functools.cache
def every_flag(bin_dir, tool):
    """The flags of every command of `tool`, for a span that names the tool and a flag only
    (`loadgen --threads`: a flag of one of its commands)."""
    found, stack = set(), [(tool,)]
    while stack:
        path = stack.pop()
        text = help_of(bin_dir, path) or ""
        found |= flags(text)
        stack.extend(path + (s,) for s in subcommands(text) if s != "help")
    return found


def subcommand(bin_dir, path, word):
    """Whether `word` is a subcommand of `path`, listed or hidden (`loadgen gun`)."""
    if word in subcommands(help_of(bin_dir, path) or ""):
        return True
    text = help_of(bin_dir, path + (word,))
    return text is not None and f" {word} " in (text.split("Usage:", 1) + [""])[1].splitlines()[0] + " "


def subcommands(text):
    """The names listed under "Commands:" in a --help text."""
    names, listing = set(), False
    for line in text.splitlines():
        if line.startswith("Commands:"):
            listing = True
            continue
        if listing:
            m = re.match(r"^  (\S+)", line)
            if not m:
                if line and not line.startswith(" "):
                    break
                continue
            names.add(m.group(1))
    return names


def flags(text):
    """Every flag a --help text names: long (--name) and short (-n)."""
    found = set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", text))
    found |= set(re.findall(r"^\s+(-[a-zA-Z0-9]),", text, re.M))
    return found


def command_of(line):
    """(tool, the rest of the line) when `line` is a command line of one of the tools."""
    line = line.strip()
    changed = True
    while changed:
        changed = False
        for w in WRAPPERS:
            m = w.match(line)
            if m and m.end() > 0:
                line = line[m.end():]
                changed = True
    for p in PREFIXES:
        m = p.match(line)
        if m:
            return m.group(1), line[m.end():]
    for tool in TOOLS:
        if line == tool or line.startswith(tool + " "):
            return tool, line[len(tool):]
    return None


def tokens(rest):
    """The words of a command line up to its first shell operator or comment; None when it
    does not parse as shell (an inline span cut short, a placeholder)."""
    lexer = shlex.shlex(rest, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        return None
    out = []
    for w in words:
        if w in OPERATORS or (w and set(w) <= set("|&;<>()")):
            break
        out.append(w)
    return out


def secrets_in(words):
    """Why a command line puts a secret where every local user reads it (a list of sentences)."""
    found = []
    for i, w in enumerate(words):
        if SECRET_VARIABLES.search(w):
            found.append(f"{w} puts a secret on the command line: leave it to the environment")
        elif PASSWORD_IN_URL.search(w):
            found.append("a password in a URL on the command line: give the store as SHOWDOWN_DB")
        elif i > 0 and words[i - 1] in ("-H", "--header") and SECRET_HEADER.match(w):
            found.append("a secret header on the command line: give it in SHOWDOWN_HEADERS")
    return found


def check_command(bin_dir, tool, rest):
    """What is wrong with one command line (a list of sentences)."""
    words = tokens(rest)
    if words is None:
        return []
    secrets = secrets_in(words)
    if secrets:
        return secrets
    path = [tool]
    text = help_of(bin_dir, tuple(path))
    if text is None:
        return [f"`{tool} --help` fails"]
    problems = []
    for i, w in enumerate(words):
        if w == "--":
            break
        if w.startswith("-") and w != "-":
            if re.match(r"^-\d", w):  # a negative number, a value
                continue
            flag = w.split("=", 1)[0]
            if not flag.startswith("--") and len(flag) > 2:
                flag = flag[:2]  # -c1 and the like: the short flag with its value
            if flag in ("--help", "-h", "--version", "-V"):
                continue
            if flag not in flags(text) and not (
                len(path) == 1 and flag in every_flag(bin_dir, tool)
            ):
                problems.append(f"{flag} is not in `{' '.join(path)} --help`")
            continue
        subs = subcommands(text)
        if subs and not any(words[j].startswith("-") for j in range(i)):
            if w != "help" and subcommand(bin_dir, tuple(path), w):
                path.append(w)
                text = help_of(bin_dir, tuple(path))
                if text is None:
                    return [f"`{' '.join(path)} --help` fails"]
                continue
            # A bare word where a subcommand is expected is one that does not exist (a URL or
            # a file there is an argument).
            if re.match(r"^[a-z][a-z-]*$", w):
                problems.append(f"`{' '.join(path)}` has no subcommand {w!r}")
                break
    return problems


def slug(heading):
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(path):
    ids, seen = set(), {}
    fence = False
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        ids.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not fence:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            ids.add(s if n == 0 else f"{s}-{n}")
    return ids


def check_link(md, target):
    if re.match(r"^[a-z]+:", target) or target.startswith("//"):
        return None
    file, _, anchor = target.partition("#")
    dest = md if not file else (md.parent / file)
    if not dest.exists():
        return f"link {target}: no {file}"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest.resolve()):
        return f"link {target}: {dest.name} has no heading #{anchor}"
    return None


def documents(root):
    yield root / "README.md"
    yield from sorted((root / "docs").rglob("*.md"))


def check(root, bin_dir):
    problems = []
    commands = 0
    for md in documents(root):
        if not md.exists():
            continue
        fence = None
        pending = ""
        for number, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{md.relative_to(root)}:{number}"
            m = re.match(r"^\s*(```|~~~)\s*(\S*)", line)
            if m:
                fence = None if fence else (m.group(2) or "text")
                pending = ""
                continue
            lines = []
            if fence in ("sh", "bash", "shell", "console", "text"):
                text = re.sub(r"^\$ ", "", line.strip())
                if text.endswith("\\"):
                    pending += text[:-1] + " "
                    continue
                lines.append(pending + text)
                pending = ""
            elif fence is None:
                lines.extend(re.findall(r"`([^`]+)`", line))
                for target in re.findall(r"\]\(([^)\s]+)\)", line):
                    why = check_link(md, target)
                    if why:
                        problems.append(f"{where}: {why}")
            for text in lines:
                found = command_of(text)
                if found is None:
                    continue
                commands += 1
                for why in check_command(bin_dir, *found):
                    problems.append(f"{where}: `{text.strip()}`: {why}")
    return commands, problems


def command_paths(bin_dir, tool):
    """Every visible command of `tool`, as paths from it: (tool,), (tool, "runs"), (tool,
    "runs", "show"), …"""
    found, stack = [], [(tool,)]
    while stack:
        path = stack.pop()
        found.append(path)
        text = help_of(bin_dir, path) or ""
        stack.extend(path + (s,) for s in sorted(subcommands(text)) if s != "help")
    return sorted(found)


def check_man(bin_dir):
    """`loadgen man` holds a page for every visible command, to any depth (`loadgen-runs-show`)."""
    out = subprocess.run([str(pathlib.Path(bin_dir) / "loadgen"), "man"], capture_output=True, text=True, timeout=60, check=False)
    if out.returncode != 0:
        return ["`loadgen man` fails"]
    pages = set(re.findall(r"^\.TH (\S+) ", out.stdout, re.M))
    return [
        f"`loadgen man` has no page {'-'.join(path)} for `{' '.join(path)}`"
        for path in command_paths(bin_dir, "loadgen")
        if "-".join(path) not in pages
    ]


def check_suggestions(root, bin_dir):
    """Every command line a tool suggests, in its --help or in the messages its source writes
    (a backquoted `loadgen …`, `probe …` or `report …`), held to the tools' --help as the docs'
    are: a suggestion that names no such command or flag sends its reader nowhere."""
    problems, seen = [], 0
    for tool in TOOLS:
        for path in command_paths(bin_dir, tool):
            for span in re.findall(r"`([^`\n]+)`", help_of(bin_dir, path) or ""):
                found = command_of(span)
                if found:
                    seen += 1
                    problems += [f"`{' '.join(path)} --help`: `{span}`: {why}" for why in check_command(bin_dir, *found)]
    for source in sorted((root / "crates").rglob("*.rs")):
        if "tests" in source.parts or "benches" in source.parts:
            continue
        text = source.read_text(encoding="utf-8")
        # Code under #[cfg(test)] is the tests', not a message to a user.
        text = text.split("#[cfg(test)]", 1)[0]
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
                for span in re.findall(r"`([^`]+)`", literal):
                    found = command_of(span)
                    if found:
                        seen += 1
                        where = f"{source.relative_to(root)}:{number}"
                        problems += [f"{where}: `{span}`: {why}" for why in check_command(bin_dir, *found)]
    return seen, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = pathlib.Path(__file__).resolve().parent.parent
    parser.add_argument("--root", type=pathlib.Path, default=here)
    parser.add_argument("--bin", type=pathlib.Path, default=here / "target" / "release")
    args = parser.parse_args()
    for tool in TOOLS:
        if not (args.bin / tool).is_file():
            print(f"check-docs: no {args.bin / tool}: build it (cargo build --release -p {tool})", file=sys.stderr)
            return 2
    commands, problems = check(args.root.resolve(), args.bin.resolve())
    suggested, wrong = check_suggestions(args.root.resolve(), args.bin.resolve())
    problems += wrong + check_man(args.bin.resolve())
    for p in problems:
        print(p)
    print(
        f"check-docs: {commands} command lines in the docs, {suggested} suggested by the tools, {len(problems)} mismatches",
        file=sys.stderr,
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
