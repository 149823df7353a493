"""The token tree a step feeds: its layout (layout.py: the branches' rows, parents, depths and what each row sees)
and each layer type's attention mask over it (attention.py). Below the device, the models and the step.
"""
