"""What an MCP server runs from the project (`server_files`) and the fingerprint of it, read from
real files in a temporary project: every way a command line names code, the spellings an
attacker would use to slip a change past the fingerprint, and the bounds it fails closed at."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cmdop_tui.mcp import files
from cmdop_tui.mcp.files import FingerprintLimit, fingerprint, server_files
from cmdop_tui.mcp.server_tables import McpServerSpec

LAYOUT = {
    "server.py": "import helpers\nfrom tools.io import read\n",
    "helpers.py": "import json, os\n",  # json and os are not the project's: not found beside it
    "tools/__init__.py": "",
    "tools/io.py": "",
    "server.js": 'const lib = require("./lib/util");\nimport x from "../outside.js";\n',
    "lib/util.js": "",
    "hook.js": "",
    "x.ts": 'import { a } from "./deps/a.ts";\n',
    "deps/a.ts": "",
    "pkg/__init__.py": "",
    "pkg/sub.py": "",
    "mod.py": "",
    "runner/__main__.py": "import mod\nfrom . import inner\nfrom runner import inner\n",
    "runner/inner.py": "",
    "scripts/run.sh": "#!/bin/sh\n",
    "tools/srv/main.py": "",
    "local/package.json": "{}",
    "node_modules/@scope/pkg/index.js": "",
    "srvdir/main.py": "",
    "bin/srv-bin": "#!/bin/sh\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".venv/lib/site.py": "",
    "data/notes.txt": "",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name, text in LAYOUT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name in ("scripts/run.sh", "bin/srv-bin"):
        (root / name).chmod(0o755)
    (root / ".venv/bin").mkdir()
    (root / ".venv/bin/python").symlink_to(sys.executable)
    (tmp_path / "outside.js").write_text("")
    (tmp_path / "outside.py").write_text("")
    return root


def stdio(command: str, *args: str, **fields: object) -> McpServerSpec:
    return McpServerSpec(name="s", command=command, args=args, **fields)  # type: ignore[arg-type]


def relative(paths: list[Path], root: Path) -> list[str]:
    return [str(path.relative_to(root)) for path in paths]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (stdio(sys.executable, "server.py"), ["server.py", "helpers.py", "tools"]),
        (stdio("./scripts/run.sh"), ["scripts/run.sh"]),
        (stdio("node", "server.js", "--port", "3000"), ["server.js", "lib/util.js"]),
        (stdio("node", "--require=./hook.js", "server.js"), ["hook.js", "server.js", "lib/util.js"]),
        (stdio("python3", "-m", "pkg.sub"), ["pkg"]),
        (stdio("python3", "-mpkg"), ["pkg"]),
        (stdio("python", "-m", "mod"), ["mod.py"]),
        (stdio("python", "-m", "runner"), ["runner", "mod.py"]),  # what the package imports beside it
        (stdio("uv", "run", "--directory", "tools/srv", "main.py"), ["tools/srv"]),
        (stdio("uv", "run", "--project=tools/srv", "x"), ["tools/srv"]),
        (stdio("npx", "./local"), ["local"]),
        (stdio("npx", "-y", "@scope/pkg@1.2.0"), ["node_modules/@scope/pkg"]),
        (stdio("deno", "run", "--allow-read", "x.ts"), ["x.ts", "deps/a.ts"]),
        (stdio("bun", "x.ts"), ["x.ts", "deps/a.ts"]),
        (stdio("python", "main.py", cwd="srvdir"), ["srvdir"]),
        (stdio("srv-bin", env={"PATH": "bin"}), ["bin/srv-bin"]),
        (stdio(".venv/bin/python", "-c", "print(1)"), [".venv"]),
        (stdio("cat", "data/notes.txt"), ["data/notes.txt"]),  # a file it names: it may read code from it
    ],
)
def test_what_a_server_runs_from_the_project(project, spec, expected):
    assert relative(server_files(spec, project), project) == expected


@pytest.mark.parametrize(
    "spec",
    [
        stdio("npx", "-y", "@modelcontextprotocol/server-filesystem", "."),  # the workspace, not code
        stdio("npx", "-y", "@modelcontextprotocol/server-filesystem", str(Path.home())),
        stdio("npx", "-y", "server-filesystem", "/"),
        stdio("python", "../outside.py"),  # outside the project: commands cannot write there
        stdio("python", "main.py", cwd="."),
        stdio("uvx", "mcp-server-fetch"),
        McpServerSpec(name="web", transport="http", url="http://127.0.0.1:9/mcp"),
        stdio("python", "server.py", problem="broken entry"),
    ],
)
def test_what_is_not_the_servers_code_in_the_project(project, spec):
    assert server_files(spec, project) == []


def test_places_named_through_the_environment_and_other_writable_places(project, tmp_path, monkeypatch):
    monkeypatch.setenv("SERVER_SCRIPT", "mod.py")
    assert relative(server_files(stdio("python", "${SERVER_SCRIPT}"), project), project) == ["mod.py"]
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    (elsewhere / "tool.py").write_text("")
    spec = stdio("python", str(elsewhere / "tool.py"))
    assert server_files(spec, project) == []
    assert server_files(spec, project, writable=[elsewhere]) == [elsewhere / "tool.py"]


def test_a_link_is_listed_as_itself_and_as_what_it_leads_to_inside(project, tmp_path):
    (project / "linked.py").symlink_to(tmp_path / "outside.py")  # leads out: the link itself counts
    (tmp_path / "in.py").symlink_to(project / "mod.py")  # leads in from outside: the target counts
    assert relative(server_files(stdio("python", "linked.py"), project), project) == ["linked.py"]
    assert relative(server_files(stdio("python", str(tmp_path / "in.py")), project), project) == ["mod.py"]


def test_hostile_arguments_are_just_names(project):
    for arg in ("\0", "x" * 5000, "-m", "--directory", "-m../../etc", "a\nb", "$(touch /tmp/x)"):
        assert server_files(stdio("python", arg), project) == []


# --- the fingerprint -------------------------------------------------------------------------------


def test_every_change_to_what_a_server_runs_changes_the_fingerprint(project, tmp_path):
    folder, script = project / "tools", project / "server.py"
    taken = fingerprint([folder, script], [project])
    assert fingerprint([folder, script], [project]) == taken

    def changed() -> bool:
        nonlocal taken
        now = fingerprint([folder, script], [project])
        changed, taken = now != taken, now
        return changed

    before = script.stat()
    script.write_text(script.read_text().replace("helpers", "hackers"))  # the same size, the same time
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert changed()
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns + 1))  # its time alone
    assert changed()
    (folder / "new.py").write_text("")  # a file added to its folder
    assert changed()
    (folder / "new.py").unlink()
    assert changed()
    (folder / "sub").mkdir()  # an empty folder (a namespace package)
    assert changed()
    (folder / "io.py").rename(folder / "io2.py")  # a file renamed
    assert changed()
    (folder / "link.py").symlink_to(project / "mod.py")  # a link, then where it leads
    assert changed()
    (project / "mod.py").write_text("import os; os.system('id')")  # what the link leads to, inside
    assert changed()
    (folder / "link.py").unlink()
    (folder / "link.py").symlink_to(project / "helpers.py")
    assert changed()


def test_what_python_writes_as_it_runs_is_left_out(project):
    taken = fingerprint([project / "tools"], [project])
    (project / "tools" / "__pycache__").mkdir()
    (project / "tools" / "__pycache__" / "io.cpython-311.pyc").write_bytes(b"\0" * 64)
    assert fingerprint([project / "tools"], [project]) == taken


def test_a_fifo_or_a_link_loop_does_not_hang_the_fingerprint(project):
    os.mkfifo(project / "tools" / "pipe")
    (project / "tools" / "loop").symlink_to(project / "tools")
    (project / "tools" / "dangling").symlink_to(project / "nowhere")
    assert len(fingerprint([project / "tools"], [project])) == 64


def test_past_the_bounds_the_fingerprint_fails_closed(project, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILES", 2)
    with pytest.raises(FingerprintLimit, match="2 files"):
        fingerprint([project / "tools", project / "server.py"], [project])
    monkeypatch.setattr(files, "MAX_FILES", 1_000)
    monkeypatch.setattr(files, "MAX_BYTES", 10)
    (project / "big.py").write_text("x" * 11)
    with pytest.raises(FingerprintLimit):
        fingerprint([project / "big.py"], [project])
    with pytest.raises(OSError):  # callers that catch OSError (cmdop-tui mcp trust) say why
        fingerprint([project / "big.py"], [project])
