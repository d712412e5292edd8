"""Worker entry point: `python -m openkernel_worker`. Serves the protocol in docs/worker-protocol.md.

Replies {"id", "ok": true, "result"} or {"id", "ok": false, "error": {"kind", "message"}} where kind
is bad_input, environment or internal. One request at a time; a failure never ends the loop.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from . import PROTOCOL_VERSION, watchdog
from .protocol import RequestError, clean_floats, private_stdio_channel, req_overrides, req_str


def handle(req: dict[str, Any]) -> dict[str, Any]:
    from .analyze import analyze
    from .baseline import baseline
    from .device_info import device_info
    from .evaluate import evaluate
    from .inspect_problem import inspect
    from .options import EnvironmentProblem
    from .problem import BadInput

    op = req.get("op")
    if op not in ("evaluate", "ping"):
        from .boot import release

        release()  # the announced evaluation did not come first
    try:
        if op == "evaluate":
            return {"ok": True, "result": evaluate(req)}
        if op == "inspect":
            return {"ok": True, "result": inspect(req_str(req, "reference", required=True) or "",
                                                  req_overrides(req))}
        if op == "analyze":
            return {"ok": True, "result": analyze(req_str(req, "reference", required=True) or "",
                                                  req_overrides(req))}
        if op == "prebuild":
            from .prebuild import prebuild

            return {"ok": True, "result": prebuild(req)}
        if op == "baseline":
            return {"ok": True, "result": baseline(req)}
        if op == "device_info":
            return {"ok": True, "result": device_info(req_str(req, "device") or "cpu")}
        if op == "profile":
            from .profiling import profile_only

            return {"ok": True, "result": profile_only(req)}
        if op == "ping":
            return {"ok": True, "result": {}}
        if op == "stage":
            from .stage import stage

            return {"ok": True, "result": stage(req)}
        return {"ok": False, "error": {"kind": "bad_input", "message": f"unknown op {repr(op)[:80]}"}}
    except (BadInput, RequestError) as e:
        return {"ok": False, "error": {"kind": "bad_input", "message": str(e)}}
    except EnvironmentProblem as e:
        return {"ok": False, "error": {"kind": "environment", "message": str(e)}}
    except KeyError as e:
        return {"ok": False, "error": {"kind": "bad_input", "message": f"request lacks {e}"}}
    except Exception as e:  # noqa: BLE001 - the worker must survive and report
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        return {"ok": False, "error": {"kind": "internal", "message": f"{type(e).__name__}: {e}",
                                       "traceback": tb[-3000:]}}


def lower_priority() -> None:
    """OPENKERNEL_WORKER_PRIORITY=idle (the engine's build worker, docs/search.md "Pre-builds"):
    nice 19 and, where Linux allows, SCHED_IDLE, inherited by every process it starts, so its
    compiles take only CPU time nothing else wants."""
    if os.environ.get("OPENKERNEL_WORKER_PRIORITY") != "idle":
        return
    try:
        os.nice(19 - os.nice(0))
    except OSError:
        pass
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        pass


def main() -> int:
    from . import boot
    from .timing import tune_allocator

    boot.mark("main")
    lower_priority()
    tune_allocator()
    channel = private_stdio_channel()
    if watchdog.enabled():
        watchdog.install_signals()  # before the boot process: a stop then leaves nothing behind
    boot.start_early()  # the announced evaluation's candidate process, before torch's import
    try:
        import torch  # noqa: F401 - fail early and clearly when torch is missing
    except ImportError as e:
        channel.send({"type": "hello", "protocol": PROTOCOL_VERSION, "ok": False,
                      "error": {"kind": "environment",
                                "message": f"{sys.executable} cannot import torch: {e}"}})
        return 3
    from .device import hello

    boot.mark("torch_imported")
    channel.send({"type": "hello", "protocol": PROTOCOL_VERSION, "ok": True, **hello(),
                  "pid": os.getpid()})
    boot.mark("hello_sent")
    inbox = watchdog.Inbox(channel) if watchdog.enabled() else channel
    while True:
        try:
            req = inbox.receive()
        except RequestError as e:
            channel.send({"ok": False, "error": {"kind": "bad_input",
                                                 "message": f"malformed request: {e}"}})
            continue
        if req is None or req.get("op") == "shutdown":
            return 0
        boot.mark("request")
        reply = handle(req)
        reply["id"] = req.get("id")
        channel.send(clean_floats(reply))


if __name__ == "__main__":
    sys.exit(main())
