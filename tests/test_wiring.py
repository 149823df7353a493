"""The page's wiring, read from its config: what Gradio's page would do with it that no handler test sees."""

from collections import defaultdict

import gradio as gr


def restarting_each_other(blocks: gr.Blocks) -> dict:
    """The triggers that start two or more server events of which one is `always_last`. As each such event ends,
    Gradio's page dispatches its whole trigger again (`Blocks.dispatch` re-sends the event it had deferred, not the
    one function), so two of them restart each other forever, with a core burnt in every page that shows them."""
    started = defaultdict(list)
    for event in blocks.get_config_file()["dependencies"]:
        if event["backend_fn"]:
            for target in event["targets"]:
                started[tuple(target)].append(event["trigger_mode"])
    return {trigger: modes for trigger, modes in started.items() if len(modes) > 1 and "always_last" in modes}


def test_no_trigger_starts_two_server_events_that_would_restart_each_other():
    import app

    assert restarting_each_other(app.demo) == {}


def test_the_check_catches_two_always_last_events_on_one_slider():
    with gr.Blocks() as blocks:
        slider, first, second = gr.Slider(), gr.Markdown(), gr.Markdown()
        slider.change(lambda value: value, slider, first)
        slider.change(lambda value: value, slider, second)
    assert list(restarting_each_other(blocks).values()) == [["always_last", "always_last"]]
