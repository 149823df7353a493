"""The page's wiring, read from its config: what Gradio's page would do with it that no handler test sees."""

from collections import defaultdict

import gradio as gr


def restarting_each_other(blocks: gr.Blocks) -> dict:
    """The triggers that start two or more `always_last` server events. As such an event ends after a press it had
    deferred, Gradio's page dispatches its whole trigger again (`Blocks.dispatch` re-sends the event, not the one
    function): the other is pending then, and is deferred in turn, so two of them restart each other forever, with
    a core burnt in every page that shows them. An event of another mode beside one of them is not deferred, and
    ends the round."""
    started = defaultdict(list)
    for event in blocks.get_config_file()["dependencies"]:
        if event["backend_fn"] and event["trigger_mode"] == "always_last":
            for target in event["targets"]:
                started[tuple(target)].append(event["id"])
    return {trigger: events for trigger, events in started.items() if len(events) > 1}


def test_no_trigger_starts_two_server_events_that_would_restart_each_other():
    import app

    assert restarting_each_other(app.demo) == {}


def test_the_check_catches_two_always_last_events_on_one_slider():
    with gr.Blocks() as blocks:
        slider, first, second = gr.Slider(), gr.Markdown(), gr.Markdown()
        slider.change(lambda value: value, slider, first)
        slider.change(lambda value: value, slider, second)
    assert len(restarting_each_other(blocks)) == 1
