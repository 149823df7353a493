"""Text from a visitor is shown as text everywhere: a run whose every string is a payload draws no element of it.

The payload holds a link, an image, a heading, a script and a quote that would end an attribute, each
marked `pwned`. Every panel at every step, the summary, the offline export and the PNG slide of such
a run, and the app's notes that quote a visitor's value, are parsed as HTML: no element or attribute
of the payload's making may appear. The same check must catch the payload written unescaped.
"""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser

import pytest

from visuals import export, library, replay
from visuals.summary import model_html, notice_html, preset_note, summary_html

PAYLOAD = (
    '<a class="pwned" href="https://evil.example/login">Lab closed, log in again here</a>'
    '<img class="pwned" src="https://evil.example/pixel.png"><h1 class="pwned" style="font-size:80px">BIG</h1>'
    '<script class="pwned">window.pwned = 1</script>\' onfocus=\'pwned()\' " onmouseover="pwned()" data-x="'
)


class Elements(HTMLParser):
    """Every start tag's name and attributes, as a browser's parser would read them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def payload_elements(html: str) -> list[tuple[str, dict]]:
    """The elements and attributes of the payload's making in `html` (none, when it was escaped)."""
    parser = Elements()
    parser.feed(html)
    return [
        (tag, attrs)
        for tag, attrs in parser.tags
        if "pwned" in (attrs.get("class") or "")
        or "onmouseover" in attrs
        or "evil.example" in str(attrs.get("src"))
        or "evil.example" in str(attrs.get("href"))
    ]


def poisoned(record):
    """`record` (a dataclass tree) with PAYLOAD before every plain string in it: texts, token texts, names."""
    if dataclasses.is_dataclass(record):
        changes = {f.name: poisoned(getattr(record, f.name)) for f in dataclasses.fields(record)}
        return dataclasses.replace(record, **changes)
    if type(record) is str:  # an enum's value is a str too, and must stay what it is
        return PAYLOAD + record
    if isinstance(record, list):
        return [poisoned(item) for item in record]
    if isinstance(record, dict):
        return {key: poisoned(value) for key, value in record.items()}
    return record


@pytest.fixture(scope="module", params=["python", "story-sampled", "study-tips-speculative", "spelling-lookup"])
def run(request):
    presets = library.load_presets()
    return poisoned(library.load_run(library.example_path(library.preset(presets, request.param))))


def test_the_payload_is_in_every_text_of_the_run(run):
    assert run.trace.meta.prompt_text.startswith(PAYLOAD) and run.trace.meta.machine.model.startswith(PAYLOAD)
    assert all(text.startswith(PAYLOAD) for text in run.trace.vocab.values())


def test_every_panel_at_every_step_shows_the_payload_as_text(run):
    for index in range(len(run.trace.steps)):
        for name, html in replay.panels(run, index).items():
            assert not payload_elements(html), (index, name)
            assert replay.UNDRAWABLE not in html, (index, name)
    shown = replay.panels(run, len(run.trace.steps) - 1)
    assert "&lt;script" in shown["output"] and "&lt;img" in shown["output"]  # shown, as text


def test_the_summary_model_line_export_and_slide_show_the_payload_as_text(run):
    for html in (
        summary_html(run),
        model_html(run.trace.meta.machine, PAYLOAD),
        export.standalone_html(run, 1),
        export.slide_html(run, 1),
    ):
        assert not payload_elements(html)


def test_the_notes_that_quote_a_visitor_show_the_payload_as_text():
    for html in (preset_note(f"No preset is called {PAYLOAD!r}"), notice_html(PAYLOAD, PAYLOAD)):
        assert not payload_elements(html) and "&lt;script" in html


def test_negative_control_the_check_catches_the_payload_unescaped():
    assert {tag for tag, _ in payload_elements(f"<p>{PAYLOAD}</p>")} == {"a", "img", "h1", "script"}
    assert payload_elements(f'<span title="{PAYLOAD[PAYLOAD.index(chr(34) + " on") :]}">x</span>')  # attribute ended
