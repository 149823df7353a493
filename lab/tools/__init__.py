"""The maintainers' tools: the example traces recorded (examples), the sweep over model families (families) and
Gemma's installer (gemma)."""
