"""The sandbox's rules for one working directory, as data: what the file tools hold to.

Commands see the filesystem through bubblewrap's mounts (machines/bubblewrap.py); the file tools
run in the app's own process and must see the same world. A `SandboxView` says, for real paths
(symlinks resolved, by the kernel, on what was opened: see machines/beneath.py):

* `place(path)`: where a path a command would use really is (the session's private /tmp is a
  folder of the app's: `/tmp/x` in a command is `<private>/x` here);
* `hides(real)`: a secret the sandbox hides (credential stores by kind, the app's own files,
  `.env` files, SSH keys by name, whatever the settings add), never read, listed or searched;
* `may_write(real)`: inside a writable root, and not a protected path;
* `protects(real)`: read-only inside a writable root (`.git`, `.cmdop`, `CMDOP.md`, `AGENTS.md`,
  `.mcp.json`, `.envrc`, `.vscode`, what an MCP server runs from): written later, they run code
  outside the sandbox or speak to the next session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.support.secret_kinds import secret_name

__all__ = ["PROTECTED_NAMES", "SandboxView", "within"]

# Read-only at the top of every writable root; `.git` at any depth.
PROTECTED_NAMES = (".git", ".cmdop", "CMDOP.md", "AGENTS.md", ".mcp.json", ".envrc", ".vscode")
PROTECTED_ANYWHERE = (".git",)


def within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or below it (lexically: both should be real paths).

    Compared as strings where both are absolute: building a command's sandbox asks this some
    thousands of times, and walking `path.parents` cost 20 ms of the event loop per command."""
    if path.is_absolute() and root.is_absolute():
        top = str(root)
        return str(path).startswith(top if top.endswith("/") else top + "/") or path == root
    return path == root or root in path.parents


@dataclass(frozen=True)
class SandboxView:
    """The rules (all paths real and absolute). `confines` False: no rule holds (sandbox off)."""

    confines: bool = False
    writable: tuple[Path, ...] = ()  # where commands may write
    private: tuple[tuple[Path, Path], ...] = ()  # (as commands see it, where it is): /tmp -> a folder of ours
    hidden: tuple[Path, ...] = ()  # hidden whole: files and folders
    exempt: tuple[Path, ...] = ()  # inside a hidden folder yet visible: the private folders, a scratch workspace
    protected: tuple[Path, ...] = ()  # read-only inside the writable roots, besides PROTECTED_NAMES
    shared: tuple[Path, ...] = ()  # where a private folder is seen, the host's own (a home under /tmp)

    def place(self, path: Path) -> Path:
        """Where `path` (absolute, as a command would write it) is for this process."""
        private = {real for _, real in self.private}
        if any(within(path, root) for root in (*self.writable, *self.shared) if root not in private):
            return path  # a workspace (or a home) under /tmp is bound there as itself
        for seen, real in self.private:
            if within(path, seen):
                return real / path.relative_to(seen)
        return path

    def hides(self, real: Path, *, is_file: bool = True) -> bool:
        """Whether the sandbox hides `real` (`is_file`: a file, where a name alone makes a secret).
        The innermost of the hidden and exempt paths over it decides, as the mounts stack."""
        if not self.confines:
            return False
        if is_file and secret_name(real.name):
            return True
        over = [(len(path.parts), True) for path in self.hidden if within(real, path)]
        over += [(len(path.parts), False) for path in self.exempt if within(real, path)]
        return max(over)[1] if over else False

    def root_of(self, real: Path) -> Path | None:
        """The writable root `real` is in (the innermost), or None."""
        roots = [root for root in self.writable if within(real, root)]
        return max(roots, key=lambda root: len(root.parts)) if roots else None

    def protects(self, real: Path) -> bool:
        """Whether `real` is read-only though it is inside a writable root."""
        root = self.root_of(real)
        if not self.confines or root is None:
            return False
        parts = real.relative_to(root).parts
        if parts and parts[0] in PROTECTED_NAMES:
            return True
        if any(part in PROTECTED_ANYWHERE for part in parts):
            return True
        return any(within(real, path) for path in self.protected)

    def may_write(self, real: Path) -> bool:
        """Whether a command could write `real` here."""
        if not self.confines:
            return True
        return self.root_of(real) is not None and not self.protects(real) and not self.hides(real)

    def writable_text(self) -> str:
        """The writable places as a person reads them (the private ones as commands see them)."""
        shown = {real: seen for seen, real in self.private}
        return ", ".join(str(shown.get(root, root)) for root in self.writable)
