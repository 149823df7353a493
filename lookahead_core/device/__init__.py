"""How a pass runs on the hardware: one forward pass over a token tree (forward.py), the fixed-shape step and the
step mode a run takes (fixed.py), CUDA's capture of it (capture.py), and on a CPU the linear layers' products taken
the way measured fastest here (products.py, product_ways.py; the engine's own kernel, panel_kernel.py and
panel_rows.cpp; what the CPU is, cpu.py). The working state a method keeps on the device is working_state.py, above
the methods it mirrors.
"""
