"""Lookahead Lab's engine: exact lookahead decoding (Fu et al., ICML 2024) on transformers models.

A small library with no user interface: `records` (the schema every record is built from; plain
Python, importable without torch), `config`, `layout`, `window`, `pool`, `proposers`, `verify`,
`sampling`, `planning`, `forward`, `decoding`, `costs`, `tuning`, `models`, `tokens` (what a token reads as),
`divergence` (where a half-precision output leaves plain decoding's) and `trace`. Importing this
package loads nothing heavy: import the module you need.
"""
