"""The lab: what people run on top of the engine, in rooms. The CLI at this root (`python -m lab`, and the
documented `python -m lab.NAME` commands); serve/, the app's server (the one model, requests, budgets, the line,
classes); measure/, the bench, the race, a timed Run and the tune map; train/, Medusa heads and the EAGLE layer;
tools/, the maintainers' (example traces, the family sweep, Gemma's installer).

It imports the engine (`lookahead_core`) and, for reports, the visuals; neither imports it.
"""
