"""A gate sitting's CPU-per-request ratios referenced to the wake-up canary (`probe canary`,
run beside the target on its CPUs): each round's ratio candidate ÷ baseline divided by the
canary's cost per exchange over the candidate's run ÷ over the baseline's (each run's first
DURATION, `4s` or `500ms`: its load, not the idle roll after it). Used by
scripts/bench-gate-auto.sh (CANARY=1).

    python3 scripts/canary_ref.py VERDICT.json RUNS.db CANARY.jsonl FROM_S TO_S DURATION

prints one line: the rounds, the per-round sd of the ratios as read and as referenced, the
pooled ratios, and the correlation of the ratios' logs with the canary's."""
import json
import math
import sqlite3
import statistics
import sys


# `probe canary`'s --every as the script runs it: a line covers the 100 ms before its time.
EVERY_NS = 100_000_000


def canary_cost(lines, start_ns, end_ns):
    """The canary's mean CPU per exchange over the lines wholly within [start_ns, end_ns],
    weighted by exchanges."""
    cpu = exchanges = 0.0
    for line in lines:
        if start_ns + EVERY_NS <= line["wall_ns"] <= end_ns and line["cpu_ns_per_exchange"] is not None:
            cpu += line["cpu_ns_per_exchange"] * line["exchanges"]
            exchanges += line["exchanges"]
    return cpu / exchanges if exchanges else None


def round_runs(db, first_s, last_s, load_ns):
    """{(target, round): (start_ns, end_ns)} of the measured runs started within the sitting,
    over their load."""
    rows = db.execute(
        "SELECT name, started_at_ns FROM runs WHERE name NOT LIKE '%(warmup)%' "
        "AND status = 'complete' AND started_at_ns BETWEEN ? AND ? ORDER BY started_at_ns",
        (int(first_s * 1e9), int(last_s * 1e9)),
    )
    runs = {}
    for name, start in rows:
        target, _, number = name.rpartition("target=")[2].partition(" #")
        if number.isdigit():
            runs[(target, int(number))] = (start, start + load_ns)
    return runs


def nanos(duration):
    """`4s`, `500ms` or `1m` in ns."""
    for unit, scale in (("ms", 1e6), ("s", 1e9), ("m", 60e9)):
        if duration.endswith(unit):
            return int(float(duration[: -len(unit)]) * scale)
    raise ValueError(f"a duration such as 4s, 500ms or 1m, not {duration!r}")


def read_lines(path):
    """The canary's JSON lines; a line cut short (the canary ended mid-write) is left out."""
    lines = []
    for text in open(path):
        try:
            lines.append(json.loads(text))
        except ValueError:
            continue
    return lines


def main(verdict, store, canary, first_s, last_s, duration):
    gate = json.load(open(verdict))[0]
    cpu = next(m for m in gate["measures"] if m["measure"] == "cpu")
    lines = read_lines(canary)
    runs = round_runs(sqlite3.connect(store), float(first_s), float(last_s), nanos(duration))
    base, candidate = gate["baseline"], gate["candidate"]
    # The verdict's ratios are of the rounds both builds completed, in order: pair them with
    # the stored rounds only where every round has both.
    rounds = sorted({n for _, n in runs})
    if any((t, n) not in runs for n in rounds for t in (base, candidate)) or len(rounds) != len(cpu["ratios"]):
        print(f"  the canary: {len(cpu['ratios'])} ratios against {len(rounds)} stored rounds, not paired")
        return
    read, referenced, canaries = [], [], []
    for number, ratio in enumerate(cpu["ratios"], start=1):
        spans = runs.get((candidate, number)), runs.get((base, number))
        costs = [canary_cost(lines, *span) if span else None for span in spans]
        if ratio <= 0 or None in costs:
            continue
        read.append(math.log(ratio))
        canaries.append(math.log(costs[0] / costs[1]))
        referenced.append(read[-1] - canaries[-1])
    if len(read) < 3:
        print("  the canary: fewer than 3 rounds with its readings, nothing to say")
        return
    corr = statistics.correlation(read, canaries) if statistics.stdev(canaries) > 0 else float("nan")
    print(
        f"  the canary: {len(read)} rounds; per-round sd {statistics.stdev(read) * 100:.1f} % as read, "
        f"{statistics.stdev(referenced) * 100:.1f} % referenced; pooled {math.exp(statistics.fmean(read)):.3f} "
        f"as read, {math.exp(statistics.fmean(referenced)):.3f} referenced; correlation {corr:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
