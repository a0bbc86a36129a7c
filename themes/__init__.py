"""Built-in Textual themes for cmdop-tui, one TOML file per theme.

This folder sits at the top of the repository but is packaged as ``cmdop_tui.themes`` (see
``package-dir`` in pyproject.toml), so ``importlib.resources.files("cmdop_tui.themes")`` finds the
files in a wheel install and in an editable install alike. The loader is ``cmdop_tui.tui.themes``;
the file format is described at the top of every ``*.toml`` file here.
"""
