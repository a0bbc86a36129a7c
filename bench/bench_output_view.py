"""Figures for the whole-output view on a 100 MB output (`seq 1 13000000`, 13 million lines).

Run: .venv/bin/python bench/bench_output_view.py

1. Keeping it: the output appended to its file beside the transcript in 64 KiB pieces, as a
   command streams it, secrets redacted (`transcripts/outputs.py`): the time and the app's RSS
   growth.
2. The pager (`support/paged_text.py`): opening (one pass counting line breaks), the last
   lines, a search that finds a line near the end, counting every match, a search backward.
3. The view itself (`OutputScreen` on the real widgets, headless at 100x30): opening it until the
   first lines are drawn, End until the last line is drawn, and `/` + a needle + Enter until
   the match is on screen.
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from textual.app import App, ComposeResult

from cmdop_tui.support.paged_text import PagedText, Search
from cmdop_tui.transcripts.outputs import KeptOutputs
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
from cmdop_tui.tui.widgets.output_pager import OutputPager

LAST = 13_000_000
NEEDLE = "12999999"
PIECE = 64 * 1024


def rss_mb() -> float:
    """This process's resident memory now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def timed(what: str, action, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = action(*args)
    print(f"  {what:<44} {1000 * (time.perf_counter() - started):8.1f} ms")
    return result


def keep(source: Path, kept: KeptOutputs) -> None:
    before = rss_mb()
    started = time.perf_counter()
    with source.open("rb") as data:
        while piece := data.read(PIECE):
            kept.write("toolu_bench", piece.decode())
    seconds = time.perf_counter() - started
    size = kept.path("toolu_bench").stat().st_size
    print(
        f"  kept {size / 1e6:.0f} MB in 64 KiB pieces           {1000 * seconds:8.1f} ms ({size / 1e6 / seconds:.0f} MB/s)"
    )
    print(f"  RSS grew by                                   {rss_mb() - before:8.1f} MB")


def pager(path: Path) -> None:
    text = timed("open (index 100 MB)", PagedText, path)
    timed("the last 30 lines", text.lines, text.line_count - 30, 30)
    found = timed(f"find {NEEDLE!r} from the top", text.find, Search(NEEDLE), 0)
    assert found is not None and text.lines(found.line, 1) == [NEEDLE]
    total = timed("count every match of '99999'", text.count, Search("99999"))
    timed("find '99999' backward from the end", text.find, Search("99999"), text.size, "backward")
    print(f"  ({text.line_count:,} lines, {total:,} matches of '99999')")


class ViewApp(App[None]):
    def __init__(self, record: ToolRecord, kept: KeptOutputs) -> None:
        super().__init__()
        self.record, self.kept = record, kept

    def compose(self) -> ComposeResult:
        return iter(())


def drawn(pager_widget: OutputPager) -> list[str]:
    return ["".join(s.text for s in pager_widget.render_line(y)).rstrip() for y in range(pager_widget.size.height)]


async def view(kept: KeptOutputs) -> None:
    record = ToolRecord("toolu_bench", "execute_command", {"command": f"seq 1 {LAST}"})
    record.finish("exit code: 0", False, 1.0)
    app = ViewApp(record, kept)
    async with app.run_test(size=(100, 30)) as pilot:
        started = time.perf_counter()
        await app.push_screen(OutputScreen(record, kept))
        await pilot.pause()
        pager_widget = app.screen.query_one(OutputPager)
        assert drawn(pager_widget)[0] == "1"
        print(f"  open the view (first lines drawn)            {1000 * (time.perf_counter() - started):8.1f} ms")
        started = time.perf_counter()
        await pilot.press("end")
        await pilot.pause()
        assert str(LAST) in drawn(pager_widget)
        print(f"  End (the last line drawn)                    {1000 * (time.perf_counter() - started):8.1f} ms")
        await pilot.press("home")
        await pilot.pause()
        await pilot.press("slash", *NEEDLE)
        started = time.perf_counter()
        await pilot.press("enter")
        await pilot.pause()
        assert NEEDLE in drawn(pager_widget)
        print(f"  Enter on / {NEEDLE} (the match drawn, n/N)  {1000 * (time.perf_counter() - started):8.1f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "seq.txt"
        with source.open("wb") as out:
            subprocess.run(["seq", "1", str(LAST)], stdout=out, check=True)
        kept = KeptOutputs(Path(scratch) / "session.outputs")
        print(f"A {source.stat().st_size / 1e6:.0f} MB output (seq 1 {LAST:,}); Python {sys.version.split()[0]}")
        print("Keeping it:")
        keep(source, kept)
        print("The pager:")
        pager(kept.path("toolu_bench"))
        print("The view:")
        asyncio.run(view(kept))


if __name__ == "__main__":
    main()
