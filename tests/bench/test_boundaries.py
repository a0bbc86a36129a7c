"""Architecture rules that keep the loop a library."""

import subprocess
import sys
from pathlib import Path

import cmdop_tui

PACKAGE = Path(cmdop_tui.__file__).parent


def test_agent_package_source_never_mentions_textual():
    offenders = [
        str(path)
        for path in (PACKAGE / "agent").rglob("*.py")
        if any(line.lstrip().startswith(("import textual", "from textual")) for line in path.read_text().splitlines())
    ]
    assert offenders == []


def test_importing_the_loop_does_not_load_textual():
    code = "import sys, cmdop_tui.agent.runner, cmdop_tui.headless; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
