"""A real OpenSSH server on loopback for the remote-evaluation tests (docs/remote.md): Debian's sshd
on a free port of 127.0.0.1 with its own configuration, host key and authorized key in a temporary
folder, as the current user. sshd refuses to start as root without its privilege-separation
folder /run/sshd; where that is missing and we are root, sshd runs in a private mount namespace
with a fresh tmpfs on /run (`unshare --mount`), leaving the machine's /run alone. The engine
reaches it through OPENKERNEL_SSH, a wrapper running `ssh -F` with the test's own client
configuration (key, known hosts), so the user's ~/.ssh is neither read nor written; the server's
SetEnv points the host side's cache (the shipped worker, the staged files) into the same folder.
Used by tests/integration/test_remote_ssh.py and tests/python_api/test_api_remote.py.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

SSHD = "/usr/sbin/sshd"


class Server:
    def __init__(self, root: Path, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.root, self.port, self.proc = root, port, proc
        self.url = f"ssh://127.0.0.1:{port}"
        self.remote_cache = root / "remote-cache/openkernel"

    def env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                   XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
                   OPENKERNEL_SSH=str(self.root / "ssh"))
        env.pop("OPENKERNEL_PYTHON", None)
        return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_configs(root: Path, port: int) -> None:
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / key)],
                       check=True)
    shutil.copy(root / "user_key.pub", root / "authorized_keys")
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_key\n"
        f"AuthorizedKeysFile {root}/authorized_keys\nPidFile {root}/sshd.pid\nUsePAM no\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nAllowTcpForwarding no\nX11Forwarding no\n"
        f"SetEnv XDG_CACHE_HOME={root}/remote-cache\n")
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    (root / "ssh_config").write_text(
        f"Host *\n  User {user}\n  IdentityFile {root}/user_key\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root}/known_hosts\n  StrictHostKeyChecking accept-new\n"
        "  LogLevel ERROR\n")
    wrapper = root / "ssh"
    wrapper.write_text(f"#!/bin/sh\nexec ssh -F {root}/ssh_config \"$@\"\n")
    wrapper.chmod(0o755)


# A login runs the user's shell and its startup files (bash reads ~/.bashrc under sshd) before the
# command: normally a second or two, and the remote tests start dozens of logins.
SLOW_LOGIN_S = 20.0


def check_login_time(server: Server, limit_s: float = SLOW_LOGIN_S) -> None:
    """Fails at once, saying why, where one login on the server takes over `limit_s`: the remote
    tests would otherwise each wait out their own timeouts, tens of minutes in all, unexplained."""
    start = time.monotonic()
    try:
        subprocess.run([str(server.root / "ssh"), "-T", "-o", "BatchMode=yes", "-p",
                        str(server.port), "127.0.0.1", "true"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=3 * limit_s, check=False)
    except subprocess.TimeoutExpired:
        pass
    took = time.monotonic() - start
    if took > limit_s:
        raise RuntimeError(
            f"one login on the loopback sshd took {took:.0f} s (more than {limit_s:.0f} s): "
            "the user's shell startup files are slow (for instance a stale pyenv lock, "
            "~/.pyenv/shims/.pyenv-shim, makes every `pyenv rehash` in ~/.bashrc wait 60 s)")


def serve(root: Path) -> Iterator[Server | str]:
    """Yields the running server, or why sshd cannot be started here; stops it afterwards. A
    `root` served before is served again on the same port with the same keys (a host back up)."""
    if not os.access(SSHD, os.X_OK) or shutil.which("ssh") is None:
        yield f"no OpenSSH server at {SSHD} or no ssh client (scripts/setup.sh --tests)"
        return
    if (root / "sshd_config").is_file():
        port = int((root / "sshd_config").read_text().split()[1])
    else:
        port = free_port()
        write_configs(root, port)
    argv = [SSHD, "-D", "-e", "-f", str(root / "sshd_config")]
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        argv = ["unshare", "--mount", "sh", "-c",
                "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && exec "
                + " ".join(argv)]
    log = open(root / "sshd.log", "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    if proc.poll() is not None:
        yield f"sshd cannot start here: {(root / 'sshd.log').read_text()[-500:]}"
        return
    try:
        server = Server(root, port, proc)
        check_login_time(server)
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
