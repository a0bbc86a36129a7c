"""Textual themes from TOML files: the built-in ones in the top-level ``themes/`` folder, user ones
in ``<config dir>/themes``.

The built-in folder is packaged as ``cmdop_tui.themes`` (pyproject.toml maps it with
``package-dir``), so it is read with :mod:`importlib.resources` both from a wheel install and from
an editable install. A broken built-in theme is a bug and raises :class:`ThemeError`; a broken user
theme is reported as a problem string and skipped, so it never stops the app.

File format (see the comment at the top of every built-in file)::

    name = "cmdop-dark"          # required
    dark = true                  # optional, default true
    primary = "#5fafff"          # required
    secondary = "..."            # optional: secondary, accent, foreground, background, surface,
                                 #   panel, success, warning, error, boost
    [variables]                  # optional Textual theme variables, string values
    "footer-key-foreground" = "#d7af5f"
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from importlib import import_module, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol

from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from cmdop_tui.config.choices import chosen_theme, save_theme

DEFAULT_THEME = "cmdop-dark"
BUILTIN_PACKAGE = "cmdop_tui.themes"

COLOR_KEYS: tuple[str, ...] = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "success",
    "warning",
    "error",
    "boost",
)
REQUIRED_KEYS: tuple[str, ...] = ("name", "primary")
KNOWN_KEYS: frozenset[str] = frozenset({"name", "dark", "variables", *COLOR_KEYS})

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


class ThemeError(Exception):
    """A theme file cannot be used. The message names the file (and the line, for TOML errors)."""

    def __init__(self, path: Path | Traversable | str, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class _ThemeHost(Protocol):
    def register_theme(self, theme: Theme) -> None: ...


def builtin_themes_dir() -> Traversable:
    """The folder holding the built-in theme files (``themes/`` in a source checkout): the
    package's own folder, as a wheel or an editable install has it; else (a zipped install)
    what importlib.resources finds, whose readers import zipfile, 2 ms of every start."""
    try:
        package = import_module(BUILTIN_PACKAGE)
    except ModuleNotFoundError:
        # Running straight from a source checkout that was never installed (PYTHONPATH=.):
        # cmdop_tui.themes only exists through the package-dir mapping of an install.
        return Path(__file__).resolve().parents[2] / "themes"
    folder = Path(package.__file__).parent if package.__file__ else None
    return folder if folder is not None and folder.is_dir() else resources.files(BUILTIN_PACKAGE)


def builtin_theme_files() -> list[Traversable]:
    """The built-in ``*.toml`` theme files, sorted by file name."""
    folder = builtin_themes_dir()
    files = [f for f in folder.iterdir() if f.name.endswith(".toml") and f.is_file()]
    return sorted(files, key=lambda f: f.name)


def user_themes_dir() -> Path:
    """``<platformdirs config dir>/themes``: where users put their own theme files."""
    from cmdop_tui.config.settings import config_dir

    return config_dir() / "themes"


def _toml_error(path: Path | Traversable, text: str, exc: tomllib.TOMLDecodeError) -> ThemeError:
    """ThemeError for a TOML syntax error, with the line as its own field and in the message."""
    message = str(exc)
    line: int | None = None
    match = _TOML_POSITION.search(message)
    if match:
        line = int(match.group(1))
        message = f"{message[: match.start()]} (column {match.group(2)})"
    elif message.endswith("(at end of document)"):
        line = max(len(text.splitlines()), 1)
        message = message.removesuffix("(at end of document)").rstrip() + " (at end of file)"
    return ThemeError(path, f"invalid TOML: {message}", line=line)


def _check_color(path: Path | Traversable | str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeError(path, f'{key} must be a colour string like "#5fafff", not {value!r}')
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeError(path, f"{key} = {value!r} is not a colour: {exc}") from None
    return value


def theme_from_mapping(
    data: dict[str, Any], path: Path | Traversable | str = "<theme>", *, derive: bool = True
) -> Theme:
    """Validate parsed TOML ``data`` and build the Theme; errors name ``path``. With ``derive``,
    also derive the theme's shades now, as Textual does when the theme is used."""
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        allowed = ", ".join(sorted(KNOWN_KEYS))
        raise ThemeError(
            path, f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (allowed: {allowed})"
        )
    for key in REQUIRED_KEYS:
        if key not in data:
            raise ThemeError(path, f"missing required key {key!r}")
    name = data["name"]
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(path, f"name must be a non-empty string, not {name!r}")
    if name != name.strip() or "," in name:
        raise ThemeError(path, f"name {name!r} must not have surrounding spaces or commas")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(path, f"dark must be true or false, not {dark!r}")
    colors: dict[str, Any] = {key: _check_color(path, key, data[key]) for key in COLOR_KEYS if key in data}
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeError(path, "variables must be a table: [variables]")
    for key, value in variables.items():
        if not isinstance(value, str):
            raise ThemeError(path, f"variables.{key} must be a string, not {value!r}")
    theme = Theme(name=name, dark=dark, variables=dict(variables), **colors)
    if not derive:
        return theme
    try:
        # Textual derives all the shades here; anything it cannot use fails now, not at render.
        theme.to_color_system().generate()
    except Exception as exc:
        raise ThemeError(path, f"Textual cannot use this theme: {exc}") from None
    return theme


def load_theme_file(path: Path | Traversable, *, derive: bool = True) -> Theme:
    """Read and validate one theme file (see theme_from_mapping). Raises ThemeError naming the
    file (and line)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ThemeError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ThemeError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(path, text, exc) from None
    return theme_from_mapping(data, path, derive=derive)


def _user_theme_files(user_dir: Path, problems: list[str]) -> list[Path]:
    try:
        if not user_dir.exists():
            return []
        if not user_dir.is_dir():
            problems.append(f"{user_dir}: not a folder; no user themes loaded")
            return []
        return sorted(p for p in user_dir.iterdir() if p.suffix == ".toml" and not p.is_dir())
    except OSError as exc:
        problems.append(f"{user_dir}: cannot list user themes: {exc.strerror or exc}")
        return []


def load_themes(user_dir: Path | None = None) -> tuple[list[Theme], list[str]]:
    """All themes, built-ins first then user themes, and the problems with broken user files.

    ``user_dir`` defaults to :func:`user_themes_dir`. A user theme named like a built-in one
    replaces it (in the built-in's place). Broken user files are skipped and described in the
    returned problem list; a broken built-in file raises ThemeError (that is a bug).
    """
    themes: dict[str, Theme] = {}
    for path in builtin_theme_files():
        # Their shades are derived by the tests (test_themes.py), not at each start: a start
        # uses one theme, whose shades Textual derives anyway.
        theme = load_theme_file(path, derive=False)
        if theme.name in themes:
            raise ThemeError(path, f"duplicate built-in theme name {theme.name!r}")
        themes[theme.name] = theme
    # The default first, then the other built-ins by name (the order of a theme picker).
    themes = dict(sorted(themes.items(), key=lambda item: (item[0] != DEFAULT_THEME, item[0])))

    problems: list[str] = []
    seen: dict[str, Path] = {}
    for path in _user_theme_files(user_dir if user_dir is not None else user_themes_dir(), problems):
        try:
            theme = load_theme_file(path)
        except ThemeError as exc:
            problems.append(f"theme skipped: {exc}")
            continue
        if theme.name in seen:
            problems.append(f"theme {theme.name!r} is defined in both {seen[theme.name]} and {path}; using {path}")
        seen[theme.name] = path
        themes[theme.name] = theme
    return list(themes.values()), problems


def register_themes(app: _ThemeHost, themes: Iterable[Theme]) -> None:
    """Register every theme with a Textual App (an existing name is replaced)."""
    for theme in themes:
        app.register_theme(theme)


def apply_theme(app: App[Any], configured: str) -> list[str]:
    """Register the built-in and the user's themes with `app` and use the one last chosen in the
    app, else `configured` (the settings'), else the default; what went wrong, for the user."""
    themes, problems = load_themes()
    register_themes(app, themes)
    wanted = chosen_theme(configured)
    if wanted not in app.available_themes:
        wanted = configured  # a chosen theme whose file is gone
    if wanted in app.available_themes:
        app.theme = wanted
    else:
        app.theme = DEFAULT_THEME
        known = ", ".join(sorted(app.available_themes))
        problems.append(f"Unknown theme {wanted!r}; using {DEFAULT_THEME}. Themes: {known}")
    return problems


def keep_theme_choices(app: App[Any], configured: str) -> None:
    """From now on (the app running), a theme chosen in the palette is kept for the next launch
    (config/choices.py), tied to `configured`, the settings' theme it replaces."""
    in_effect = [app.theme]

    def chosen(theme: Theme) -> None:
        if theme.name != in_effect[0]:  # the palette's choice (not the first one, published late)
            in_effect[0] = theme.name
            save_theme(theme.name, configured)

    app.theme_changed_signal.subscribe(app, chosen)
