"""End to end: the lab's twin on one machine (scripts/twin.sh), as root.

The twin comes up once for the module with three guns and the database 5 ms away each way
(Toxiproxy). One gun attacks POST /users under the probe into the PostgreSQL store in sd-db;
then two guns run one run group; then the operator's namespace, sd-op, drives each gun over
OpenSSH and shares their store; then `down` must leave nothing behind. Every figure checked
is read back from the store (`loadgen runs show … --output json`) or from the database.

    python3 -m pytest -q scripts/tests/test_twin.py
"""

import datetime
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

import container

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "scripts" / "twin.sh"
STATE = Path(os.environ.get("TWIN_STATE_DIR", "/run/showdown-twin"))
DELAY_MS = 5  # each way: a round trip to the database costs at least 10 ms
ROUND_TRIP_NS = 2 * DELAY_MS * 1_000_000
PROBE_INTERVAL_NS = 100_000_000
ROLL = "1s"  # pre- and post-roll of probe history kept with each run
ROLL_NS = 1_000_000_000
USER_BODY = '{"email":"twin{{seq}}@example.com","password":"{{hex:40}}"}'
# Showdown's histograms: nanoseconds, 1 µs resolution, 3 significant digits.
HDR = (1000, 24 * 3600 * 10**9, 3)
TWIN_USERS = ("sd-target",)
USERS_BEFORE = set()  # the twin's users that existed before it came up: down keeps those
GUNS = ("sd-gun", "sd-gun2", "sd-gun3")
PRIVSEP = Path("/run/sshd")  # sshd's privilege separation directory: down removes it if up made it
PRIVSEP_BEFORE = []


def skip_reason():
    if os.geteuid() != 0:
        return "the twin needs root (network namespaces, users, PostgreSQL as postgres)"
    if shutil.which("ip") is None:
        return "no ip command (iproute2): the twin is made of network namespaces"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"ip netns is unavailable here: {probe.stderr.strip()}"
    return None


pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def twin_logs():
    """The twin's process logs, for a failure's message."""
    logs = STATE / "logs"
    if not logs.is_dir():
        return "(no twin logs)"
    out = []
    for log in sorted(logs.iterdir()):
        lines = log.read_text(errors="replace").splitlines()[-15:]
        out.append(f"--- {log} (last {len(lines)} lines)\n" + "\n".join(lines))
    return "\n".join(out)


def twin(*args, timeout=60, check=True):
    """Runs scripts/twin.sh; a failure names the command, its output and the twin's logs."""
    cmd = [str(TWIN), *args]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(cmd)}: no answer within {timeout}s\n{e.stdout}\n{e.stderr}\n{twin_logs()}")
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {done.returncode} after {time.monotonic() - started:.1f}s\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\n{twin_logs()}"
        )
    return done


def loadgen_json(*args, timeout=30):
    return json.loads(twin("run", "--", *args, timeout=timeout).stdout)


def rows_in_db():
    return int(twin("psql", "-tAc", "SELECT count(*) FROM users").stdout.strip())


def wait_for_build(timeout=180):
    """The binaries may be being rebuilt under us (cargo replaces them): wait for them."""
    release = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"
    deadline = time.monotonic() + timeout
    for name, variable in (("loadgen", "LOADGEN"), ("probe", "PROBE")):
        path = Path(os.environ.get(variable, release / name))
        while not os.access(path, os.X_OK):
            assert time.monotonic() < deadline, f"{path} missing: cargo build --release -p {name}"
            time.sleep(1)


def probe_flags(env):
    return [
        "--probe", env["TWIN_PROBE"],
        "--probe-token-file", env["TWIN_PROBE_TOKEN_FILE"],
        "--probe-fingerprint", env["TWIN_PROBE_FINGERPRINT"],
        "--pre-roll", ROLL, "--post-roll", ROLL,
    ]


def users_load(env, *extra):
    return [
        "attack", *extra, "--timeout", "5s", "--output", "json",
        "-m", "POST", "-H", "Content-Type: application/json", "--body", USER_BODY,
        *probe_flags(env), env["TWIN_TARGET_URL"] + "/users",
    ]


@pytest.fixture(scope="module")
def env():
    status = twin("status", check=False)
    assert status.returncode == 3, (
        "a twin is already up on this machine; the test would take it down: "
        f"scripts/twin.sh down first\n{status.stdout}"
    )
    wait_for_build()
    USERS_BEFORE.update(u for u in TWIN_USERS if subprocess.run(["id", u], capture_output=True).returncode == 0)
    PRIVSEP_BEFORE.append(PRIVSEP.is_dir())
    # The probe's costly figures (FD kinds, TCP states: those that need its capabilities) come
    # at most every --slow-interval within --slow-budget, 2 s apart with the unit's defaults:
    # a higher budget puts several passes into a 2 s load.
    up = twin("up", "--guns", str(len(GUNS)), "--db-delay", str(DELAY_MS),
              "--probe-arg", "--slow-interval=200ms", "--probe-arg", "--slow-budget=10", timeout=120)
    print(up.stdout)
    exports = [shlex.split(line) for line in twin("env").stdout.splitlines()]
    assert all(words[0] == "export" for words in exports), exports
    yield dict(words[1].split("=", 1) for words in exports)
    if twin("status", check=False).returncode == 0:
        twin("down", timeout=60)


def samples_of(run):
    assert len(run["probes"]) == 1, run["probes"]
    return [r for r in run["probes"][0]["records"] if r["record"] == "sample"]


def test_one_gun_through_the_delay(env):
    again = twin("up", check=False)
    assert again.returncode == 1 and "already up" in again.stderr, again.stderr

    # The topology: a gun reaches the API host, not the database's link; on its store link the
    # database admits it to the runs' store only.
    no_route = twin("exec", "--", "timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/10.77.2.2/5432", check=False)
    assert no_route.returncode != 0, "sd-gun reached the database over the API host's link"
    refused = twin("exec", "--", "psql", "-X", "postgres://showdown@10.77.3.1/showdown", "-c", "SELECT 1",
                   check=False, timeout=15)
    assert refused.returncode != 0 and "pg_hba.conf" in refused.stderr, refused.stderr

    before = rows_in_db()
    run_id = str(uuid.uuid4())
    summary = loadgen_json(*users_load(env, "--run-id", run_id, "--rate", "300", "--duration", "2s"))
    run = loadgen_json("runs", "show", run_id, "--output", "json")

    # Every request answered 201, every row inserted.
    assert run["status"] == "complete", run["status"]
    stored = run["summary"]
    assert stored["requests"]["total"] == 600 and stored["requests"]["ok"] == 600, stored["requests"]
    assert stored["status_codes"] == {"201": 600}, stored["status_codes"]
    assert stored["errors"] == {}, stored["errors"]
    assert stored["latency"] == summary["latency"], "the stored summary differs from the printed one"
    assert rows_in_db() - before == 600

    # Through the database's delay: every insert waits at least one round trip through
    # Toxiproxy, while the gun's own link adds nothing (GET /now touches no database).
    for kind in ("corrected", "service"):
        p50 = stored["latency"][kind]["p50_ns"]
        assert p50 >= ROUND_TRIP_NS, f"POST /users {kind} p50 {p50 / 1e6:.2f} ms < {2 * DELAY_MS} ms"
    now = loadgen_json("attack", "--no-store", "--rate", "100", "--duration", "1s", "--timeout", "5s",
                       "--output", "json", env["TWIN_TARGET_URL"] + "/now")
    assert now["status_codes"] == {"200": 100}, now["status_codes"]
    assert now["latency"]["service"]["p50_ns"] < ROUND_TRIP_NS, now["latency"]

    # The probe's samples, across the link over TLS, on the run's timeline: from before the
    # first request to after the last response, with no hole, on the target's PID.
    probe = run["probes"][0]["meta"]
    assert probe["address"] == env["TWIN_PROBE"], probe
    assert probe["host"]["selector"] == "--port 8080", probe["host"]
    assert abs(probe["clock"]["offset_ns"]) < 1_000_000 and probe["clock"]["uncertainty_ns"] < 1_000_000, probe
    samples = samples_of(run)
    started, ended = run["meta"]["started_at_ns"], run["ended_at_ns"]
    load_end_ns = (stored["duration"]["attack_s"] + stored["duration"]["wait_s"]) * 1e9
    times = [s["t_ns"] for s in samples]
    assert times == sorted(times)
    assert times[0] <= 0 and times[-1] >= load_end_ns, (times[0], times[-1], load_end_ns)
    assert times[0] >= -ROLL_NS - PROBE_INTERVAL_NS and times[-1] <= ended - started + PROBE_INTERVAL_NS
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= 3 * PROBE_INTERVAL_NS, f"a hole of {max(gaps) / 1e6:.0f} ms in the samples"
    for s in samples:
        # Placed by the probe's wall clock (same machine: the offset is nanoseconds).
        assert abs(s["wall_ns"] - started - s["t_ns"]) < 1_000_000, s
    target_pid = int(env["TWIN_TARGET_PID"])
    watched = {s["target_pid"] for s in samples}
    assert watched == {target_pid}, (
        f"the probe watched {watched}, not the target (PID {target_pid}): as another user than the "
        "target's, without CAP_SYS_PTRACE, it cannot see which process holds port 8080"
    )

    # What running as the target's user gives the probe, with no capability: its io (0400,
    # ptrace-read), and each FD's kind and the TCP sockets (readlink of /proc/PID/fd/N).
    totals = [s["total"] for s in samples]
    assert all(t["read_bytes"] is not None and t["write_bytes"] is not None for t in totals), \
        "no /proc/PID/io: the probe does not run as the target's user"
    during = [s["total"] for s in samples if 0 <= s["t_ns"] <= load_end_ns]
    slow = [t for t in during if t["fd_kinds"] is not None and t["tcp"] is not None]
    assert slow, "no FD kinds or TCP states during the load: the probe could not read the target's FDs"
    assert max(t["fd_kinds"]["socket"] for t in slow) >= 2
    assert max(t["tcp"]["established"] for t in slow) >= 1
    assert max(t["fds"] for t in during) > totals[0]["fds"], "the load's connections never showed as FDs"
    assert totals[-1]["cpu_ns"] > totals[0]["cpu_ns"], "the target used no CPU under load"


def test_two_guns_one_group(env):
    before = rows_in_db()
    group = f"twin-{uuid.uuid4().hex[:8]}"
    zero = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=4)
    start_at = zero.strftime("%Y-%m-%dT%H:%M:%SZ")
    guns = []
    for gun in (1, 2):
        cmd = [str(TWIN), "run", "--gun", str(gun), "--",
               *users_load(env, "--run-group", group, "--shard", f"{gun - 1}/2", "--start-at", start_at,
                           "--rate", "400", "--duration", "2s")]
        guns.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for cmd, gun in guns:
        try:
            out, err = gun.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            gun.kill()
            out, err = gun.communicate()
        assert gun.returncode == 0, f"{' '.join(cmd)} exited {gun.returncode}\n{out}\n{err}\n{twin_logs()}"

    listed = loadgen_json("runs", "list", "--group", group, "--output", "json")
    assert sorted(r["shard"]["index"] for r in listed) == [0, 1], listed
    shards = [loadgen_json("runs", "show", r["id"], "--output", "json") for r in listed]
    merged = loadgen_json("runs", "show", "--group", group, "--output", "json")

    # One schedule from one time zero, split between the guns, all of it answered and kept.
    zero_ns = int(zero.timestamp()) * 1_000_000_000
    assert [s["meta"]["started_at_ns"] for s in shards] == [zero_ns, zero_ns]
    totals = [s["summary"]["requests"]["total"] for s in shards]
    assert totals == [400, 400], totals
    assert merged["summary"]["requests"]["total"] == sum(totals) == 800
    assert merged["summary"]["status_codes"] == {"201": 800}, merged["summary"]["status_codes"]
    assert rows_in_db() - before == 800
    assert all(samples_of(s) for s in shards), "a shard kept no probe samples"

    # The merged percentiles are those of the union of both shards' histograms, decoded and
    # added here by HdrHistogram_py from each shard's stored intervals.
    # The same reading of each shard's histograms gives its own stored figures first.
    quantiles = (("p50_ns", 0.5), ("p90_ns", 0.9), ("p99_ns", 0.99), ("p999_ns", 0.999))
    for kind in ("corrected", "service"):
        union = HdrHistogram(*HDR)
        for shard in shards:
            own = HdrHistogram(*HDR)
            for interval in shard["intervals"]:
                own.add(HdrHistogram.decode(interval[kind]))
            union.add(own)
            figures = shard["summary"]["latency"][kind]
            assert own.get_total_count() == figures["count"] == 400, kind
            assert [value_at_quantile(own, q) for _, q in quantiles] == [figures[k] for k, _ in quantiles], kind
        figures = merged["summary"]["latency"][kind]
        assert union.get_total_count() == figures["count"] == 800, kind
        assert union.get_min_value() == figures["min_ns"], kind
        assert union.get_max_value() == figures["max_ns"], kind
        for key, quantile in quantiles:
            assert value_at_quantile(union, quantile) == figures[key], f"{kind} {key}"
        assert figures["p50_ns"] >= ROUND_TRIP_NS, f"{kind} p50 {figures['p50_ns'] / 1e6:.2f} ms"


def op(*args, timeout=30, check=True):
    """A command in sd-op, the operator's machine, with the operator's environment."""
    return twin("op-exec", "--", *args, timeout=timeout, check=check)


def test_the_operator_over_ssh(env):
    assert Path(env["TWIN_GUNS_FILE"]).read_text().splitlines() == list(GUNS)
    ssh = ["ssh", "-F", env["TWIN_SSH_CONFIG"]]

    # Each gun by its name, over the operator's TWIN_SSH_CONFIG, as root with its key, the gun's
    # host key checked: the answer comes from that gun's namespace, with its three addresses and
    # no other's, and a home of its own, as on separate hosts.
    for n, gun in enumerate(GUNS, 1):
        answer = op("sh", "-c", 'exec ssh -F "$TWIN_SSH_CONFIG" "$0" \'hostname -I; echo "$HOME"\'', gun)
        lines = answer.stdout.splitlines()
        assert set(lines[0].split()) == {f"10.77.{net}.{n + 1}" for net in (1, 3, 4)}, (gun, lines)
        assert lines[1] == str(STATE / "home" / gun), (gun, lines)
    # Each gun has a host key of its own: sd-gun's key is not the one known for sd-gun2.
    wrong = op(*ssh, "-o", "HostKeyAlias=10.77.4.3", GUNS[0], "true", check=False)
    assert wrong.returncode == 255 and "Host key verification failed" in wrong.stderr, wrong.stderr

    # The operator reaches the target's /healthz and the guns' store, as its runner does, and
    # not the database's link with the API host, nor the targets' database on the store link.
    assert op("curl", "-fsS", "--max-time", "5", env["TWIN_TARGET_URL"] + "/healthz").returncode == 0
    no_route = op("timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/10.77.2.2/5432", check=False)
    assert no_route.returncode != 0, "sd-op reached the database over the API host's link"
    refused = op("psql", "-X", "postgres://showdown@10.77.3.1/showdown", "-c", "SELECT 1", check=False, timeout=15)
    assert refused.returncode != 0 and "pg_hba.conf" in refused.stderr, refused.stderr
    run_id = str(uuid.uuid4())
    twin("op", "--", "attack", "--run-id", run_id, "--rate", "20", "--duration", "1s", "--timeout", "5s",
         env["TWIN_TARGET_URL"] + "/now", timeout=30)
    from_op = json.loads(twin("op", "--", "runs", "list", "--output", "json").stdout)
    from_gun = loadgen_json("runs", "list", "--output", "json")
    assert sorted(r["id"] for r in from_op) == sorted(r["id"] for r in from_gun), (from_op, from_gun)
    assert run_id in {r["id"] for r in from_gun}, "the operator's run is not in the guns' store"


def gun_attacks(gun):
    """The generators (`loadgen order`, told their order on standard input) running in a gun's
    namespace, as (PID, command line)."""
    pids = subprocess.run(["ip", "netns", "pids", gun], capture_output=True, text=True).stdout.split()
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended between the listing and the read
        words = [a.decode(errors="replace") for a in argv]
        if "order" in words and any(w.endswith("loadgen") or "loadgen-" in w for w in words):
            found.append((int(pid), words))
    return found


def go_target(env, duration="6s"):
    """The twin's target as an experiment file names it, and its load of GET /now."""
    return f"""[[target]]
name = "go"
url = "{env['TWIN_TARGET_URL']}"
probe = "{env['TWIN_PROBE']}"
probe_token_file = "{env['TWIN_PROBE_TOKEN_FILE']}"
probe_fingerprint = "{env['TWIN_PROBE_FINGERPRINT']}"
contract = "declared"
ready = "/healthz"

[load]
path = "/now"
duration = "{duration}"
timeout = "5s"
"""


def kill_first_attack(runner, gun):
    """The first generator seen in `gun`'s namespace, killed once it has run about a second
    (its start is 3 s ahead): its PID, or None if none came within a minute."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and runner.poll() is None:
        attacks = gun_attacks(gun)
        if attacks:
            time.sleep(4)
            os.kill(attacks[0][0], 9)
            return attacks[0][0]
        time.sleep(0.05)
    return None


def test_an_experiment_across_three_guns(env, tmp_path):
    """`experiment run` in sd-op with [guns] from = "twin": every cell fired from the three gun
    namespaces over OpenSSH, one start, merged exactly; a gun killed mid-cell fails that cell
    alone, with the gun named, and the other guns' shards are kept."""
    name = f"guns-{uuid.uuid4().hex[:6]}"
    spec = tmp_path / "guns.toml"
    spec.write_text(f"""
name = "{name}"
question = "Do three guns fire one schedule together?"
[guns]
from = "twin"
threads = 1

{go_target(env)}
[matrix]
rate = [900, 600]
""")
    site = tmp_path / "site"
    cmd = [
        str(TWIN), "op", "--", "experiment", "run", str(spec), "--trust-guns", "--report", str(site),
        # A file's token file is only a suggestion: the user names the one to send.
        "--probe-token-file", f"go={env['TWIN_PROBE_TOKEN_FILE']}",
    ]
    runner = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The first cell (rate=900): once sd-gun2's generator has run a while, it is killed. Its
    # order is on its standard input, not its command line: the first generator seen there is
    # the first cell's (the next cell's starts only after this one ends).
    try:
        killed = kill_first_attack(runner, GUNS[1])
    except BaseException:
        # The runner and its guns are this test's: a failure here must not leave them running.
        # Interrupted as Ctrl-C would, the runner stops its guns; killed only if it does not.
        runner.send_signal(signal.SIGINT)
        try:
            runner.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            runner.kill()
            runner.communicate()
        raise
    try:
        out, err = runner.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        runner.kill()
        out, err = runner.communicate()
    assert killed is not None, f"no attack of the first cell in {GUNS[1]}\n{out}\n{err}"
    # Every gun was made ready: this build, its clock measured.
    for gun in GUNS:
        assert re.search(rf"gun {gun}: loadgen \S+ \(this build(, copied)?\), clock [+-]\d", err), err
    assert re.search(rf"cell failed: gun {GUNS[1]} \(2/3\)", err), err
    # The runner checked the target where the guns reach it: through the first gun.
    assert re.search(rf"go is checked where the guns reach it: through {GUNS[0]} \(http://127\.0\.0\.1:\d+\)", err), err

    check_cells(name, GUNS, GUNS[1], site)


KUBE_LISTEN = "10.77.4.1:7411"  # sd-op on the operators' bridge, which every gun reaches
# Where the pods dial: a name, resolved in the image from the /etc/hosts the kubelet mounts.
KUBE_ADVERTISE = "runner.twin:7411"
POD_HOSTS = "127.0.0.1 localhost\n10.77.4.1 runner.twin\n"
# The environment a runtime gives a container whose image sets none.
RUNTIME_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def kube_experiment(tmp_path, env, name, count, rates, wait="60s", duration="6s"):
    """An experiment file whose guns are a Kubernetes Job's pods dialling sd-op."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(f"""
name = "{name}"
question = "Do the Job's pods fire one schedule together?"
[guns]
threads = 1
kubernetes = {{ count = {count}, image = "showdown/loadgen:twin", listen = "{KUBE_LISTEN}", advertise = "{KUBE_ADVERTISE}", job = "{name}", manifest = "job.yaml", wait = "{wait}" }}

{go_target(env, duration)}
[matrix]
rate = {json.dumps(rates)}
""")
    return spec


def kube_runner(spec, env, tmp_path, site, image, loadgen=None):
    """`experiment run` in sd-op, from the image's loadgen (the pods' build: the static binary
    runs on this host too) unless `loadgen` names another; the Secret it would apply written to
    a file of the test's."""
    cmd = [
        str(TWIN), "op", "--", "experiment", "run", str(spec), "--trust-guns", "--send-store-url",
        "--report", str(site), "--probe-token-file", f"go={env['TWIN_PROBE_TOKEN_FILE']}",
    ]
    environment = dict(os.environ, SHOWDOWN_GUNS_SECRET_FILE=str(tmp_path / "secret.yaml"),
                       LOADGEN=str(loadgen or image / container.LOADGEN.lstrip("/")))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)


def rendered(tmp_path, runner, timeout=30):
    """The Job and the Secret the runner rendered, read as YAML once both are written."""
    import yaml
    deadline = time.monotonic() + timeout
    job, secret = tmp_path / "job.yaml", tmp_path / "secret.yaml"
    while not (job.exists() and secret.exists()):
        assert runner.poll() is None, runner.communicate()
        assert time.monotonic() < deadline, "the runner wrote no Job and Secret"
        time.sleep(0.05)
    (job_doc,) = list(yaml.safe_load_all(job.read_text()))
    (secret_doc,) = list(yaml.safe_load_all(secret.read_text()))
    assert job_doc["kind"] == "Job" and secret_doc["kind"] == "Secret"
    assert secret_doc["stringData"]["token"] not in job.read_text()
    return job_doc, secret_doc


def start_pod(job_doc, secret_doc, index, gun, tmp_path, image):
    """Pod `index` of the Job, as the kubelet would start it on node `gun`: the container's own
    command, arguments and environment read from the Job, run in the image's root (container.py:
    read-only, as its user, a tmpfs at /tmp; the Secret's volume a directory of its files; the
    kubelet's /etc/hosts; the downward API's fields filled; JOB_COMPLETION_INDEX set), in the
    gun's namespace, a process group of its own."""
    pod = job_doc["spec"]["template"]["spec"]
    (container_,) = pod["containers"]
    user = pod["securityContext"]
    assert user["runAsUser"] == user["runAsGroup"] == user["fsGroup"] == container.USER, user
    assert container_["securityContext"]["readOnlyRootFilesystem"] is True
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == secret_doc["metadata"]["name"]
    mount = {m["name"]: m["mountPath"] for m in container_["volumeMounts"]}[volume["name"]]
    secrets = tmp_path / f"secret-{index}"
    secrets.mkdir()
    for key, value in secret_doc["stringData"].items():
        # As the kubelet writes a Secret's files: root's, the pod's fsGroup's, its defaultMode.
        (secrets / key).write_text(value)
        os.chown(secrets / key, 0, user["fsGroup"])
        os.chmod(secrets / key, volume["secret"]["defaultMode"])
    hosts = tmp_path / f"hosts-{index}"
    hosts.write_text(POD_HOSTS)
    fields = {"spec.nodeName": gun, "metadata.name": f"{job_doc['metadata']['name']}-{index}-twin"}
    environment = {e["name"]: e.get("value") or fields[e["valueFrom"]["fieldRef"]["fieldPath"]] for e in container_["env"]}
    environment.update(PATH=RUNTIME_PATH, JOB_COMPLETION_INDEX=str(index))
    cmd = container.command(image, tmp_path / f"pod-{index}", container_["command"] + container_["args"],
                            environment, mounts={mount: secrets, "/etc/hosts": hosts}, netns=gun)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(runner, pods, timeout=120):
    """The runner's and the pods' outputs once they end (ended if they do not)."""
    try:
        out, err = runner.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=30)
    ends = []
    for p in pods:
        try:
            ends.append((p.wait(timeout=40),) + p.communicate())
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            ends.append((p.wait(),) + p.communicate())
    return out, err, ends


def test_guns_as_pods_of_a_kubernetes_job(env, tmp_path, image):
    """[guns] kubernetes: the runner renders the Job and its Secret; the pods, started from the
    Job's own command, arguments and environment in the gun namespaces (one 3 s late), dial in;
    every cell waits for all three, starts at one instant and merges exactly; a gun's attack
    killed mid-cell fails that cell alone, naming the gun; every pod exits 0 at the end."""
    name = f"kube-{uuid.uuid4().hex[:6]}"
    spec = kube_experiment(tmp_path, env, name, 3, [900, 600, 300])
    site = tmp_path / "site"
    runner = kube_runner(spec, env, tmp_path, site, image)
    pods = []
    try:
        job_doc, secret_doc = rendered(tmp_path, runner)
        for index, gun in enumerate(GUNS):
            if index == 2:
                time.sleep(3)  # a late pod: the barrier waits for it
            pods.append(start_pod(job_doc, secret_doc, index, gun, tmp_path, image))
        killed = kill_first_attack(runner, GUNS[1])
        # The third cell (rate=300): the third gun's generator, once its workers wait for T0,
        # is stopped for 4 s: its first send leaves late by what the test imposes.
        stopped, seen = None, set()
        deadline = time.monotonic() + 90
        while stopped is None and time.monotonic() < deadline and runner.poll() is None:
            for pid, _ in gun_attacks(GUNS[2]):
                seen.add(pid)
                if len(seen) == 3 and waiting_workers(pid):
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(4)
                    resumed = time.time_ns()
                    os.kill(pid, signal.SIGCONT)
                    stopped = resumed
                    break
            time.sleep(0.02)
    except BaseException:
        runner.send_signal(signal.SIGINT)
        finish(runner, pods, timeout=30)
        raise
    out, err, ends = finish(runner, pods)
    assert killed is not None, f"no attack of the first cell in {GUNS[1]}\n{out}\n{err}"
    assert stopped is not None, f"no attack of the third cell in {GUNS[2]}\n{out}\n{err}"
    labels = [f"{name}/{i} ({gun})" for i, gun in enumerate(GUNS)]
    for label in labels:
        assert re.search(rf"gun {re.escape(label)}: loadgen \S+ \(this build\), clock [+-]\d", err), err
    assert re.search(rf"cell failed: gun {re.escape(labels[1])} \(2/3\)", err), err
    assert [code for code, _, _ in ends] == [0, 0, 0], ends
    groups = check_cells(name, labels, labels[1], site, rates=("300", "600", "900"))

    # The skew: each gun's first send after T0 (one clock here), as its shard stored it.
    def starts(rate):
        shards = [loadgen_json("runs", "show", r["id"], "--output", "json") for r in groups[rate]]
        by_gun = {s["meta"]["labels"]["gun"]: s for s in shards}
        return [by_gun[label]["summary"]["generator"]["start_late_ns"] for label in labels], by_gun
    kept, _ = starts("600")
    assert all(0 <= late < 20e6 for late in kept), kept
    late, by_gun = starts("300")
    t0 = by_gun[labels[2]]["meta"]["started_at_ns"]
    imposed = stopped - t0
    assert imposed > 0.5e9, imposed  # stopped past T0
    print(f"skew: imposed {imposed / 1e6:.1f} ms, measured {late[2] / 1e6:.1f} ms; the others {[x / 1e6 for x in late[:2]]} ms")
    assert abs(late[2] - imposed) < 50e6, (late, imposed)
    assert all(0 <= x < 20e6 for x in late[:2]), late
    # A gun that started late is the generator's doing: its cell fails, named, with the cause.
    assert re.search(rf"cell failed: gun {re.escape(labels[2])} \(3/3\) fell behind: .*Cause: a late start", err), err
    group = groups["600"][0]["shard"]["group"]
    page = [p.read_text() for p in (site / "groups").glob("*.html") if group in p.read_text()][0]
    assert re.search(r"Skew: the guns\S* first sends left \d+\.\d\d ms to \d+\.\d\d ms after T0", page), page


def test_a_pod_that_never_dials_in_or_dies_mid_cell(env, tmp_path, image):
    """The barrier names the pod that never dialled in once the wait is over, and nothing runs;
    a pod killed mid-cell (its gun and everything under it) fails that cell, naming the gun and
    its lost connection, and exits as killed, which the Job's failure policy fails its index on."""
    name = f"kube-{uuid.uuid4().hex[:6]}"
    spec = kube_experiment(tmp_path, env, name, 2, [400], wait="5s")
    runner = kube_runner(spec, env, tmp_path, tmp_path / "site", image)
    job_doc, secret_doc = rendered(tmp_path, runner)
    started = time.monotonic()
    pods = [start_pod(job_doc, secret_doc, 0, GUNS[0], tmp_path, image)]
    out, err, ends = finish(runner, pods, timeout=60)
    assert runner.returncode != 0, err
    assert "1 of 2 guns did not dial in within 5s: pod 1" in err, err
    assert time.monotonic() - started < 30, "the barrier did not give up at its wait"
    assert ends[0][0] == 0, ends  # told goodbye, the pod that came ends well
    assert not [r for r in loadgen_json("runs", "list", "--output", "json") if r.get("experiment") == name]

    lost = tmp_path / "lost"
    lost.mkdir()
    name = f"kube-{uuid.uuid4().hex[:6]}"
    spec = kube_experiment(lost, env, name, 2, [400], duration="8s")
    runner = kube_runner(spec, env, lost, lost / "site", image)
    job_doc, secret_doc = rendered(lost, runner)
    pods = [start_pod(job_doc, secret_doc, i, GUNS[i], lost, image) for i in range(2)]
    try:
        deadline = time.monotonic() + 60
        while not gun_attacks(GUNS[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(5)
        os.killpg(pods[1].pid, signal.SIGKILL)  # the pod dies: its gun, its sessions, its attack
    except BaseException:
        runner.send_signal(signal.SIGINT)
        finish(runner, pods, timeout=30)
        raise
    out, err, ends = finish(runner, pods)
    assert re.search(rf"cell failed: gun {re.escape(name)}/1 \({GUNS[1]}\) \(2/2\): .*connection was lost", err), err
    assert ends[1][0] == -signal.SIGKILL and ends[0][0] == 0, ends
    shards = [r for r in loadgen_json("runs", "list", "--output", "json") if r.get("experiment") == name]
    kept = [loadgen_json("runs", "show", r["id"], "--output", "json") for r in shards if r["shard"]["index"] == 0]
    assert kept and kept[0]["status"] == "failed" and kept[0]["summary"]["requests"]["total"] == 1600, kept


def test_a_runner_that_is_not_the_images_build_is_refused(env, tmp_path, image):
    """A runner of another build than the pods' image (this machine's glibc build against the
    image's static one) is refused once the pods are in, naming the fix; nothing runs, and the
    pods are told goodbye."""
    name = f"kube-{uuid.uuid4().hex[:6]}"
    spec = kube_experiment(tmp_path, env, name, 1, [400])
    native = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "loadgen"
    runner = kube_runner(spec, env, tmp_path, tmp_path / "site", image, loadgen=native)
    job_doc, secret_doc = rendered(tmp_path, runner)
    pods = [start_pod(job_doc, secret_doc, 0, GUNS[0], tmp_path, image)]
    out, err, ends = finish(runner, pods, timeout=60)
    assert runner.returncode != 0, err
    assert "its image's loadgen is not this runner's build" in err and "docker cp" in err, err
    assert ends[0][0] == 0, ends
    assert not [r for r in loadgen_json("runs", "list", "--output", "json") if r.get("experiment") == name]


def waiting_workers(pid):
    """Whether a generator's worker threads (named loadgen-N) are up: its attack's time zero is
    set and its workers wait for it."""
    try:
        names = [(t / "comm").read_text().strip() for t in Path(f"/proc/{pid}/task").iterdir()]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return any(n.startswith("loadgen-") for n in names)


def check_cells(name, labels, killed_label, site, rates=("600", "900")):
    """The experiment `name`'s two cells from three guns (their shards labelled `labels`): the
    rate-900 cell failed, every shard naming `killed_label`, the others' shards whole; the
    rate-600 cell one start, merged exactly, each gun's row on its group's page."""
    runs = [r for r in loadgen_json("runs", "list", "--output", "json") if r.get("experiment") == name]
    groups = {}
    for r in runs:
        groups.setdefault(r["labels"]["rate"], []).append(r)
    assert sorted(groups) == sorted(rates), runs
    for rate, shards in groups.items():
        assert sorted(r["shard"]["index"] for r in shards) == [0, 1, 2], shards
        assert sorted(r["labels"]["gun"] for r in shards) == sorted(labels), shards
        assert len({r["shard"]["group"] for r in shards}) == 1, shards

    # The failed cell: kept, every shard failed with the reason naming the killed gun; the
    # other guns' shards still hold all their requests.
    failed = [loadgen_json("runs", "show", r["id"], "--output", "json") for r in groups["900"]]
    for shard in failed:
        assert shard["status"] == "failed", shard["status"]
        assert killed_label in (shard["stop_reason"] or ""), shard["stop_reason"]
    whole = [s for s in failed if s["meta"]["labels"]["gun"] != killed_label]
    assert [s["summary"]["requests"]["total"] for s in whole] == [1800, 1800], [s["summary"] for s in whole]

    # The kept cell: one schedule, one start, merged exactly.
    shards = [loadgen_json("runs", "show", r["id"], "--output", "json") for r in groups["600"]]
    group = groups["600"][0]["shard"]["group"]
    merged = loadgen_json("runs", "show", "--group", group, "--output", "json")
    # One clock here: the offsets measured are within their uncertainty, so not applied.
    assert len({s["meta"]["started_at_ns"] for s in shards}) == 1, [s["meta"]["started_at_ns"] for s in shards]
    assert all(s["status"] == "complete" for s in shards), [s["status"] for s in shards]
    assert [s["summary"]["requests"]["total"] for s in shards] == [1200, 1200, 1200]
    assert merged["summary"]["requests"]["total"] == 3600
    for kind in ("corrected", "service"):
        union = HdrHistogram(*HDR)
        for shard in shards:
            for interval in shard["intervals"]:
                union.add(HdrHistogram.decode(interval[kind]))
        figures = merged["summary"]["latency"][kind]
        assert union.get_total_count() == figures["count"] == 3600, kind
        for key, quantile in (("p50_ns", 0.5), ("p99_ns", 0.99), ("p999_ns", 0.999)):
            assert value_at_quantile(union, quantile) == figures[key], f"{kind} {key}"
    # Only the first gun subscribed to the probe; the group has its samples.
    assert [len(s["probes"]) for s in sorted(shards, key=lambda s: s["meta"]["shard"]["index"])] == [1, 0, 0]

    # The page: the kept cell is its group's merged run, with each gun's own figures.
    page = (site / "groups").glob("*.html")
    texts = [p.read_text() for p in page]
    mine = [t for t in texts if group in t]
    assert mine, list((site / "groups").iterdir())
    assert "<h2>Guns</h2>" in mine[0]
    for gun in labels:
        assert f">{gun} (clock " in mine[0], gun
    return groups



def test_a_search_across_guns(env):
    """`loadgen capacity --guns-from twin` in sd-op: each step split across the three guns from
    one start, kept as a run group, judged on the merged histograms."""
    out = twin("op", "--", "capacity", "--guns-from", "twin", "--gun-threads", "1",
               "--slo", "p99<=50ms", "--start", "1000", "--step", "2s", "--warmup", "500ms",
               "--settle", "10s", "--max-steps", "2", "--output", "json",
               env["TWIN_TARGET_URL"] + "/now", timeout=120)
    search = json.loads(out.stdout)["searches"][0]
    assert [s["rate"] for s in search["steps"]] == [1000, 2000], search["steps"]
    for step in search["steps"]:
        assert step["judgement"]["verdict"] == "pass", step
        shards = loadgen_json("runs", "list", "--group", step["run_id"], "--output", "json")
        assert sorted(r["labels"]["gun"] for r in shards) == list(GUNS), shards
        merged = loadgen_json("runs", "show", "--group", step["run_id"], "--output", "json")
        # 2.5 s at the step's rate, one schedule split three ways.
        assert merged["summary"]["requests"]["total"] == step["rate"] * 5 // 2, merged["summary"]["requests"]
    assert search["capacity"] == 2000, search


def test_a_search_from_the_pods_of_a_job(env, tmp_path, image):
    """`loadgen capacity --guns-from kubernetes` in sd-op: the same search as over SSH, its steps
    split across the Job's three pods (started from the rendered Job), kept as run groups and
    judged on the merged histograms; every pod told goodbye at the end."""
    name = f"kube-{uuid.uuid4().hex[:6]}"
    fields = f"count=3,image=showdown/loadgen:twin,listen={KUBE_LISTEN},advertise={KUBE_ADVERTISE},job={name},manifest={tmp_path / 'job.yaml'},wait=60s"
    cmd = [str(TWIN), "op", "--", "capacity", "--guns-from", "kubernetes", "--kubernetes", fields,
           "--gun-threads", "1", "--slo", "p99<=50ms", "--start", "1000", "--step", "2s",
           "--warmup", "500ms", "--settle", "10s", "--max-steps", "2", "--output", "json",
           env["TWIN_TARGET_URL"] + "/now"]
    environment = dict(os.environ, SHOWDOWN_GUNS_SECRET_FILE=str(tmp_path / "secret.yaml"),
                       LOADGEN=str(image / container.LOADGEN.lstrip("/")))
    runner = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    pods = []
    try:
        job_doc, secret_doc = rendered(tmp_path, runner)
        pods = [start_pod(job_doc, secret_doc, i, gun, tmp_path, image) for i, gun in enumerate(GUNS)]
    except BaseException:
        runner.send_signal(signal.SIGINT)
        finish(runner, pods, timeout=30)
        raise
    out, err, ends = finish(runner, pods)
    assert runner.returncode == 0, err
    labels = [f"{name}/{i} ({gun})" for i, gun in enumerate(GUNS)]
    search = json.loads(out)["searches"][0]
    assert [s["rate"] for s in search["steps"]] == [1000, 2000], search["steps"]
    for step in search["steps"]:
        assert step["judgement"]["verdict"] == "pass", step
        shards = loadgen_json("runs", "list", "--group", step["run_id"], "--output", "json")
        assert sorted(r["labels"]["gun"] for r in shards) == labels, shards
        merged = loadgen_json("runs", "show", "--group", step["run_id"], "--output", "json")
        assert merged["summary"]["requests"]["total"] == step["rate"] * 5 // 2, merged["summary"]["requests"]
    assert [code for code, _, _ in ends] == [0, 0, 0], ends


def value_at_quantile(histogram, quantile):
    """HdrHistogram's percentile as the Rust and Java implementations define it (the first
    value with at least ceil(q × count) values at or below it, as its bucket's highest
    equivalent value). HdrHistogram_py rounds q × count instead, which differs at the tail."""
    wanted = max(1, math.ceil(quantile * histogram.get_total_count()))
    for item in histogram.get_recorded_iterator():
        if item.total_count_to_this_value >= wanted:
            return item.value_iterated_to
    raise AssertionError("an empty histogram")


def alive(pid, start):
    """Whether the process PID started at START (clock ticks) is still running (zombies are not:
    PID 1 reaps them in its own time)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] == start and fields[0] != "Z"


def test_down_leaves_nothing(env):
    status = twin("status").stdout
    pids = {int(p) for p in re.findall(r": PID (\d+),", status)}
    assert len(pids) == 4 + len(GUNS), status  # postgres, toxiproxy, target, probe, an sshd per gun
    ours = {pid: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19] for pid in pids}
    uids = {int(subprocess.run(["id", "-u", user], capture_output=True, text=True, check=True).stdout)
            for user in TWIN_USERS}

    down = twin("down", timeout=60)
    assert "The twin is down" in down.stdout, down.stdout

    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"^sd-", netns, re.M), netns
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"^\d+: sd-", links, re.M), links
    assert not STATE.exists(), f"{STATE} is still there"
    deadline = time.monotonic() + 5
    while any(alive(pid, start) for pid, start in ours.items()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid, start in ours.items() if alive(pid, start)], "a process of the twin outlived down"
    left = subprocess.run(["ps", "-eo", "uid=,stat=,pid=,args="], capture_output=True, text=True, check=True).stdout
    leftover = [line for line in left.splitlines()
                if int(line.split()[0]) in uids and not line.split()[1].startswith("Z")]
    assert not leftover, leftover
    sshd = [line for line in left.splitlines() if "sshd" in line and str(STATE) in line
            and not line.split()[1].startswith("Z")]
    assert not sshd, sshd
    assert PRIVSEP.is_dir() == PRIVSEP_BEFORE[0], f"{PRIVSEP} before up: {PRIVSEP_BEFORE[0]}"
    for user in set(TWIN_USERS) - USERS_BEFORE:
        assert subprocess.run(["id", user], capture_output=True).returncode != 0, f"user {user} is left"
    assert twin("status", check=False).returncode == 3
