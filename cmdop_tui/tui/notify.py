"""Desktop notifications: when the app waits for the person (a turn ended, an approval or a
question waits, a long command finished) and its terminal is not focused, the terminal is asked
to tell the desktop.

How: OSC 9 (`ESC ] 9 ; text BEL`: iTerm2, WezTerm, Ghostty, kitty...) or OSC 777 (`ESC ] 777 ;
notify ; title ; body BEL`: VTE terminals such as GNOME Terminal, foot, urxvt), then the bell
(a terminal or tmux marks the window). Inside tmux an OSC is wrapped for passthrough (`ESC P
tmux; ... ESC \\`, each ESC doubled; tmux needs `allow-passthrough on`). Whether the terminal is
focused comes from focus reporting (`ESC [ ? 1004 h`, which Textual's driver turns on): the
terminal reports `ESC [ O` and `ESC [ I`, Textual's parser makes them `AppBlur` and `AppFocus`
and the app keeps `app_focus`. A terminal that does not report focus is always focused here:
nothing is sent. tmux passes focus reports on with `focus-events on`.

What goes into a sequence is inert: no control character (a model's text could otherwise end
the sequence and write its own), no `;` (it separates OSC 777's fields), bounded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from cmdop_tui.config.model import NotifyMethod, NotifySettings
from cmdop_tui.support.figures import duration

TITLE = "cmdop-tui"
BODY_CHARS = 160
ESC, BEL = "\x1b", "\x07"
# C0 controls, DEL and C1 controls (\x9c is a string terminator, \x9d an OSC in 8-bit form).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def inert(text: str, limit: int = BODY_CHARS) -> str:
    """`text` safe inside an OSC: control characters and `;` out, spaces collapsed, bounded."""
    flat = " ".join(_CONTROLS.sub(" ", text).replace(";", ",").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def osc_method(method: NotifyMethod, environ: Mapping[str, str]) -> NotifyMethod:
    """The escape `method` means here: `auto` is OSC 777 for the terminals known to read it
    (VTE, foot, urxvt) and OSC 9 elsewhere (unknown escapes are ignored by terminals)."""
    if method != "auto":
        return method
    term = environ.get("TERM", "")
    if environ.get("VTE_VERSION") or term.startswith("foot") or "rxvt" in term:
        return "osc777"
    return "osc9"


def for_tmux(sequence: str) -> str:
    """`sequence` wrapped so that tmux passes it to the terminal it runs in."""
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ESC}\\"


def notification(method: NotifyMethod, body: str, *, tmux: bool, title: str = TITLE) -> str:
    """The bytes that ask the terminal for one notification (`method` already resolved), and
    the bell."""
    title, body = inert(title, 40), inert(body)
    if method == "osc9":
        osc = f"{ESC}]9;{title}: {body}{BEL}"  # starts with a word: never ConEmu's `9;N` commands
    elif method == "osc777":
        osc = f"{ESC}]777;notify;{title};{body}{BEL}"
    else:
        return BEL
    return (for_tmux(osc) if tmux else osc) + BEL


class Notifier:
    """Tells the desktop of a moment that waits for the person, when the terminal is not focused.

    `write` takes raw terminal output (the app's driver); `focused` says whether the terminal
    has focus now. Each method returns whether it wrote.
    """

    def __init__(
        self,
        settings: NotifySettings,
        write: Callable[[str], None],
        focused: Callable[[], bool],
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.settings = settings
        self.write = write
        self.focused = focused
        self.method = osc_method(settings.method, environ)
        self.tmux = bool(environ.get("TMUX"))

    def tell(self, body: str) -> bool:
        """A notification saying `body`, if they are on and the terminal is not focused."""
        if not self.settings.enabled or self.focused():
            return False
        self.write(notification(self.method, body, tmux=self.tmux))
        return True

    def tool_finished(self, name: str, command: str | None, duration_s: float, failed: bool) -> bool:
        """A tool call ended: told when it ran at least `min_seconds`."""
        if duration_s < self.settings.min_seconds:
            return False
        what = f"`{inert(command, 80)}`" if command else name
        return self.tell(f"{what} {'failed' if failed else 'finished'} after {duration(duration_s)}")
