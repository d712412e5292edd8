"""`openkernel optimize` end to end on the CPU: the LLM path against a local OpenAI-compatible
server (llm_stub.py) that answers with real kernels, a broken kernel, prose without code and
malformed diagnoses; the builtin generator on small problems; Ctrl-C and --resume.

    /usr/bin/python3 -m pytest -q tests/integration/test_cli_optimize.py
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from llm_stub import LlmStub

from locations import BINARY, FIXTURES, PYTHON, ROOT
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def optimize(tmp: Path, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    p = subprocess.run([str(BINARY), "optimize", "--db", str(tmp / "db.sqlite"), *args],
                       capture_output=True, text=True, timeout=timeout, env=env)
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    report = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return p, report


def fenced(text: str, code: str) -> str:
    return f"{text}\n```python\n{code}\n```\n"


BROKEN = '''import torch
import torch.nn as nn
from openkernel_worker.native import compile_cpp

_lib = compile_cpp('extern "C" void swish(const float* x { this is not C++', name="broken")


class ModelNew(nn.Module):
    def __init__(self, scale, shift):
        super().__init__()

    def forward(self, x):
        return x
'''

DIAGNOSIS = json.dumps({"bottleneck": "correctness", "evidence": ["the C++ does not compile"],
                        "suggestions": [{"action": "close the parameter list",
                                         "expected_gain": 0.0}], "expected_gain": 0.0})


def test_llm_path_with_real_kernels_and_malformed_replies(tmp_path: Path) -> None:
    good = (SWISH / "candidate.py").read_text()
    with LlmStub(generator=["Let me think about fusion first; no code yet.",
                            fenced("A first C++ attempt.", BROKEN),
                            fenced("Fused C++ loop with OpenMP.", good)],
                 critic=[DIAGNOSIS, "I cannot answer in JSON, sorry."]) as stub:
        p, report = optimize(tmp_path, "--reference", str(SWISH / "reference.py"), "--backend",
                             "cpu", "--model", "openai/stub-model", "--base-url", stub.base_url,
                             "--iterations", "3", "--json", "--out", str(tmp_path / "out"),
                             # one generation at a time: each prompt sees the attempt before it
                             "--in-flight", "1", *QUICK)
        generator_prompts = stub.prompts("generator")
        critic_prompts = stub.prompts("critic")
    assert p.returncode == 0, p.stderr
    assert report is not None, p.stdout
    for key in ("session", "verdict", "speedup", "speedup_compile", "best_candidate", "attempts",
                "cost_usd"):
        assert key in report
    assert report["attempts"] == 3
    assert [h["verdict"] for h in report["history"]] == ["generation_failed", "compile_error",
                                                         "correct"]
    assert "malformed" in report["history"][0]["error"]
    assert report["verdict"] == "correct" and report["speedup"] > 0
    assert report["speedup_compile"] is None  # CPU: no torch.compile baseline
    best = Path(report["best_candidate"])
    assert best.is_file() and "class ModelNew" in best.read_text()
    assert (tmp_path / "out/report.md").is_file() and (tmp_path / "out/report.json").is_file()
    # Feedback reached the model: the compile error and the critic's advice are in the 3rd prompt.
    assert len(generator_prompts) == 3
    assert "this is not C++" in generator_prompts[2] or "error" in generator_prompts[2]
    assert "close the parameter list" in generator_prompts[2]
    assert "x * torch.sigmoid(x)" in generator_prompts[0]  # the reference source
    # Critic: a valid diagnosis for attempt 2, a fallback for attempt 3 (after one repair try).
    assert len(critic_prompts) == 3
    assert report["history"][1]["bottleneck"] == "correctness"
    db = sqlite3.connect(tmp_path / "db.sqlite")
    calls = db.execute("SELECT purpose, status FROM llm_calls WHERE session=?",
                       (report["session"],)).fetchall()
    assert sorted(c[0] for c in calls).count("generator") == 3
    assert len(calls) == 6
    rows = db.execute("SELECT number, verdict, evaluation_id FROM attempts WHERE session=? "
                      "ORDER BY number", (report["session"],)).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(1, "generation_failed"), (2, "compile_error"),
                                            (3, "correct")]
    assert rows[0][2] is None and rows[1][2] is not None
    # The session's worker starts the next candidate process while the loop works: attempt 3
    # ran in the spare that attempt 2's evaluation left (docs/evaluation.md, "Throughput").
    started = [json.loads(db.execute("SELECT result FROM evaluations WHERE id=?",
                                     (r[2],)).fetchone()[0])["candidate_process"] for r in rows[1:]]
    assert started == ["fresh", "spare"]
    status = db.execute("SELECT status, best_attempt FROM sessions WHERE id=?",
                        (report["session"],)).fetchone()
    assert status == ("finished", 3)


def test_unknown_model_and_missing_reference_are_usage_errors(tmp_path: Path) -> None:
    p, _ = optimize(tmp_path, "--reference", str(SWISH / "reference.py"), "--backend", "cpu",
                    "--model", "no-such-model-anywhere", timeout=120)
    assert p.returncode == 2 and "no-such-model-anywhere" in p.stderr
    p, _ = optimize(tmp_path, "--reference", str(tmp_path / "missing.py"), "--backend", "cpu",
                    timeout=120)
    assert p.returncode == 2 and "missing.py" in p.stderr
    p, _ = optimize(tmp_path, "--resume", "s-not-a-session", timeout=120)
    assert p.returncode == 2 and "s-not-a-session" in p.stderr


@pytest.mark.parametrize("args, says", [
    (["--iterations", "-1"], "--iterations"),
    (["--trials", "0"], "--trials"),
    (["--timeout", "0"], "--timeout must be positive"),
    (["--budget-usd", "-2"], "--budget-usd"),
    (["--mode", "slow"], "--mode"),
    (["--backend", "cuda"], "needs an NVIDIA GPU"),
    (["--out", "/proc/openkernel-cannot-write-here"], "cannot create"),
    (["--search", "random"], "--search"),
    (["--in-flight", "-1"], "--in-flight"),
    (["--budget-wall-s", "-1"], "--budget-wall-s"),
    (["--stop-at-sol", "0"], "--stop-at-sol"),
    (["--strategy", "no-such-strategy"], "no strategy no-such-strategy"),
])
def test_bad_flags_are_usage_errors(tmp_path: Path, args: list[str], says: str) -> None:
    p, _ = optimize(tmp_path, "--reference", str(SWISH / "reference.py"), "--model", "builtin",
                    *(["--backend", "cpu"] if "--backend" not in args else []), *args, timeout=120)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr


# docs/cli.md: --prompt-budget-tokens N, default 9000 (also for 0), below 1000 exit 2. Checked
# before the store is opened: nothing is recorded.
@pytest.mark.parametrize("tokens", ["999", "1", "-5"])
def test_prompt_budget_below_its_minimum_is_a_usage_error(tmp_path: Path, tokens: str) -> None:
    p, report = optimize(tmp_path, "--reference", str(SWISH / "reference.py"), "--model", "builtin",
                         "--backend", "cpu", "--out", str(tmp_path / "out"),
                         "--prompt-budget-tokens", tokens, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "--prompt-budget-tokens must be at least 1000" in p.stderr
    assert report is None
    assert not (tmp_path / "db.sqlite").exists() and not (tmp_path / "out").exists()


def test_malformed_reference_is_bad_input(tmp_path: Path) -> None:
    ref = tmp_path / "broken.py"
    ref.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n")
    p, _ = optimize(tmp_path, "--reference", str(ref), "--backend", "cpu", "--model", "builtin",
                    "--out", str(tmp_path / "out"), timeout=120)
    assert p.returncode == 2, p.stderr
    assert "broken.py" in p.stderr


# The fixed CPU set: elementwise chain, row reduction, softmax, layer norm, RMS norm,
# linear + activation. Each must come back correct; the elementwise chain and RMS norm (2.5x and
# 1.5x here) faster than eager PyTorch. Layer norm measured 1.27x, too close to 1 to assert on
# two shared CI cores.
BUILTIN = {"swish_chain": (SWISH / "reference.py", True),
           "row_sum": (FIXTURES / "optimize/row_sum.py", False),
           "softmax": (FIXTURES / "optimize/softmax.py", False),
           "layer_norm": (FIXTURES / "optimize/layer_norm.py", False),
           "rms_norm": (FIXTURES / "optimize/rms_norm.py", True),
           "linear_relu": (FIXTURES / "optimize/linear_relu.py", False)}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_cpu_problem(tmp_path: Path, name: str) -> None:
    reference, must_be_faster = BUILTIN[name]
    p, report = optimize(tmp_path, "--reference", str(reference), "--backend", "cpu", "--model",
                         "builtin", "--iterations", "2", "--seed", "7", "--json", "--out",
                         str(tmp_path / "out"), "--trials", "2", "--timing-budget", "1")
    assert p.returncode == 0, p.stderr
    assert report is not None
    assert report["verdict"] == "correct", json.dumps(report["history"], indent=1)
    assert report["model"] == "builtin" and report["cost_usd"] == 0
    assert all(h["generator"] == "builtin" and h["params"].get("skill") for h in report["history"])
    if must_be_faster:
        assert report["speedup"] > 1.0, report["history"]


def test_builtin_reports_unsupported_patterns(tmp_path: Path) -> None:
    # (cumsum, the example here before, is generated now: docs/graph-ir.md, "Pooling, scans...")
    ref = tmp_path / "logcumsumexp.py"
    ref.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                   "        return torch.logcumsumexp(x, dim=1)\n\n"
                   "def get_inputs():\n    return [torch.randn(8, 64)]\n\n"
                   "def get_init_inputs():\n    return []\n")
    p, report = optimize(tmp_path, "--reference", str(ref), "--backend", "cpu", "--model",
                         "builtin", "--json", "--out", str(tmp_path / "out"), *QUICK)
    assert p.returncode == 0, p.stderr
    assert report is not None
    assert report["verdict"] == "unsupported" and report["stop_reason"] == "unsupported"
    assert "logcumsumexp" in report["history"][0]["error"]
    assert report["best_candidate"] is None and report["speedup"] is None


def test_ctrl_c_keeps_the_session_and_resume_continues(tmp_path: Path) -> None:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    db = str(tmp_path / "db.sqlite")
    args = [str(BINARY), "optimize", "--db", db, "--reference", str(SWISH / "reference.py"),
            "--backend", "cpu", "--model", "builtin", "--iterations", "6", "--json", "--out",
            str(tmp_path / "out"), *QUICK]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 300
    for line in proc.stderr:  # wait for the first recorded attempt
        seen.append(line)
        if line.startswith("[1] ") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(seen) + err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["status"] == "interrupted"
    done = report["attempts"]
    assert 1 <= done < 6
    p, resumed = optimize(tmp_path, "--resume", report["session"], "--iterations", str(done + 1),
                          "--json")
    assert p.returncode == 0, p.stderr
    assert resumed is not None and resumed["session"] == report["session"]
    assert [h["number"] for h in resumed["history"]] == list(range(1, done + 2))
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM attempts WHERE session=?",
                                       (report["session"],)).fetchone()
    assert rows == (done + 1,)


def test_ctrl_c_while_preparing_the_problem_stops_at_once_and_keeps_the_session(
        tmp_path: Path) -> None:
    """The reference takes a minute to build, so Ctrl-C lands while the worker analyses it:
    the worker is stopped (not waited for) and the session row is kept as interrupted."""
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    ref = tmp_path / "slow_init.py"
    ref.write_text("import time, torch\nclass Model(torch.nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n        time.sleep(60)\n"
                   "    def forward(self, x):\n        return torch.relu(x)\n\n"
                   "def get_inputs():\n    return [torch.randn(8, 64)]\n\n"
                   "def get_init_inputs():\n    return []\n")
    db = tmp_path / "db.sqlite"
    args = [str(BINARY), "optimize", "--db", str(db), "--reference", str(ref), "--backend", "cpu",
            "--model", "builtin", "--session", "early-1", "--out", str(tmp_path / "out"), *QUICK]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # the session is recorded; the worker now analyses the reference
        seen.append(line)
        if line.startswith("session early-1"):
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    began = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + err
    assert time.monotonic() - began < 20, "Ctrl-C waited for the reference's build"
    assert "openkernel optimize --resume early-1" in err, err
    status = sqlite3.connect(db).execute("SELECT status FROM sessions WHERE id='early-1'").fetchone()
    assert status == ("interrupted",)


def test_kill_9_loses_at_most_the_attempt_in_flight_and_resume_continues(tmp_path: Path) -> None:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    db = tmp_path / "db.sqlite"
    args = [str(BINARY), "optimize", "--db", str(db), "--reference", str(SWISH / "reference.py"),
            "--backend", "cpu", "--model", "builtin", "--iterations", "4", "--json", "--session",
            "killed-1", "--out", str(tmp_path / "out"), *QUICK]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    for line in proc.stderr:  # the first attempt is recorded: kill in the middle of the second
        if line.startswith("[2/4] evaluating"):
            break
    proc.kill()
    proc.wait(timeout=60)
    with sqlite3.connect(db) as c:
        before = c.execute("SELECT number, evaluation_id, verdict FROM attempts WHERE session = ? "
                           "ORDER BY number", ("killed-1",)).fetchall()
        status = c.execute("SELECT status FROM sessions WHERE id = ?", ("killed-1",)).fetchone()
    assert [n for n, _, _ in before] in ([1], [1, 2]), before
    assert status == ("running",)  # nobody could mark it: resume must cope
    p, resumed = optimize(tmp_path, "--resume", "killed-1", "--json")
    assert p.returncode == 0, p.stderr
    assert resumed is not None and resumed["status"] == "finished"
    history = resumed["history"]
    assert [h["number"] for h in history] == [1, 2, 3, 4]
    # What was recorded before the kill is kept as it was.
    kept = {h["number"]: h["evaluation_id"] for h in history}
    assert all(kept[n] == e for n, e, _ in before)
    # The search continued where it was: the planner was rebuilt from the recorded attempts, so
    # no template point was evaluated twice, and the intent tree holds every attempt's evidence.
    assert f"replayed: {len(before)} recorded attempt" in p.stderr, p.stderr
    assert len({json.dumps(h["params"], sort_keys=True) for h in history}) == 4
    tree = intents(tmp_path, "killed-1")
    assert tree["issued"] == 4 and tree["observed"] == 4
    evidence = sorted(e for i in tree["intents"] for e in i["evidence"])
    assert evidence == [1, 2, 3, 4]
    assert all(i["status"] != "trying" for i in tree["intents"][1:])
    assert resumed["search"]["policy"] == "engine" and resumed["search"]["evaluations"] >= 2


def intents(tmp: Path, session: str) -> dict[str, Any]:
    p = subprocess.run([str(BINARY), "intents", session, "--json", "--db", str(tmp / "db.sqlite")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_search_policies_budgets_and_the_strategy_population(tmp_path: Path) -> None:
    # --stop-at-sol 2: every iteration runs, however loaded the machine (a lower measured
    # bandwidth can put a first kernel at 0.95 of speed of light).
    base = ["--reference", str(SWISH / "reference.py"), "--backend", "cpu", "--model", "builtin",
            "--json", "--seed", "5", "--stop-at-sol", "2", *QUICK]
    # The engine: an intent tree, a strategy from the population, which learns afterwards.
    p, engine = optimize(tmp_path, *base, "--iterations", "3", "--out", str(tmp_path / "e"))
    assert p.returncode == 0, p.stderr
    assert engine is not None and engine["search"]["policy"] == "engine"
    assert engine["search"]["strategy"].startswith("seed-")
    assert "intent_chosen" in p.stderr and "strategy_mutated" in p.stderr
    tree = json.loads((tmp_path / "e/intents.json").read_text())
    assert tree["session"] == engine["session"] and len(tree["intents"]) >= 4
    assert tree == intents(tmp_path, engine["session"])  # the file and the store agree
    # The text view names each intent with its status.
    t = subprocess.run([str(BINARY), "intents", engine["session"], "--db",
                        str(tmp_path / "db.sqlite")], capture_output=True, text=True, timeout=60)
    assert t.returncode == 0, t.stderr
    # The first hypothesis is point 0: the proposer's prior, or the fed skill that names it.
    first = next(i for i in tree["intents"] if (i.get("action") or {}).get("point") == 0
                 and i["source"] in ("template", "skill"))
    assert first["title"] in t.stdout and first["evidence"], t.stdout
    if first["source"] == "template":
        assert "start from the proposer's best prior point" in first["title"]
    s = subprocess.run([str(BINARY), "strategies", "--json", "--db", str(tmp_path / "db.sqlite")],
                       capture_output=True, text=True, timeout=60)
    assert s.returncode == 0, s.stderr
    population = json.loads(s.stdout)
    used = engine["search"]["strategy"]
    assert used in population["frontier"]
    assert any(x["parent"] == used for x in population["strategies"])  # a reflective mutant
    # The baselines the engine is measured against.
    for policy in ("best-of-n",):  # (prior: the sweep tests' and the benchmark's)
        p, r = optimize(tmp_path, *base, "--iterations", "2", "--search", policy, "--out",
                        str(tmp_path / policy))
        assert p.returncode == 0, p.stderr
        assert r is not None and r["search"]["policy"] == policy and r["attempts"] == 2
        assert "intent_chosen" not in p.stderr
    # Time budgets stop issuing work once spent (one evaluation takes seconds here); what was
    # evaluated is kept and the exit is clean.
    for flag, reason in (("--budget-wall-s", "wall_time"), ("--budget-device-s", "device_time")):
        p, r = optimize(tmp_path, *base, "--iterations", "4", flag, "0.5", "--out",
                        str(tmp_path / reason))
        assert p.returncode == 0, p.stderr
        assert r is not None and r["stop_reason"] == reason and r["attempts"] == 1, r
        assert r["verdict"] == "correct"
    # No such session: a usage error naming it.
    q = subprocess.run([str(BINARY), "intents", "s-none", "--db", str(tmp_path / "db.sqlite")],
                       capture_output=True, text=True, timeout=60)
    assert q.returncode == 2 and "s-none" in q.stderr


def test_session_ids_are_checked(tmp_path: Path) -> None:
    args = ["--reference", str(SWISH / "reference.py"), "--backend", "cpu", "--model", "builtin",
            "--iterations", "1", "--json", "--out", str(tmp_path / "out"), *QUICK]
    p, _ = optimize(tmp_path, *args, "--session", "bad id/with slash")
    assert p.returncode == 2 and "session id" in p.stderr, p.stderr
    p, report = optimize(tmp_path, *args, "--session", "named-1")
    assert p.returncode == 0, p.stderr
    assert report is not None and report["session"] == "named-1"
    p, _ = optimize(tmp_path, *args, "--session", "named-1")
    assert p.returncode == 2, p.stderr
    assert "session named-1 exists" in p.stderr and "--resume named-1" in p.stderr


def test_unreadable_search_state_is_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    s = subprocess.run([str(BINARY), "strategies", "--db", str(db)], capture_output=True,
                       text=True, timeout=60)
    assert s.returncode == 0 and "seed-balanced" in s.stdout, s.stderr  # the seeds, store created
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO search_state(scope, kind, json) VALUES "
                  "('s-bad', 'intents', 'not json'), ('global', 'strategies', '{\"strategies\": 3}')")
    for args, says in ((["intents", "s-bad"], "unreadable"), (["strategies"], "unreadable")):
        p = subprocess.run([str(BINARY), *args, "--db", str(db)], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and says in p.stderr, p.stderr
