"""Token chips: whitespace made visible, and a token's text escaped where it enters the chip."""

from __future__ import annotations

from visuals import tokens


def test_whitespace_is_visible_and_text_is_escaped():
    assert tokens.visible(" a\n\tb") == "▁a⏎⇥b"
    assert tokens.visible("") == "∅"
    html = tokens.chip({"7": "<script>&\n"}, 7, "accepted", 'tip "quoted"')
    assert "<script>" not in html and "&lt;script&gt;&amp;⏎" in html
    assert 'title="id 7 · tip &quot;quoted&quot;"' in html
    assert tokens.chip({}, 99).count("[99]") == 1
