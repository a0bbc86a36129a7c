"""Themes: the built-in TOML files, user themes, validation, 256-colour contrast, registration."""

from __future__ import annotations

import itertools
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from rich.color import Color as RichColor
from rich.color import ColorSystem
from textual.app import App, ComposeResult
from textual.color import Color as TextualColor
from textual.theme import Theme
from textual.widgets import Footer, Static

from cmdop_tui.tui.themes import (
    COLOR_KEYS,
    DEFAULT_THEME,
    ThemeError,
    builtin_theme_files,
    builtin_themes_dir,
    load_theme_file,
    load_themes,
    register_themes,
)

ROOT = Path(__file__).resolve().parents[2]
BUILTIN_NAMES = {"cmdop-dark", "cmdop-light", "cmdop-high-contrast", "cmdop-amber"}


def builtin_themes() -> list[Theme]:
    return [load_theme_file(path) for path in builtin_theme_files()]


# --- the built-in files -----------------------------------------------------------------------


def test_every_builtin_theme_loads_and_is_complete():
    files = builtin_theme_files()
    assert {f.name.removesuffix(".toml") for f in files} >= BUILTIN_NAMES
    for path in files:
        theme = load_theme_file(path)
        assert theme.name == path.name.removesuffix(".toml")
        for key in COLOR_KEYS:
            if key != "boost":
                assert getattr(theme, key), f"{path.name} lacks {key}"
        lines = path.read_text(encoding="utf-8").splitlines()
        header = "\n".join(itertools.takewhile(lambda line: line.startswith("#"), lines))
        for documented in ("name =", "dark =", "primary =", "[variables]"):
            assert documented in header, f"{path.name}: the format comment lacks {documented}"
    assert DEFAULT_THEME in {theme.name for theme in builtin_themes()}


def test_builtin_theme_specifics():
    themes = {theme.name: theme for theme in builtin_themes()}
    assert themes["cmdop-dark"].dark and not themes["cmdop-light"].dark
    high = themes["cmdop-high-contrast"]
    assert (high.background, high.foreground) == ("#000000", "#ffffff")
    assert (high.primary, high.accent) == ("#ffff00", "#00ffff")
    amber = themes["cmdop-amber"]
    assert amber.background == "#000000" and amber.foreground == "#ffaf00"


def test_builtins_are_read_through_the_installed_package():
    # pyproject maps themes/ to cmdop_tui.themes; with the (editable) install that must resolve.
    assert Path(str(resources.files("cmdop_tui.themes"))).resolve() == (ROOT / "themes").resolve()
    assert Path(str(builtin_themes_dir())).resolve() == (ROOT / "themes").resolve()


def test_load_themes_without_user_dir_gives_the_builtins(tmp_path):
    themes, problems = load_themes(tmp_path / "does-not-exist")
    assert problems == []
    names = [t.name for t in themes]
    assert names[0] == DEFAULT_THEME
    assert sorted(names) == sorted(t.name for t in builtin_themes())


# --- readable in a 256-colour terminal --------------------------------------------------------


def quantised(color: str) -> tuple[int, tuple[int, int, int]]:
    """The xterm-256 palette number and RGB a truecolor value becomes in a 256-colour terminal."""
    downgraded = RichColor.parse(color).downgrade(ColorSystem.EIGHT_BIT)
    triplet = downgraded.get_truecolor()
    return downgraded.number, (triplet.red, triplet.green, triplet.blue)


def luminance(rgb: tuple[int, int, int]) -> float:
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio, 1 to 21."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_helper():
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21)
    assert contrast((119, 119, 119), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)
    assert quantised("#1d1f23") == (234, (0x1C, 0x1C, 0x1C))  # greys go to the grey ramp
    assert quantised("#242832")[0] == 17  # but a slightly saturated dark blue becomes navy


@pytest.mark.parametrize("path", builtin_theme_files(), ids=lambda p: p.name)
def test_readable_after_quantising_to_256_colours(path):
    theme = load_theme_file(path)
    bg = quantised(theme.background)[1]
    failures = []
    for key in ("background", "surface", "panel"):
        ratio = contrast(quantised(theme.foreground)[1], quantised(getattr(theme, key))[1])
        if ratio < 4.5:
            failures.append(f"foreground on {key}: {ratio:.2f} < 4.5")
    for key in ("primary", "secondary", "accent", "error", "warning", "success"):
        ratio = contrast(quantised(getattr(theme, key))[1], bg)
        if ratio < 3:
            failures.append(f"{key} on background: {ratio:.2f} < 3")
    assert not failures, f"{path.name}: {failures}"


@pytest.mark.parametrize("path", builtin_theme_files(), ids=lambda p: p.name)
def test_colours_stay_distinct_after_quantising(path):
    theme = load_theme_file(path)
    semantic = {key: quantised(getattr(theme, key))[0] for key in ("primary", "error", "warning", "success")}
    for (k1, n1), (k2, n2) in itertools.combinations(semantic.items(), 2):
        assert n1 != n2, f"{path.name}: {k1} and {k2} are both xterm colour {n1}"
    # Panels (footer, header) must stand out from the background.
    assert quantised(theme.panel)[0] != quantised(theme.background)[0], path.name


# --- user themes ------------------------------------------------------------------------------


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_theme_overrides_a_builtin_and_adds_new_ones(tmp_path):
    write(tmp_path, "dark.toml", 'name = "cmdop-dark"\nprimary = "#ff00ff"\n')
    write(
        tmp_path,
        "zz-mine.toml",
        'name = "mine"\ndark = false\nprimary = "rgb(10, 20, 30)"\n[variables]\n"footer-key-foreground" = "#123456"\n',
    )
    write(tmp_path, "notes.txt", "not a theme")
    themes, problems = load_themes(tmp_path)
    assert problems == []
    names = [t.name for t in themes]
    builtin_names = [t.name for t in load_themes(tmp_path / "none")[0]]
    assert names == builtin_names + ["mine"]
    by_name = {t.name: t for t in themes}
    assert by_name["cmdop-dark"].primary == "#ff00ff"
    assert by_name["mine"].dark is False
    assert by_name["mine"].variables == {"footer-key-foreground": "#123456"}


BROKEN = {
    "bad-toml.toml": ('name = "x"\nprimary = "#ffffff"\nsecondary = #00ff00\n', ["line 3", "invalid TOML"]),
    "bad-colour.toml": ('name = "x"\nprimary = "#ggg"\n', ["primary", "'#ggg'", "not a colour"]),
    "unknown-key.toml": ('name = "x"\nprimary = "#fff"\nprimry = "#000"\n', ["unknown key primry"]),
    "no-name.toml": ('primary = "#fff"\n', ["missing required key 'name'"]),
    "name-not-str.toml": ('name = 3\nprimary = "#fff"\n', ["name must be a non-empty string"]),
    "dark-not-bool.toml": ('name = "x"\ndark = "yes"\nprimary = "#fff"\n', ["dark must be true or false"]),
    "bad-variable.toml": ('name = "x"\nprimary = "#fff"\n[variables]\nborder = 5\n', ["variables.border"]),
    "colour-not-str.toml": ('name = "x"\nprimary = 0xffffff\n', ["primary must be a colour string"]),
    "not-utf8.toml": (b'name = "\xff"\n', ["not UTF-8"]),
}


@pytest.mark.parametrize("file_name", sorted(BROKEN))
def test_broken_user_file_is_a_problem_not_an_exception(tmp_path, file_name):
    content, fragments = BROKEN[file_name]
    path = tmp_path / file_name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    write(tmp_path, "good.toml", 'name = "good"\nprimary = "#00ff00"\n')
    themes, problems = load_themes(tmp_path)
    assert [t.name for t in themes][-1] == "good"
    assert len(problems) == 1, problems
    assert str(path) in problems[0]
    for fragment in fragments:
        assert fragment in problems[0]
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert str(path) in str(info.value)


def test_toml_syntax_error_carries_the_line(tmp_path):
    path = write(tmp_path, "t.toml", 'name = "x"\n\nprimary = "#fff"\nsecondary = [\n')
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert info.value.line == 4
    assert str(info.value).startswith(f"{path}, line 4: invalid TOML")


def test_user_dir_problems(tmp_path):
    not_a_dir = write(tmp_path, "themes", "")
    themes, problems = load_themes(not_a_dir)
    assert {t.name for t in themes} == {t.name for t in builtin_themes()}
    assert problems and str(not_a_dir) in problems[0]

    folder = tmp_path / "dup"
    write(folder, "a.toml", 'name = "twin"\nprimary = "#111111"\n')
    write(folder, "b.toml", 'name = "twin"\nprimary = "#222222"\n')
    themes, problems = load_themes(folder)
    assert {t.name: t for t in themes}["twin"].primary == "#222222"
    assert len(problems) == 1 and "twin" in problems[0] and "b.toml" in problems[0]


# --- registration in a real app ---------------------------------------------------------------


class ThemedApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello")
        yield Footer()


async def test_register_and_switch_to_every_theme(tmp_path):
    write(tmp_path, "mine.toml", 'name = "mine"\nprimary = "#00afaf"\n')
    themes, problems = load_themes(tmp_path)
    assert problems == []
    app = ThemedApp()
    register_themes(app, themes)
    async with app.run_test() as pilot:
        for theme in themes:
            app.theme = theme.name
            await pilot.pause()
            assert app.theme == theme.name
            assert app.current_theme is theme
            # Textual round-trips colours through HSL, so allow a step of rounding per channel.
            applied = TextualColor.parse(app.get_css_variables()["primary"]).rgb
            wanted = TextualColor.parse(theme.primary).rgb
            assert max(abs(a - b) for a, b in zip(applied, wanted, strict=True)) <= 2, (theme.name, applied, wanted)
        app.theme = DEFAULT_THEME
        await pilot.pause()
        assert app.current_theme.name == DEFAULT_THEME


# --- packaging --------------------------------------------------------------------------------


def test_pyproject_lists_every_package_and_ships_the_themes():
    """`[tool.setuptools] packages` is an explicit list (find cannot add `themes/` as
    cmdop_tui.themes), so a sub-package missing from it would silently be left out of the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {
        ".".join(folder.relative_to(ROOT).parts)
        for folder in [ROOT / "cmdop_tui", *(ROOT / "cmdop_tui").rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py"))
    }
    missing = sorted(on_disk - listed - {"cmdop_tui.themes"})
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    assert config["package-dir"]["cmdop_tui.themes"] == "themes"
    assert "cmdop_tui.themes" in listed
    assert "*.toml" in config["package-data"]["cmdop_tui.themes"]
    stale = sorted(p for p in listed - {"cmdop_tui.themes"} if not (ROOT / p.replace(".", "/")).is_dir())
    assert not stale, f"{stale} listed in pyproject.toml but missing on disk"
