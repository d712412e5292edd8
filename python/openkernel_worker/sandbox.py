"""The candidate process's sandbox: bubblewrap namespaces and mounts, plus resource limits.

`prepare()` turns the command that starts the candidate process into the argv and environment
that start it under `bwrap` (docs/evaluation.md, "Sandbox"):

- new user, network, UTS and cgroup namespaces, and on the CPU profile new IPC and PID namespaces
  too (`--unshare-all`); no network at all, only a loopback device nobody listens on;
- a root of nothing but read-only binds of /usr, /lib*, /bin, /sbin and /etc (with the password
  hashes, sudoers and ssh/ssl private keys masked), /sys's device trees, the Python installation
  (prefixes, site-packages and the directories the worker imported from) and this package;
- the reference and candidate files read-only; the scratch directory (the cwd) and the compile
  caches (TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, OPENKERNEL_NATIVE_CACHE) writable;
- a private tmpfs on /tmp and on $HOME: the user's home, config and keys are not there, and
  writes anywhere but scratch and caches vanish with the sandbox (the root is remounted read-only);
- environment variables whose names look like secrets (API keys, tokens) dropped;
- `--die-with-parent`, all capabilities dropped (they matter when the worker runs as root);
- rlimits set inside the sandbox just before the candidate starts (`python -m
  openkernel_worker.sandbox`): memory, CPU time, process count, no core dumps.

The GPU profile (device cuda:N) adds the /dev/nvidia* nodes and /run/nvidia*, and binds the
host's /dev/shm, because outputs come back as CUDA IPC handles (transfer.py): torch's
reference-count files in /dev/shm must be visible from both processes. By default it shares no
namespace beyond that with the worker (CUDA IPC worked with private IPC and PID namespaces on the
H200); `OPENKERNEL_SANDBOX_GPU_SHARE` (empty by default; any of ipc, pid, net, comma-separated)
shares some, for a driver that needs them. While the PID namespace is shared, the worker's and
its ancestors' /proc entries, their threads' included, are hidden.

Environment knobs: OPENKERNEL_BWRAP (path of bwrap, e.g. /nonexistent to see the refusal),
OPENKERNEL_SANDBOX_MEMORY_MB (0 turns the memory limit off), OPENKERNEL_SANDBOX_NPROC.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Sequence

BWRAP_ENV = "OPENKERNEL_BWRAP"
MEMORY_ENV = "OPENKERNEL_SANDBOX_MEMORY_MB"
NPROC_ENV = "OPENKERNEL_SANDBOX_NPROC"
GPU_SHARE_ENV = "OPENKERNEL_SANDBOX_GPU_SHARE"
CACHE_VARS = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "OPENKERNEL_NATIVE_CACHE")
DEFAULT_NPROC = 4096  # tasks (threads count) of this uid inside the sandbox's user namespace
MIN_MEMORY = 32 << 30
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE")
ETC_MASKED_FILES = ("shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "security/opasswd")
ETC_MASKED_DIRS = ("ssh", "ssl/private", "sudoers.d")
HOME_SECRETS = (".ssh", ".aws", ".gnupg", ".config", ".netrc", ".docker", ".kube", ".azure",
                ".password-store", ".local/share/keyrings")
SYS_DIRS = ("/sys/block", "/sys/bus", "/sys/class", "/sys/dev", "/sys/devices")
PKG_DIR = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(PKG_DIR)


class SandboxUnavailable(Exception):
    """bwrap cannot run here; the message says what failed and how to go on without it."""


@dataclass
class Limits:
    """Rlimits for the candidate process; None means not set (see notes for why)."""

    memory_bytes: int | None = None
    memory_rlimit: str | None = None  # "AS" (CPU profile) or "DATA" (GPU profile)
    cpu_s: int | None = None
    nproc: int | None = None
    notes: list[str] = field(default_factory=list)

    def rlimits(self) -> dict[str, int]:
        out = {"CORE": 0}
        if self.memory_bytes and self.memory_rlimit:
            out[self.memory_rlimit] = self.memory_bytes
        if self.cpu_s:
            out["CPU"] = self.cpu_s
        if self.nproc:
            out["NPROC"] = self.nproc
        return out

    def describe(self) -> dict[str, Any]:
        return {"memory_bytes": self.memory_bytes, "memory_rlimit": self.memory_rlimit,
                "cpu_s": self.cpu_s, "nproc": self.nproc, "core": 0}


@dataclass
class Launch:
    """How the candidate process is started: argv and env for Popen, and what to report."""

    argv: list[str]
    env: dict[str, str]
    enabled: bool
    profile: str
    limits: Limits | None = None
    reason: str = ""  # why the sandbox is off
    notes: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"enabled": self.enabled, "kind": "bwrap", "profile": self.profile}
        if self.limits is not None:
            out["limits"] = self.limits.describe()
        if self.reason:
            out["reason"] = self.reason
        notes = self.notes + (self.limits.notes if self.limits else [])
        if notes:
            out["notes"] = notes
        return out

    def exit_code(self, code: int) -> int:
        """Popen's return code of the candidate: bwrap reports a child killed by signal N as 128+N."""
        if self.enabled and 128 < code < 128 + 65:
            return -(code - 128)
        return code


@dataclass
class Probe:
    ok: bool
    reason: str
    bwrap: str | None
    proc_mode: str = "proc"  # "proc": a fresh procfs; "bind": the host's /proc (GPU profile only)


def find_bwrap() -> str | None:
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


GPU_SHARE_DEFAULT = ""  # nothing shared; "ipc,pid" was the default before the H200 showed
# CUDA IPC working without either


def gpu_shared() -> frozenset[str]:
    text = os.environ.get(GPU_SHARE_ENV, GPU_SHARE_DEFAULT)
    return frozenset(w.strip() for w in text.split(",") if w.strip() in ("ipc", "pid", "net"))


def profile_for(device: str) -> str:
    return "gpu" if device.startswith("cuda") else "cpu"


# ---------------------------------------------------------------------------------------------
# What is visible inside


def _depth(path: str) -> int:
    return len([p for p in path.split("/") if p])


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _home_dirs(env: dict[str, str]) -> list[str]:
    homes = {os.path.abspath(h) for h in (env.get("HOME"), os.path.expanduser("~")) if h}
    try:
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, ImportError):
        pass
    return sorted(h for h in homes if h and h != "/")


def _unsafe(path: str, homes: Sequence[str]) -> bool:
    """True for paths that must never be bound: /, a home directory or an ancestor of one, and
    anything under a home's key or config directories."""
    if path in ("/", ""):
        return True
    for home in homes:
        if _inside(home, path):
            return True
        for secret in HOME_SECRETS:
            s = os.path.join(home, secret)
            if _inside(path, s) or _inside(s, path):  # in a secret, or holding one (~/.local)
                return True
    return False


def _system_roots() -> list[tuple[str, str]]:
    """(kind, path) for the system directories: real directories are ro-bound, symlinks (merged
    /usr) are recreated as symlinks."""
    out: list[tuple[str, str]] = [("dir", "/usr"), ("dir", "/etc")]
    for name in sorted({"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                        *glob.glob("/lib*")}):
        if os.path.islink(name):
            out.append(("link", name))
        elif os.path.isdir(name):
            out.append(("dir", name))
    return out


def python_dirs() -> tuple[str, ...]:
    """Directories the candidate's Python needs: prefixes, site-packages, the sys.path roots the
    worker imported modules from, and .zip/.egg entries. Not the worker's cwd or arbitrary
    sys.path entries (which could be a user's project directory)."""
    found: set[str] = set()
    for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
              os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))):
        found.add(p)
    try:
        found.update(site.getsitepackages())
    except AttributeError:
        pass
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        found.add(user_site)
    entries = [os.path.abspath(p) for p in sys.path if p]
    for p in entries:
        if "site-packages" in p or "dist-packages" in p or p.endswith((".zip", ".egg")):
            found.add(p)
    for name in ("torch", "triton", "numpy"):  # a process may start before the worker
        try:  # imports them (boot.py): where they would come from
            origin = os.path.abspath(importlib.util.find_spec(name).origin)  # type: ignore
        except (ImportError, ValueError, AttributeError, TypeError):
            continue
        found.update(sorted((p for p in entries if _inside(origin, p)), key=len)[-1:])
    for name, module in list(sys.modules.items()):
        f = getattr(module, "__file__", None)
        if not f or name.startswith(("openkernel_reference", "openkernel_candidate")):
            continue
        f = os.path.abspath(f)
        roots = [p for p in entries if _inside(f, p)]
        if roots:
            found.add(max(roots, key=len))
        if "." not in name and os.path.basename(f) == "__init__.py":
            found.add(os.path.dirname(f))  # a package found by a meta-path finder (editable)
    return tuple(sorted(p for p in found if p and os.path.exists(p)))


def _extra_dirs(env: dict[str, str]) -> list[str]:
    """PATH, LD_LIBRARY_PATH and CUDA_HOME directories, and the installation prefixes of the
    compilers (a toolchain in /opt/gcc needs /opt/gcc/lib and libexec, not only its bin)."""
    homes = _home_dirs(env)

    def prefix(d: str) -> str:
        d = os.path.abspath(d)
        up = os.path.dirname(d)
        if (os.path.basename(d) == "bin" and not _unsafe(up, homes)
                and not any(_inside(up, h) for h in homes)):  # ~/.cargo holds credentials
            return up
        return d

    out: list[str] = []
    path = env.get("PATH", "")
    out += [prefix(p) for p in path.split(os.pathsep) if p and os.path.isabs(p)]
    for var in ("LD_LIBRARY_PATH", "PYTHONPATH"):
        out += [p for p in env.get(var, "").split(os.pathsep) if p]
    out += [env[v] for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    for tool in ("cc", "c++", "gcc", "g++", "nvcc", "ninja", env.get("CC"), env.get("CXX")):
        found = shutil.which(tool, path=path) if tool else None
        if found:
            out.append(prefix(os.path.dirname(os.path.realpath(found))))
    return [os.path.abspath(p) for p in out if os.path.isabs(p) and os.path.exists(p)]


class _Mounts:
    """Mount operations, emitted shallowest destination first so that a bind inside a tmpfs (a
    cache under $HOME, scratch under /tmp) lands on top of it."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, int, list[str]]] = []
        self.ro_roots: list[str] = []

    def add(self, dest: str, *args: str) -> None:
        self.ops.append((_depth(dest), len(self.ops), list(args)))

    def covered(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(_inside(real, r) for r in self.ro_roots)

    def ro(self, path: str) -> None:
        path = os.path.abspath(path)
        if not self.covered(path):
            self.add(path, "--ro-bind", path, path)

    def argv(self) -> list[str]:
        out: list[str] = []
        for _, _, args in sorted(self.ops):
            out += args
        return out


def _ancestors() -> list[int]:
    """This process and its ancestors up to (not including) pid 1."""
    pids, pid = [], os.getpid()
    while pid > 1 and len(pids) < 64:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _hidden_proc_entries() -> list[int]:
    """The pids of this process and its ancestors and the thread ids of their threads: /proc/TID
    of a thread is reachable by name though /proc does not list it, and shows the process's
    environment and memory. Threads started after the sandbox are not covered (the engine is
    not dumpable, so its own are unreadable anyway; docs/evaluation.md)."""
    out: list[int] = []
    for pid in _ancestors():
        out.append(pid)
        try:
            out += [int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit() and
                    int(t) != pid]
        except OSError:
            pass
    return out


def bwrap_args(profile: str, *, scratch: str, env: dict[str, str], readonly: Sequence[str] = (),
               writable: Sequence[str] = (), proc_mode: str = "proc") -> list[str]:
    """The bwrap options (without the bwrap path and the command) for one candidate process."""
    homes = _home_dirs(env)
    shared = gpu_shared() if profile == "gpu" else frozenset()
    args = ["--die-with-parent", "--cap-drop", "ALL"]
    if profile == "cpu":
        args += ["--unshare-all", "--new-session"]
    else:
        # No --new-session: Popen's start_new_session already leaves the sandbox without a
        # controlling terminal, and keeping the candidate in bwrap's process group lets the
        # worker's killpg reach compilers the candidate started (there is no PID namespace
        # whose end would kill them).
        args += ["--unshare-user-try", "--unshare-uts", "--unshare-cgroup-try"]
        args += [] if "net" in shared else ["--unshare-net"]
        args += [] if "ipc" in shared else ["--unshare-ipc"]
        args += [] if "pid" in shared else ["--unshare-pid"]
    args += ["--hostname", "openkernel-sandbox"]

    m = _Mounts()
    for kind, path in _system_roots():
        if kind == "link":
            m.add(path, "--symlink", os.readlink(path), path)
        else:
            m.add(path, "--ro-bind", path, path)
            m.ro_roots.append(os.path.realpath(path))
    for name in ETC_MASKED_FILES:
        if os.path.isfile(f"/etc/{name}"):
            m.add(f"/etc/{name}", "--ro-bind", "/dev/null", f"/etc/{name}")
    for name in ETC_MASKED_DIRS:
        if os.path.isdir(f"/etc/{name}"):
            m.add(f"/etc/{name}", "--tmpfs", f"/etc/{name}")
    for d in SYS_DIRS:
        if os.path.isdir(d):
            m.add(d, "--ro-bind", d, d)
    m.add("/dev", "--dev", "/dev")
    if proc_mode == "proc":
        m.add("/proc", "--proc", "/proc")
    else:
        m.add("/proc", "--ro-bind", "/proc", "/proc")
    m.add("/tmp", "--tmpfs", "/tmp")
    for home in homes:
        m.add(home, "--tmpfs", home)  # an empty, throw-away home
    if profile == "gpu":
        for node in sorted(glob.glob("/dev/nvidia*")):
            m.add(node, "--dev-bind", node, node)
        if os.path.isdir("/dev/shm"):
            m.add("/dev/shm", "--bind", "/dev/shm", "/dev/shm")
        for path in sorted(glob.glob("/run/nvidia*")):
            m.add(path, "--ro-bind", path, path)
        if "pid" in shared:
            # The worker and the engine are visible in a shared PID namespace; hide their /proc
            # entries (environment, command line, memory maps) from the candidate.
            for pid in _hidden_proc_entries():
                if os.path.isdir(f"/proc/{pid}"):
                    m.add(f"/proc/{pid}", "--tmpfs", f"/proc/{pid}")
    candidates = list(python_dirs()) + _extra_dirs(env)
    for path in sorted(set(candidates), key=len):
        if _inside(path, PKG_ROOT) or _unsafe(path, homes):
            continue
        if any(_inside(path, p) for p in candidates if p != path and not _unsafe(p, homes)
               and not _inside(p, PKG_ROOT) and len(p) < len(path)):
            continue  # a parent is bound already
        m.ro(path)
    m.add(PKG_DIR, "--ro-bind", PKG_DIR, PKG_DIR)
    for path in writable:
        m.add(path, "--bind", path, path)
    m.add(scratch, "--bind", scratch, scratch)
    for path in readonly:
        m.add(path, "--ro-bind", path, path)
    return args + m.argv() + ["--remount-ro", "/", "--chdir", scratch]


# ---------------------------------------------------------------------------------------------
# Does it work here?


def _run_probe(bwrap: str, profile: str, proc_mode: str) -> tuple[bool, str]:
    scratch = tempfile.mkdtemp(prefix="openkernel-probe-")
    try:
        argv = [bwrap, *bwrap_args(profile, scratch=scratch, env=dict(os.environ),
                                   proc_mode=proc_mode), "--", "/bin/true"]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                               start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"{bwrap} could not be run: {e}"
        if r.returncode != 0:
            err = r.stderr.decode(errors="replace").strip()[-500:] or f"exit status {r.returncode}"
            return False, f"`bwrap ... /bin/true` failed: {err}"
        return True, ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@functools.lru_cache(maxsize=16)
def _probe(bwrap: str | None, profile: str, uid: int, shared: frozenset[str]) -> Probe:
    if bwrap is None:
        where = os.environ.get(BWRAP_ENV)
        what = (f"{BWRAP_ENV}={where} is not an executable file" if where else
                "bwrap (Debian/Ubuntu package bubblewrap) is not installed or not on PATH")
        return Probe(False, what, None)
    ok, why = _run_probe(bwrap, profile, "proc")
    if ok:
        return Probe(True, "", bwrap, "proc")
    if profile == "gpu" and "pid" in shared:
        # A fresh procfs needs a PID namespace on some kernels; fall back to the host's /proc.
        ok2, _ = _run_probe(bwrap, profile, "bind")
        if ok2:
            return Probe(True, "", bwrap, "bind")
    hint = (" (unprivileged user namespaces may be disabled: see sysctl "
            "kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns)" if "namespace" in why or
            "Operation not permitted" in why else "")
    return Probe(False, why + hint, bwrap)


def probe(profile: str = "cpu") -> Probe:
    """Tries `bwrap <the profile's options> /bin/true` once per bwrap path, profile and user."""
    return _probe(find_bwrap(), profile, os.geteuid(),
                  gpu_shared() if profile == "gpu" else frozenset())


# ---------------------------------------------------------------------------------------------
# Limits


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def default_limits(profile: str, timeout_s: float, trials: int, timing_budget_s: float,
                   threads: int) -> Limits:
    lim = Limits()
    text = os.environ.get(MEMORY_ENV)
    if text is not None and text.strip() not in ("", "default"):
        lim.memory_bytes = int(float(text) * (1 << 20)) or None
        if lim.memory_bytes is None:
            lim.notes.append(f"memory limit off ({MEMORY_ENV}=0)")
    else:
        lim.memory_bytes = max(MIN_MEMORY, int(_total_memory() * 0.8))
    if lim.memory_bytes:
        if profile == "cpu":
            lim.memory_rlimit = "AS"
        else:
            # CUDA reserves address space far beyond the memory it uses, so RLIMIT_AS would
            # break it; RLIMIT_DATA counts only private writable mappings (heap, anonymous mmap),
            # not the driver's PROT_NONE reservations or its device mappings.
            lim.memory_rlimit = "DATA"
            lim.notes.append("memory limited with RLIMIT_DATA (private writable memory), not "
                             "RLIMIT_AS, because CUDA reserves huge virtual ranges; GPU memory is "
                             "not limited")
    # CPU seconds are summed over threads; per process, so each compiler process gets its own.
    wall = timeout_s * (trials + 6) + timing_budget_s * 3 + 600
    cores = max(1, threads or os.cpu_count() or 1)
    lim.cpu_s = int(wall * cores)
    nproc = os.environ.get(NPROC_ENV)
    lim.nproc = int(nproc) if nproc else DEFAULT_NPROC
    if lim.nproc and os.geteuid() == 0:
        lim.notes.append("RLIMIT_NPROC is set but the kernel does not enforce it for root")
    return lim


def apply_limits(limits: dict[str, int]) -> list[str]:
    """Sets the rlimits (name -> value, soft = hard); returns what could not be set."""
    import resource

    problems = []
    for name, value in limits.items():
        res = getattr(resource, f"RLIMIT_{name}", None)
        if res is None:
            problems.append(f"RLIMIT_{name} does not exist here")
            continue
        _, hard = resource.getrlimit(res)
        want = value if hard == resource.RLIM_INFINITY else min(value, hard)
        soft = want
        if name == "CPU" and (hard == resource.RLIM_INFINITY or want + 5 <= hard):
            hard_new = want + 5  # SIGXCPU first, SIGKILL five seconds later
        else:
            hard_new = want
        try:
            resource.setrlimit(res, (soft, hard_new))
        except (ValueError, OSError) as e:
            problems.append(f"RLIMIT_{name}={value}: {e}")
    return problems


# ---------------------------------------------------------------------------------------------
# Putting it together


def _readonly_caches(env: dict[str, str]) -> list[str]:
    """Caches the candidate reads but never writes: the worker's load_inline object cache
    (OPENKERNEL_INLINE_CACHE; inline_cache.py fills it from its own build sandboxes)."""
    path = env.get("OPENKERNEL_INLINE_CACHE")
    if not path:
        return []
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return [path]


def scrub_env(env: dict[str, str]) -> dict[str, str]:
    """Drops variables whose names look like credentials (OPENAI_API_KEY, GITHUB_TOKEN, ...)."""
    return {k: v for k, v in env.items()
            if not any(w in k.upper() for w in SECRET_WORDS) or k == "TORCH_CUDA_ARCH_LIST"}


def prepare(command: list[str], *, scratch: str, env: dict[str, str], device: str = "cpu",
            opts: Any = None, extra_readonly: Sequence[str] = ()) -> Launch:
    """The argv and environment that start `command` (a Python command line) in the sandbox.

    `opts` is the evaluation's Options (no_sandbox, timeout_s, trials, timing_budget_s,
    threads); `extra_readonly` binds more folders read-only (a profiler's installation). Raises
    SandboxUnavailable when bwrap cannot run and opts.no_sandbox is not set."""
    profile = profile_for(device)
    no_sandbox = bool(getattr(opts, "no_sandbox", False))
    if no_sandbox:
        return Launch(list(command), dict(env), False, profile,
                      reason="the request asked for no sandbox (--no-sandbox): the candidate ran "
                             "as a plain child process that could read the user's files, use the "
                             "network and write wherever the user can")
    pr = probe(profile)
    if not pr.ok:
        raise SandboxUnavailable(
            f"refusing to run candidate code: the sandbox cannot be set up on this machine: "
            f"{pr.reason}. Install bubblewrap (apt-get install bubblewrap) or fix the reason "
            f"above; --no-sandbox runs candidates WITHOUT isolation (only for code you trust)")
    assert pr.bwrap is not None
    limits = default_limits(profile, float(getattr(opts, "timeout_s", 300.0)),
                            int(getattr(opts, "trials", 5)),
                            float(getattr(opts, "timing_budget_s", 4.0)),
                            int(getattr(opts, "threads", 0) or 0))
    writable = []
    for var in CACHE_VARS:
        if env.get(var):
            path = os.path.abspath(env[var])
            os.makedirs(path, exist_ok=True)
            writable.append(path)
    # The candidate and reference files are not bound: the worker copies them into the scratch
    # directory, so a process started before its candidate was known (a spare) sees them.
    readonly: list[str] = _readonly_caches(env) + [os.path.abspath(p) for p in extra_readonly]
    inner_env = scrub_env(env)
    inner_env.update({"TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
    wrapper = [sys.executable, "-m", "openkernel_worker.sandbox", "--limits",
               json.dumps(limits.rlimits(), separators=(",", ":")), "--"]
    argv = [pr.bwrap, *bwrap_args(profile, scratch=scratch, env=env, readonly=readonly,
                                  writable=writable, proc_mode=pr.proc_mode),
            "--", *wrapper, *command]
    notes = []
    if profile == "gpu":
        notes.append(f"GPU profile shares {', '.join(sorted(gpu_shared())) or 'nothing'} with the "
                     f"worker (CUDA IPC) and /dev/shm")
    if pr.proc_mode == "bind":
        notes.append("a fresh /proc could not be mounted; the host's /proc is visible read-only")
    dropped = sorted(set(env) - set(inner_env))
    if dropped:
        notes.append(f"dropped environment variables that look like secrets: {', '.join(dropped)}")
    return Launch(argv, inner_env, True, profile, limits=limits, notes=notes)


def main(argv: list[str]) -> int:
    """`python -m openkernel_worker.sandbox --limits JSON -- COMMAND...`: set rlimits, exec."""
    if len(argv) < 4 or argv[0] != "--limits" or argv[2] != "--":
        sys.stderr.write("usage: python -m openkernel_worker.sandbox --limits JSON -- COMMAND\n")
        return 2
    for problem in apply_limits({str(k): int(v) for k, v in json.loads(argv[1]).items()}):
        sys.stderr.write(f"openkernel sandbox: could not set {problem}\n")
    command = argv[3:]
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
