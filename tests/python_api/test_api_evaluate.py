"""openkernel.evaluate, Evaluator and reward against `openkernel evaluate --json`: the same
fields and, for the same inputs and seed, the same values (timings, ids and paths of the run
aside); the warm path; two threads on one Evaluator; bad inputs as exceptions."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

import openkernel
from conftest import BINARY, FIXTURES, QUICK, ROOT

REFERENCE = FIXTURES / "ref_scaled_relu.py"
CORRECT = FIXTURES / "cand_correct.py"
# What differs between two evaluations of the same inputs and seed: clocks, the process that ran
# the candidate, the caches' state and the row written.
RUN_DEPENDENT = {"wall_s", "worker_wall_s", "compile_s", "phases_s", "process_warm_s",
                 "candidate_process", "runtime_us", "ref_runtime_us", "speedup",
                 "speedup_compile", "timing", "wall_check", "rested_wall_check",
                 "graph_wall_check", "roofline", "reference_cache", "profile", "cpu_check",
                 "evaluation_id", "db", "worker_start_s"}


def cli_evaluate(db: Path, *args: str) -> dict[str, Any]:
    p = subprocess.run([str(BINARY), "evaluate", "--db", str(db), "--json", *args],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("evaluator") / "db.sqlite"
    with openkernel.Evaluator(backend="cpu", db=str(db), **QUICK) as e:
        yield e


def test_evaluate_equals_the_cli_for_the_same_inputs_and_seed(tmp_path: Path) -> None:
    cli = cli_evaluate(tmp_path / "cli.db", "--reference", str(REFERENCE), "--candidate",
                       str(CORRECT), "--backend", "cpu", "--seed", "7", "--trials", "2",
                       "--timing-budget", "0.3", "--timeout", "120")
    r = openkernel.evaluate(CORRECT, REFERENCE, backend="cpu", seed=7, db=str(tmp_path / "py.db"),
                            **QUICK)
    assert isinstance(r, openkernel.EvalResult)
    ours = r.to_dict()
    assert set(ours) == set(cli)
    same = {k: v for k, v in cli.items() if k not in RUN_DEPENDENT}
    assert {k: ours[k] for k in same} == same
    assert r.verdict == "correct" and r.correct and r.compiled and r.valid
    assert r.seed == 7 and r.trials == 2 and r.backend == "cpu"
    assert isinstance(r.runtime_us, openkernel.RuntimeStats) and r.runtime_us.n > 0
    assert r.speedup == pytest.approx(r.ref_runtime_us.median / r.runtime_us.median)
    assert r.db == str(tmp_path / "py.db") and r.evaluation_id == 1


def test_sources_as_text_and_verdicts_through_one_warm_evaluator(evaluator: Any) -> None:
    results = evaluator.evaluate_many(
        [CORRECT, (FIXTURES / "cand_wrong_shape.py").read_text(), FIXTURES / "cand_raises.py"],
        reference=REFERENCE.read_text(), seed=3)
    assert [r.verdict for r in results] == ["correct", "incorrect", "runtime_error"]
    # The warm path: after the first, each candidate ran in a process started ahead of time.
    assert [r.candidate_process for r in results][1:] == ["spare", "spare"]
    assert results[1].reasons and not results[1].correct
    assert len({r.evaluation_id for r in results}) == 3
    info = evaluator.info()
    assert info["backend"] == "cpu" and info["worker_alive"]


def test_two_threads_share_one_evaluator(evaluator: Any) -> None:
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = evaluator.evaluate(CORRECT, REFERENCE, seed=100 + i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ticks = []
    done = threading.Event()

    def tick() -> None:  # Python keeps running while the engine works: the GIL is released
        while not done.wait(0.01):
            ticks.append(1)

    ticker = threading.Thread(target=tick)
    ticker.start()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    done.set()
    ticker.join()
    assert not errors, errors
    assert len(ticks) > 50
    assert [results[i].verdict for i in (0, 1)] == ["correct", "correct"]
    assert [results[i].seed for i in (0, 1)] == [100, 101]
    assert results[0].evaluation_id != results[1].evaluation_id


def test_reward_is_score_reward(evaluator: Any) -> None:
    r = evaluator.evaluate(CORRECT, REFERENCE)
    assert openkernel.reward(r) == pytest.approx(min(3.0, max(-1.0, math.log(r.speedup))))
    assert openkernel.reward(r, baseline="compile") is None  # torch.compile was not timed
    assert openkernel.reward({"verdict": "rejected", "speedup": 5.0}) == openkernel.REWARD_REJECTED
    assert openkernel.reward({"verdict": "incorrect"}) == 0.0
    assert openkernel.reward({"verdict": "correct", "speedup": 1000.0}) == openkernel.REWARD_MAX
    assert openkernel.reward({"verdict": "correct", "speedup": 0.01}) == openkernel.REWARD_MIN
    assert openkernel.reward({"verdict": "correct", "speedup_compile": 2.0},
                             baseline="compile") == pytest.approx(math.log(2.0))
    with pytest.raises(openkernel.BadInput, match="baseline"):
        openkernel.reward(r, baseline="triton")


@pytest.mark.parametrize("kwargs, message", [
    ({"reference": FIXTURES / "ref_does_not_exist.py"}, "reference not found"),
    ({"candidate": FIXTURES / "cand_does_not_exist.py"}, "file not found"),
    ({"reference": FIXTURES / "ref_missing_get_inputs.py"}, "get_inputs"),
    ({"sets": {"batch_size": 4}}, "batch_size"),
    ({"cuda_graph": "sometimes"}, "cuda_graph: 'sometimes' is not one of auto, on, off"),
    ({"trials": "five"}, "trials: expected an int"),
    ({"trials": 0}, "--trials must be at least 1"),
])
def test_bad_inputs_raise_bad_input_with_the_cli_message(evaluator: Any, kwargs: dict[str, Any],
                                                         message: str) -> None:
    args = {"candidate": CORRECT, "reference": REFERENCE, **kwargs}
    with pytest.raises(openkernel.BadInput, match=message) as e:
        evaluator.evaluate(args.pop("candidate"), args.pop("reference"), **args)
    assert isinstance(e.value, ValueError) and e.value.exit_code == 2


def test_bad_engine_options_and_a_batch_with_a_bad_item(evaluator: Any, tmp_path: Path) -> None:
    with pytest.raises(openkernel.BadInput, match="backend: 'opencl' is not one of"):
        openkernel.Evaluator(backend="opencl")
    with pytest.raises(openkernel.BadInput, match="needs an NVIDIA GPU") as e:
        openkernel.evaluate(CORRECT, REFERENCE, backend="cuda", db=str(tmp_path / "db"))
    assert e.value.kind == "environment"
    with pytest.raises(TypeError):
        openkernel.evaluate(CORRECT, REFERENCE, trails=3)
    missing = FIXTURES / "cand_does_not_exist.py"
    out = evaluator.evaluate_many([{"candidate": CORRECT}, {"candidate": missing}],
                                  reference=REFERENCE, return_exceptions=True)
    assert out[0].verdict == "correct"
    assert isinstance(out[1], openkernel.BadInput) and "file not found" in str(out[1])
    with pytest.raises(openkernel.BadInput, match="file not found"):
        evaluator.evaluate_many([missing], reference=REFERENCE)


def test_profile_tiers_on_evaluate_and_evaluate_many(tmp_path: Path, monkeypatch) -> None:
    # The deep tier's real path on the CPU: a recorded stand-in for ncu (it runs the profiled
    # forward and prints a recorded raw page) and OPENKERNEL_PROFILE_ON_CPU (docs/profiling.md),
    # both in the environment the Evaluator's worker starts with
    tools = tmp_path / "nsight"
    tools.mkdir()
    shutil.copy(ROOT / "python/tests/data/profiling/fake_ncu", tools / "ncu")
    shutil.copy(ROOT / "python/tests/data/profiling/low_occupancy_raw.csv", tools / "raw.csv")
    monkeypatch.setenv("OPENKERNEL_NCU", str(tools / "ncu"))
    monkeypatch.setenv("OPENKERNEL_PROFILE_ON_CPU", "1")
    with openkernel.Evaluator(backend="cpu", db=str(tmp_path / "db.sqlite"), **QUICK) as e:
        r = e.evaluate(CORRECT, REFERENCE, profile="deep")
        assert r.verdict == "correct"
        assert (r.profile["tier"], r.profile["requested_tier"]) == ("deep", "deep")
        assert r.profile["kernel_metrics"][0]["achieved_occupancy_pct"] == 18.5
        assert r.to_dict()["profile"] == r.profile and r.profile["kernel_table"] is not None
        many = e.evaluate_many([CORRECT, {"candidate": CORRECT, "profile": "basic"}],
                               reference=REFERENCE, profile="deep")
        assert many[0].profile["tier"] == "deep" and many[0].profile["cached"] is True
        assert many[1].profile["tier"] == "basic" and "requested_tier" not in many[1].profile
        with pytest.raises(openkernel.BadInput, match="profile: 'full' is not one of"):
            e.evaluate(CORRECT, REFERENCE, profile="full")


def test_an_announcement_in_the_users_environment_reaches_no_session_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENKERNEL_WORKER_EXPECT is the one-off evaluate's to set (docs/worker-protocol.md): one
    left in the user's shell must not start a boot process in a session's worker, whose first
    request may measure (src/eval/worker.cpp unsets it unless the launcher announces)."""
    announced = {"op": "evaluate", "reference": str(REFERENCE), "candidate": str(CORRECT),
                 "backend": "cpu", "trials": 2, "timing_budget_s": 0.3, "timeout_s": 120}
    monkeypatch.setenv("OPENKERNEL_WORKER_EXPECT", json.dumps(announced))
    with openkernel.Evaluator(backend="cpu", db=str(tmp_path / "db.sqlite"), **QUICK) as e:
        r = e.evaluate(CORRECT, reference=REFERENCE).to_dict()
    assert r["verdict"] == "correct", r["reasons"]
    assert r["candidate_process"] != "boot"
    assert "candidate_spawned" not in (r.get("worker_start_s") or {}), r["worker_start_s"]
