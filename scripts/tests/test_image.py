"""The gun's image (the Dockerfile's empty image with scripts/static-build.sh's root in it), built
as the Dockerfile builds it and run as a container runtime runs it (container.py), as root.

    python3 -m pytest -q scripts/tests/test_image.py
"""

import http.server
import json
import os
import stat
import struct
import subprocess
import threading
from pathlib import Path

import pytest

import container

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts and chroot need root")

PT_INTERP, PT_DYNAMIC, DT_NEEDED = 3, 2, 1


def libraries_wanted(path):
    """What an ELF file asks of the system to run: its program interpreter (if any) and its
    DT_NEEDED entries (their string-table offsets), read from its program headers."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{path}: not a 64-bit LE ELF"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    interp, needed = None, []
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == PT_INTERP:
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
        if p_type == PT_DYNAMIC:
            for at in range(p_offset, p_offset + p_filesz, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == 0:
                    break
                if tag == DT_NEEDED:
                    needed.append(value)
    return interp, needed


def test_the_image_is_two_static_binaries_and_the_files_they_read(image):
    files = sorted(str(p.relative_to(image)) for p in image.rglob("*") if not p.is_dir())
    assert files == [
        "etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt",
        "usr/local/bin/loadgen", "usr/local/bin/probe",
    ], files
    for name in ("loadgen", "probe"):
        binary = image / "usr" / "local" / "bin" / name
        assert libraries_wanted(binary) == (None, []), f"{name} needs a loader or libraries"
        assert binary.stat().st_mode & 0o777 == 0o755
    assert (image / "etc" / "passwd").read_text() == (
        f"showdown:x:{container.USER}:{container.USER}:showdown:/tmp:/sbin/nologin\n")
    assert "BEGIN CERTIFICATE" in (image / "etc" / "ssl" / "certs" / "ca-certificates.crt").read_text()
    assert stat.S_IMODE((image / "tmp").stat().st_mode) == 0o1777


def test_a_dynamic_binary_is_told_apart(tmp_path):
    """The check above can fail: this machine's own loadgen build (glibc) asks for a loader."""
    built = Path(os.environ.get("CARGO_TARGET_DIR", container.ROOT / "target")) / "release" / "loadgen"
    if not built.exists():
        pytest.skip("no target/release/loadgen")
    interp, needed = libraries_wanted(built)
    assert interp and interp.startswith("/lib") and needed, (interp, needed)


class Counted(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served = 0

    def do_GET(self):
        Counted.served += 1
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_loadgen_attacks_from_the_image_alone_as_its_user(image, tmp_path):
    """In the image and nothing else (read-only, as uid 10001, no environment), loadgen resolves
    the target's name from the /etc/hosts the kubelet mounts and fires its schedule."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 localhost\n127.0.0.1 target.twin\n")
        url = f"http://target.twin:{server.server_address[1]}/"
        argv = [container.LOADGEN, "attack", "--rate", "200", "--duration", "1s", "--no-store",
                "--output", "json", url]
        done = subprocess.run(
            container.command(image, tmp_path / "c", argv, {}, mounts={"/etc/hosts": hosts}),
            capture_output=True, text=True, timeout=60, check=False,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["requests"]["total"] == 200 and result["status_codes"] == {"200": 200}, result
    assert Counted.served == 200

    # Nothing but what the image holds: a program of this host is not there.
    missing = subprocess.run(
        container.command(image, tmp_path / "d", ["/bin/sh", "-c", "true"], {}),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert missing.returncode != 0 and "No such file" in missing.stderr, missing.stderr
