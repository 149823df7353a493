"""The guessing methods, one module each, holding its proposer (behind lookahead_core.step.proposers' interface) and
its spec (`SPEC`: method_spec.MethodSpec): lookahead (its Jacobi window and n-gram pool beside it), prompt lookup, the
draft model, EAGLE's layer (and its stored matrices), Medusa's heads and suffix decoding. A method whose timed steps
may run on the device keeps that working state beside it (`*_on_device.py`). lookahead_core.spec registers them.
"""
