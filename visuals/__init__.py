"""Lookahead Lab's drawings: pure functions from step records to HTML strings and Plotly figures.

The engine records, visuals draw, `app.py` wires. Nothing here imports torch, a model or gradio:
every panel can be rendered, and tested, from a saved trace alone.
"""
