"""Terminal output as HTML: SGR colours become classes, every other escape goes, text is escaped,
and nasty input (markup, unterminated escapes, NUL, huge lines) cannot break out."""

from __future__ import annotations

from sessions_app.terminal import MAX_LINE_CHARS, MAX_TERMINAL_LINES, ansi_strip, terminal_html


def test_colours_and_weight_become_classes_and_reset_ends_them():
    html = terminal_html("\x1b[1;31mFAIL\x1b[0m plain \x1b[92mok\x1b[39m after")

    assert html == (
        '<span class="ansi-fg-1 ansi-bold">FAIL</span> plain '
        '<span class="ansi-fg-10">ok</span> after'
    )


def test_palette_colours_under_16_are_kept_and_others_and_true_colour_dropped():
    html = terminal_html("\x1b[38;5;4ma\x1b[38;5;200mb\x1b[0m\x1b[38;2;255;0;0mc\x1b[48;5;1md")

    assert html == (
        '<span class="ansi-fg-4">a</span><span class="ansi-fg-4">b</span>c'
        '<span class="ansi-bg-1">d</span>'
    )


def test_a_colour_carries_over_a_line_break_like_a_terminal():
    assert terminal_html("\x1b[33mone\ntwo") == (
        '<span class="ansi-fg-3">one</span>\n<span class="ansi-fg-3">two</span>'
    )


def test_cursor_moves_titles_links_and_other_escapes_are_dropped():
    raw = (
        "\x1b]0;evil title\x07\x1b[2J\x1b[H\x1b[?25l"
        "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b(B\x1b7text\x1bP1$r\x1b\\"
    )

    assert terminal_html(raw) == "link text"
    assert ansi_strip(raw) == "link text"


def test_markup_is_escaped_and_nothing_becomes_an_attribute():
    html = terminal_html('\x1b[31m<script>alert(1)</script>"><img src=x onerror=alert(2)>')

    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&quot;&gt;&lt;img" in html
    assert "style=" not in html


def test_an_unterminated_escape_swallows_nothing_after_its_line_and_nul_goes():
    html = terminal_html("before\x1b]0;title never ends\nnext\x00line \x1b[31")

    assert html == "before\nnextline "


def test_a_carriage_return_keeps_what_was_written_over_the_line():
    assert terminal_html("10%\r50%\r100%\r\ndone\r\n") == "100%\ndone\n"


def test_huge_output_is_cut_to_lines_and_line_length_with_a_note():
    html = terminal_html("x" * (MAX_LINE_CHARS * 3) + "\n" + "y\n" * (MAX_TERMINAL_LINES + 10))

    first = html.split("\n", 1)[0]
    assert first == "x" * MAX_LINE_CHARS + '<span class="ansi-more">…</span>'
    assert html.endswith('<span class="ansi-more">11 more lines</span>')
