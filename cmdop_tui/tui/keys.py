"""The app's keys, and the table of keys /help shows, read from the bindings themselves.

Every key is declared once, as a Textual `Binding`: the app's here (`APP_BINDINGS`), the
prompt's on the prompt, a panel's on its widget. A binding's `tooltip` is its line in /help (a
binding without one, such as the prompt's cursor keys Textual declares, is not listed); so a key
changed or added where it is bound changes /help with it.

/help shows two tables:
* at the prompt: the bindings along the prompt's chain (the prompt, the screen, the app), in the
  order Textual tries them, one line per action;
* in the chat and the panels (Tab goes there): the bindings our widgets declare, found among the
  widget classes of `cmdop_tui.tui.widgets`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from typing import Any

from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.widget import Widget

from cmdop_tui.tui import widgets
from cmdop_tui.tui.widgets.prompt_input import PromptInput

APP_BINDINGS: list[BindingType] = [
    Binding(
        "escape",
        "stop",
        "Stop",
        tooltip="stop the turn; else to the prompt; twice: /rewind",  # the pair: widgets/prompt_input.py
    ),
    Binding("ctrl+c", "interrupt", "Stop", show=False, tooltip="stop the turn (with text selected: copy it)"),
    Binding("f2", "toggle_tools", "Tools", tooltip="show or hide the tool-activity panel"),
    Binding("f3", "toggle_machines", "Machines", tooltip="show or hide the machines panel"),
    Binding("f4", "copy_reply", "Copy reply", tooltip="copy the last reply (or the tool's, in its panel)"),
    Binding("ctrl+q", "request_quit", "Quit", priority=True, tooltip="quit (asks first when messages are queued)"),
    Binding("ctrl+l", "redraw", "Redraw", show=False, tooltip="redraw the screen"),
]
WIDGETS_PACKAGE = "cmdop_tui.tui.widgets."
NAMED_KEYS = {"escape": "Esc", "pageup": "PageUp", "pagedown": "PageDown", "backspace": "Backspace"}

KeyLine = tuple[str, str]  # the keys as shown, what they do


def key_name(key: str) -> str:
    """`ctrl+shift+k` as `Ctrl+Shift+K`, `escape` as `Esc`, `pageup` as `PageUp`."""
    return "+".join(NAMED_KEYS.get(part, part.upper() if len(part) == 1 else part.title()) for part in key.split("+"))


def _lines(bindings: Iterable[Binding]) -> Iterator[KeyLine]:
    """One line per described action, its keys together (`Shift+Enter / Ctrl+J`)."""
    keys: dict[tuple[str, str], list[str]] = {}
    for binding in bindings:
        if binding.tooltip:
            keys.setdefault((binding.action, binding.tooltip), []).append(key_name(binding.key))
    for (_action, tooltip), names in keys.items():
        yield " / ".join(dict.fromkeys(names)), tooltip


def _chain_bindings(chain: Iterable[DOMNode]) -> Iterator[Binding]:
    """The described bindings along `chain` (the focused widget first), from the widget up. Of
    two for one key, the one Textual tries first: a priority binding (from the app down), else
    the nearest to the widget. (An undescribed one may come first and pass the key on: the
    prompt's copy, with no text selected, leaves ctrl+c to the app.)"""
    nodes = list(chain)
    bound = [binding for node in nodes for _key, binding in node._bindings if binding.tooltip]
    first: dict[str, Binding] = {}
    for binding in [b for b in reversed(bound) if b.priority] + [b for b in bound if not b.priority]:
        first.setdefault(binding.key, binding)
    return (binding for binding in bound if first[binding.key] is binding)


def prompt_keys(prompt: PromptInput) -> list[KeyLine]:
    """The keys at the prompt (its own, the screen's and the app's)."""
    return list(_lines(_chain_bindings(prompt.ancestors_with_self)))


def _widget_classes(base: type[Widget] = Widget) -> Iterator[type[Widget]]:
    for cls in base.__subclasses__():
        if cls.__module__.startswith(WIDGETS_PACKAGE) and cls is not PromptInput:
            yield cls
        yield from _widget_classes(cls)


def panel_keys() -> list[KeyLine]:
    """The keys our widgets in the chat and the panels bind, each line once: every widget's,
    also of those a session has not shown yet (a tool call's, a reply's load with the first)."""
    for module in pkgutil.iter_modules(widgets.__path__, WIDGETS_PACKAGE):
        importlib.import_module(module.name)
    classes = sorted(set(_widget_classes()), key=lambda cls: (cls.__module__, cls.__qualname__))
    bindings = [binding for cls in classes for binding in _declared(cls)]
    return list(dict.fromkeys(_lines(bindings)))


def _declared(cls: type[Any]) -> Iterator[Binding]:
    """The bindings `cls` itself declares (not those it inherits from Textual's widget)."""
    for binding in cls.__dict__.get("BINDINGS", []):
        yield from Binding.make_bindings([binding])


def key_tables(prompt: PromptInput) -> dict[str, list[KeyLine]]:
    """/help's tables of keys: at the prompt, and in the chat and the panels."""
    from cmdop_tui.tui.widgets.prompt_completion import ACCEPT_KEYS  # loaded by panel_keys anyway

    accept = " or ".join(key_name(key) for key in sorted(ACCEPT_KEYS, reverse=True))
    completion = ("/ or @", f"complete a command or file: {accept} takes it")
    return {
        "Keys at the prompt:": [completion, *prompt_keys(prompt)],
        "Keys in the chat and the panels (typing goes to the prompt):": panel_keys(),
    }
