"""Every Debian package the build, the candidate formats and the tests use is installed by a script.

scripts/setup.sh is the one place that installs (tests/slurm/local_slurm.sh installs SLURM on demand
for its own test). A package installed by hand would let everything pass here and fail on a fresh
machine, so the packages are derived from what is actually used, never listed by hand:
- the build: every header the release build compiled against (ninja's dependency log), the files
  CMake found (its cache) and the libraries it links (build.ninja);
- the candidate formats: the headers a torch.utils.cpp_extension.load_inline source includes
  (g++ -M with torch's own include paths), omp.h for openkernel_worker.native's -fopenmp, the
  compiler and ninja they run, and every Python file the worker and torch's extension builder load;
- the tests: every module the test sources import and every tool they run (subprocess literals,
  shutil.which), plus cmake/ctest/pytest, which run them.
Each file is mapped to its package with dpkg's file lists; a package counts as installed by a script
when it is named there or is in the Depends/Pre-Depends closure of a named or Essential package.
Skips where there is no dpkg or no release build.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from locations import PYTHON, ROOT
BUILD = ROOT / "build/release"
DPKG_INFO = Path("/var/lib/dpkg/info")
# Not from Debian on purpose: the CUDA toolkit comes with a GPU machine's image (nvcc, for the GPU
# candidate formats and the tests that use nvcc when present); files under /tmp are build outputs.
NOT_DEBIAN = ("/usr/local/cuda", "/tmp/", "/proc/", "/dev/")
# The toolkit's tools by name too: a GPU image may put them on PATH through wrappers or links
# outside /usr/local/cuda (/usr/local/bin/nvcc here).
CUDA_TOOLS = {"nvcc", "ncu", "nsys", "cuobjdump", "nvdisasm", "ptxas"}

pytestmark = [
    pytest.mark.skipif(shutil.which("dpkg-query") is None or not DPKG_INFO.is_dir(),
                       reason="not a Debian machine (no dpkg): scripts/setup.sh targets Debian 12"),
    pytest.mark.skipif(not (BUILD / ".ninja_deps").is_file(),
                       reason=f"no release build at {BUILD} (scripts/setup.sh builds it)"),
]


def script_packages() -> dict[str, list[str]]:
    """The package arrays of scripts/setup.sh (run, test) and tests/slurm/local_slurm.sh."""
    script = ("set -e; eval \"$(sed -n '/^RUN_PACKAGES=(/,/^)/p;/^TEST_PACKAGES=(/,/^)/p' "
              "scripts/setup.sh)\"; eval \"$(grep -E '^readonly PACKAGES=\\(' "
              "tests/slurm/local_slurm.sh | sed 's/^readonly //')\"; "
              "echo \"${RUN_PACKAGES[*]}\"; echo \"${TEST_PACKAGES[*]}\"; echo \"${PACKAGES[*]}\"")
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    run, test, slurm = (line.split() for line in out)
    assert run and test and slurm, out
    return {"run": run, "test": test, "slurm": slurm}


def file_owners() -> dict[str, str]:
    """path -> package, from dpkg's file lists."""
    owners: dict[str, str] = {}
    for listing in DPKG_INFO.glob("*.list"):
        package = listing.name[:-len(".list")].split(":")[0]
        for line in listing.read_text(errors="replace").splitlines():
            owners.setdefault(line, package)
    return owners


def installed() -> dict[str, dict[str, object]]:
    """Installed packages: essential flag, dependency groups (alternatives) and what they provide."""
    fmt = "${Package}\\t${Status}\\t${Essential}\\t${Pre-Depends}\\t${Depends}\\t${Provides}\\n"
    out = subprocess.run(["dpkg-query", "-W", f"-f={fmt}"], capture_output=True, text=True,
                         check=True).stdout
    packages: dict[str, dict[str, object]] = {}
    for line in out.splitlines():
        name, status, essential, pre, deps, provides = (line.split("\t") + [""] * 6)[:6]
        if not status.endswith(" installed"):
            continue
        groups = [[re.split(r"[\s(:]", alt.strip())[0] for alt in group.split("|")]
                  for group in f"{pre},{deps}".split(",") if group.strip()]
        packages[name] = {"essential": essential == "yes", "deps": groups,
                          "provides": [re.split(r"[\s(]", p.strip())[0]
                                       for p in provides.split(",") if p.strip()]}
    return packages


def closure(named: list[str], packages: dict[str, dict[str, object]]) -> set[str]:
    """The named and Essential packages and every installed package they depend on."""
    providers: dict[str, list[str]] = {}
    for name, info in packages.items():
        for virtual in info["provides"]:  # type: ignore[union-attr]
            providers.setdefault(virtual, []).append(name)
    todo = [p for p in named if p in packages]
    todo += [p for p, info in packages.items() if info["essential"]]
    seen: set[str] = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for group in packages[p]["deps"]:  # type: ignore[union-attr]
            for alt in group:
                todo += [alt] if alt in packages else providers.get(alt, [])
    return seen


def owner(path: str, owners: dict[str, str]) -> str | None:
    """The package that installed `path` (or the file a symlink chain ends at), usrmerge-aware."""
    for candidate in dict.fromkeys([path, os.path.realpath(path)]):
        for variant in (candidate, re.sub(r"^/usr(/(?:lib|lib64|bin|sbin)/)", r"\1", candidate),
                        re.sub(r"^/(lib|lib64|bin|sbin)/", r"/usr/\1/", candidate)):
            if variant in owners:
                return owners[variant]
    return None


def build_files() -> list[str]:
    """Headers the release build used, files CMake found, libraries it links."""
    deps = subprocess.run(["ninja", "-C", str(BUILD), "-t", "deps"], capture_output=True,
                          text=True, check=True).stdout
    files = {line.strip() for line in deps.splitlines() if line.startswith("    /")}
    for line in (BUILD / "CMakeCache.txt").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.endswith(":FILEPATH") or key.endswith("_COMMAND:INTERNAL"):
            files.add(value)
        elif re.fullmatch(r"\w+_DIR:PATH", key) and Path(value).is_dir():  # package configs
            files.update(str(p) for p in Path(value).glob("*.cmake"))
    files.update(re.findall(r"/usr/[^\s$]+\.(?:so|a)(?:\.[\d.]+)?",
                            (BUILD / "build.ninja").read_text()))
    return sorted(f for f in files if f.startswith("/") and not f.startswith(str(ROOT))
                  and Path(f).exists())


def python_files(modules: list[str]) -> list[str]:
    """Every file the worker's Python loads when it imports `modules` (those it can import)."""
    code = ("import importlib, json, sys\n"
            f"for name in {modules!r}:\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except Exception:\n        pass\n"
            "print(json.dumps(sorted({getattr(m, '__file__', None) or '' "
            "for m in list(sys.modules.values())} - {''})))")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=300).stdout
    return [f for f in json.loads(out) if not f.startswith(str(ROOT))]


def candidate_format_files() -> list[str]:
    """Headers of a load_inline source and of native's OpenMP, the tools they run, their Python."""
    code = ("import json, sysconfig, torch.utils.cpp_extension as c\n"
            "print(json.dumps(c.include_paths() + [sysconfig.get_paths()['include']]))")
    includes = json.loads(subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                                         check=True, timeout=300).stdout)
    source = "#include <torch/extension.h>\n#include <omp.h>\n"
    cxx = shutil.which("c++") or "c++"
    deps = subprocess.run([cxx, "-M", "-std=c++17", "-fopenmp", "-x", "c++", "-", "-o", "-",
                           *(f"-I{d}" for d in includes)], input=source, capture_output=True,
                          text=True, timeout=300)
    assert deps.returncode == 0, (f"a load_inline source cannot be compiled here (did "
                                  f"scripts/setup.sh run?):\n{deps.stderr[-2000:]}")
    files = [f for f in deps.stdout.replace("\\\n", " ").split() if f.startswith("/")]
    files += [p for p in (shutil.which("ninja"), cxx) if p]
    worker = [f"openkernel_worker.{p.stem}" for p in (ROOT / "python/openkernel_worker").glob("*.py")
              if p.stem != "__main__"]
    return files + python_files(["torch.utils.cpp_extension", "numpy", *worker])


def sources_of_tests() -> list[Path]:
    return [p for d in ("tests", "python/tests", "bench") for p in (ROOT / d).rglob("*.py")]


def files_tests_use() -> list[str]:
    """Modules the test sources import, the tools they run, and the runners."""
    modules: set[str] = {"pytest"}
    tools: set[str] = {"cmake", "ctest", "bash", PYTHON}
    for path in sources_of_tests():
        text = path.read_text(errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
        tools.update(re.findall(r"subprocess\.\w+\(\[\s*[\"']([\w.+-]+)[\"']", text))
        tools.update(re.findall(r"shutil\.which\([\"']([\w.+-]+)[\"']\)", text))
    found = [shutil.which(t) for t in sorted(tools - CUDA_TOOLS)]
    return [f for f in found if f] + python_files(sorted(modules))


def unnamed(files: list[str], named: set[str], owners: dict[str, str]) -> dict[str, str]:
    """package (or 'no package') -> an example file, for every file not covered by `named`."""
    missing: dict[str, str] = {}
    for f in files:
        if f.startswith(NOT_DEBIAN):
            continue
        package = owner(f, owners)
        if package is None:
            missing.setdefault(f"no Debian package (installed by hand?): {f}", f)
        elif package not in named:
            missing.setdefault(package, f)
    return missing


@pytest.fixture(scope="module")
def dpkg() -> tuple[dict[str, list[str]], dict[str, str], dict[str, dict[str, object]]]:
    return script_packages(), file_owners(), installed()


@pytest.fixture(scope="module")
def candidate_formats() -> list[str]:
    return candidate_format_files()


def report(missing: dict[str, str]) -> str:
    return "\n".join(f"  {p}  (e.g. {f})" for p, f in sorted(missing.items()))


def test_build_and_candidate_formats_need_only_the_run_profile(dpkg, candidate_formats) -> None:
    lists, owners, packages = dpkg
    missing = unnamed(build_files() + candidate_formats, closure(lists["run"], packages), owners)
    assert not missing, ("used by the build or a candidate format but not installed by "
                         "scripts/setup.sh's RUN_PACKAGES:\n" + report(missing))


def test_tests_need_only_what_scripts_install(dpkg) -> None:
    lists, owners, packages = dpkg
    named = closure(lists["run"] + lists["test"] + lists["slurm"], packages)
    missing = unnamed(files_tests_use(), named, owners)
    assert not missing, ("used by the tests but installed by no script (add it to "
                         "scripts/setup.sh's TEST_PACKAGES):\n" + report(missing))


@pytest.mark.parametrize("left_out", [("pybind11-dev", "libtorch-dev"), ("python3-setuptools",)])
def test_a_hand_installed_package_is_caught(dpkg, candidate_formats, left_out) -> None:
    """Were these not named, the files the load_inline format uses would point at them."""
    lists, owners, packages = dpkg
    trimmed = [p for p in lists["run"] if p not in left_out]
    missing = unnamed(candidate_formats, closure(trimmed, packages), owners)
    assert set(left_out) <= missing.keys(), report(missing)
    assert all(missing[p].startswith("/usr/") for p in left_out), report(missing)


def test_a_test_only_tool_is_caught(dpkg) -> None:
    """pytest is named only in TEST_PACKAGES: the run profile alone misses it."""
    lists, owners, packages = dpkg
    missing = unnamed(files_tests_use(), closure(lists["run"], packages), owners)
    assert "/_pytest/" in missing.get("python3-pytest", ""), report(missing)


@pytest.mark.parametrize("args, says", [
    (["--bogus"], "unknown option --bogus"),
    (["--target"], "--target needs a target name"),
])
def test_setup_refuses_bad_options_before_installing(args: list[str], says: str) -> None:
    p = subprocess.run([str(ROOT / "scripts/setup.sh"), *args], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr
    assert "installing" not in p.stdout + p.stderr


def test_test_script_refuses_an_unknown_argument_before_building() -> None:
    p = subprocess.run([str(ROOT / "scripts/test.sh"), "--bogus"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, p.stderr
    assert "unknown argument --bogus" in p.stderr and "--asan" in p.stderr
    assert "installing" not in p.stdout + p.stderr and "suite durations" not in p.stdout
