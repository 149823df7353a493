"""Lookahead Lab's engine: exact lookahead decoding (Fu et al., ICML 2024) on transformers models.

A small library with no user interface, in rooms: `records/` (the schema every record is built from; plain Python,
importable without torch), `methods/` (one module per guessing method, each its proposer), `device/` (a pass on the
hardware: forward, the fixed-shape step, capture, the CPU's products), and beside them `config`, `layout`,
`attention`, `proposers` (the proposers' interface), `verify`, `sampling`, `planning`, `recorder`, `decoding`,
`working_state`, `costs`, `tuning`, `models`, `cache` (where derived files are kept), `tokens` (what a token reads
as), `divergence` (where a half-precision output leaves plain decoding's), `spec` (one spec per method, and their
registry) and `trace`. Importing this package loads nothing heavy: import the module you need.
"""
