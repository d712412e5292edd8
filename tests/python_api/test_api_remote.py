"""The Python API's eval_host (docs/python.md, docs/remote.md) over the loopback sshd of the
integration tests (tests/integration/loopback_sshd.py; skipped, saying why, where sshd cannot be
started): an Evaluator's and evaluate()'s verdicts over ssh equal the local ones, optimize()
evaluates there, and a bad host is refused as the CLI refuses it."""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

import openkernel
from conftest import FIXTURES, PYTHON, QUICK, ROOT, SWISH

sys.path.insert(0, str(ROOT / "tests/integration"))
from loopback_sshd import serve  # noqa: E402

REFERENCE = FIXTURES / "ref_scaled_relu.py"
CORRECT = FIXTURES / "cand_correct.py"
SAME = ("verdict", "correct", "valid", "compiled", "max_abs_error", "max_rel_error", "device",
        "backend", "flags")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for server in serve(tmp_path_factory.mktemp("sshd")):
        if isinstance(server, str):
            pytest.skip(server)
        mp = pytest.MonkeyPatch()
        mp.setenv("OPENKERNEL_SSH", str(server.root / "ssh"))
        yield server
        mp.undo()


def test_evaluator_over_ssh_equals_local(sshd: Any, tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    local = openkernel.evaluate(CORRECT, REFERENCE, backend="cpu", seed=7, db=db, **QUICK)
    with openkernel.Evaluator(backend="cpu", python=PYTHON, db=db, eval_host=sshd.url,
                              seed=7, **QUICK) as ev:
        first = ev.evaluate(CORRECT, REFERENCE)
        second = ev.evaluate(CORRECT, REFERENCE)  # the warm worker on the host
    once = openkernel.evaluate(CORRECT, REFERENCE, backend="cpu", seed=7, db=db,
                               python=PYTHON, eval_host=sshd.url, **QUICK)
    a = local.to_dict()
    for remote in (first, second, once):
        b = remote.to_dict()
        assert {k: b[k] for k in SAME} == {k: a[k] for k in SAME}
        assert b["phases_s"]["transfer"] >= 0 and "transfer" not in a["phases_s"]
        assert b["candidate"]["path"] == str(CORRECT)  # the engine's path, not the host's copy
    assert second.to_dict()["candidate_process"] == "spare"
    shipped = list(sshd.remote_cache.glob("worker-*"))
    assert len(shipped) == 1 and (shipped[0] / "READY").is_file()


def test_optimize_evaluates_on_the_host(sshd: Any, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    report = openkernel.optimize(str(SWISH / "reference.py"), model="builtin", iterations=1,
                                 backend="cpu", seed=7, trials=2, timing_budget=0.3,
                                 python=PYTHON, db=str(db), out=str(tmp_path / "out"),
                                 eval_host=sshd.url)
    assert report.verdict == "correct"
    with sqlite3.connect(db) as c:
        (result,) = c.execute("SELECT result FROM evaluations ORDER BY id LIMIT 1").fetchone()
    assert '"transfer"' in result  # evaluated over ssh


def test_a_bad_eval_host_is_refused(tmp_path: Path) -> None:
    with pytest.raises(openkernel.BadInput, match="cannot start with '-'"):
        openkernel.Evaluator(backend="cpu", eval_host="ssh://-oProxyCommand=x",
                             db=str(tmp_path / "db.sqlite")).evaluate(CORRECT, REFERENCE)
    with pytest.raises(openkernel.BadInput, match="unclosed quote"):
        openkernel.sweep(1, "1", output=str(tmp_path / "r.tsv"), backend="cpu",
                         model="builtin", eval_host=["ssh://127.0.0.1:1", "slurm:-J 'x"])
