"""The shared diff renderer: git-style patches from two texts (new, deleted, modified files),
counted per file, rendered with classes only and inert whatever the diffed text holds."""

from __future__ import annotations

from html.parser import HTMLParser

from sessions_app.diffs import MAX_DIFF_LINES, FileStat, diff_html, diff_stats, unified_diff

HOSTILE = (
    '<script>alert(1)</script>\n"><img src=x onerror=alert(2)>\n<a href="javascript:x">l</a>\n'
)


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html)
    return parser.found


def test_a_modified_file_has_git_headers_and_hunks():
    patch = unified_diff(path="src/greet.py", old="a\nb\nc\n", new="a\nB\nc\n")

    assert patch == (
        "diff --git a/src/greet.py b/src/greet.py\n"
        "--- a/src/greet.py\n+++ b/src/greet.py\n"
        "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    )
    assert diff_stats(patch) == [FileStat(path="src/greet.py", added=1, removed=1)]


def test_a_new_file_comes_from_dev_null_and_a_deleted_one_goes_there():
    created = unified_diff(path="/w/new.txt", old="", new="one\ntwo\n")
    deleted = unified_diff(path="gone.txt", old="bye\n", new="")

    assert "new file mode 100644\n--- /dev/null\n+++ b/w/new.txt\n@@ -0,0 +1,2 @@\n" in created
    assert (
        "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" in deleted
    )
    assert diff_stats(created) == [FileStat(path="w/new.txt", added=2, removed=0)]
    assert diff_stats(deleted) == [FileStat(path="gone.txt", added=0, removed=1)]


def test_equal_texts_make_no_patch_and_a_missing_final_newline_is_marked():
    assert unified_diff(path="x", old="same\n", new="same\n") == ""
    assert unified_diff(path="x", old="a\n", new="a\nb").endswith(
        "+b\n\\ No newline at end of file\n"
    )


def test_removed_lines_that_look_like_headers_are_counted_as_lines():
    patch = unified_diff(path="x.md", old="-- a\n++ b\n", new="")

    assert diff_stats(patch) == [FileStat(path="x.md", added=0, removed=2)]


def test_stats_read_several_files_of_a_git_patch():
    patch = unified_diff(path="a", old="1\n", new="2\n") + unified_diff(path="b", old="", new="x\n")

    assert diff_stats(patch) == [FileStat("a", 1, 1), FileStat("b", 1, 0)]


def test_a_diff_renders_as_classed_lines_without_inline_styles():
    html = diff_html(unified_diff(path="a.py", old="x = 1\n", new="x = 2\n"))

    assert '<span class="gd">-x = 1</span>' in html
    assert '<span class="gi">+x = 2</span>' in html
    assert "style" not in html
    tags = {tag for tag, _ in elements(html)}
    assert tags <= {"pre", "code", "span"}


def test_a_diff_of_hostile_text_and_a_hostile_path_renders_inert():
    patch = unified_diff(path='"><img src=x onerror=alert(3)>.py', old="", new=HOSTILE)

    html = diff_html(patch)

    for tag, attrs in elements(html):
        assert tag in {"pre", "code", "span"}
        assert not any(name.startswith("on") or name in ("href", "src", "style") for name in attrs)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html and "<img" not in html


def test_a_patch_that_is_raw_html_is_still_only_text():
    html = diff_html('<script>alert(1)</script><img src=x onerror=alert(2)>\n+<b onclick="x">\n')

    assert all(tag in {"pre", "code", "span"} for tag, _ in elements(html))
    assert all(set(attrs) <= {"class", "tabindex"} for _, attrs in elements(html))
    assert "&lt;b onclick" in html


def test_a_long_diff_shows_its_first_lines_then_how_many_more():
    patch = unified_diff(path="big", old="", new="".join(f"{n}\n" for n in range(1000)))

    html = diff_html(patch)

    total = patch.count("\n")
    assert f'<p class="diff-more">{total - MAX_DIFF_LINES} more lines</p>' in html
    text = html.replace('<span class="gi">', "").replace("</span>", "")
    assert "+394\n" in text  # the 400th line (5 of the patch's lines are headers)
    assert "+395" not in text
