"""inline_build.py / inline_cache.py: load_inline builds through the worker's cache.

The fast tests read the build.ninja torch writes (no compiler run). The slow ones compile: a CPU
load_inline candidate through a whole evaluation (sandboxed) gives the right answers, a second
evaluation hits the cache, a compile error is a compile_error with the compiler's message, and a
hostile candidate cannot alter what the next one loads.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest

from openkernel_worker import inline_build, inline_cache, inline_link, inline_nvcc, sandbox

NAME = "okinline_test"  # one extension name: one flag set, one precompiled header for the suite
GOOD = f'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
torch::Tensor f(torch::Tensor x, double s) {{
  auto y = torch::empty_like(x);
  const float* a = x.data_ptr<float>();
  float* b = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = (a[i] > 0.f ? a[i] : 0.f) * (float)s;
  return y;
}}
"""
ext = load_inline("{NAME}", SRC, functions=["f"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.f(x, self.scale)
'''


@pytest.fixture(autouse=True)
def _build_server_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build server is opt-in (docs/evaluation.md); these tests are about it."""
    monkeypatch.setenv("OPENKERNEL_INLINE_BUILD", "1")


def test_build_server_is_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from openkernel_worker.evaluate import Evaluation

    for value in (None, "0", "yes"):  # unset, off, anything but 1: torch's own build
        if value is None:
            monkeypatch.delenv("OPENKERNEL_INLINE_BUILD", raising=False)
        else:
            monkeypatch.setenv("OPENKERNEL_INLINE_BUILD", value)
        assert Evaluation._inline_builder(SimpleNamespace()) is None  # type: ignore[arg-type]


def _have_headers() -> bool:
    try:
        from torch.utils.cpp_extension import include_paths
    except ImportError:
        return False
    return any(os.path.isfile(os.path.join(p, "torch", "extension.h")) for p in include_paths())


needs_build = pytest.mark.skipif(
    not _have_headers() or shutil.which("c++") is None or not sandbox.probe("cpu").ok,
    reason="needs torch's C++ headers (Debian: libtorch-dev pybind11-dev), c++ and bwrap")


def _ninja(tmp_path: Path, cuda: bool = False) -> inline_build.Job:
    """The build.ninja torch's load_inline writes (its build step replaced by a no-op)."""
    import torch.utils.cpp_extension as cpp

    original = cpp._run_ninja_build
    cpp._run_ninja_build = lambda *a, **k: (_ for _ in ()).throw(SystemExit(0))
    try:
        with pytest.raises(SystemExit):
            cpp.load_inline("parse_me", "int f(int x) { return x; }", functions=["f"],
                            build_directory=str(tmp_path), extra_cflags=["-O2"])
    finally:
        cpp._run_ninja_build = original
    return inline_build.parse_ninja(str(tmp_path))


def test_parse_torch_ninja(tmp_path: Path) -> None:
    job = _ninja(tmp_path)
    assert [u.kind for u in job.units] == ["cxx"]
    unit = job.units[0]
    assert unit.source == str(tmp_path / "main.cpp") and unit.obj == str(tmp_path / "main.o")
    assert "-DTORCH_EXTENSION_NAME=parse_me" in unit.command and "-O2" in unit.command
    assert "-c @IN@ -o @OUT@" in unit.command
    assert job.output == str(tmp_path / "parse_me.so") and "-shared" in job.link
    assert inline_cache.Builder._cmd(unit, "-E", "/o/u.ii").count("-E ") == 1


def test_unknown_ninja_is_unsupported(tmp_path: Path) -> None:
    (tmp_path / "build.ninja").write_text("rule weird\n  command = x\nbuild a: weird b\n")
    with pytest.raises(inline_build.Unsupported):
        inline_build.parse_ninja(str(tmp_path))


@pytest.mark.parametrize("flag", ["-fplugin=/x/p.so", "-B/x", "-specs=/x/s", "-wrapper sh,-c",
                                  "--compiler-options '-fplugin=/x.so'", "@/x/args"])
def test_unsafe_flags(flag: str) -> None:
    assert inline_build.unsafe_flag(f"c++ -MMD -MF @OUT@.d {flag} -c @IN@ -o @OUT@")
    assert inline_build.unsafe_flag("c++ -MMD -MF @OUT@.d -O2 -c @IN@ -o @OUT@") is None


def test_nvcc_steps_parallel_chains() -> None:
    """Host and device chains share no intermediate: only the final host compile waits."""
    dry = textwrap.dedent("""\
        #$ _NVVM_BRANCH_=nvvm
        #$ gcc -E -x c++ cuda.cu -o "k/cuda.cpp4.ii"
        #$ cudafe++ --gen_c_file_name "k/cuda.cudafe1.cpp" --stub_file_name "cuda.cudafe1.stub.c" "k/cuda.cpp4.ii"
        #$ gcc -D__CUDA_ARCH__=900 -E cuda.cu -o "k/cuda.cpp1.ii"
        #$ cicc "k/cuda.cpp1.ii" -o "k/cuda.ptx"
        #$ ptxas -arch=sm_90a "k/cuda.ptx" -o "k/cuda.sm_90a.cubin"
        #$ fatbinary --create="k/cuda.fatbin" "--image3=kind=elf,sm=90a,file=k/cuda.sm_90a.cubin" --embedded-fatbin="k/cuda.fatbin.c"
        #$ gcc -c -x c++ "k/cuda.cudafe1.cpp" -o "out.o"
        """)
    parsed = inline_nvcc.nvcc_steps(dry, "k")
    assert parsed is not None
    prefix, commands, deps = parsed
    assert prefix.startswith("export _NVVM_BRANCH_=nvvm") and len(commands) == 7
    assert deps[1] == {0} and deps[2] == set() and deps[3] == {2} and deps[4] == {3}
    assert deps[5] == {4} and deps[6] >= {1}  # the host compile waits for cudafe++'s output


def test_link_key_inputs(tmp_path: Path) -> None:
    """The link's template names objects by key and the output by placeholder; the libraries
    it names are found (-L first) with size and mtime; names in the candidate's directories,
    in the build directory or flags that change the linker make the link the candidate's."""
    lib = tmp_path / "sys" / "libfoo.so"
    lib.parent.mkdir()
    lib.write_bytes(b"x")
    build = tmp_path / "ext" / "okx"
    obj = shlex.quote(str(build / "main.o"))
    out = str(build / "okx.so")
    cmd = f"c++ {obj} -shared -L{lib.parent} -lfoo -o {shlex.quote(out)}"
    holders = {obj: "@OBJ:" + "a" * 64 + "@"}
    template, libs = inline_link.link_inputs(cmd, holders, out, str(build),
                                             [str(tmp_path / "ext")], [])
    assert template == f"c++ @OBJ:{'a' * 64}@ -shared -L{lib.parent} -lfoo -o @OUT@"
    assert libs == [[str(lib), 1, lib.stat().st_mtime_ns]]
    assert inline_link.substitute(template, {holders[obj]: "/c/o.o"}, "/w/l.so") == \
        f"c++ /c/o.o -shared -L{lib.parent} -lfoo -o /w/l.so"
    refused = {
        "a library in the candidate's directories": (cmd.replace(str(lib.parent),
                                                                 str(tmp_path / "ext"))),
        "a missing library": cmd.replace("-lfoo", "-lnope"),
        "a file in the build directory": cmd + f" {build}/extra.a",
    }
    (tmp_path / "ext" / "libfoo.so").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ext" / "libfoo.so").write_bytes(b"y")
    for why, bad in refused.items():
        with pytest.raises(inline_link.NotCacheable):
            inline_link.link_inputs(bad, holders, out, str(build), [str(tmp_path / "ext")], [])
            pytest.fail(why)
    for flag in ("-fuse-ld=gold", "-Wl,-plugin,/x.so", "-Wl,-T,/x.ld", "-B/x", "-Wl,@/x"):
        assert inline_link.unsafe_link_flag(f"{cmd} {flag}"), flag
    assert inline_link.unsafe_link_flag(cmd) is None


def test_build_dir_outside_roots_is_refused(tmp_path: Path) -> None:
    builder = inline_cache.Builder(str(tmp_path / "cache"), dict(os.environ), sandboxed=False)
    reply = builder.serve({"build_dir": "/etc"}, [str(tmp_path / "ext")])
    assert not reply["ok"] and "outside" in reply["message"]


# ---------------------------------------------------------------------------------------------
# Whole evaluations (compile: slow)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("okcache"))


def _evaluate(reference: str, candidate: str, cache: str) -> dict[str, Any]:
    from openkernel_worker.evaluate import evaluate

    return evaluate({"reference": reference, "candidate": candidate, "backend": "cpu",
                     "trials": 2, "timing_budget_s": 0.2, "timeout_s": 600, "seed": 1,
                     "cache_dir": cache})


def _objects(cache: str) -> dict[str, str]:
    root = Path(cache) / "inline"
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@needs_build
def test_evaluation_through_cache(write: Callable[[str, str], str], tiny_reference: str,
                                  cache_dir: str) -> None:
    cand = write("candidate.py", GOOD)
    first = _evaluate(tiny_reference, cand, cache_dir)
    assert first["verdict"] == "correct", first.get("reasons")
    assert any(Path(cache_dir, "inline", "objects").glob("*.o"))
    # The same source again (a new process, torch's own extension cache cleared): a direct hit.
    shutil.rmtree(Path(cache_dir, "torch_extensions"))
    second = _evaluate(tiny_reference, cand, cache_dir)
    assert second["verdict"] == "correct", second.get("reasons")
    logs = list(Path(cache_dir, "torch_extensions").rglob("openkernel_build.json"))
    assert logs and '"hit_direct"' in logs[0].read_text()
    log = json.loads(logs[0].read_text())  # the library too: copied, not linked
    assert log["link"] == "cached" and log["worker_link"]["result"] == "hit", log


@pytest.mark.slow
@needs_build
def test_compile_error_is_reported(write: Callable[[str, str], str], tiny_reference: str,
                                   cache_dir: str) -> None:
    bad = GOOD.replace("(float)s;", "(float)undeclared_name;")
    result = _evaluate(tiny_reference, write("candidate.py", bad), cache_dir)
    assert result["verdict"] == "compile_error"
    text = " ".join(result.get("reasons", []))
    assert "Error building extension" in text and "undeclared_name" in text


@pytest.mark.slow
@needs_build
def test_precompiled_header_shared_across_names(write: Callable[[str, str], str],
                                                tiny_reference: str, cache_dir: str) -> None:
    """A second extension name uses the header precompiled for the first (GCC accepts it: the
    header never uses TORCH_EXTENSION_NAME), and its module, PyInit_<second name>, works."""
    logs = []
    for name in ("okinline_pch_a", "okinline_pch_b"):
        cand = write(f"{name}.py", GOOD.replace(NAME, name))
        result = _evaluate(tiny_reference, cand, cache_dir)
        assert result["verdict"] == "correct", result.get("reasons")
        found = list(Path(cache_dir, "torch_extensions").rglob(f"{name}/openkernel_build.json"))
        assert found, name
        logs.append(json.loads(found[0].read_text()))
    main = [u for u in logs[1]["units"] if u["source"] == "main.cpp"]
    assert main and main[0]["result"] == "built" and main[0]["pch"] == "hit", logs[1]
    assert "pch_warning" not in main[0], main[0]["pch_warning"]


HOSTILE = GOOD + '''

def _attack():
    import os
    root = os.environ["OPENKERNEL_INLINE_CACHE"]
    done = []
    for dirpath, _, files in os.walk(root):
        for name in files + ["planted.o"]:
            try:
                with open(os.path.join(dirpath, name), "wb") as f:
                    f.write(b"evil")
                done.append(name)
            except OSError:
                pass
    if done:
        raise RuntimeError(f"wrote into the shared cache: {done}")


_attack()
'''


@pytest.mark.slow
@needs_build
def test_hostile_candidate_cannot_alter_cache(write: Callable[[str, str], str],
                                              tiny_reference: str, cache_dir: str) -> None:
    good = write("candidate.py", GOOD)
    assert _evaluate(tiny_reference, good, cache_dir)["verdict"] == "correct"
    before = _objects(cache_dir)
    hostile = _evaluate(tiny_reference, write("hostile.py", HOSTILE), cache_dir)
    assert hostile["verdict"] == "correct", hostile.get("reasons")  # it computes honestly
    assert {k: v for k, v in _objects(cache_dir).items() if k in before} == before
    assert not any(k.endswith("planted.o") for k in _objects(cache_dir))
    again = _evaluate(tiny_reference, good, cache_dir)
    assert again["verdict"] == "correct", again.get("reasons")


ATTACK_ONLY = '''
import torch
import torch.nn as nn
''' + HOSTILE.split("\n\ndef _attack", 1)[1].join(["\n\ndef _attack", ""]) + '''

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
'''


@pytest.mark.skipif(not sandbox.probe("cpu").ok, reason="needs bwrap")
def test_candidate_cannot_write_the_object_cache(write: Callable[[str, str], str],
                                                 tiny_reference: str, tmp_path: Path) -> None:
    """No compiler: entries planted by the test stand for earlier builds; a candidate that tries
    to overwrite them and plant new ones (objects, precompiled headers, direct entries) fails,
    as the cache is bound read-only into its sandbox."""
    cache = str(tmp_path / "cache")
    for rel in ("objects/" + "a" * 64 + ".o", "pch/k/pch.h.gch", "direct/" + "b" * 64 + ".json"):
        p = Path(cache, "inline", rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"honest " + rel.encode())
    before = _objects(cache)
    result = _evaluate(tiny_reference, write("hostile.py", ATTACK_ONLY), cache)
    assert "wrote into the shared cache" not in " ".join(result.get("reasons", [])), result
    assert result["verdict"] != "compile_error", result.get("reasons")
    assert _objects(cache) == before
    # Without the sandbox the same attempt succeeds: the test would notice a writable cache.
    from openkernel_worker.evaluate import evaluate

    open_result = evaluate({"reference": tiny_reference, "candidate": str(tmp_path / "hostile.py"),
                            "backend": "cpu", "trials": 2, "timing_budget_s": 0.2, "seed": 1,
                            "cache_dir": cache, "no_sandbox": True})
    assert "wrote into the shared cache" in " ".join(open_result.get("reasons", []))


@pytest.mark.parametrize("depfile", ["-MMD -MF @OUT@.d", "-MD -MF @OUT@.d",
                                     "--generate-dependencies-with-compile --dependency-output "
                                     "@OUT@.d"])
def test_every_dependency_file_form_torch_writes_is_dropped(depfile: str) -> None:
    # torch 2.11's CUDA rule (CUDA 13's nvcc) as the H200 machine wrote it, with each form torch
    # has used; the -MD form once sent every CUDA unit back to torch's own build.
    command = (f"/usr/local/cuda/bin/nvcc {depfile} -ccbin /opt/gcc/bin/gcc "
               "-DTORCH_EXTENSION_NAME=okbench_cuda -isystem /t/include --expt-relaxed-constexpr "
               "-gencode=arch=compute_90a,code=sm_90a --compiler-options '-fPIC' -std=c++17 "
               "-c @IN@ -o @OUT@ ")
    unit = inline_build.Unit(kind="cuda", source="/b/cuda.cu", obj="/b/cuda.cuda.o",
                             command=command)
    cmd = inline_cache.Builder._cmd(unit, "-c", "/o/unit.o")
    assert "@OUT@" not in cmd and "-MF" not in cmd and "dependency" not in cmd
    assert cmd.split()[0] == "/usr/local/cuda/bin/nvcc" and " -c /b/cuda.cu -o /o/unit.o" in cmd
    assert inline_build.unsafe_flag(command) is None
