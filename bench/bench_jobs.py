"""Figures for background jobs (issue 26), measured on the real app in a pseudo-terminal.

Run: .venv/bin/python bench/bench_jobs.py [--seconds 60] [--jobs 20]

The model (the fake Messages API) starts JOBS background jobs in one reply; each prints about
1 MB a second (lines of 100 bytes, numbered) for SECONDS, in the sandbox, as any command of the
model would. Keys are typed into the prompt at a person's pace from that prompt on: while the
turn starts the jobs, while they run and as they end (all at once). Printed: the real duration
and rate, key echo p50 and p95 (target p95 16 ms; and per phase), the app's RSS growth from before
the jobs to its peak while they run (target 50 MB), and whether each job's output file holds
every byte the job printed, compared byte for byte with what it was to print (target: nothing
lost). Then, for comparison, the same commands run beside the app rather than by it (their
output to /dev/null) while keys are typed: what the machine's load alone does to key echo.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui_long import app_env, cpu_seconds, percentiles, rss_mb
from fake_anthropic import FakeAnthropic, reply, text_reply, tool_use
from pty_app import PROMPT_DRAWN, PtyApp

LINES_A_SECOND = 10_000
PAD = "." * 84  # a line: `jNN ` (4) + 10 digits + a space + 84 dots + a newline = 100 bytes
LINE_BYTES = 100
KEYS = "αβγδεζηθικλμνξοπρστυ"
KEY_PAUSE_S = 0.1
CONTROL_SECONDS = 15
ENDING_S = 3.0  # keys are typed this long after the last output, while the jobs end


def job_command(job: int, seconds: int) -> str:
    """A second's worth of numbered lines, then a pause, `seconds` times (about 1 MB/s)."""
    per = LINES_A_SECOND
    return (
        f"for s in $(seq 1 {seconds}); do "
        f'seq -f "j{job:02d} %010.0f {PAD}" $(( (s - 1) * {per} + 1 )) $(( s * {per} )); sleep 1; done'
    )


def expected_size(seconds: int) -> int:
    """What one job prints in all, counted rather than made: building 20 jobs' output (200 MB a
    10 s run) while keys are typed held the GIL of this process, and its own typist's keys came
    back late."""
    return seconds * LINES_A_SECOND * LINE_BYTES


def expected_output(job: int, seconds: int) -> bytes:
    lines = (f"j{job:02d} {n:010d} {PAD}\n" for n in range(1, seconds * LINES_A_SECOND + 1))
    return "".join(lines).encode()


def type_keys(app: PtyApp, stop: threading.Event, rounds: int = 0) -> list[tuple[float, float]]:
    """Keys typed one by one until `stop` (at least `rounds` times KEYS); for each, when it was
    sent and its time to its echo on the terminal."""
    echoes: list[tuple[float, float]] = []
    while not stop.is_set() or len(echoes) < rounds * len(KEYS):
        for key in KEYS:
            start = app.mark()
            sent = app.write(key.encode())
            echoes.append((sent, app.wait_for(key.encode(), start, timeout=10) - sent))
            time.sleep(KEY_PAUSE_S)
        app.write(b"\x15")  # ctrl+u: clear what was typed
        time.sleep(KEY_PAUSE_S)
    return echoes


def echo_times(echoes: list[tuple[float, float]], start: float = 0.0, end: float = float("inf")) -> list[float]:
    """The echo times of the keys sent between `start` and `end`."""
    return [took for sent, took in echoes if start <= sent < end]


def job_files(data_home: Path, count: int) -> list[Path]:
    return [
        next(data_home.glob(f"cmdop-tui/sessions/*.jobs/job-{n}.log"), Path("/nonexistent"))
        for n in range(1, count + 1)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="how long each job prints (default 60)")
    parser.add_argument("--jobs", type=int, default=20, help="how many jobs (default 20)")
    parser.add_argument(
        "--secrets",
        type=int,
        default=0,
        help="run the app with a home of its own holding this many .env files, which the sandbox hides from each command",
    )
    options = parser.parse_args()
    data_home = Path(tempfile.mkdtemp(prefix="cmdop-jobs-"))
    calls = [
        tool_use("execute_command", {"command": job_command(n, options.seconds), "background": True})
        for n in range(1, options.jobs + 1)
    ]
    with FakeAnthropic() as server:
        server.enqueue(text_reply("Hello there."), reply(*calls), text_reply(f"{options.jobs} jobs are running."))
        env = app_env(server, data_home)
        if options.secrets:
            env["HOME"] = str(home_with_secrets(data_home / "home", options.secrets))
            print(f"(a home of its own with {options.secrets} .env files the sandbox hides from each command)")
        app = PtyApp(env, size=(120, 36), args=("--yes", "--no-low-bandwidth"))
        try:
            measure(app, data_home, options.jobs, options.seconds)
            control(app, options.jobs, min(options.seconds, CONTROL_SECONDS), None)
            control(app, options.jobs, min(options.seconds, CONTROL_SECONDS), data_home / "control")
        finally:
            app.close()


def home_with_secrets(home: Path, count: int) -> Path:
    """A home holding `count` `.env` files, one per project folder, as a developer's may."""
    for n in range(count):
        project = home / "projects" / f"p{n // 100:03d}" / f"app{n % 100:02d}"
        project.mkdir(parents=True)
        (project / ".env").write_text(f"TOKEN=bench-{n}\n")
    return home


def measure(app: PtyApp, data_home: Path, count: int, seconds: int) -> None:
    app.wait_for(PROMPT_DRAWN, timeout=30)
    app.wait_for(b"lists commands", timeout=30)
    app.wait_quiet(1.0)  # the session loaded
    app.write(b"hello\r")  # a first turn loads the SDK: its memory is not the jobs'
    app.wait_for_text("Hello there", timeout=60)
    app.wait_quiet(1.0)
    quiet = threading.Event()
    quiet.set()
    idle_echoes = type_keys(app, quiet, rounds=1)
    before = rss_mb(app.pid)
    expected = {n: expected_size(seconds) for n in range(1, count + 1)}
    stop, echoes, peak = threading.Event(), [], before
    typist = threading.Thread(target=lambda: echoes.extend(type_keys(app, stop)))
    began, cpu = time.perf_counter(), cpu_seconds(app.pid)
    app.write(b"start the jobs\r")
    typist.start()  # keys typed while the turn starts the jobs, while they run and as they end
    app.wait_for_text("jobs are running", timeout=60)
    started = time.perf_counter()
    deadline = began + seconds * 3 + 60
    while time.perf_counter() < deadline:
        peak = max(peak, rss_mb(app.pid))
        sizes = [path.stat().st_size if path.exists() else 0 for path in job_files(data_home, count)]
        if all(size >= expected[n] for n, size in zip(expected, sizes, strict=True)):
            break
        time.sleep(0.2)
    printed = time.perf_counter()
    time.sleep(ENDING_S)  # each job sleeps a second after its last line, then ends: all at once
    took = time.perf_counter() - began
    used = cpu_seconds(app.pid) - cpu
    stop.set()
    typist.join()
    peak = max(peak, rss_mb(app.pid))
    lost = [n for n, path in zip(expected, job_files(data_home, count), strict=True) if not _whole(path, n, seconds)]
    total = sum(expected.values())
    print(
        f"{count} background jobs, each printing {seconds} s at about 1 MB/s: the last output came "
        f"{printed - began:.1f} s after the prompt that starts them ({total / (printed - began) / 1e6:.1f} MB/s "
        f"together, {total / 1e6:.0f} MB)"
    )
    keys = echo_times(echoes)
    print(f"  key echo, from that prompt to their end: {percentiles(keys)} over {len(keys)} keys (target p95 16 ms)")
    for phase, start, end in (
        ("as the turn starts them", began, started),
        ("while they run", started, printed),
        ("as they end", printed, float("inf")),
    ):
        times = echo_times(echoes, start, end)
        print(f"    {phase}: {percentiles(times) if times else 'no key'} over {len(times)} keys")
    idle = echo_times(idle_echoes)
    print(f"  key echo before they ran, for comparison: {percentiles(idle)} over {len(idle)} keys")
    print(f"  the app's CPU meanwhile: {100 * used / took:.0f} % of a core (the jobs' own processes apart)")
    print(f"  app RSS: {before:.0f} MB before, {peak:.0f} MB at its peak: +{peak - before:.0f} MB (target 50)")
    print(
        f"  output files compared byte for byte: {count - len(lost)} of {count} whole"
        + (f"; lost in {lost}" if lost else "")
    )


def control(app: PtyApp, count: int, seconds: int, into: Path | None) -> None:
    """The same commands run beside the app, not by it (their output to /dev/null, or to files
    in `into` as the app's jobs write theirs): the key echo this machine gives under their load
    alone, for comparison."""
    if into is not None:
        into.mkdir()
    outputs = [open(into / f"{n}.log", "wb") if into else subprocess.DEVNULL for n in range(1, count + 1)]
    producers = [
        subprocess.Popen(["/bin/bash", "-c", job_command(n, seconds)], stdout=output)
        for n, output in enumerate(outputs, start=1)
    ]
    stop = threading.Event()
    typist_echoes: list[tuple[float, float]] = []
    typist = threading.Thread(target=lambda: typist_echoes.extend(type_keys(app, stop)))
    typist.start()
    for producer in producers:
        producer.wait()
    stop.set()
    typist.join()
    for output in outputs:
        if not isinstance(output, int):
            output.close()
    times = echo_times(typist_echoes)
    print(
        f"  control: the same {count} commands beside the app ({seconds} s, output to "
        f"{'files' if into else '/dev/null'}): key echo {percentiles(times)} over {len(times)} keys"
    )


def _whole(path: Path, job: int, seconds: int) -> bool:
    try:
        return path.read_bytes() == expected_output(job, seconds)
    except OSError:
        return False


if __name__ == "__main__":
    main()
