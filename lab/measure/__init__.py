"""The measuring room: the bench, the race and a Run timed in interleaved rounds (bench, race, timed_run, timing),
the tune map and its prediction (tune, payoff), the prompt sets (datasets) and what else used the machine meanwhile
(busy). It imports nothing from the server's room."""
