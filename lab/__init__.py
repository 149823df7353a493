"""The lab: what people run on top of the engine (CLI, bench, race, prompt sets, example traces).

It imports the engine (`lookahead_core`) and, for reports, the visuals; neither imports it.
"""
