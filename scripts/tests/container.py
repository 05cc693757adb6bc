"""The gun's image without a container runtime: its root as scripts/static-build.sh makes it (the
directory the Dockerfile copies into an empty image), and a process started in it as a runtime
starts a container's.

The image's root is the lower layer of an overlay in a mount namespace of the process's own (the
image itself is never written); the mount points a runtime adds are made in the upper layer; then
/proc, /dev, a tmpfs at /tmp (the Job's emptyDir), the files the kubelet mounts (/etc/hosts) and
the pod's volumes are mounted; the root is made read-only (readOnlyRootFilesystem); and the
command runs chrooted, as the image's user, with exactly the environment given. One difference
from a runtime: the working directory is / (read-only), not the Job's /tmp.
"""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USER = 10001  # the Dockerfile's USER, and the Job's runAsUser
LOADGEN = "/usr/local/bin/loadgen"  # where the image has it, and the Job runs it from


def build_image_root():
    """The image's root, built (cargo does nothing if the static binaries are up to date)."""
    out = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "image"
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "static-build.sh"), str(out)],
        capture_output=True, text=True, timeout=3600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def command(image, scratch, argv, env, mounts=None, netns=None):
    """The command line that runs `argv` in `image` as described above: `scratch` an empty
    directory of the caller's (the overlay's upper layers), `mounts` {path in the container:
    path on this host} bound read-only, `netns` the network namespace to run in (else this one)."""
    scratch = Path(scratch)
    for part in ("upper", "work", "root"):
        (scratch / part).mkdir(parents=True)
    root = scratch / "root"
    q = shlex.quote
    steps = [
        "set -e",
        f"mount -t overlay overlay -o lowerdir={q(str(image))},upperdir={q(str(scratch / 'upper'))},"
        f"workdir={q(str(scratch / 'work'))} {q(str(root))}",
        f"mkdir -p {q(str(root / 'proc'))} {q(str(root / 'dev'))}",
    ]
    for inside, outside in (mounts or {}).items():
        target = root / inside.lstrip("/")
        make = "mkdir -p" if Path(outside).is_dir() else "touch"
        steps += [
            f"mkdir -p {q(str(target.parent))}",
            f"{make} {q(str(target))}",
            f"mount --bind {q(str(outside))} {q(str(target))}",
            f"mount -o remount,bind,ro {q(str(target))}",
        ]
    steps += [
        f"mount -t proc proc {q(str(root / 'proc'))}",
        f"mount --rbind /dev {q(str(root / 'dev'))}",
        f"mount -t tmpfs -o mode=1777 tmpfs {q(str(root / 'tmp'))}",
        f"mount -o remount,ro {q(str(root))}",
        "exec env -i " + " ".join(q(f"{k}={v}") for k, v in env.items())
        + f" {q(shutil.which('chroot') or '/usr/sbin/chroot')} --userspec={USER}:{USER} --groups= {q(str(root))} "
        + " ".join(q(a) for a in argv),
    ]
    inner = ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(steps)]
    return (["ip", "netns", "exec", netns] if netns else []) + inner
