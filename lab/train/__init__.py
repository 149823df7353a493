"""The training room: Medusa heads and the EAGLE layer trained on the model's own answers (medusa, eagle,
distillation, training), and the shipped ones loaded for a runtime (heads)."""
