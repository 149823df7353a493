"""The page in a real headless Chromium, opened on links that carry a payload (tests/test_markup.py's PAYLOAD):
each shows it as text, if at all, runs none of it and asks nothing of another address.

The app is classroom with no model, as in tests/browser/test_classroom.py: opening a link needs none. The rest of
the public lab under a visitor who means harm (fuzzed endpoints and run files) is tests/test_public.py.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit

import pytest

from scripts.serving import STEP_SHOWN, open_page
from tests.test_markup import PAYLOAD
from visuals import library

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

EVIL = 'a[href*="evil.example"], img[src*="evil.example"], .pwned, [onmouseover], [onfocus]'


def caption_says(text: str) -> str:
    return f"() => document.querySelector('#ll-preset-caption').innerText.includes({json.dumps(text)})"


OUTLINED = "() => document.querySelector('.ll-lit')"
NO_CLASS_SHOWN = "() => document.querySelector('#ll-class-status').innerText.startsWith('No class is open')"
PENCILS = library.preset(library.load_presets(), "pencils")["caption"][:60]
# Each link, and what the page shows once it has opened it (the payload, if shown at all, is drawn by then); each of
# the page's parameters carries it in one link at least (seven links until 2026-12-06: ?lesson= and ?class= alone too)
LINKS = [
    # the link's answer and, with it, step 0 of the page's preset, not the link's step 5 (the page shows step 0 before
    # its load event reads the link: a make test beside two CPU burners read the caption in between)
    ("?preset={payload}&step=5", f"() => ({caption_says('No preset is called')})() && ({STEP_SHOWN % 0})()"),
    ("?preset=pencils&step={payload}", caption_says(PENCILS)),  # not the default preset: its caption tells
    ("?run={payload}&step=2", caption_says("is no longer kept")),
    ("?preset={payload}&run={payload}&lesson={payload}", OUTLINED),  # lesson step 1, its panel outlined
    ("?class={payload}&key={payload}", NO_CLASS_SHOWN),
]


def test_links_that_carry_a_payload_show_it_as_text_and_ask_nothing_of_another_address(classroom, browser):
    asked: list[str] = []
    for number, (link, opened) in enumerate(LINKS, start=1):
        page, errors = open_page(browser, classroom + link.format(payload=quote(PAYLOAD)))
        page.on("request", lambda request: asked.append(request.url))
        page.wait_for_function(opened)
        assert page.locator(EVIL).count() == 0, link
        assert page.locator("h1").count() == 1 and not page.evaluate("window.pwned"), link
        assert not errors, link
        if number < len(LINKS):
            page.close()
    # the page's own requests carry its address's query (the payload) to this server: only the host counts
    assert not [url for url in asked if "evil.example" in urlsplit(url).netloc]
    # negative control, on the last link's page (a page opened for it alone cost 4 CPU-s of Chromium): the same
    # checks, the payload written unescaped
    page.evaluate("html => document.querySelector('#ll-preset-caption').innerHTML = html", PAYLOAD)
    assert page.locator(EVIL).count() >= 3 and page.locator("h1").count() == 2
    page.close()
