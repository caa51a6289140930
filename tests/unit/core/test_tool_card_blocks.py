"""A tool card's content blocks: each a closed <details> whose summary says what it holds and how
long it is; a short one is marked to open on a wide screen, a long one stays closed everywhere."""

from __future__ import annotations

from sessions_app.templatetags.tools import SHORT_BLOCK_LINES, tool_block


def text_block(text: str) -> dict:
    return {"type": "text", "text": text, "omitted_bytes": 0}


def rendered(block: dict, kind: str = "execute") -> str:
    return str(tool_block(block, kind=kind, row_id=7, index=2))


def test_output_ending_in_a_newline_counts_the_lines_a_terminal_shows():
    assert "(1 line)" in rendered(text_block("command not found\n"))
    assert "(2 lines)" in rendered(text_block("one\ntwo"))
    assert "(2 lines)" in rendered(text_block("one\ntwo\n"))
    assert "(0 lines)" in rendered(text_block(""))


def test_a_short_block_opens_on_a_wide_screen_and_a_long_one_does_not():
    short = rendered(text_block("line\n" * SHORT_BLOCK_LINES))
    long = rendered(text_block("line\n" * (SHORT_BLOCK_LINES + 1)))

    assert short.startswith(
        '<details class="tool-block tool-block--text" id="msg-7-block-2" '
        f'data-lines="{SHORT_BLOCK_LINES}" data-open-wide>'
    )
    assert "data-open-wide" not in long
    # Closed in the HTML either way: a phone, and a page without script, start closed.
    assert " open" not in short.split(">", 1)[0] and " open" not in long.split(">", 1)[0]


def test_a_diff_says_its_file_its_counts_and_its_length():
    patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-old\n+new\n"
    block = {"type": "diff", "path": "/workspace/a.py", "patch": patch, "added": 1, "removed": 1}

    html = rendered(block, kind="edit")

    assert (
        '<summary><code>/workspace/a.py</code> <span class="diff-added">+1</span> '
        '<span class="diff-removed">\N{MINUS SIGN}1</span> '
        '<span class="tool-lines">(6 lines)</span></summary>'
    ) in html
    assert '<span class="gi">+new</span>' in html and "data-open-wide" in html


def test_other_output_is_plain_text_without_its_escape_codes():
    html = rendered(text_block("\x1b[31m<b>red</b>\x1b[0m\n"), kind="read")

    assert "Output <span" in html
    assert '<pre class="tool-text" tabindex="0">&lt;b&gt;red&lt;/b&gt;\n</pre>' in html
