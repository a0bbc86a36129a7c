"""Rich's Markdown, parsed by one parser for the whole app, and imported on first use.

Rich builds a new markdown-it parser for every `Markdown` it makes (its rules compiled anew),
which cost more than parsing the paragraph a streaming reply re-renders at each paint. The
parser here is built once, as Rich builds it. Rich's Markdown (with markdown-it and Pygments) is
imported when the first reply is rendered, not before the app's first paint.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")  # what rich.markdown.Markdown uses


@cache
def _template(code_theme: str) -> Markdown:
    from rich.markdown import Markdown

    return Markdown("", code_theme=code_theme)


def parsed_markdown(text: str, code_theme: str) -> Markdown:
    """`rich.markdown.Markdown(text, code_theme=code_theme)`, its text parsed by the shared parser."""
    markdown = copy.copy(_template(code_theme))
    markdown.markup = text
    markdown.parsed = _parser().parse(text)
    return markdown
