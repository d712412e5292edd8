"""Short seeded fuzz runs (the long ones: tests/integration/test_slow_inputs.py): malformed protocol
lines, odd request fields and mutated reference sources are bad input, never internal errors,
hangs or a dead worker."""
from __future__ import annotations

import random
import sys

import pytest
from conftest import TINY_REFERENCE
from fuzzing import (WorkerProcess, channel_lines, fuzz_worker, mutate_source, random_line,
                     random_request)

from openkernel_worker import protocol
from openkernel_worker.__main__ import handle
from openkernel_worker.problem import BadInput, build_reference, load_reference

PING = b'{"op": "ping", "id": 7}'


@pytest.mark.parametrize("seed", range(5))
def test_channel_reports_malformed_lines_and_stays_in_step(seed: int) -> None:
    rng = random.Random(seed)
    bad = [random_line(rng) for _ in range(40)]
    channel = protocol.Channel(channel_lines([x for line in bad for x in (line, PING)]), None)
    malformed = 0
    for _ in bad:
        try:
            message = channel.receive()
            assert isinstance(message, dict)
        except protocol.RequestError:
            malformed += 1
        assert channel.receive() == {"op": "ping", "id": 7}  # the next line is read whole
    assert channel.receive() is None
    assert malformed >= 30


def test_overlong_line_is_skipped_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "MAX_LINE_BYTES", 1000)
    channel = protocol.Channel(channel_lines([b'{"x": "' + b"a" * 5000 + b'"}', PING]), None)
    with pytest.raises(protocol.RequestError, match="longer than 1000 bytes"):
        channel.receive()
    assert channel.receive() == {"op": "ping", "id": 7}


@pytest.mark.parametrize("seed", range(3))
def test_odd_request_fields_are_bad_input(seed: int, tiny_reference) -> None:
    rng = random.Random(seed)
    reference = tiny_reference
    kinds: dict[str, int] = {}
    for _ in range(60):
        req = random_request(rng, reference)
        if req["op"] == "device_info" and req.get("device") in ("cpu", None):
            continue  # a real bandwidth measurement: slow, and no malformed input
        reply = handle(req)
        kind = "ok" if reply["ok"] else reply["error"]["kind"]
        assert kind in ("ok", "bad_input", "environment"), (req, reply)
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("bad_input", 0) > 30, kinds


def test_request_field_messages_name_the_field() -> None:
    base = {"op": "evaluate", "reference": "/nonexistent/r.py", "candidate": "/c.py"}
    for field, value, fragment in [("trials", "many", "trials must be an integer"),
                                   ("trials", 0, "from 1 to"),
                                   ("timeout_s", float("inf"), "timeout_s must be a number"),
                                   ("overrides", ["rows"], "overrides must be an object"),
                                   ("strict", "yes", "strict must be true or false"),
                                   ("reference", 5, "reference must be a string"),
                                   ("device", "cpu\0", "without NUL")]:
        reply = handle({**base, field: value})
        assert reply["error"]["kind"] == "bad_input", reply
        assert fragment in reply["error"]["message"], reply
    reply = handle({**base, "reference": "/tmp/\udcff.py"})
    assert reply["error"]["kind"] == "bad_input" and "reference" in reply["error"]["message"]


def fuzz_references(seed: int, count: int, tmp_path) -> dict[str, int]:
    """Loads and builds `count` mutated TINY_REFERENCEs: each loads or is BadInput."""
    rng = random.Random(seed)
    outcome = {"loaded": 0, "bad_input": 0}
    for i in range(count):
        path = tmp_path / f"ref_{seed}_{i}.py"
        path.write_bytes(mutate_source(rng, TINY_REFERENCE.encode()))
        try:
            ref = load_reference(str(path), time_limit_s=5, module_name="fuzzed_reference")
            build_reference(ref, 0, "cpu", time_limit_s=5)
            outcome["loaded"] += 1
        except BadInput as e:
            assert str(e), path
            outcome["bad_input"] += 1
        finally:
            sys.modules.pop("fuzzed_reference", None)
    return outcome


@pytest.mark.parametrize("seed", range(2))
def test_mutated_references_load_or_are_bad_input(seed: int, tmp_path) -> None:
    outcome = fuzz_references(seed, 40, tmp_path)
    assert outcome["bad_input"] > 0 and outcome["loaded"] + outcome["bad_input"] == 40, outcome


def test_worker_process_survives_malformed_input(tiny_reference) -> None:
    worker = WorkerProcess()
    try:
        seen = fuzz_worker(worker, random.Random(11), 25, tiny_reference)
        worker.send(b"[" * 20 * (1 << 20))  # 20 MB: over the line limit
        worker.send(b'{"op": "ping", "id": 5}')
        replies = list(worker.replies_until(5, 120))
        assert "longer than" in replies[0]["error"]["message"], replies
    finally:
        assert worker.close() == 0
    assert seen.get("bad_input", 0) >= 20 and seen.get("ok", 0) >= 25, seen
