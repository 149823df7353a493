"""The Gradio page: one builder per part (controls, model box, replay, exports, lesson, race), each in its own
module and returning its components as a named structure; `page.build_demo` composes and wires them.

Every handler returns `{component: value}` updates, so an update names its target. Handlers take the
page first and are bound to it with `events.bound`; model work is the lab's (`lab.serve.server`).
"""
