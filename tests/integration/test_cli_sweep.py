"""`openkernel sweep` and `openkernel baseline` end to end on the CPU, over a small
KernelBench-format folder (fixtures/minibench: three real problems and one broken reference):
the TSV's exact columns, the score recomputed by hand from the TSV, resume after Ctrl-C,
bad flags, and the SLURM executor against a real single-node SLURM (tests/slurm/local_slurm.sh;
skipped with its reason where SLURM cannot be started).

    /usr/bin/python3 -m pytest -q tests/integration/test_cli_sweep.py
"""
from __future__ import annotations

import csv
import json
import math
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from locations import BINARY, PYTHON, ROOT
BENCH = Path(__file__).resolve().parent / "fixtures/minibench"
SLURM = ROOT / "tests/slurm/local_slurm.sh"
QUICK = ["--backend", "cpu", "--model", "builtin", "--trials", "2",
         "--timing-budget", "0.3", "--timeout", "120", "--kernelbench-dir", str(BENCH)]
COLUMNS = ["level", "problem_id", "name", "backend", "model", "correct", "runtime_us", "eager_us",
           "compile_us", "speedup_eager", "speedup_compile", "attempts", "cost_usd", "verdict",
           "flags", "runtime_stderr_us", "eager_stderr_us", "compile_stderr_us", "device"]

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def env_for(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    return {**env, **(extra or {})}


def openkernel(tmp: Path, *args: str, timeout: float = 600,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *args], capture_output=True, text=True, timeout=timeout,
                          env=env_for(tmp, extra_env), cwd=tmp)


def sweep(tmp: Path, *args: str, **kw: Any) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    if "--iterations" not in args:
        args = ("--iterations", "1", *args)
    p = openkernel(tmp, "sweep", "--db", str(tmp / "db.sqlite"), "--level", "1", "--json",
                   *QUICK, *args, **kw)
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return p, summary


def start_sweep(tmp: Path, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """The sweep in the background (the tests then interrupt or kill it)."""
    return subprocess.Popen([str(BINARY), "sweep", "--db", str(tmp / "db.sqlite"), "--level", "1",
                             "--json", *QUICK, *args], cwd=tmp, env=env_for(tmp, extra_env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(proc: subprocess.Popen, ready: Any, timeout: float = 300) -> bool:
    """Polls ready() while the sweep runs; True once it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            return True
        time.sleep(0.2)
    return False


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == COLUMNS, rows[0]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def hand_score(rows: list[dict[str, str]]) -> dict[str, Any]:
    """KernelBench's definitions, computed here independently of src/score."""
    n = len(rows)
    speedups = [float(r["speedup_eager"]) if r["correct"] == "true" and r["speedup_eager"] else None
                for r in rows]
    fast = {p: sum(1 for s in speedups if s is not None and s > float(p)) / n
            for p in ("0.0", "1.0", "1.2", "1.5", "2.0")}
    correct = [s for s in speedups if s is not None]
    geo = math.exp(sum(math.log(s) for s in correct) / len(correct)) if correct else None
    fallback = math.exp(sum(math.log(s if s is not None else 1.0) for s in speedups) / n)
    # fast_p_significant: the speedup's 95% interval (delta method on the log ratio) above p,
    # and no torch_ops_in_forward; null when no row has both standard errors.
    lows = []
    for r in rows:
        cols = ("speedup_eager", "eager_us", "eager_stderr_us", "runtime_us", "runtime_stderr_us")
        if r["correct"] != "true" or any(r[c] == "" for c in cols):
            lows.append(None)
            continue
        rel = math.hypot(float(r["eager_stderr_us"]) / float(r["eager_us"]),
                         float(r["runtime_stderr_us"]) / float(r["runtime_us"]))
        honest = "torch_ops_in_forward" not in r["flags"].split(",")
        lows.append(float(r["speedup_eager"]) * math.exp(-1.959963984540054 * rel) if honest
                    else -1.0)
    significant = None
    if any(lo is not None for lo in lows):
        significant = {p: sum(1 for lo in lows if lo is not None and lo > float(p)) / n
                       for p in ("0.0", "1.0", "1.2", "1.5", "2.0")}
    return {"n": n, "correct": sum(r["correct"] == "true" for r in rows), "fast": fast,
            "geomean": geo, "fallback": fallback, "significant": significant}


def test_sweep_writes_one_row_per_problem_and_scores_match_hand_computation(tmp_path: Path) -> None:
    p, summary = sweep(tmp_path, "--problems", "1-2,4", "--output", "results/mini.tsv")
    assert p.returncode == 0, p.stderr
    assert summary is not None and summary["planned"] == 3 and summary["ran"] == 3
    out = tmp_path / "results/mini.tsv"
    rows = read_tsv(out)
    assert [(r["level"], r["problem_id"], r["name"]) for r in rows] == [
        ("1", "1", "RMSNorm"), ("1", "2", "RowSum"), ("1", "4", "Broken")]
    # On two shared cores a busy machine can make the evaluator's clock cross-check reject an
    # honest CPU kernel; the TSV must then say so, and at least one of the two must pass.
    assert any(r["correct"] == "true" for r in rows[:2]), rows
    for r in rows[:2]:
        assert r["backend"] == "cpu" and r["model"] == "builtin" and r["attempts"] == "1"
        if r["correct"] != "true":
            assert r["verdict"] != "correct" and r["runtime_us"] == "", r
            continue
        assert r["verdict"] == "correct"
        assert float(r["runtime_us"]) > 0 and float(r["eager_us"]) > 0
        assert math.isclose(float(r["speedup_eager"]),
                            float(r["eager_us"]) / float(r["runtime_us"]), rel_tol=1e-3)
        assert r["cost_usd"] == "0"
        assert r["compile_us"] == "" or float(r["compile_us"]) > 0
        # The appended columns: the times' standard errors and the device that measured them.
        assert float(r["runtime_stderr_us"]) >= 0 and float(r["eager_stderr_us"]) >= 0, r
        assert r["compile_stderr_us"] == "" and r["device"] != "", r
    broken = rows[2]
    assert broken["correct"] == "false" and broken["runtime_us"] == "" and broken["speedup_eager"] == ""
    assert broken["verdict"] != "correct"
    # Each problem's best kernel and report are kept beside the TSV.
    assert (tmp_path / "results/mini/L1_001_RMSNorm/best_RMSNorm.py").is_file()
    assert (tmp_path / "results/mini/L1_002_RowSum/report.json").is_file()
    # The score, from `openkernel score` and from the summary, against a hand computation.
    want = hand_score(rows)
    s = openkernel(tmp_path, "score", str(out), "--json")
    assert s.returncode == 0, s.stderr
    got = json.loads(s.stdout)
    for score in (got, summary["score"]):
        assert score["n"] == want["n"] == 3 and score["correct"] == want["correct"] >= 1
        for p_, v in want["fast"].items():
            assert math.isclose(score["fast_p"]["eager"][p_], v), (p_, score["fast_p"])
        assert math.isclose(score["geomean_speedup"]["eager"], want["geomean"], rel_tol=1e-4)
        assert math.isclose(score["geomean_speedup_fallback"]["eager"], want["fallback"],
                            rel_tol=1e-4)
    assert want["significant"] is not None
    for p_, v in want["significant"].items():
        assert math.isclose(got["fast_p_significant"]["eager"][p_], v), (p_, got)
    # Every session landed once in the store.
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        sessions = db.execute("SELECT name, status FROM sessions ORDER BY name").fetchall()
    assert sorted(n for n, _ in sessions) == ["Broken", "RMSNorm", "RowSum"]
    # A second run of the same command has nothing left to do.
    p2, summary2 = sweep(tmp_path, "--problems", "1-2,4", "--output", "results/mini.tsv")
    assert p2.returncode == 0, p2.stderr
    assert summary2["skipped"] == 3 and summary2["ran"] == 0
    assert read_tsv(out) == rows


def test_sweep_resumes_after_ctrl_c(tmp_path: Path) -> None:
    proc = start_sweep(tmp_path, "--problems", "1-3", "--output", "r/x.tsv", "--iterations", "2")
    work = tmp_path / "r/x"
    # Interrupt once the first problem is done and the second has started.
    wait_until(proc, lambda: (work / "L1_001_RMSNorm/report.json").exists()
               and (work / "L1_002_RowSum/session").exists())
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "re-run the same command" in err
    session2 = (work / "L1_002_RowSum/session").read_text().strip()
    before = read_tsv(tmp_path / "r/x.tsv")
    assert [r["problem_id"] for r in before][:1] == ["1"]

    p, summary = sweep(tmp_path, "--problems", "1-3", "--output", "r/x.tsv", "--iterations", "2")
    assert p.returncode == 0, p.stderr
    assert summary["skipped"] == 1 and summary["ran"] == 2, summary
    assert f"resuming {session2}" in p.stderr
    rows = read_tsv(tmp_path / "r/x.tsv")
    assert [r["problem_id"] for r in rows] == ["1", "2", "3"]
    assert all(r["verdict"] not in ("", "error") for r in rows), rows
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        numbers = [n for (n,) in db.execute(
            "SELECT number FROM attempts WHERE session = ? ORDER BY number", (session2,))]
        n_sessions = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    # One session, numbered without gaps (the generator may stop early: exhausted or at the
    # speed of light).
    assert numbers == list(range(1, len(numbers) + 1)) and 1 <= len(numbers) <= 2
    assert n_sessions == 3


def test_sweep_killed_with_sigkill_resumes_and_leaves_no_orphans(tmp_path: Path) -> None:
    proc = start_sweep(tmp_path, "--problems", "1-2", "--output", "r/k.tsv", "--iterations", "2")
    work = tmp_path / "r/k"
    wait_until(proc, lambda: (work / "L1_001_RMSNorm/session").exists())
    time.sleep(3)  # inside the first problem's session
    proc.kill()
    proc.communicate(timeout=60)
    # The optimize child got SIGINT from the kernel and ends by itself, keeping its session.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ps = subprocess.run(["pgrep", "-f", f"optimize --json --db {tmp_path}"],
                            capture_output=True, text=True)
        if not ps.stdout.strip():
            break
        time.sleep(0.5)
    assert not ps.stdout.strip(), "an optimize child outlived the killed sweep"
    p, summary = sweep(tmp_path, "--problems", "1-2", "--output", "r/k.tsv", "--iterations", "2")
    assert p.returncode == 0, p.stderr
    rows = read_tsv(tmp_path / "r/k.tsv")
    assert [r["problem_id"] for r in rows] == ["1", "2"]
    assert all(r["correct"] == "true" for r in rows), rows
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        per_session = db.execute("SELECT session, COUNT(*), MAX(number) FROM attempts "
                                 "GROUP BY session").fetchall()
    # One session per problem (the killed one was resumed, not restarted), numbered without
    # gaps; fewer than two attempts only where the session says why (the generator may stop
    # early: exhausted, or a candidate at the speed of light, which timing noise on the CPU can
    # decide either way).
    assert len(per_session) == 2 and all(n == m for _, n, m in per_session), per_session
    for folder in ("L1_001_RMSNorm", "L1_002_RowSum"):
        session = (work / folder / "session").read_text().strip()
        n = dict((s, n) for s, n, _ in per_session)[session]
        report = json.loads((work / folder / "report.json").read_text())
        assert n == 2 or report["stop_reason"] in ("exhausted", "speed_of_light"), report


def test_two_local_slots_run_problems_side_by_side(tmp_path: Path) -> None:
    # Mechanics only: two problems at once on two shared cores disturb each other's timings, so
    # verdicts are not asserted here (docs/sweep.md says to keep --jobs 1 on the CPU).
    p, summary = sweep(tmp_path, "--problems", "1-3", "--output", "r/j.tsv", "--jobs", "2")
    assert p.returncode in (0, 1), p.stderr
    events = [line.split()[2] for line in p.stderr.splitlines() if line.startswith("[")]
    assert events[:2] == ["start", "start"], p.stderr  # both slots busy before the first ends
    rows = read_tsv(tmp_path / "r/j.tsv")
    assert [r["problem_id"] for r in rows] == ["1", "2", "3"]
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        names = sorted(n for (n,) in db.execute("SELECT name FROM sessions"))
    assert names == ["RMSNorm", "RowSum", "SwishChain"]


def test_sweep_bad_flags_and_inputs_are_usage_errors(tmp_path: Path) -> None:
    for args, needle in [
        (["--problems", "5-3"], "bad problem selection"),
        (["--problems", "x"], "bad problem selection"),
        (["--problems", "9"], "has no problem 9"),
        (["--gpus", "0,1"], "--gpus needs a GPU backend"),
        (["--gpus", "a"], "give GPU indices"),
        (["--iterations", "-1"], "--iterations"),
        (["--executor", "pbs"], "executor"),
        (["--executor", "slurm", "--jobs", "2"], "--executor local"),
        (["--trials", "0"], "--trials"),
        (["--jobs", "-1"], "--jobs"),
        (["--budget-usd", "-1"], "--budget-usd"),
        (["--gpus", "0", "--jobs", "2"], "not both"),
        (["--stop-at-sol", "0"], "--stop-at-sol must be above 0"),
    ]:
        p, _ = sweep(tmp_path, "--output", "r/bad.tsv", *args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert needle in p.stderr, (args, p.stderr)
    # (without QUICK, which gives --timeout already)
    p = openkernel(tmp_path, "sweep", "--level", "1", "--kernelbench-dir", str(BENCH),
                   "--backend", "cpu", "--model", "builtin", "--timeout", "-5",
                   "--output", str(tmp_path / "r/bad.tsv"))
    assert p.returncode == 2 and "--timeout must be positive" in p.stderr, p.stderr
    p = openkernel(tmp_path, "sweep", "--level", "1", "--kernelbench-dir", str(tmp_path / "nope"),
                   "--backend", "cpu", "--model", "builtin")
    assert p.returncode == 2 and "nope" in p.stderr, p.stderr


def test_sweep_no_skills_reaches_every_child_and_its_sessions_use_no_skill(tmp_path: Path) -> None:
    """--no-skills is passed to each new optimize child: its session is fed no skill (no
    search_state (SESSION, "skills"), no skill evidence, no `skills` in the report) while a plain
    sweep's session records what it was fed; a bad --prompt-budget-tokens is refused by the sweep
    itself (exit 2) before any problem starts. --stop-at-sol reaches the new sessions too."""
    def sessions_of(output: str) -> list[str]:
        work = tmp_path / output.removesuffix(".tsv")
        return [(d / "session").read_text().strip() for d in sorted(work.glob("L1_*"))]

    p, summary = sweep(tmp_path, "--problems", "1-2", "--output", "r/off.tsv", "--no-skills",
                       "--prompt-budget-tokens", "4000", "--stop-at-sol", "1.5")
    assert p.returncode in (0, 1), p.stderr
    assert summary is not None and summary["ran"] == 2, p.stderr
    off = sessions_of("r/off.tsv")
    p, summary = sweep(tmp_path, "--problems", "1", "--output", "r/on.tsv")
    assert p.returncode in (0, 1) and summary["ran"] == 1, p.stderr
    on = sessions_of("r/on.tsv")
    assert len(off) == 2 and len(on) == 1, (off, on)
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        fed = {s for (s,) in db.execute("SELECT scope FROM search_state WHERE kind = 'skills'")}
        evidence = {s for (s,) in db.execute("SELECT DISTINCT session FROM skill_evidence")}
        options = {s: json.loads(o) for s, o in db.execute("SELECT id, options FROM sessions")}
    assert fed == set(on), (fed, on)
    assert not evidence & set(off), evidence
    for s in off:
        assert options[s]["skills"] is False and options[s]["prompt_budget_tokens"] == 4000
        assert options[s]["stop_at_sol"] == 1.5
    assert options[on[0]]["skills"] is True and options[on[0]]["prompt_budget_tokens"] == 0
    assert options[on[0]]["stop_at_sol"] == 0.95
    for d in (tmp_path / "r/off").glob("L1_*"):
        report = json.loads((d / "report.json").read_text())
        assert "skills" not in report["search"], report["search"]
    report = json.loads(next((tmp_path / "r/on").glob("L1_*/report.json")).read_text())
    assert isinstance(report["search"]["skills"]["used"], list), report["search"]

    for bad in ("999", "-5"):
        p, _ = sweep(tmp_path, "--problems", "1", "--output", "r/bad.tsv",
                     "--prompt-budget-tokens", bad)
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert "--prompt-budget-tokens must be at least 1000" in p.stderr, p.stderr
        assert not (tmp_path / "r/bad").exists()  # no task folder: no child started
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 3


def test_baseline_bad_selections_and_flags_are_usage_or_input_errors(tmp_path: Path) -> None:
    for args, needle in [(["--problems", "5-3"], "bad problem selection"),
                         (["--problems", "9"], "has no problem 9"),
                         (["--rested", "sometimes"], "--rested: sometimes not in {auto,on,off}")]:
        p = openkernel(tmp_path, "baseline", "--db", str(tmp_path / "db.sqlite"), "--level", "1",
                       "--kernelbench-dir", str(BENCH), "--backend", "cpu", *args)
        assert p.returncode == 2, (args, p.stderr)
        assert needle in p.stderr, (args, p.stderr)


def test_slurm_without_sbatch_says_so(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    p, _ = sweep(tmp_path, "--problems", "1", "--output", "r/s.tsv", "--executor", "slurm",
                 extra_env={"PATH": str(tmp_path / "bin")})
    assert p.returncode == 2, p.stderr
    assert "sbatch" in p.stderr, p.stderr


def test_one_results_file_holds_one_backend_and_model(tmp_path: Path) -> None:
    (tmp_path / "r/x").mkdir(parents=True)
    (tmp_path / "r/x/sweep.json").write_text(json.dumps({"version": 1, "backend": "cpu",
                                                          "model": "gpt-x"}))
    p, _ = sweep(tmp_path, "--problems", "1", "--output", "r/x.tsv")
    assert p.returncode == 2
    assert "backend cpu and model gpt-x" in p.stderr and "another --output" in p.stderr


def test_a_second_sweep_into_the_same_output_is_refused_while_one_runs(tmp_path: Path) -> None:
    import fcntl

    work = tmp_path / "r/x"
    work.mkdir(parents=True)
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p, _ = sweep(tmp_path, "--problems", "1", "--output", "r/x.tsv")
    assert p.returncode == 2 and "another sweep is running" in p.stderr, p.stderr


def test_baseline_times_and_stores_each_problem(tmp_path: Path) -> None:
    p = openkernel(tmp_path, "baseline", "--db", str(tmp_path / "db.sqlite"), "--level", "1",
                   "--problems", "1,4", "--kernelbench-dir", str(BENCH), "--backend", "cpu",
                   "--timing-budget", "0.5", "--json")
    assert p.returncode == 1, p.stderr  # problem 4's reference is broken on purpose
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["failed"] == 1 and out["backend"] == "cpu"
    good, bad = out["baselines"]
    assert good["problem_id"] == 1 and good["eager_us"] > 0 and good["method"] == "events"
    assert good["device"] == "cpu"
    assert good["compile_us"] is None or good["compile_us"] > 0
    if good["compile_us"] is None:
        assert good["compile_reason"]
    assert bad["problem_id"] == 4 and "broken on purpose" in bad["error"]
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        stored = db.execute("SELECT p.name, b.device, b.backend, b.eager_us FROM baselines b "
                            "JOIN problems p ON p.id = b.problem_id").fetchall()
    assert stored == [("RMSNorm", "cpu", "cpu", good["eager_us"])]


# -- SLURM ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    state = tmp_path_factory.mktemp("slurm")
    p = subprocess.run(["bash", str(SLURM), "up", str(state)], capture_output=True, text=True,
                       timeout=900)
    if p.returncode == 3:
        pytest.skip(f"SLURM cannot be started here: {p.stderr.strip()[-300:]}")
    assert p.returncode == 0, p.stderr
    conf = p.stdout.strip().split("=", 1)[1]
    yield {"SLURM_CONF": conf}
    subprocess.run(["bash", str(SLURM), "down", str(state)], capture_output=True, timeout=120)


def test_slurm_executor_gathers_results_and_resumes_after_a_killed_array(
        tmp_path: Path, slurm: dict[str, str]) -> None:
    # --stop-at-sol 2: never stopped early (on a loaded machine the measured bandwidth drops and a
    # first correct attempt may reach 0.95 of it, ending its problem after one attempt).
    args = ["--problems", "1-2", "--output", "r/s.tsv", "--executor", "slurm", "--iterations", "2",
            "--stop-at-sol", "2"]
    # First run: the array is killed (as a node failure would) once the first attempts are in.
    proc = start_sweep(tmp_path, *args, extra_env=slurm)
    work = tmp_path / "r/s"
    stores = [work / d / "store.db" for d in ("L1_001_RMSNorm", "L1_002_RowSum")]
    killed = wait_until(proc, lambda: all(s.exists() and _attempts(s) >= 1 for s in stores))
    if killed:
        job = (work / "slurm/job").read_text().strip()
        subprocess.run(["scancel", "--signal=KILL", "--full", job], env=env_for(tmp_path, slurm),
                       check=True, timeout=60)
    out, err = proc.communicate(timeout=300)
    assert killed, f"the array ended before both problems had an attempt: {err}"
    assert proc.returncode == 1, err  # the killed problems are reported as failed
    rows = read_tsv(tmp_path / "r/s.tsv")
    assert "error" in {r["verdict"] for r in rows} <= {"error", "correct"}, rows
    # Second run of the same command: resumes the recorded sessions and completes.
    p, summary = sweep(tmp_path, *args, extra_env=slurm)
    assert p.returncode == 0, p.stderr
    rows = read_tsv(tmp_path / "r/s.tsv")
    assert [r["problem_id"] for r in rows] == ["1", "2"]
    assert all(r["correct"] == "true" and r["attempts"] == "2" for r in rows), rows
    # Problems finished before the kill are skipped; the killed ones resume their sessions.
    assert summary["ran"] >= 1 and summary["ran"] + summary["skipped"] == 2, summary
    latest = max((work / "slurm").glob("array-*.sh"), key=lambda x: x.stat().st_mtime)
    assert "--resume" in latest.read_text()
    # The per-task stores were gathered into the sweep's store: each session once, all attempts.
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        sessions = db.execute("SELECT id, status FROM sessions ORDER BY id").fetchall()
        attempts = db.execute("SELECT session, number, evaluation_id FROM attempts "
                              "ORDER BY session, number").fetchall()
        evals = {i for (i,) in db.execute("SELECT id FROM evaluations")}
    assert len(sessions) == 2 and all(s == "finished" for _, s in sessions)
    assert [n for _, n, _ in attempts] == [1, 2, 1, 2]
    assert all(e in evals for _, _, e in attempts if e is not None)


def test_slurm_refuses_to_submit_while_the_earlier_array_runs(tmp_path: Path,
                                                             slurm: dict[str, str]) -> None:
    env = env_for(tmp_path, slurm)
    held = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300"],
                          capture_output=True, text=True, env=env, timeout=60, check=True)
    job = held.stdout.strip().split(";")[0]
    try:
        (tmp_path / "r/s/slurm").mkdir(parents=True)
        (tmp_path / "r/s/slurm/job").write_text(job + "\n")
        p, _ = sweep(tmp_path, "--problems", "1", "--output", "r/s.tsv", "--executor", "slurm",
                     extra_env=slurm)
        assert p.returncode == 2, p.stderr
        assert f"array {job}" in p.stderr and "still queued or running" in p.stderr, p.stderr
    finally:
        subprocess.run(["scancel", job], env=env, timeout=60)


def _attempts(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
            return c.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    except sqlite3.Error:
        return 0
