"""The `openkernel` binary end to end: `evaluate` verdicts and exit codes, `problems`, the store.

Runs the built binary ($OPENKERNEL_BIN, default build/release/bin/openkernel) against the tiny CPU
reference in fixtures/ and, when present, KernelBench ($OPENKERNEL_KERNELBENCH_DIR, default
../shared/kernelbench). Every CLI run a selected test needs is started in parallel when the first
test asks for it ($OPENKERNEL_TEST_JOBS at a time, default 3); each test then checks its run.

    /usr/bin/python3 -m pytest -q tests/integration
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from locations import BINARY, FIXTURES, PYTHON, ROOT
KERNELBENCH = Path(os.environ.get("OPENKERNEL_KERNELBENCH_DIR")
                   or ROOT.parent / "shared/kernelbench")
JOBS = int(os.environ.get("OPENKERNEL_TEST_JOBS") or 3)
RUN_LIMIT_S = 300

REFERENCE = "ref_scaled_relu.py"
QUICK = ["--json", "--timing-budget", "0.3", "--trials", "2", "--timeout", "60"]
RESULT_KEYS = {"verdict", "compiled", "correct", "valid", "flags", "reasons", "max_abs_error",
               "max_rel_error", "runtime_us", "ref_runtime_us", "speedup", "device", "backend",
               "tolerance"}
STATS_KEYS = {"median", "mean", "stderr", "min", "n"}

pytestmark = pytest.mark.skipif(not BINARY.is_file(),
                                reason=f"no openkernel binary at {BINARY}; build it "
                                       f"(cmake --preset release && ninja -C build/release) or "
                                       f"set OPENKERNEL_BIN")


@dataclass
class Case:
    args: list[str]
    db: str | None = None  # a database shared with other cases; else one of its own
    kernelbench: bool = False  # needs the KernelBench directory
    timed: bool = False  # reaches timing: runs alone, so that our own load does not disturb it


def evaluate(candidate: str, *extra: str, reference: str = REFERENCE, as_json: bool = True,
             db: str | None = None, timed: bool = False) -> Case:
    """An evaluate run with QUICK settings; an option in `extra` replaces QUICK's (CLI11 refuses
    an option given twice)."""
    quick = ["--json"] if as_json else []
    for option, value in zip(QUICK[1::2], QUICK[2::2]):
        if option not in extra:
            quick += [option, value]
    return Case(["evaluate", "--reference", str(FIXTURES / reference),
                 "--candidate", str(FIXTURES / candidate), *quick, *extra], db=db, timed=timed)


def kernelbench(*args: str, timed: bool = False) -> Case:
    return Case([*args, "--kernelbench-dir", str(KERNELBENCH)], kernelbench=True, timed=timed)


CASES: dict[str, Case] = {
    # Bad input: exit status 2 before or instead of a verdict.
    "missing_reference": evaluate("cand_correct.py", reference="ref_does_not_exist.py"),
    "missing_candidate": evaluate("cand_does_not_exist.py"),
    "candidate_is_directory": Case(["evaluate", "--reference", str(FIXTURES / REFERENCE),
                                    "--candidate", str(FIXTURES), *QUICK]),
    "reference_is_directory": Case(["evaluate", "--reference", str(FIXTURES),
                                    "--candidate", str(FIXTURES / "cand_correct.py"), *QUICK]),
    "reference_without_get_inputs": evaluate("cand_correct.py",
                                             reference="ref_missing_get_inputs.py"),
    "reference_without_model": evaluate("cand_correct.py", reference="ref_missing_model.py"),
    "unknown_backend": evaluate("cand_correct.py", "--backend", "opencl"),
    "cuda_without_gpu": evaluate("cand_correct.py", "--backend", "cuda"),
    "set_unknown_constant": evaluate("cand_correct.py", "--set", "batch_size=4"),
    "set_malformed": evaluate("cand_correct.py", "--set", "rows"),
    "zero_trials": evaluate("cand_correct.py", "--trials", "0"),
    "rested_unknown": evaluate("cand_correct.py", "--rested", "sometimes"),
    "reference_and_level": evaluate("cand_correct.py", "--level", "1", "--problem", "19"),
    "no_problem": Case(["evaluate", "--candidate", str(FIXTURES / "cand_correct.py"), *QUICK]),
    "kernelbench_missing_problem": kernelbench(
        "evaluate", "--level", "1", "--problem", "999",
        "--candidate", str(FIXTURES / "cand_kernelbench_relu.py"), *QUICK),
    # Verdicts: exit status 0.
    "correct": evaluate("cand_correct.py", db="shared.db", timed=True),
    "wrong_shape": evaluate("cand_wrong_shape.py", db="shared.db"),
    "wrong_dtype": evaluate("cand_wrong_dtype.py", db="shared.db"),
    "syntax_error": evaluate("cand_syntax_error.py"),
    "no_modelnew_human": evaluate("cand_no_modelnew.py", as_json=False),
    "raises": evaluate("cand_raises.py"),
    "infinite_loop": evaluate("cand_infinite_loop.py", "--timeout", "3"),
    "segfault": evaluate("cand_segfault.py"),
    "exit0": evaluate("cand_exit0.py"),
    "mutates_input": evaluate("cand_mutates_input.py"),
    "returns_none": evaluate("cand_returns_none.py"),
    "set_shrinks_reference": evaluate("cand_correct.py", "--set", "rows=3", "--set", "cols=5",
                                      timed=True),
    # KernelBench's own candidate format, a C++ extension by torch's load_inline (30-70 s to build
    # cold on two cores, the torch/extension.h PCH included; a compile_error here on Debian means
    # torch's C++ headers are missing: scripts/setup.sh).
    "load_inline_cpu": Case(["evaluate", "--reference",
                             str(ROOT / "examples/swish_chain/reference.py"), "--candidate",
                             str(FIXTURES / "cand_swish_load_inline.py"), *QUICK[:-2],
                             "--timeout", "240"], timed=True),
    "kernelbench_relu": kernelbench(
        "evaluate", "--level", "1", "--problem", "19", "--set", "batch_size=16",
        "--set", "dim=1024", "--candidate", str(FIXTURES / "cand_kernelbench_relu.py"), *QUICK,
        timed=True),
    # problems
    "problems_list": kernelbench("problems", "list", "--level", "1"),
    "problems_list_json": kernelbench("problems", "list", "--level", "1", "--json"),
    "problems_list_missing_level": kernelbench("problems", "list", "--level", "9"),
    "problems_show": kernelbench("problems", "show", "--level", "1", "--problem", "19",
                                 "--set", "batch_size=16", "--set", "dim=1024"),
    "problems_show_json": kernelbench("problems", "show", "--level", "1", "--problem", "19",
                                      "--set", "batch_size=16", "--set", "dim=1024", "--json"),
}
# After the timed runs, started first: the runs that take longest.
SLOW_FIRST = ["infinite_loop", "mutates_input", "wrong_shape", "wrong_dtype", "raises",
              "segfault", "exit0", "returns_none", "syntax_error", "no_modelnew_human"]


@dataclass
class Run:
    name: str
    args: list[str]
    rc: int
    stdout: str
    stderr: str
    db: Path
    seconds: float
    result: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return (f"openkernel {' '.join(self.args)}\n  exit {self.rc} after {self.seconds:.1f} s\n"
                f"  stdout: {self.stdout[-2000:]}\n  stderr: {self.stderr[-2000:]}")


def environment(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENKERNEL_CONFIG", "OPENKERNEL_DB", "OPENKERNEL_KERNELBENCH_DIR",
                        "OPENKERNEL_HOME")}
    env.update({"OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(base / "config"),
                "XDG_DATA_HOME": str(base / "data"), "XDG_CACHE_HOME": str(base / "cache")})
    return env


def run_case(name: str, case: Case, base: Path, env: dict[str, str]) -> Run:
    db = base / (case.db or f"{name}.db")
    args = [*case.args, "--db", str(db)] if case.args[0] == "evaluate" else case.args
    start = time.monotonic()
    proc = subprocess.run([str(BINARY), *args], capture_output=True, text=True, env=env,
                          timeout=RUN_LIMIT_S, cwd=base)
    run = Run(name, args, proc.returncode, proc.stdout, proc.stderr, db,
              time.monotonic() - start)
    if "--json" in args and proc.returncode == 0:
        run.result = json.loads(proc.stdout)
    return run


class Runs:
    def __init__(self, futures: dict[str, Future[Run]]) -> None:
        self._futures = futures

    def __getitem__(self, name: str) -> Run:
        if CASES[name].kernelbench and not (KERNELBENCH / "level1").is_dir():
            pytest.skip(f"no KernelBench directory at {KERNELBENCH}; set "
                        f"OPENKERNEL_KERNELBENCH_DIR")
        assert name in self._futures, f"mark the test with @pytest.mark.cases({name!r})"
        return self._futures[name].result()


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Runs]:
    wanted: set[str] = set()
    for item in request.session.items:
        marker = item.get_closest_marker("cases")
        if marker is not None:
            wanted.update(marker.args)
    have_kb = (KERNELBENCH / "level1").is_dir()
    wanted = {n for n in wanted if have_kb or not CASES[n].kernelbench}
    timed = sorted(n for n in wanted if CASES[n].timed)
    names = [n for n in SLOW_FIRST if n in wanted]
    names += sorted(n for n in wanted if n not in SLOW_FIRST and n not in timed)
    # The first run on a shared database creates it alone: concurrent first opens race (see
    # test_store.cpp, ConcurrentFirstOpensAllSucceed); the others start last and wait for it.
    first: dict[str, str] = {}
    for n in timed + names:
        if CASES[n].db:
            first.setdefault(CASES[n].db, n)
    later = [n for n in names if CASES[n].db and first[CASES[n].db] != n]
    names = [n for n in names if n not in later] + later
    base = tmp_path_factory.mktemp("cli")
    env = environment(base)
    futures: dict[str, Future[Run]] = {}

    def job(name: str) -> Run:
        for t in timed:  # the timed runs go first, one at a time, with nothing else running
            futures[t].exception()
        db = CASES[name].db
        if db and first[db] != name:
            futures[first[db]].exception()  # waits for the creating run, whatever its outcome
        return run_case(name, CASES[name], base, env)

    with ThreadPoolExecutor(max_workers=1) as alone, ThreadPoolExecutor(max_workers=JOBS) as pool:
        for n in timed:
            futures[n] = alone.submit(run_case, n, CASES[n], base, env)
        for n in names:
            futures[n] = pool.submit(job, n)
        yield Runs(futures)


def evaluations(db: Path) -> list[dict[str, Any]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM evaluations ORDER BY id")]


def verdict(run: Run, expected: str) -> dict[str, Any]:
    """The run's result after checking exit 0, the verdict and its row in the store."""
    assert run.rc == 0, run
    r = run.result
    assert r["verdict"] == expected, (r["verdict"], r["flags"], r["reasons"])
    assert RESULT_KEYS <= r.keys(), run
    assert r["correct"] is (expected == "correct")
    assert r["db"] == str(run.db)
    rows = [row for row in evaluations(run.db) if row["id"] == r["evaluation_id"]]
    assert len(rows) == 1, f"no row {r['evaluation_id']} in {run.db}"
    row = rows[0]
    assert row["verdict"] == expected
    assert json.loads(row["reasons"]) == r["reasons"]
    assert json.loads(row["flags"]) == r["flags"]
    assert row["backend"] == r["backend"] and row["device"] == r["device"]
    assert json.loads(row["result"])["verdict"] == expected
    assert row["wall_s"] > 0
    return r


def bad_input(run: Run, *fragments: str) -> str:
    """The error message after checking exit 2, no JSON on stdout and nothing recorded."""
    assert run.rc == 2, run
    assert run.stdout.strip() == "", run
    for fragment in fragments:
        assert fragment in run.stderr, run
    assert evaluations(run.db) == []
    return run.stderr


def reason(r: dict[str, Any]) -> str:
    return " | ".join(r["reasons"])


# ---- bad input: exit status 2 ----

@pytest.mark.cases("missing_reference")
def test_missing_reference(runs: Runs) -> None:
    bad_input(runs["missing_reference"], "openkernel: error: reference not found",
              "ref_does_not_exist.py")


@pytest.mark.cases("missing_candidate")
def test_missing_candidate(runs: Runs) -> None:
    bad_input(runs["missing_candidate"], "openkernel: error: file not found",
              "cand_does_not_exist.py")


@pytest.mark.cases("candidate_is_directory", "reference_is_directory")
def test_unreadable_files(runs: Runs) -> None:
    bad_input(runs["candidate_is_directory"], "is a directory, not a file")
    bad_input(runs["reference_is_directory"], "is a directory, not a file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_candidate_by_permission(tmp_path: Path) -> None:
    candidate = tmp_path / "cand.py"
    candidate.write_text((FIXTURES / "cand_correct.py").read_text())
    candidate.chmod(0)
    run = run_case("unreadable", Case(["evaluate", "--reference", str(FIXTURES / REFERENCE),
                                       "--candidate", str(candidate), *QUICK]),
                   tmp_path, environment(tmp_path))
    bad_input(run, "cannot read")


@pytest.mark.cases("reference_without_get_inputs")
def test_reference_without_get_inputs(runs: Runs) -> None:
    message = bad_input(runs["reference_without_get_inputs"], "does not define get_inputs (")
    assert "ref_missing_get_inputs.py" in message


@pytest.mark.cases("reference_without_model")
def test_reference_without_model(runs: Runs) -> None:
    bad_input(runs["reference_without_model"], "does not define Model (", "ref_missing_model.py")


@pytest.mark.cases("unknown_backend")
def test_unknown_backend(runs: Runs) -> None:
    run = runs["unknown_backend"]
    assert run.rc == 2, run
    assert "opencl" in run.stderr and "cpu" in run.stderr, run


@pytest.mark.cases("cuda_without_gpu")
def test_cuda_backend_without_gpu(runs: Runs) -> None:
    run = runs["cuda_without_gpu"]
    if run.rc == 0 and run.result.get("device", "").startswith("cuda"):
        pytest.skip("this machine has a GPU")
    bad_input(run, "--backend cuda needs an NVIDIA GPU", "use --backend cpu")


@pytest.mark.cases("set_unknown_constant")
def test_set_unknown_constant(runs: Runs) -> None:
    message = bad_input(runs["set_unknown_constant"], "--set batch_size",
                        "no module-level constant named batch_size")
    assert "rows" in message and "cols" in message


@pytest.mark.cases("set_malformed", "zero_trials", "rested_unknown", "reference_and_level",
                   "no_problem")
def test_usage_errors(runs: Runs) -> None:
    bad_input(runs["set_malformed"], "--set expects NAME=VALUE, got 'rows'")
    bad_input(runs["zero_trials"], "--trials must be at least 1")
    bad_input(runs["rested_unknown"], "--rested: sometimes not in {auto,on,off}")
    bad_input(runs["reference_and_level"], "either --reference or --level/--problem")
    bad_input(runs["no_problem"], "--reference PATH, or --level L --problem N")


@pytest.mark.cases("kernelbench_missing_problem")
def test_kernelbench_missing_problem(runs: Runs) -> None:
    bad_input(runs["kernelbench_missing_problem"],
              "KernelBench level 1 has no problem 999 (100 problems, numbered 1-100)")


# ---- verdicts: exit status 0 ----

@pytest.mark.cases("correct")
def test_correct_candidate(runs: Runs) -> None:
    r = verdict(runs["correct"], "correct")
    assert r["compiled"] is True and r["valid"] is True
    assert r["flags"] == [], reason(r)
    assert r["reasons"] == ["matched the reference on 2 trials with fresh inputs"]
    assert isinstance(r["speedup"], float) and r["speedup"] > 0
    for key in ("runtime_us", "ref_runtime_us"):
        assert set(r[key]) >= STATS_KEYS
        assert r[key]["n"] >= 1
        assert 0 < r[key]["min"] <= r[key]["median"]
        assert r[key]["stderr"] >= 0
    assert r["speedup"] == pytest.approx(r["ref_runtime_us"]["median"]
                                         / r["runtime_us"]["median"])
    assert 0 <= r["max_abs_error"] <= 1e-3 and 0 <= r["max_rel_error"] <= 1e-3
    assert r["device"] == "cpu" and r["backend"] == "cpu"
    assert r["tolerance"]["float32"]["atol"] == 1e-3
    assert r["tolerance"]["float32"]["rtol"] == 1e-3
    assert r["trials"] == 2
    assert r["versions"]["torch"]
    # A one-off: the engine announced the request, so the worker started the candidate process
    # first thing, before its own torch import (python/openkernel_worker/boot.py).
    assert r["candidate_process"] == "boot", r["process_warm_s"]
    assert r["process_warm_s"]["spawned_before_s"] > 0
    steps = r["worker_start_s"]
    assert steps["candidate_spawned"] <= steps["torch_imported"] <= steps["request"]


@pytest.mark.cases("wrong_shape")
def test_wrong_shape_is_incorrect(runs: Runs) -> None:
    r = verdict(runs["wrong_shape"], "incorrect")
    assert r["compiled"] is True and r["speedup"] is None
    assert "shape (128, 64) differs from the reference's (64, 128)" in reason(r)


@pytest.mark.cases("wrong_dtype")
def test_wrong_dtype_is_incorrect(runs: Runs) -> None:
    r = verdict(runs["wrong_dtype"], "incorrect")
    assert "dtype float64 differs from the reference's float32" in reason(r)


@pytest.mark.cases("syntax_error")
def test_syntax_error_is_compile_error_naming_the_line(runs: Runs) -> None:
    r = verdict(runs["syntax_error"], "compile_error")
    assert r["compiled"] is False
    assert "line 6" in reason(r)
    assert "SyntaxError" in reason(r)


@pytest.mark.cases("no_modelnew_human")
def test_missing_modelnew_is_compile_error(runs: Runs) -> None:
    run = runs["no_modelnew_human"]
    assert run.rc == 0, run
    assert "verdict   compile_error" in run.stdout, run
    assert "defines no class ModelNew" in run.stdout, run
    assert "cand_no_modelnew.py  vs  " in run.stdout
    rows = evaluations(run.db)
    assert [row["verdict"] for row in rows] == ["compile_error"]
    assert rows[0]["compiled"] == 0


@pytest.mark.cases("raises")
def test_raising_candidate_is_runtime_error(runs: Runs) -> None:
    r = verdict(runs["raises"], "runtime_error")
    assert r["compiled"] is True
    assert "ValueError: candidate kernel exploded" in reason(r)
    assert "line 10" in reason(r)


@pytest.mark.cases("infinite_loop")
def test_infinite_loop_is_timeout(runs: Runs) -> None:
    run = runs["infinite_loop"]
    r = verdict(run, "timeout")
    assert "within 3 s" in reason(r)
    assert run.seconds < 60


@pytest.mark.cases("segfault")
def test_segfault_is_runtime_error(runs: Runs) -> None:
    r = verdict(runs["segfault"], "runtime_error")
    assert "SIGSEGV" in reason(r)


@pytest.mark.cases("exit0")
def test_exit_mid_run_is_runtime_error(runs: Runs) -> None:
    r = verdict(runs["exit0"], "runtime_error")
    assert "exited with status 0" in reason(r)


@pytest.mark.cases("mutates_input")
def test_input_mutation_is_not_correct(runs: Runs) -> None:
    r = verdict(runs["mutates_input"], "rejected")
    assert r["valid"] is False
    assert "input_mutated" in r["flags"]
    assert r["speedup"] is None


@pytest.mark.cases("returns_none")
def test_returning_none_is_incorrect(runs: Runs) -> None:
    verdict(runs["returns_none"], "incorrect")


@pytest.mark.cases("set_shrinks_reference")
def test_set_overrides_reference_constants(runs: Runs) -> None:
    r = verdict(runs["set_shrinks_reference"], "correct")
    assert r["problem"]["overrides"] == {"rows": "3", "cols": "5"}
    rows = evaluations(runs["set_shrinks_reference"].db)
    assert json.loads(rows[0]["overrides"]) == {"rows": "3", "cols": "5"}


@pytest.mark.cases("correct", "wrong_shape", "wrong_dtype")
def test_store_keeps_one_row_per_evaluation_and_dedups_problems(runs: Runs) -> None:
    dbs = {runs[n].db for n in ("correct", "wrong_shape", "wrong_dtype")}
    assert len(dbs) == 1
    db = dbs.pop()
    rows = evaluations(db)
    assert sorted(row["verdict"] for row in rows) == ["correct", "incorrect", "incorrect"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM problems").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0] == 3
        (source,) = conn.execute("SELECT source FROM problems").fetchone()
        assert source == (FIXTURES / REFERENCE).read_text()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1


@pytest.mark.cases("load_inline_cpu")
def test_load_inline_cpu_candidate_is_correct(runs: Runs) -> None:
    r = verdict(runs["load_inline_cpu"], "correct")
    assert r["compiled"] is True and r["flags"] == [], reason(r)
    assert r["compile_s"] > 0 and r["speedup"] > 0


@pytest.mark.cases("kernelbench_relu")
def test_kernelbench_problem_with_set(runs: Runs) -> None:
    r = verdict(runs["kernelbench_relu"], "correct")
    assert r["problem"]["path"].endswith("level1/19_ReLU.py")
    assert r["problem"]["overrides"] == {"batch_size": "16", "dim": "1024"}
    assert r["speedup"] > 0
    (row,) = evaluations(runs["kernelbench_relu"].db)
    with sqlite3.connect(runs["kernelbench_relu"].db) as conn:
        level, number, name = conn.execute(
            "SELECT level, problem_number, name FROM problems WHERE id = ?",
            (row["problem_id"],)).fetchone()
    assert (level, number, name) == (1, 19, "ReLU")


# ---- problems ----

@pytest.mark.cases("problems_list", "problems_list_json")
def test_problems_list(runs: Runs) -> None:
    run = runs["problems_list"]
    assert run.rc == 0, run
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["1", "Square_matrix_multiplication_"]
    assert "  19  ReLU" in lines
    assert lines[-1] == "100 problems in level 1"
    numbers = [int(line.split()[0]) for line in lines[:-1]]
    assert numbers == list(range(1, 101))
    listed = json.loads(runs["problems_list_json"].stdout)
    assert len(listed) == 100
    assert listed[18] == {"level": 1, "problem": 19, "name": "ReLU",
                          "path": str(KERNELBENCH / "level1" / "19_ReLU.py")}


@pytest.mark.cases("problems_list_missing_level")
def test_problems_list_missing_level(runs: Runs) -> None:
    run = runs["problems_list_missing_level"]
    assert run.rc == 2, run
    assert "KernelBench level 9 not found" in run.stderr


@pytest.mark.cases("problems_show", "problems_show_json")
def test_problems_show(runs: Runs) -> None:
    run = runs["problems_show"]
    assert run.rc == 0, run
    assert "name      ReLU" in run.stdout
    assert "input     [16, 1024] float32" in run.stdout
    assert "output    [16, 1024] float32" in run.stdout
    assert "flops     16.4 KFLOP" in run.stdout
    shown = json.loads(runs["problems_show_json"].stdout)
    assert shown["level"] == 1 and shown["problem"] == 19 and shown["name"] == "ReLU"
    assert shown["inputs"] == [{"shape": [16, 1024], "dtype": "float32", "bytes": 65536}]
    assert shown["flops"] == 16 * 1024
    assert shown["bytes"] == 2 * 65536


def test_problems_without_kernelbench_dir(tmp_path: Path) -> None:
    env = environment(tmp_path)
    proc = subprocess.run([str(BINARY), "problems", "list", "--level", "1"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "no KernelBench directory" in proc.stderr
    env["OPENKERNEL_KERNELBENCH_DIR"] = str(tmp_path / "nowhere")
    proc = subprocess.run([str(BINARY), "problems", "list", "--level", "1"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "from OPENKERNEL_KERNELBENCH_DIR" in proc.stderr


def test_kernelbench_dir_from_config_file(tmp_path: Path) -> None:
    if not (KERNELBENCH / "level1").is_dir():
        pytest.skip(f"no KernelBench directory at {KERNELBENCH}")
    env = environment(tmp_path)
    config = tmp_path / "config" / "openkernel" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'kernelbench_dir = "{KERNELBENCH}"\n')
    proc = subprocess.run([str(BINARY), "problems", "list", "--level", "1", "--json"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 100


def test_malformed_config_is_reported_with_its_line(tmp_path: Path) -> None:
    env = environment(tmp_path)
    config = tmp_path / "config" / "openkernel" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "x"\nkernelbench_dir = \n')
    proc = subprocess.run([str(BINARY), "problems", "list", "--level", "1"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "line 2" in proc.stderr and str(config) in proc.stderr


def test_missing_python_is_a_clear_environment_error(tmp_path: Path) -> None:
    env = environment(tmp_path)
    env["OPENKERNEL_PYTHON"] = str(tmp_path / "no-python")
    proc = subprocess.run([str(BINARY), "evaluate", "--reference", str(FIXTURES / REFERENCE),
                           "--candidate", str(FIXTURES / "cand_correct.py"),
                           "--db", str(tmp_path / "x.db"), *QUICK],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "OPENKERNEL_PYTHON" in proc.stderr or "--python" in proc.stderr
