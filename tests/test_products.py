"""The engine's own products (lookahead_core.device.products): the engine runs a CPU model's passes on its own view
of it, where the float32 linear layers take their rows the way measured fastest on this machine
(lookahead_core.device.product_ways), the same values to float rounding. The model object is left as loaded (no forward
rebound, no attribute, no hook), so `generate` runs transformers' own kernel, and the view follows what is done
to the model. The choice itself is tested on injected timings, with no clock."""

from __future__ import annotations

import gc
import types
import weakref

import pytest
import torch
from torch import nn

from lookahead_core.config import LookaheadConfig
from lookahead_core.device import product_ways, products
from lookahead_core.device.product_ways import SIZES, WAYS, ProductTable, available_ways, measure_choice
from lookahead_core.device.products import EngineLinear, EngineView, engine_model, products_in_force
from lookahead_core.records import Method, StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import decode_steps, summarize

from .conftest import slow_but
from .test_engine_tiny_models import greedy_reference
from .tiny import tiny_model

GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks")
WAY_NAMES = [way.name for way in available_ways()]


def timings(winner: str, sizes=SIZES, lead: float = 0.5):
    """A timer standing in for the clock: `winner` takes `lead` of the others' seconds at every size."""

    def timer(layers, ways, sizes):
        return {way.name: [(lead if way.name == winner else 1.0) * size for size in sizes] for way in ways}

    return timer


def forced(model: nn.Module, way: str, monkeypatch) -> EngineView:
    """The engine's view of `model` taking `way` for every layer at every row count (as a machine where it timed
    fastest would), at the calling thread's count."""
    monkeypatch.setattr(product_ways, "SMALLEST_TIMED", 0)
    view = EngineView(model)
    view.tables[torch.get_num_threads()] = ProductTable(measure_choice(model, timings(way)))
    monkeypatch.setitem(products.VIEWS, model, view)  # undone after the test: the next one measures its own
    return view


@pytest.mark.parametrize("way", WAY_NAMES)
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 128, 129])
@pytest.mark.parametrize("bias", [True, False])
def test_the_engines_view_of_a_layer_takes_the_chosen_way_to_float_rounding(way, rows, bias, monkeypatch):
    torch.manual_seed(rows)
    layer = nn.Linear(48, 80, bias=bias)
    x = torch.randn(1, rows, 48)
    stock = nn.functional.linear(x, layer.weight, layer.bias)
    view = forced(layer, way, monkeypatch)
    view.current()
    assert type(view.model) is EngineLinear and vars(view.model) is vars(layer)  # the layer's own attributes, shared
    ours = view.model(x)
    taken = WAYS[way] if rows <= SIZES[-1] else WAYS["nn.Linear"]  # past the largest size: nn.Linear's
    with torch.inference_mode():  # as the view packs (product_ways.Bound): on the AMD EPYC a copy packed with grad
        packed = taken.pack(layer.weight) if taken.pack else None  # on took another kernel, 1.5e-7 away
    assert torch.equal(ours, taken.take(x[0], layer.weight, layer.bias, packed)[None])
    assert ours.shape == stock.shape and torch.allclose(ours, stock, rtol=1e-5, atol=1e-5)
    assert torch.equal(layer(x), stock)  # the layer itself: nn.Linear's own kernel, bit for bit


PANEL_WAYS = [way for way in product_ways.PANELS if way.name in WAY_NAMES]


@pytest.mark.parametrize("way", PANEL_WAYS, ids=lambda way: way.name)
@pytest.mark.parametrize("shape", [(17, 9), (33, 5), (40, 48), (576, 64)])
def test_the_panel_kernel_gives_nn_linears_product_for_any_rows_columns_and_bias(way, shape):
    """Row counts past one block of registers (up to 30 rows with one panel, 14 with two on AVX-512) and column
    counts that leave a panel, or a pair of panels, part full."""
    generator = torch.Generator().manual_seed(shape[0])
    weight, bias = torch.randn(*shape, generator=generator), torch.randn(shape[0], generator=generator)
    packed = way.pack(weight)
    for rows in (1, 2, 3, 6, 7, 14, 15, 16, 29, 30, 31, 45, 64, 100):
        x = torch.randn(rows, shape[1], generator=generator)
        for b in (None, bias):
            taken = way.take(x, weight, b, packed)
            assert torch.allclose(taken, nn.functional.linear(x, weight, b), rtol=1e-5, atol=1e-4), (rows, b is None)


def test_a_group_keeps_one_packed_copy_the_one_that_serves_it_best():
    """oneDNN's copy wins the small sizes by a little, the panels' copy the large ones by a lot: the group keeps the
    panels' copy alone, and where the panels lose, an unpacked way or nn.Linear."""
    half = len(SIZES) // 2
    seconds = {
        "nn.Linear": [1.0] * len(SIZES),
        "W @ x.T": [1.0] * half + [0.9] * (len(SIZES) - half),
        "oneDNN prepacked": [0.8] * half + [1.0] * (len(SIZES) - half),
        "panels of 16": [1.0] * half + [0.5] * (len(SIZES) - half),
    }
    assert product_ways.fastest(seconds, SIZES) == ["nn.Linear"] * half + ["panels of 16"] * (len(SIZES) - half)
    seconds["panels of 16"] = [1.0] * len(SIZES)  # the panels win nothing: oneDNN's copy, W @ x.T where it wins
    assert product_ways.fastest(seconds, SIZES) == ["oneDNN prepacked"] * half + ["W @ x.T"] * (len(SIZES) - half)


def test_without_a_compiler_the_panel_ways_are_not_offered(monkeypatch):
    from lookahead_core.device import panel_kernel

    monkeypatch.setattr(panel_kernel, "compiler", lambda: None)
    panel_kernel.panel_library.cache_clear()
    product_ways.available_ways.cache_clear()
    try:
        assert [way.name for way in available_ways()][:2] == ["nn.Linear", "W @ x.T"]
        assert not set(available_ways()) & set(product_ways.PANELS)
    finally:
        panel_kernel.panel_library.cache_clear()
        product_ways.available_ways.cache_clear()


def test_other_dtypes_keep_nn_linears_kernel_and_other_devices_the_model_itself():
    torch.manual_seed(0)
    cast = nn.Linear(8, 4).to(torch.bfloat16)  # speculative decoding's draft: a copy of the target, cast
    assert EngineView(cast).model is cast  # measured for float32 only
    meta = tiny_model("llama").model.to("meta")
    assert engine_model(meta) is meta


def chosen_ways(winner: str | None, lead: float = 0.5) -> list[list[str]]:
    """The ways a tiny model's choice keeps per group when `winner` times fastest by `lead` (None: all alike)."""
    model = tiny_model("llama").model
    timer = timings(winner or "nn.Linear", lead=lead if winner else 1.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(product_ways, "SMALLEST_TIMED", 0)
        return [group.ways for group in measure_choice(model, timer).groups]


def choice_follows_the_timings(choose) -> None:
    """The check, on a chooser: a machine where W @ x.T is faster takes it, one where it is slower nn.Linear's,
    one where a lead is inside the margin nn.Linear's too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(product_ways, "fastest", choose)
        assert all(ways == ["W @ x.T"] * len(SIZES) for ways in chosen_ways("W @ x.T"))
        assert all(ways == ["nn.Linear"] * len(SIZES) for ways in chosen_ways("nn.Linear"))
        assert all(ways == ["nn.Linear"] * len(SIZES) for ways in chosen_ways("W @ x.T", lead=0.99))


def test_the_choice_follows_the_measured_timings_and_a_choice_that_ignores_them_fails():
    choice_follows_the_timings(product_ways.fastest)

    def ignoring(seconds, sizes):  # the rule measured on one CPU, applied on every one
        return ["W @ x.T"] * len(sizes)

    with pytest.raises(AssertionError):
        choice_follows_the_timings(ignoring)


def test_the_choice_is_never_slower_than_nn_linear_at_any_size():
    generator = torch.Generator().manual_seed(1)
    for _ in range(200):
        seconds = {name: torch.rand(len(SIZES), generator=generator).tolist() for name in WAYS}
        for i, name in enumerate(product_ways.fastest(seconds, SIZES)):
            assert seconds[name][i] <= seconds["nn.Linear"][i]
            assert name == "nn.Linear" or seconds[name][i] < (1 - product_ways.MARGIN) * seconds["nn.Linear"][i]


def test_a_choice_is_cached_by_the_machines_fingerprint_and_measured_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(product_ways, "SMALLEST_TIMED", 0)
    monkeypatch.setattr(product_ways, "CHOSEN", {})
    model, measured = tiny_model("llama").model, []

    def timer(layers, ways, sizes):
        measured.append(len(layers))
        return timings("W @ x.T")(layers, ways, sizes)

    first = product_ways.product_choice(model, timer=timer)
    assert measured and product_ways.product_choice(model, timer=timer) == first  # held, not measured again
    times = len(measured)
    product_ways.CHOSEN.clear()
    assert product_ways.product_choice(model, timer=timer) == first and len(measured) == times  # read back
    monkeypatch.setattr(product_ways, "cpu_model", lambda: "another CPU")
    second = product_ways.product_choice(model, timer=timer)
    assert len(measured) == 2 * times and second.fingerprint["cpu"] == "another CPU"
    with torch_threads(2 if torch.get_num_threads() == 1 else 1):
        assert product_ways.product_choice(model, timer=timer).fingerprint["threads"] != first.fingerprint["threads"]
    assert len(measured) == 3 * times


class torch_threads:
    def __init__(self, count: int) -> None:
        self.count, self.before = count, torch.get_num_threads()

    def __enter__(self) -> None:
        torch.set_num_threads(self.count)

    def __exit__(self, *exc) -> None:
        torch.set_num_threads(self.before)


def model_facts(model: nn.Module) -> dict:
    """What the engine must leave as it found: every module's class, attribute names (an instance `forward`
    among them), hooks and parameters (by identity and contents), and torch's global module hooks."""
    facts = {
        name: (
            type(module),
            sorted(vars(module)),
            "forward" in vars(module),
            {kind: list(getattr(module, kind)) for kind in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks")},
            [(key, id(p), p.data_ptr(), p.dtype, p.clone()) for key, p in module.named_parameters(recurse=False)],
        )
        for name, module in model.named_modules()
    }
    facts["torch's global hooks"] = {kind: len(getattr(nn.modules.module, kind)) for kind in GLOBAL_HOOKS}
    return facts


def same_facts(before: dict, after: dict) -> bool:
    if before.keys() != after.keys():
        return False
    for name in before:
        if name == "torch's global hooks":
            if before[name] != after[name]:
                return False
            continue
        *plain_before, params_before = before[name]
        *plain_after, params_after = after[name]
        if plain_before != plain_after or len(params_before) != len(params_after):
            return False
        for (*keys_before, value_before), (*keys_after, value_after) in zip(params_before, params_after, strict=True):
            if keys_before != keys_after or not torch.equal(value_before, value_after):
                return False
    return True


def engine_decode(lm, prompt: list[int], tokens: int = 12) -> tuple[list[int], int]:
    """Lookahead on `lm`: its new tokens and its forward passes."""
    request = DecodeRequest(lookahead=LookaheadConfig(window=3, ngram=3, guesses=3), max_new_tokens=tokens)
    summary = summarize(list(decode_steps(lm, prompt, request)))
    return summary.new_token_ids, summary.steps


def test_engine_decoding_leaves_the_model_object_as_loaded_and_the_check_catches_a_rebound_forward():
    lm = tiny_model("llama")
    prompt = [5, 6, 7, 8, 5, 6, 7, 8, 5]
    loaded = model_facts(lm.model)
    logits = lm.model(torch.tensor([prompt])).logits
    output, _ = engine_decode(lm, prompt)
    assert output == greedy_reference(lm.model, prompt, 12, None)
    assert same_facts(loaded, model_facts(lm.model))
    assert torch.equal(lm.model(torch.tensor([prompt])).logits, logits)  # the model's own pass, bit for bit
    # The negative control: the way products.py once worked, a forward rebound on one linear layer.
    layer = next(m for m in lm.model.modules() if type(m) is nn.Linear)
    layer.forward = types.MethodType(lambda module, x: nn.functional.linear(x, module.weight, module.bias), layer)
    assert not same_facts(loaded, model_facts(lm.model))
    del layer.forward
    assert same_facts(loaded, model_facts(lm.model))
    handle = layer.register_forward_hook(lambda module, args, out: None)  # a hook is caught too
    assert not same_facts(loaded, model_facts(lm.model))
    handle.remove()


def counting(monkeypatch) -> list[int]:
    """Count the engine's products from here on: one entry per linear layer applied."""
    taken = []
    product = ProductTable.product

    def counted(*args, **kwargs):
        taken.append(1)
        return product(*args, **kwargs)

    monkeypatch.setattr(ProductTable, "product", counted)
    return taken


def test_the_engines_passes_take_its_products_and_generate_never_does(monkeypatch):
    lm = tiny_model("llama")
    taken = counting(monkeypatch)
    prompt = [9, 8, 7, 9, 8, 7, 9, 8]
    linears = sum(type(m) is nn.Linear for m in lm.model.modules())  # the head among them
    output, passes = engine_decode(lm, prompt)
    assert linears and len(taken) == linears * passes  # every linear layer of every pass, the prefill's too
    taken.clear()
    assert greedy_reference(lm.model, prompt, 12, None) == output and taken == []


def test_the_view_follows_the_model_weights_modes_hooks_and_swapped_layers(monkeypatch):
    lm = tiny_model("llama")
    taken = counting(monkeypatch)
    prompt = [4, 5, 6, 4, 5, 6, 4]
    engine_decode(lm, prompt, tokens=4)
    view = products.VIEWS[lm.model]
    layer = lm.model.model.layers[0].mlp.down_proj
    with torch.no_grad():
        layer.weight.mul_(-3.0)  # weights changed in place
    called = []
    handle = layer.register_forward_hook(lambda module, args, out: called.append(module))
    lm.model.train()
    assert engine_model(lm.model).model.layers[0].training  # a copy's attributes are its original's again
    lm.model.eval()
    output = engine_decode(lm, prompt)[0]
    assert called and all(type(module) is EngineLinear and vars(module) is vars(layer) for module in called)
    called.clear()
    assert output == greedy_reference(lm.model, prompt, 12, None)
    assert called and all(module is layer for module in called)  # generate: the layer itself
    handle.remove()
    assert products.VIEWS[lm.model] is view  # all of that without building the view again
    swapped = nn.Linear(layer.in_features, layer.out_features, bias=False)
    lm.model.model.layers[0].mlp.down_proj = swapped
    taken.clear()
    assert engine_decode(lm, prompt)[0] == greedy_reference(lm.model, prompt, 12, None)
    assert products.VIEWS[lm.model] is not view  # built again, on the new layer
    assert vars(engine_model(lm.model).model.layers[0].mlp.down_proj) is vars(swapped) and taken


def test_the_view_keeps_no_model_alive():
    lm = tiny_model("llama")
    engine_decode(lm, [1, 2, 3], tokens=2)
    gone = weakref.ref(lm.model)
    assert lm.model in products.VIEWS
    del lm
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("way", WAY_NAMES)
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_greedy_lookahead_with_each_way_equals_generate(family, way, monkeypatch):
    lm = tiny_model(family)
    forced(lm.model, way, monkeypatch)
    for prompt in ([3, 4, 5, 3, 4, 5, 3], list(range(40, 80))):  # a few rows, and a prefill of many
        assert engine_decode(lm, prompt, tokens=16)[0] == greedy_reference(lm.model, prompt, 16, None)


# make test keeps two ways on the real model (10-15 s each on the 2-core Xeon): nn.Linear, and the panels, whose sums
# split the columns; make test-slow takes every way, and test_greedy_lookahead_with_each_way_equals_generate above
# every way on three tiny families.
@pytest.fixture(scope="module")
def real_references(default_model) -> dict[tuple[int, ...], list[int]]:
    """`generate`'s 24 greedy tokens on SmolLM2 for each of REAL_PROMPTS, computed once for every way below:
    `generate` runs transformers' own kernel, never the engine's view, whichever way the view is forced to take."""
    lm = default_model
    prompts = [tuple(lm.tokenizer.encode(text)) for text in REAL_PROMPTS]
    return {prompt: greedy_reference(lm.model, list(prompt), 24, None) for prompt in prompts}


REAL_PROMPTS = ("def fibonacci(n):\n", "The capital of France is")


@pytest.mark.parametrize("way", slow_but(WAY_NAMES, "nn.Linear", "panels of 16"))
def test_every_way_gives_generates_tokens_on_the_real_model(default_model, real_references, way, monkeypatch):
    """Whichever way a machine keeps, greedy decoding and lookahead (passes of 1 to a few dozen rows, and the
    prefill's hundreds) write `generate`'s tokens on SmolLM2 in float32."""
    lm = default_model
    forced(lm.model, way, monkeypatch)
    lookahead = DecodeRequest(lookahead=LookaheadConfig(window=4, ngram=4, guesses=4), max_new_tokens=24)
    for prompt, reference in real_references.items():
        for request in (lookahead, DecodeRequest(method=Method.GREEDY, max_new_tokens=24)):
            assert summarize(list(decode_steps(lm, list(prompt), request))).new_token_ids == reference, (way, request)
    assert products_in_force(lm.model).groups[0].ways[0] == way


def fused(monkeypatch) -> list[str]:
    """The engine's view fuses sibling layers here, as on CUDA; note each sibling's call and each product taken."""
    taken = []
    product, linear = products.Siblings.product, products.linear

    def called(self, index, x):
        taken.append("sibling")
        return product(self, index, x)

    def counted(*args):
        taken.append("product")
        return linear(*args)

    monkeypatch.setattr(products, "fuses", lambda model: True)
    monkeypatch.setattr(products.Siblings, "product", called)
    monkeypatch.setattr(products, "linear", counted)
    return taken


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_fused_siblings_leave_the_model_as_loaded_and_give_generates_tokens_eager_and_fixed(family, monkeypatch):
    """CUDA's view: query|key|value and gate|up as one product each (qwen2's with biases), copied into the view;
    the eager step and the fixed-shape step give `generate`'s tokens through it."""
    lm = tiny_model(family)
    loaded = model_facts(lm.model)
    taken = fused(monkeypatch)
    prompt = [3, 4, 5, 3, 4, 5, 3]
    reference = greedy_reference(lm.model, prompt, 12, None)
    assert engine_decode(lm, prompt)[0] == reference
    assert taken and taken.count("sibling") == 5 * taken.count("product") / 2  # 2 products a layer for 5 layers
    assert same_facts(loaded, model_facts(lm.model))
    runtime = Runtime(mode=StepMode.FIXED)
    request = DecodeRequest(lookahead=LookaheadConfig(window=3, ngram=3, guesses=3), max_new_tokens=12)
    assert summarize(list(decode_steps(lm, prompt, request, runtime))).new_token_ids == reference


def test_a_sibling_on_another_input_takes_its_own_product_and_a_changed_weight_a_new_copy(monkeypatch):
    lm = tiny_model("llama")
    fused(monkeypatch)
    attention = engine_model(lm.model).model.layers[0].self_attn
    x, y = torch.randn(1, 3, lm.model.config.hidden_size), torch.randn(1, 3, lm.model.config.hidden_size)
    own = lm.model.model.layers[0].self_attn
    attention.q_proj(x)
    assert torch.equal(attention.k_proj(y), nn.functional.linear(y, own.k_proj.weight))  # not x's columns
    assert torch.equal(attention.v_proj(x), nn.functional.linear(x, own.v_proj.weight))
    view = products.VIEWS[lm.model]
    assert engine_model(lm.model) is view.model
    with torch.no_grad():
        own.v_proj.weight.mul_(-2.0)  # changed in place: the copy no longer holds it
    assert engine_model(lm.model) is view.model  # a pass's view is not checked: a decoding's start checks it
    changed = engine_model(lm.model, checked=True)
    assert changed is not view.model
    assert torch.equal(changed.model.layers[0].self_attn.v_proj(x), nn.functional.linear(x, own.v_proj.weight))
    own.k_proj.weight = nn.Parameter(own.k_proj.weight.detach() + 1.0)  # assigned anew
    assert engine_model(lm.model, checked=True) is not changed
    prompt = [3, 4, 5, 3, 4, 5, 3]
    assert engine_decode(lm, prompt)[0] == greedy_reference(lm.model, prompt, 12, None)


def test_a_fixed_step_records_its_passes_again_when_the_view_is_built_anew(monkeypatch):
    """A capture holds the products of the view it recorded (on CUDA, the fused copies): a weight changed after it
    must be recorded again, or the replays would use the old copy."""
    from lookahead_core.device import capture

    lm = tiny_model("llama")
    fused(monkeypatch)
    recorded = []
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, lambda function: recorded.append(function) or function)
    prompt = [3, 4, 5, 3, 4, 5, 3]
    runtime = Runtime(mode=StepMode.FIXED)
    request = DecodeRequest(lookahead=LookaheadConfig(window=3, ngram=3, guesses=3), max_new_tokens=12)
    summarize(list(decode_steps(lm, prompt, request, runtime)))
    first = len(recorded)
    summarize(list(decode_steps(lm, prompt, request, runtime)))
    assert len(recorded) == first  # the same view: nothing recorded again
    with torch.no_grad():
        lm.model.model.layers[0].mlp.up_proj.weight.mul_(-2.0)
    output = summarize(list(decode_steps(lm, prompt, request, runtime))).new_token_ids
    assert len(recorded) > first and output == greedy_reference(lm.model, prompt, 12, None)
