"""The guessing methods, one module each: lookahead (its Jacobi window and n-gram pool beside it), prompt lookup,
the draft model, EAGLE's layer (and its stored matrices), Medusa's heads and suffix decoding; each method's proposer
behind lookahead_core.proposers' interface. Their specs, and the one registry of methods, are lookahead_core.spec.
"""
