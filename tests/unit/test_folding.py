"""Lines folded without cutting words: a hanging indent under a table's second column, paths
broken after a slash."""

import re

from hypothesis import given
from hypothesis import strategies as st

from cmdop_tui.support.folding import fold, hang_of


def test_a_table_row_continues_under_its_second_column():
    line = "  Enter        send (while a turn runs: queue, sent when it ends)"
    rows = fold(line, 40)
    assert rows == ["  Enter        send (while a turn runs:", "               queue, sent when it ends)"]
    assert hang_of(line) == 15


def test_a_line_without_columns_continues_two_in_from_its_indent():
    assert fold("Custom commands: markdown files in the project and yours", 30) == [
        "Custom commands: markdown",
        "  files in the project and",
        "  yours",
    ]


def test_a_path_breaks_after_a_slash_not_inside_a_name():
    rows = fold("  stdio: /work/main/.tools/node/node_modules/.bin/mcp-server-filesystem /tmp", 30)
    assert rows == [
        "  stdio:",
        "    /work/main/.tools/node/",
        "    node_modules/.bin/",
        "    mcp-server-filesystem /tmp",
    ]


def test_a_line_that_fits_is_left_alone():
    assert fold("  a    b", 8) == ["  a    b"]


words = st.text(alphabet="abc/", min_size=1, max_size=30)


@given(st.lists(words, min_size=1, max_size=12), st.integers(min_value=14, max_value=80), st.integers(0, 6))
def test_folding_keeps_every_character_and_the_width(parts, width, indent):
    line = " " * indent + " ".join(parts)
    rows = fold(line, width)
    assert all(len(row) <= width for row in rows)
    assert re.sub(r"\s+", "", "".join(rows)) == re.sub(r"\s+", "", line)  # nothing lost, nothing added
    names = {name for part in parts for name in part.split("/") if name and len(name) < width - 10}
    shown = {name for row in rows for name in re.split(r"[\s/]+", row) if name}
    assert names <= shown  # a name that fits a row is never cut


def test_a_cell_is_cut_after_a_whole_word_and_says_so():
    from cmdop_tui.support.folding import fit_words

    assert fit_words("systemctl restart nginx", 30) == "systemctl restart nginx"
    assert fit_words("systemctl restart nginx", 12) == "systemctl …"
    assert fit_words("systemctl", 6) == "…"  # not even one word fits: none is shown cut
    assert fit_words("/etc/nginx/nginx.conf", 14) == "/etc/nginx/…"  # a path: after a slash
    assert all(len(fit_words("a bb ccc dddd eeeee", w)) <= w for w in range(0, 25))
