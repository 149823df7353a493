"""The ZeroGPU contract, checked with the real `spaces` package as far as it goes off Hugging Face's servers.

Off a Space, `spaces.GPU` returns the function it decorates unchanged (its `Config.zero_gpu` reads
SPACES_ZERO_GPU, unset here), so these tests check our side of the contract: which functions are
decorated, what they take and return, that nothing else touches the model, and the slot sizes.
"""

from __future__ import annotations

import ast
import pickle
import sys
from pathlib import Path

import pytest
import spaces

import app
from lab.measure.timing import SHORTEST_ROUND
from lab.serve import server, space
from lab.serve.budget import Prices
from lab.serve.holding import Held
from lab.serve.requests import ModelRequest
from lookahead_core.config import LookaheadConfig
from lookahead_core.device import fixed
from lookahead_core.models import DEFAULT_MODEL
from lookahead_core.records import Method, Progress, RaceRecord, Run, StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import record_trace
from ui import player
from ui.presets import PRESETS, choose_preset
from ui.race import RACE_SLIDERS, race_model
from ui.run import run_model
from visuals.summary import summary_html

ROOT = Path(__file__).resolve().parent.parent
LOOKAHEAD = ("lookahead", 10, 4)  # the method for Run, prompt lookup's tokens, the draft's k


@pytest.fixture
def served(app_model, monkeypatch):
    """The app with the default model loaded (its first layers: tests.conftest.app_model); loading another model
    would be a bug, so it raises."""
    server.MODEL.put(app_model)

    def no_load(*_, **__):
        raise AssertionError("a model load inside GPU work although a model is loaded")

    monkeypatch.setattr(server, "load_model", no_load)
    return app_model


def test_the_real_spaces_package_is_a_no_op_off_a_space():
    assert app.spaces is spaces and not space.on_zero_gpu(spaces) and not server.ZERO_GPU

    def work(x):
        return x

    assert spaces.GPU(work, duration=lambda x: 5) is work  # off ZeroGPU the decorator changes nothing
    assert space.on_zero_gpu(None) is False


def test_spaces_is_imported_before_anything_else():
    """Nothing may touch CUDA before `import spaces`: it is the app's first import."""
    tree = ast.parse((ROOT / "app.py").read_text())
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom | ast.Try)]
    first = [n for n in imports if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")][0]
    assert isinstance(first, ast.Try) and first.body[0].names[0].name == "spaces"


def test_only_the_model_work_is_decorated():
    """A Run, a race and the tune card's sweep (lab.serve.tune_server.mapping): nothing else asks for a GPU."""
    assert [fn.__name__ for fn in server.GPU_WORK] == ["record", "timed_race", "mapping"]


def crossing(work, crossed: list):
    """`work` as ZeroGPU runs it, in a GPU worker of its own: its request and every item it yields pickled across
    (the visitor's store is pickled too; it has no equality to compare)."""

    def gpu_worker(request, *rest):
        assert pickle.loads(pickle.dumps(request)) == request
        pickle.dumps(rest)
        for item in work(request, *rest):
            assert pickle.loads(pickle.dumps(item)) == item
            crossed.append(item)
            yield item

    return gpu_worker


@pytest.mark.usefixtures("one_round")
def test_the_gpu_functions_are_the_only_model_work_and_what_crosses_pickles(served, monkeypatch):
    """Every forward pass happens inside record or timed_race; replay events make none. What crosses from the GPU
    worker on ZeroGPU (the request in, each Progress and the result out) pickles and reads back equal: a greedy
    Run's records, a sampled race's (every record kind a greedy race has, and the draws).

    The hook sits on the input embeddings, which every pass runs (the engine calls the model's base).
    """
    inside, outside, crossed = [], [], []

    def check(module, args):
        frame = sys._getframe()  # by hand: inspect.stack() reads each frame's source, ~30 ms a pass on the AMD CPU
        while frame is not None and frame.f_code.co_name not in ("record", "timed_race"):
            frame = frame.f_back
        (inside if frame is not None else outside).append(1)

    monkeypatch.setattr(server, "record", crossing(server.record, crossed))
    monkeypatch.setattr(server, "timed_race", crossing(server.timed_race, crossed))
    handle = served.model.get_input_embeddings().register_forward_pre_hook(check)
    try:
        page = app.PAGE
        request = ("def add(a, b):\n", False, 3, 3, 3, 6, False, *LOOKAHEAD, False, 0.8, 0, 0.95, 0)
        *_, result = run_model(page, *request)
        run = result[page.replay.run]
        player.step_forward(page, run, 0)
        player.scrub(page, run, 3)
        choose_preset(page, PRESETS[1]["id"])
        race = ("def add(a, b):\n", False, 3, 3, 3, 6, RACE_SLIDERS, 10, 4, True, 0.8, 0, 0.95, 3)
        assert isinstance(list(race_model(page, *race))[-1][page.race.result], RaceRecord)
    finally:
        handle.remove()
    assert inside and not outside
    results = [item[0] for item in crossed if isinstance(item, tuple)]
    assert [type(r) for r in results] == [Run, RaceRecord] and results[1].sampling is not None
    assert sum(isinstance(item, Progress) for item in crossed) >= 2 * 6


def asked(max_new_tokens: int, auto: bool = False, sampling: SamplingConfig = GREEDY) -> ModelRequest:
    """A checked request for `max_new_tokens` new tokens at W=N=G=3 on the default model."""
    decode = DecodeRequest(
        max_new_tokens=max_new_tokens, lookahead=LookaheadConfig(3, 3, 3), sampling=sampling, auto=auto
    )
    return ModelRequest(prompt="Say hi.", chat=True, decode=decode, model=DEFAULT_MODEL, dtype="auto")


def test_a_slot_grows_with_the_request_and_stays_bounded():
    short = server.slot(asked(8))
    long = server.slot(asked(space.MAX_NEW_TOKENS))
    assert space.SLOT_START <= short < long <= space.LONGEST_SLOT
    assert server.slot(asked(8, auto=True)) > server.slot(asked(8))
    assert server.slot(asked(10_000, auto=True)) == space.LONGEST_SLOT
    assert server.race_slot(asked(8)) > server.slot(asked(8))
    assert isinstance(short, int)


def test_on_zero_gpu_a_request_over_the_cap_is_refused(monkeypatch):
    monkeypatch.setattr(server, "CAP", space.MAX_NEW_TOKENS)
    request = ("Hi", False, 3, 3, 3, space.MAX_NEW_TOKENS + 1, False, *LOOKAHEAD, False, 0.8, 0, 0.95, 0)
    *_, result = run_model(app.PAGE, *request)
    note = result[app.PAGE.controls.notice]
    assert "at most 128 new tokens" in note and "Not run" in note


def test_the_readme_front_matter_names_real_versions():
    front = (ROOT / "README.md").read_text().split("---")[1]
    keys = dict(line.split(": ", 1) for line in front.strip().splitlines())
    import gradio

    assert keys["sdk"] == "gradio" and keys["sdk_version"] == gradio.__version__
    assert keys["python_version"].strip('"') in ("3.10", "3.12")
    assert len(keys["short_description"]) <= 60
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.11.0" in requirements and not any(line.startswith("spaces") for line in requirements)
    assert f"gradio=={gradio.__version__}" in requirements


def test_on_zero_gpu_the_servers_work_runs_eagerly_and_elsewhere_takes_the_devices_default(tiny_lm, monkeypatch):
    """ZeroGPU places the weights anew for each call, and a CUDA graph replays the addresses it recorded: the server's
    model is held in the eager step there (Held.mode, settled once and carried to its runtimes, aids and probes), and
    the engine's own default per device is left as it is (it was patched at import). On a device whose default is a
    fixed-shape step (the CPU stands in for CUDA here), a Run held so decodes eagerly, one held with the default in
    the fixed step."""
    assert space.step_mode(True) == StepMode.EAGER and space.step_mode(False) is None
    assert server.MODEL._mode is space.step_mode(server.ZERO_GPU) and fixed.DEFAULT_MODES == {
        "cuda": StepMode.CUDA_GRAPH
    }
    monkeypatch.setitem(fixed.DEFAULT_MODES, "cpu", StepMode.FIXED)
    for mode, ran in ((StepMode.EAGER, StepMode.EAGER), (None, StepMode.FIXED)):
        held = Held(tiny_lm, mode=mode)
        assert held.settled.mode == ran and held.aids.settled is held.settled
        runtime = held.runtime([Method.LOOKAHEAD])
        assert (runtime.mode, runtime.mode_note) == (ran, "")
        request = DecodeRequest(method=Method.LOOKAHEAD, lookahead=LookaheadConfig(3, 3, 3), max_new_tokens=4)
        assert record_trace(tiny_lm, [1, 2, 3], request, held.runtime([Method.LOOKAHEAD])).meta.mode == ran


@pytest.mark.heavy  # seconds: a Run of the default model
def test_a_run_too_long_for_its_rounds_at_the_latest_pace_decodes_what_fits_and_says_so(served, monkeypatch):
    """Beside two burners the default Run ran out of time in its first round and gave no verdict. Priced as such a
    machine (a 1-token step at 0.25 s), a Run of 96 tokens asks its decodings for the shortest round's 16, and the
    page says why (a request that fits decodes as asked: tests/test_budget.py; that the rounds then fit beside
    burners is measured, not tested: scripts/race_noise.py)."""
    monkeypatch.setattr(Prices, "step", lambda self, width: 0.25)
    *_, (busy, _) = server.record(asked(96))
    assert busy.trace.meta.max_new_tokens == SHORTEST_ROUND and busy.timing.asked_tokens == 96
    words = "the rounds of the 96 new tokens asked for would not have fitted in the time, so this Run decoded at most"
    assert f"{words} 16 of them" in summary_html(busy)
