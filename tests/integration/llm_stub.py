"""A local OpenAI-compatible chat-completions server for tests: it answers from scripts, one per
purpose (the generator or the critic, told apart by the system prompt), and records every request.

    with LlmStub(generator=[...], critic=[...], latency_s=0.0) as stub:
        base_url = stub.base_url   # http://127.0.0.1:PORT/v1
        ...
        stub.requests              # [(purpose, body), ...] in arrival order
        stub.timeline              # [(purpose, start, end), ...] time.monotonic() seconds

A script entry is the reply text; when a script runs out its last entry repeats. With latency_s > 0
every reply waits that many seconds before it is sent, outside the stub's lock, so concurrent
requests (the server is a ThreadingHTTPServer, one thread per connection) overlap as they would
against a real model. timeline records, per request, when it arrived and when its reply was sent,
in order of completion.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LlmStub:
    def __init__(self, generator: list[str], critic: list[str], latency_s: float = 0.0) -> None:
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        self.scripts = {"generator": list(generator), "critic": list(critic)}
        self.latency_s = float(latency_s)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.timeline: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                start = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                purpose, text = stub.answer(body)
                if stub.latency_s > 0:
                    time.sleep(stub.latency_s)  # outside the lock: requests overlap
                reply = {"id": "stub-1", "object": "chat.completion", "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": 1000, "completion_tokens": 200,
                                   "total_tokens": 1200}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                with stub.lock:
                    stub.timeline.append((purpose, start, time.monotonic()))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def purpose(body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        return "critic" if "performance analyst" in system else "generator"

    def answer(self, body: dict[str, Any]) -> tuple[str, str]:
        """Record the request; return its purpose and the reply text from that purpose's script."""
        purpose = self.purpose(body)
        with self.lock:
            self.requests.append((purpose, body))
            script = self.scripts[purpose]
            return purpose, (script.pop(0) if len(script) > 1 else script[0])

    def prompts(self, purpose: str) -> list[str]:
        return ["\n".join(str(m.get("content")) for m in body.get("messages") or [])
                for p, body in self.requests if p == purpose]

    def __enter__(self) -> "LlmStub":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
