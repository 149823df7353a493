"""The step, as the algorithm reads: what a proposer offers (proposers.py), how a step's input is planned
(planning.py), verification and the commit rules (verify.py), the decode loops (decoding.py) and what a step yields
(recorder.py). Above the device (one forward pass) and the token tree; below the methods.
"""
