"""The live partials are written one element per line and render compact: {% squeeze %} takes
out the line breaks of the template's own text, never of the values it renders."""

from __future__ import annotations

from django.template import engines


def rendered(source: str, **context: object) -> str:
    template = engines["django"].from_string("{% load squeeze %}" + source)
    return template.render(context)


def test_line_breaks_between_elements_go_away():
    source = "{% squeeze %}\n<div>\n  <p>one</p>\n  <p>two</p>\n</div>\n{% endsqueeze %}"
    assert rendered(source) == "<div><p>one</p><p>two</p></div>"


def test_attributes_on_their_own_lines_are_one_space_apart():
    source = (
        '{% squeeze %}<button\n  type="button"\n  class="btn"\n  hx-swap="none">Go</button>'
        "{% endsqueeze %}"
    )
    assert rendered(source) == '<button type="button" class="btn" hx-swap="none">Go</button>'


def test_a_conditional_attribute_after_a_tag_on_its_own_line_keeps_its_space():
    source = (
        '{% squeeze %}<span{% if tagged %} id="x"{% endif %}\n'
        '  class="badge">b</span>{% endsqueeze %}'
    )
    assert rendered(source, tagged=True) == '<span id="x" class="badge">b</span>'
    assert rendered(source, tagged=False) == '<span class="badge">b</span>'


def test_wrapped_prose_keeps_one_space_between_its_words():
    source = (
        "{% squeeze %}<p>\n  Start fresh sends your\n  last message again.\n</p>{% endsqueeze %}"
    )
    assert rendered(source) == "<p>Start fresh sends your last message again.</p>"


def test_space_separates_two_inline_elements_on_their_own_lines():
    source = (
        "{% squeeze %}<b>Rate limited</b>\n{% space %}\n<i>Retrying in 0:30</i>{% endsqueeze %}"
    )
    assert rendered(source) == "<b>Rate limited</b> <i>Retrying in 0:30</i>"


def test_rendered_values_keep_every_line_break_and_indent():
    code = '<span class="k">def</span> f():\n    <span class="k">return</span> 1\n'
    source = "{% squeeze %}\n<pre>{{ code|safe }}</pre>\n<div>{{ text }}</div>\n{% endsqueeze %}"
    text = "first line\n   indented\n"
    assert rendered(source, code=code, text=text) == f"<pre>{code}</pre><div>{text}</div>"


def test_source_outside_a_squeeze_is_left_as_written():
    assert rendered("<p>\n  x\n</p>") == "<p>\n  x\n</p>"
