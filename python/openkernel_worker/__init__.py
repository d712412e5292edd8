"""OpenKernel evaluation worker: builds references, runs candidates in child processes, compares.

The engine (C++) talks to this package over the JSON-lines protocol in docs/worker-protocol.md.
"""

PROTOCOL_VERSION = 2
