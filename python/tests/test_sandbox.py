"""sandbox.py and the policy around it: hostile candidates (tests/adversarial/sandbox/) evaluated by
real worker processes (`python -m openkernel_worker`) under bwrap, and the same candidates with
"no_sandbox" as controls, which must escape (showing that the candidates would notice an escape).

Every hostile candidate computes honestly after its attempt, so inside the sandbox the verdict is
`correct` (see contained()); an escape makes it raise ("SANDBOX ESCAPE: ...", verdict
runtime_error). What happens
outside is checked from outside too: the listening socket's connection count, the files on the
real filesystem. Skips (with the reason) what needs a working bwrap when this machine has none.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from openkernel_worker import sandbox
from openkernel_worker.evaluate import Options

PKG_ROOT = Path(__file__).resolve().parents[1]
FOLDER = PKG_ROOT.parent / "tests" / "adversarial" / "sandbox"
REFERENCE = FOLDER / "reference.py"
MARK = "sk-openkernel-fake"
QUICK: dict[str, Any] = {"op": "evaluate", "backend": "cpu", "trials": 2, "timing_budget_s": 0.2,
                         "min_timing_samples": 3, "timeout_s": 60, "threads": 1, "seed": 7}
PROBE = sandbox.probe("cpu")  # honours OPENKERNEL_BWRAP, which the workers below inherit
needs_bwrap = pytest.mark.skipif(not PROBE.ok, reason=f"bwrap cannot run here: {PROBE.reason}")


class Listener:
    """A TCP server on 127.0.0.1 outside any sandbox, counting the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


class World:
    """A fake user: a home with an API key in ~/.config/openkernel/config.toml and an ssh key, the
    key also in the worker's environment, a directory outside scratch, and a listening port."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.secret = f"{MARK}-{secrets.token_hex(8)}"
        (self.home / ".config/openkernel").mkdir(parents=True)
        (self.home / ".config/openkernel/config.toml").write_text(
            f'[providers.openai]\napi_key = "{self.secret}"\n')
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh/id_ed25519").write_text(f"PRIVATE KEY {self.secret}\n")
        self.outside = base / "outside"
        self.outside.mkdir()
        self.cache = base / "cache"
        self.token = secrets.token_hex(6)
        self.listener = Listener()

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"HOME": str(self.home), "PYTHONPATH": str(PKG_ROOT),
                    "OPENAI_API_KEY": self.secret, "OPENKERNEL_TEST_PORT": str(self.listener.port),
                    "OPENKERNEL_TEST_TAG": self.token,
                    "OPENKERNEL_TEST_OUTSIDE": str(self.outside)})
        env.update(extra)
        return env

    def escaped_files(self) -> list[Path]:
        name = f"openkernel-escape-{self.token}"
        places = [self.home, self.home / ".config", Path("/tmp"), self.outside]
        return [p / name for p in places if (p / name).exists()]

    def request(self, candidate: str, **extra: Any) -> dict[str, Any]:
        return {**QUICK, "reference": str(REFERENCE), "candidate": str(FOLDER / candidate),
                "cache_dir": str(self.cache), **extra}


def run_worker(requests: list[dict[str, Any]], env: dict[str, str], user: list[str] | None = None,
               ) -> list[dict[str, Any]]:
    """Sends the requests to one fresh worker (optionally under `user`, a setpriv prefix)."""
    lines = "".join(json.dumps({"id": i, **r}) + "\n" for i, r in enumerate(requests))
    proc = subprocess.run([*(user or []), sys.executable, "-m", "openkernel_worker"],
                          input=lines + '{"op": "shutdown"}\n', capture_output=True, text=True,
                          env=env, timeout=600, check=False, cwd=tempfile.gettempdir())
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert replies and replies[0].get("type") == "hello", proc.stderr[-3000:]
    assert len(replies) == len(requests) + 1, proc.stderr[-3000:]
    return replies[1:]


def result(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("ok"), reply.get("error")
    return reply["result"]


def contained(r: dict[str, Any]) -> bool:
    """The candidate's first forward call, where it tries to escape and raises if it can, went
    through and every trial matched: correct, or rejected by an integrity rule that has nothing to
    do with the sandbox (the timing cross-checks can fire on a loaded machine; on the H200 a
    Triton kernel was flagged persisting_l2). An escape or a missing limit is a runtime_error."""
    return r["verdict"] in ("correct", "rejected") and not any(
        "SANDBOX ESCAPE" in x or "NOT LIMITED" in x for x in r["reasons"])


HOSTILE = ["cand_socket.py", "cand_write_home.py", "cand_read_config.py", "cand_limits.py",
           "cand_honest.py"]
CONTROLS = ["cand_socket.py", "cand_write_home.py", "cand_read_config.py"]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    base = Path(tempfile.mkdtemp(prefix="openkernel-sandbox-test-"))
    w = World(base)
    yield w
    w.listener.close()
    for path in w.escaped_files():
        path.unlink()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def runs(world: World) -> dict[str, Any]:
    """Sandboxed runs and no-sandbox controls, in two workers at once; the controls get their
    own listener and token so that their escapes cannot be mistaken for the sandboxed runs'."""
    if not PROBE.ok:
        pytest.skip(f"bwrap cannot run here: {PROBE.reason}")
    control_world = World(world.base / "control")
    # 16 GiB of address space: a CUDA build of torch maps several GiB of libraries at import.
    sandboxed_env = world.env(OPENKERNEL_SANDBOX_MEMORY_MB="16384",
                              OPENKERNEL_TEST_ALLOC_MB="24576")
    with ThreadPoolExecutor(max_workers=2) as pool:
        sandboxed = pool.submit(run_worker, [world.request(c) for c in HOSTILE], sandboxed_env)
        controls = pool.submit(run_worker, [control_world.request(c, no_sandbox=True)
                                            for c in CONTROLS], control_world.env())
        out = {"sandboxed": dict(zip(HOSTILE, sandboxed.result())),
               "controls": dict(zip(CONTROLS, controls.result())),
               "control_world": control_world}
    yield out
    control_world.listener.close()
    for path in control_world.escaped_files():
        path.unlink()


# --- without bwrap ------------------------------------------------------------------------------


def test_options_no_sandbox() -> None:
    assert Options.from_request({"reference": "r", "candidate": "c", "no_sandbox": True}).no_sandbox
    assert not Options.from_request({"reference": "r", "candidate": "c"}).no_sandbox


def test_scrub_env_drops_secrets_only() -> None:
    env = {"OPENAI_API_KEY": "x", "GITHUB_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "SSH_AUTH_SOCK": "x", "PATH": "/usr/bin", "HOME": "/h", "TORCH_CUDA_ARCH_LIST": "9.0",
           "CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "2"}
    assert sandbox.scrub_env(env) == {"PATH": "/usr/bin", "HOME": "/h",
                                      "TORCH_CUDA_ARCH_LIST": "9.0", "CUDA_VISIBLE_DEVICES": "0",
                                      "OMP_NUM_THREADS": "2"}


def test_exit_code_maps_bwrap_signal_statuses() -> None:
    on = sandbox.Launch([], {}, True, "cpu")
    off = sandbox.Launch([], {}, False, "cpu")
    assert on.exit_code(139) == -11 and on.exit_code(137) == -9
    assert on.exit_code(1) == 1 and on.exit_code(0) == 0 and on.exit_code(-9) == -9
    assert off.exit_code(139) == 139


def test_unsafe_paths() -> None:
    homes = ["/home/u"]
    for bad in ("/", "/home", "/home/u", "/home/u/.ssh", "/home/u/.config/x", "/home/u/.aws"):
        assert sandbox._unsafe(bad, homes), bad
    for ok in ("/usr/lib", "/home/u/.local/lib/python3.11/site-packages", "/home/u/venv",
               "/opt/conda"):
        assert not sandbox._unsafe(ok, homes), ok


def _pairs(args: list[str], option: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == option]


def test_cpu_profile_arguments(tmp_path: Path) -> None:
    scratch, cache = str(tmp_path / "scratch"), str(tmp_path / "cache")
    home = str(tmp_path / "home")
    args = sandbox.bwrap_args("cpu", scratch=scratch, env={"HOME": home, "PATH": "/usr/bin"},
                              readonly=["/etc/hostname"], writable=[cache])
    assert "--unshare-all" in args and "--die-with-parent" in args and "--new-session" in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert home in _pairs(args, "--tmpfs") and "/tmp" in _pairs(args, "--tmpfs")
    assert home not in _pairs(args, "--bind") + _pairs(args, "--ro-bind")
    assert scratch in _pairs(args, "--bind") and cache in _pairs(args, "--bind")
    assert "/dev/null" in _pairs(args, "--ro-bind") or not os.path.exists("/etc/shadow")
    assert args[args.index("--chdir") + 1] == scratch
    assert not any(a.startswith("/dev/nvidia") for a in args)
    # A bind under a tmpfs comes after it: scratch under /tmp, caches under $HOME.
    assert args.index(scratch) > args.index("/tmp")


def test_gpu_profile_shares_what_cuda_ipc_needs(tmp_path: Path, monkeypatch) -> None:
    """By default only /dev/shm (torch's reference counts of shared CUDA storages)."""
    monkeypatch.delenv(sandbox.GPU_SHARE_ENV, raising=False)
    args = sandbox.bwrap_args("gpu", scratch=str(tmp_path), env={"HOME": str(tmp_path / "h")})
    assert "--unshare-net" in args and "--unshare-user-try" in args
    assert "--unshare-pid" in args and "--unshare-ipc" in args
    assert "--unshare-all" not in args
    if os.path.isdir("/dev/shm"):
        assert "/dev/shm" in _pairs(args, "--bind")
    assert set(_pairs(args, "--dev-bind")) == set(p for p in
                                                  __import__("glob").glob("/dev/nvidia*"))
    monkeypatch.setenv(sandbox.GPU_SHARE_ENV, "ipc")
    args = sandbox.bwrap_args("gpu", scratch=str(tmp_path), env={})
    assert "--unshare-pid" in args and "--unshare-ipc" not in args
    monkeypatch.setenv(sandbox.GPU_SHARE_ENV, "ipc,pid")
    args = sandbox.bwrap_args("gpu", scratch=str(tmp_path), env={})
    assert "--unshare-pid" not in args and "--unshare-ipc" not in args
    assert f"/proc/{os.getpid()}" in _pairs(args, "--tmpfs")  # the worker's entry hidden


def test_limits() -> None:
    cpu = sandbox.default_limits("cpu", 10, 2, 1, 2)
    assert cpu.memory_rlimit == "AS" and cpu.memory_bytes >= 32 << 30
    assert cpu.cpu_s == int((10 * 8 + 3 + 600) * 2) and cpu.nproc == sandbox.DEFAULT_NPROC
    gpu = sandbox.default_limits("gpu", 10, 2, 1, 2)
    assert gpu.memory_rlimit == "DATA" and "AS" not in gpu.rlimits()
    assert gpu.rlimits()["CORE"] == 0


def test_refusal_without_bwrap_and_no_sandbox_override(tmp_path: Path) -> None:
    """OPENKERNEL_BWRAP=/nonexistent: an environment error naming --no-sandbox; with no_sandbox
    the candidate runs, flagged."""
    w = World(tmp_path)
    try:
        replies = run_worker([w.request("cand_honest.py"),
                              w.request("cand_honest.py", no_sandbox=True)],
                             w.env(OPENKERNEL_BWRAP="/nonexistent"))
    finally:
        w.listener.close()
    refused, allowed = replies
    assert not refused["ok"] and refused["error"]["kind"] == "environment", refused
    message = refused["error"]["message"]
    assert "refusing to run candidate code" in message and "/nonexistent" in message
    assert "--no-sandbox" in message
    r = result(allowed)
    assert contained(r), (r["verdict"], r["reasons"])
    assert "no_sandbox" in r["flags"]
    assert any("no sandbox" in reason for reason in r["reasons"]), r["reasons"]
    assert r["sandbox"]["enabled"] is False and r["sandbox"]["kind"] == "bwrap"


# --- with bwrap ---------------------------------------------------------------------------------


@needs_bwrap
def test_probe_works_here() -> None:
    assert PROBE.ok and PROBE.bwrap and sandbox.probe("cpu") is sandbox.probe("cpu")


@needs_bwrap
def test_honest_candidate_runs_sandboxed_and_fills_the_cache(runs: dict[str, Any],
                                                             world: World) -> None:
    r = result(runs["sandboxed"]["cand_honest.py"])
    assert contained(r), (r["verdict"], r["reasons"])
    assert "no_sandbox" not in r["flags"]
    assert r["sandbox"]["enabled"] is True
    assert (r["sandbox"]["kind"], r["sandbox"]["profile"]) == ("bwrap", "cpu")
    assert r["sandbox"]["limits"]["memory_rlimit"] == "AS"
    assert any("OPENAI_API_KEY" in n for n in r["sandbox"].get("notes", []))
    assert list((world.cache / "native").glob("sandbox_relu-*.so")), "compile cache not persisted"


@needs_bwrap
def test_socket_fails(runs: dict[str, Any], world: World) -> None:
    r = result(runs["sandboxed"]["cand_socket.py"])
    assert contained(r), (r["verdict"], r["reasons"])
    assert world.listener.connections == 0


@needs_bwrap
def test_writes_outside_scratch_vanish(runs: dict[str, Any], world: World) -> None:
    r = result(runs["sandboxed"]["cand_write_home.py"])
    assert contained(r), (r["verdict"], r["reasons"])
    assert world.escaped_files() == []


@needs_bwrap
def test_config_and_keys_are_invisible(runs: dict[str, Any]) -> None:
    r = result(runs["sandboxed"]["cand_read_config.py"])
    assert contained(r), (r["verdict"], r["reasons"])


@needs_bwrap
def test_limits_hold(runs: dict[str, Any]) -> None:
    r = result(runs["sandboxed"]["cand_limits.py"])
    assert contained(r), (r["verdict"], r["reasons"])
    assert r["sandbox"]["limits"]["memory_bytes"] == 16384 << 20


@needs_bwrap
def test_controls_escape_without_the_sandbox(runs: dict[str, Any]) -> None:
    """The same candidates with no_sandbox do get out: the tests above would see an escape."""
    control = runs["control_world"]
    for name in CONTROLS:
        r = result(runs["controls"][name])
        assert "no_sandbox" in r["flags"] and r["sandbox"]["enabled"] is False, name
        if name == "cand_write_home.py":  # it can only tell that the package is writable
            assert len(control.escaped_files()) == 4, control.escaped_files()
            if not os.access(PKG_ROOT / "openkernel_worker", os.W_OK):
                continue
        assert r["verdict"] == "runtime_error", (name, r["reasons"])
        assert any("SANDBOX ESCAPE" in reason for reason in r["reasons"]), r["reasons"]
    assert control.listener.connections >= 1


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="runs as root to test the sandbox as an unprivileged user (nobody)")
def test_sandbox_as_unprivileged_user() -> None:
    readable = all(p.stat().st_mode & stat.S_IROTH for p in (PKG_ROOT, FOLDER / "reference.py"))
    if not readable:
        pytest.skip("the repository is not readable by nobody")
    base = Path(tempfile.mkdtemp(prefix="openkernel-sandbox-nobody-"))
    try:
        w = World(base)
        for path in [base, *base.rglob("*")]:
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        replies = run_worker([w.request("cand_read_config.py"), w.request("cand_socket.py")],
                             w.env(), user=nobody)
        for reply in replies:
            r = result(reply)
            assert contained(r) and r["sandbox"]["enabled"], (r["verdict"], r["reasons"])
        assert w.listener.connections == 0
        w.listener.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not _cuda(), reason="needs an NVIDIA GPU (the GPU profile)")
@pytest.mark.skipif(not PROBE.ok, reason=f"bwrap cannot run here: {PROBE.reason}")
def test_gpu_profile_with_cuda_ipc(tmp_path: Path) -> None:
    """A Triton candidate under the GPU profile: correct means CUDA IPC works through the
    sandbox and every escape attempt failed. Also reports which sharing settings work."""
    w = World(tmp_path)
    try:
        req = w.request("cand_gpu_hostile.py", backend="triton", device="cuda:0")
        outcomes = {}
        for share in ("ipc,pid", "ipc", "pid", ""):
            reply = run_worker([req], w.env(OPENKERNEL_SANDBOX_GPU_SHARE=share))[0]
            r = result(reply)
            outcomes[share or "nothing"] = (r["verdict"], r["reasons"][:1], contained(r))
        print("GPU profile by shared namespaces:", json.dumps(outcomes, indent=1))
        for share in ("nothing", "ipc,pid"):  # the default, and the previous default
            verdict, reasons, ok = outcomes[share]
            assert ok, (share, verdict, reasons)
        assert w.listener.connections == 0 and w.escaped_files() == []
    finally:
        w.listener.close()
        for path in w.escaped_files():
            path.unlink()
