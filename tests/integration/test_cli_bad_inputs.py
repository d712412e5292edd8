"""`openkernel evaluate` on defective files: a defective candidate is a verdict (exit 0, recorded),
a defective reference is bad input (exit 2, a message naming the problem, nothing recorded). Never
exit 1 ("the evaluation worker failed"). The files are written per run (one is 50 MB).

    /usr/bin/python3 -m pytest -q tests/integration/test_cli_bad_inputs.py
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pytest
from test_cli_evaluate import (BINARY, FIXTURES, JOBS, QUICK, REFERENCE, Case, Run, bad_input,
                               environment, evaluations, reason, run_case, verdict)

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")

GOOD_REFERENCE = (FIXTURES / REFERENCE).read_bytes()
GOOD_CANDIDATE = (FIXTURES / "cand_correct.py").read_bytes()
HUGE = b"# padding to make a 50 MB source file\n" * (50 * 2**20 // 38)
LOOP = b"while True:\n    pass\n"


def with_body(source: bytes, old: bytes, new: bytes) -> bytes:
    assert old in source, old
    return source.replace(old, new, 1)


# name -> (file contents, which side it is, extra CLI arguments)
DEFECTS: dict[str, tuple[bytes, str, list[str]]] = {
    "not_utf8": (b"# \xff\xfe latin-1 caf\xe9\n" + GOOD_CANDIDATE, "both", []),
    "empty": (b"", "both", []),
    "blank": (b"\n   \n\t\n", "both", []),
    "huge": (HUGE + GOOD_CANDIDATE, "both", []),
    "nul": (GOOD_CANDIDATE.replace(b"import torch\n", b"import torch\n#\x00\n", 1), "both", []),
    "import_hangs": (LOOP + GOOD_CANDIDATE, "both", ["--timeout", "3"]),
}
# The reference side of the "both" defects uses the reference's own text.
REFERENCE_ONLY: dict[str, bytes] = {
    "get_inputs_raises": with_body(GOOD_REFERENCE, b"def get_inputs():\n",
                                   b"def get_inputs():\n    raise ValueError('no inputs today')\n"),
    "get_inputs_returns_text": with_body(GOOD_REFERENCE, b"def get_inputs():\n",
                                         b"def get_inputs():\n    return [torch.randn(2), 'x']\n"),
    "get_inputs_returns_tensor": with_body(GOOD_REFERENCE, b"def get_inputs():\n",
                                           b"def get_inputs():\n    return torch.randn(2)\n"),
    "get_inputs_hangs": with_body(GOOD_REFERENCE, b"def get_inputs():\n",
                                  b"def get_inputs():\n    while True:\n        pass\n"),
    "init_fails": with_body(GOOD_REFERENCE, b"def get_init_inputs():\n",
                            b"def get_init_inputs():\n    return [1, 2, 3, 4, 5, 6, 7]\n"),
    "too_big": with_body(GOOD_REFERENCE, b"        self.shift = shift\n",
                         b"        self.shift = shift\n"
                         b"        self.w = nn.Parameter(torch.empty(2**42))  # 16 TiB\n"),
}


def quick(extra: list[str]) -> list[str]:
    """QUICK with `extra`'s options in place of QUICK's (CLI11 refuses an option given twice)."""
    out = ["--json"]
    for option, value in zip(QUICK[1::2], QUICK[2::2]):
        if option not in extra:
            out += [option, value]
    return out + extra


def reference_variant(defect: str) -> bytes:
    if defect in REFERENCE_ONLY:
        return REFERENCE_ONLY[defect]
    data, _, _ = DEFECTS[defect]
    return data.replace(GOOD_CANDIDATE, GOOD_REFERENCE) if GOOD_CANDIDATE in data else data


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """Every case started at once ($OPENKERNEL_TEST_JOBS at a time); the getter waits for one."""
    base = tmp_path_factory.mktemp("bad")
    env = environment(base)
    cases: dict[str, Case] = {}
    for name, (data, _, extra) in DEFECTS.items():
        cand = base / f"cand_{name}.py"
        cand.write_bytes(data)
        cases[f"candidate_{name}"] = Case(["evaluate", "--reference", str(FIXTURES / REFERENCE),
                                           "--candidate", str(cand), *quick(extra)])
    for name in [*DEFECTS, *REFERENCE_ONLY]:
        ref = base / f"ref_{name}.py"
        ref.write_bytes(reference_variant(name))
        extra = ["--timeout", "3"] if "hangs" in name else []
        cases[f"reference_{name}"] = Case(["evaluate", "--reference", str(ref), "--candidate",
                                           str(FIXTURES / "cand_correct.py"), *quick(extra)])
    pool = ThreadPoolExecutor(max_workers=JOBS)
    futures: dict[str, Future[Run]] = {n: pool.submit(run_case, n, c, base, env)
                                       for n, c in cases.items()}
    yield lambda name: futures[name].result()
    pool.shutdown(wait=True)


def consistent(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM evaluations e LEFT JOIN candidates c ON "
                            "c.id = e.candidate_id WHERE c.id IS NULL").fetchone()[0] == 0


@pytest.mark.parametrize("defect, fragment", [
    ("not_utf8", "is not UTF-8 text (byte 0xff at offset 2, line 1)"),
    ("empty", "is empty"),
    ("blank", "holds only white space"),
    ("huge", "is larger than 8 MiB"),
    ("nul", "contains NUL bytes (the first at byte"),
])
def test_defective_candidate_is_a_compile_error(runs, defect: str, fragment: str) -> None:
    run = runs(f"candidate_{defect}")
    r = verdict(run, "compile_error")
    assert r["compiled"] is False and r["speedup"] is None
    assert fragment in reason(r) and f"cand_{defect}.py" in reason(r), reason(r)
    (row,) = evaluations(run.db)
    with sqlite3.connect(run.db) as conn:
        source, = conn.execute("SELECT source FROM candidates WHERE id = ?",
                               (row["candidate_id"],)).fetchone()
    assert len(source) <= 65536  # the start of the file, not 50 MB
    consistent(run.db)


def test_candidate_whose_import_hangs_is_a_timeout(runs) -> None:
    run = runs("candidate_import_hangs")
    r = verdict(run, "timeout")
    assert "compiling and loading within 3 s" in reason(r), reason(r)
    assert run.seconds < 90, run
    consistent(run.db)


@pytest.mark.parametrize("defect, fragments", [
    ("not_utf8", ["the reference", "is not UTF-8 text (byte 0xff at offset 2, line 1)"]),
    ("empty", ["the reference", "is empty"]),
    ("blank", ["the reference", "holds only white space"]),
    ("huge", ["the reference", "is larger than 8 MiB"]),
    ("nul", ["the reference", "contains NUL bytes"]),
    ("import_hangs", ["importing the reference", "did not finish within 3 s"]),
    ("get_inputs_raises", ["get_inputs() raised ValueError: no inputs today"]),
    ("get_inputs_returns_text", ["get_inputs() returned a str at position 1",
                                 "tensors and Python int/float/bool scalars"]),
    ("get_inputs_returns_tensor", ["get_inputs() returned Tensor, not a list"]),
    ("get_inputs_hangs", ["drawing its inputs did not finish within 3 s"]),
    ("init_fails", ["Model(*get_init_inputs()) raised TypeError"]),
    ("too_big", ["than the device (cpu) has", "--set"]),  # meta sizing (torch >= 2) or allocator
])
def test_defective_reference_is_bad_input(runs, defect: str, fragments: list[str]) -> None:
    if defect == "too_big" and Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1":
        pytest.skip("this kernel overcommits every allocation: a 16 TB tensor would not fail")
    run = runs(f"reference_{defect}")
    message = bad_input(run, "openkernel: error:", *fragments)
    assert "worker failed" not in message and "Traceback" not in message, message
    assert len(message) < 4000, message


@pytest.mark.parametrize("side", ["candidate", "reference"])
def test_path_that_is_not_utf8_is_bad_input(tmp_path: Path, side: str) -> None:
    # The worker protocol carries paths as UTF-8 text: such a path was an internal error (exit 1,
    # "invalid UTF-8 byte") while the request was encoded.
    folder = tmp_path / os.fsdecode(b"caf\xe9")  # a Latin-1 folder name
    folder.mkdir()
    odd = folder / ("cand.py" if side == "candidate" else "ref.py")
    odd.write_bytes(GOOD_CANDIDATE if side == "candidate" else GOOD_REFERENCE)
    reference = odd if side == "reference" else FIXTURES / REFERENCE
    candidate = odd if side == "candidate" else FIXTURES / "cand_correct.py"
    db = tmp_path / "store.db"
    proc = subprocess.run([str(BINARY), "evaluate", "--reference", str(reference), "--candidate",
                           str(candidate), "--db", str(db), *QUICK], capture_output=True,
                          text=True, env=environment(tmp_path), timeout=120)
    run = Run(side, [], proc.returncode, proc.stdout, proc.stderr, db, 0.0)
    bad_input(run, f"the {side}'s path is not valid UTF-8")
