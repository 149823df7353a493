"""Where text enters HTML: every string the lab puts into a page goes through `escape` here.

A prompt, a run file's tokens and metadata, a URL parameter, a model name, an error message:
each is shown as text, never as markup. The panels, captions, notices, exports and the app's
toasts build their tags around what `escape` returns; no other module escapes on its own.
"""

from __future__ import annotations

import html


def escape(text: object) -> str:
    """`text` (anything, as str) with &, <, >, " and ' escaped: safe in element content and in quoted attributes."""
    return html.escape(str(text), quote=True)


def scroll_region(inner_html: str, label: str, css: str = "ll-scroll") -> str:
    """`inner_html` in a scrolling block (class `css`) that a keyboard can focus and scroll, named `label` for a
    screen reader (WCAG 2.1.1: a region that scrolls must be reachable without a mouse)."""
    return f'<div class="{css}" tabindex="0" role="region" aria-label="{escape(label)}">{inner_html}</div>'
