"""The engine's own products (lookahead_core.products): the engine runs a CPU model's passes on its own view
of it, where the float32 linear layers take their rows as W @ x.T, the same values to float rounding. The
model object is left as loaded (no forward rebound, no attribute, no hook), so `generate` runs transformers'
own kernel, and the view follows what is done to the model."""

from __future__ import annotations

import gc
import types
import weakref

import pytest
import torch
from torch import nn

from lookahead_core import products
from lookahead_core.config import LookaheadConfig
from lookahead_core.products import FEW_ROWS, EngineLinear, EngineView, engine_linear, engine_model
from lookahead_core.records import StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import decode_steps, summarize

from .test_engine_tiny_models import greedy_reference
from .tiny import tiny_model

GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks")


def w_at_x(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """The product as the engine takes it, written out: W @ x.T on the rows, one row fed twice."""
    flat = x.reshape(-1, x.shape[-1])
    y = (layer.weight @ (flat.repeat(2, 1) if len(flat) == 1 else flat).T).T[: len(flat)]
    return (y if layer.bias is None else y + layer.bias).reshape(*x.shape[:-1], -1)


@pytest.mark.parametrize("rows", [1, 2, 3, 5, FEW_ROWS, FEW_ROWS + 1])
@pytest.mark.parametrize("bias", [True, False])
def test_the_engines_view_of_a_layer_takes_w_at_x_bit_for_bit_the_same_product_to_float_rounding(rows, bias):
    torch.manual_seed(rows)
    layer = nn.Linear(48, 80, bias=bias)
    x = torch.randn(1, rows, 48)
    stock = nn.functional.linear(x, layer.weight, layer.bias)
    view = EngineView(layer).model
    assert type(view) is EngineLinear and vars(view) is vars(layer)  # the layer's own attributes, shared
    ours = view(x)
    assert torch.equal(ours, w_at_x(layer, x) if rows <= FEW_ROWS else stock)  # past FEW_ROWS: nn.Linear's
    assert ours.shape == stock.shape and torch.allclose(ours, stock, rtol=1e-5, atol=1e-5)
    assert torch.equal(layer(x), stock)  # the layer itself: nn.Linear's own kernel, bit for bit


def test_other_dtypes_keep_nn_linears_kernel_and_other_devices_the_model_itself():
    torch.manual_seed(0)
    cast = nn.Linear(8, 4).to(torch.bfloat16)  # speculative decoding's draft: a copy of the target, cast
    assert EngineView(cast).model is cast  # measured for float32 only
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    assert torch.equal(engine_linear(x, cast.weight, cast.bias), nn.functional.linear(x, cast.weight, cast.bias))
    meta = tiny_model("llama").model.to("meta")
    assert engine_model(meta) is meta


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

    def counted(*args, **kwargs):
        taken.append(1)
        return engine_linear(*args, **kwargs)

    monkeypatch.setattr(products, "engine_linear", counted)
    return taken


def test_the_engines_passes_take_its_products_and_generate_never_does(monkeypatch):
    lm = tiny_model("llama")
    taken = counting(monkeypatch)
    prompt = [9, 8, 7, 9, 8, 7, 9, 8]
    linears = sum(type(m) is nn.Linear for m in lm.model.base_model.modules())  # the head is applied as W @ x
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


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_greedy_lookahead_with_the_engines_products_equals_generate(family):
    lm = tiny_model(family)
    for prompt in ([3, 4, 5, 3, 4, 5, 3], list(range(40, 80))):  # a few rows, and a prefill past FEW_ROWS
        assert engine_decode(lm, prompt, tokens=16)[0] == greedy_reference(lm.model, prompt, 16, None)


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
    from lookahead_core import capture

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
