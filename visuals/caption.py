"""Panel 6, a caption for every step: what happened in this forward pass, in plain words.

Built from the record alone, e.g. "The key ‘def’ had 3 n-grams in the pool; guess 2 matched 3
tokens, so this one forward pass committed 4 tokens.", or, when the window's own trajectory won,
"...; no guess beat the window: column 3's Jacobi trajectory matched 2 tokens, so ...".
"""

from __future__ import annotations

from html import escape

from .tokens import quoted

STOPS = {"eos": "the model emitted an end-of-sequence token", "max_new_tokens": "max new tokens was reached"}


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def prefill_caption(trace: dict, record: dict) -> str:
    vocab = trace["vocab"]
    prompt = len(trace["meta"]["prompt_token_ids"])
    return (
        f"Prefill: the model reads the {prompt}-token prompt in one forward pass and predicts the "
        f"first new token {quoted(vocab, record['committed'][0])}. Every n-gram of the prompt goes into the pool."
    )


def trajectory_clause(record: dict) -> str:
    """What the winning trajectory did, e.g. "column 3's Jacobi trajectory matched 2 tokens"."""
    column = record["trajectory_winner"]
    return f"column {column}'s Jacobi trajectory matched {plural(record['trajectory_matched'][column], 'token')}"


def pool_clause(record: dict, vocab: dict) -> str:
    """What the key's n-grams and, when they lost, the window's trajectories gave verification."""
    key = quoted(vocab, record["pool_key"])
    entries, guesses = len(record["pool_entries"]), len(record["guesses"])
    window_won = record.get("trajectory_winner") is not None
    if entries == 0:
        clause = f"The key {key} had no n-gram in the pool to verify"
        return clause + (f", but the window had a match: {trajectory_clause(record)}" if window_won else "")
    picked = "" if guesses == entries else f" and {guesses} of them were verified"
    clause = f"The key {key} had {plural(entries, 'n-gram')} in the pool{picked}; "
    if window_won:
        return clause + f"no guess beat the window: {trajectory_clause(record)}"
    if record["winner"] is None:
        first = quoted(vocab, record["committed"][0])
        nor = ", nor did any of the window's trajectories" if record.get("trajectories") else ""
        return clause + f"none began with the guaranteed next token {first}{nor}"
    return clause + f"guess {record['winner'] + 1} matched {plural(record['matched'][record['winner']], 'token')}"


def window_clause(record: dict, vocab: dict) -> str:
    """For G = 0, where only the window's trajectories are verified: what they did."""
    if record.get("trajectory_winner") is not None:
        clause = trajectory_clause(record)
        return clause[0].upper() + clause[1:]
    first = quoted(vocab, record["committed"][0])
    if record.get("trajectories"):
        return f"No window trajectory began with the guaranteed next token {first}"
    return "Nothing was verified"


def commit_clause(record: dict, vocab: dict) -> str:
    count = len(record["committed"])
    if count == 1:
        return f"this forward pass committed only the guaranteed next token {quoted(vocab, record['committed'][0])}"
    path = "trajectory" if record.get("trajectory_winner") is not None else "guess"
    accepted = record["sources"].count("accepted")
    parts = [f"the guaranteed next token (the {path}'s first token matched it)"]
    if accepted:
        parts.append(plural(accepted, "more accepted token"))
    if "bonus" in record["sources"]:
        parts.append("the bonus token")
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"this one forward pass committed {plural(count, 'token')}: {listed}"


def accepted_length(record: dict) -> int:
    """How many tokens verification accepted from the winning guess or trajectory (0 when none won)."""
    if record["winner"] is not None:
        return record["matched"][record["winner"]]
    if record.get("trajectory_winner") is not None:
        return record["trajectory_matched"][record["trajectory_winner"]]
    return 0


def step_caption(trace: dict, index: int) -> str:
    """The caption of step `index` as HTML (token text escaped).

    A record's note (the engine sets one for G = 0) opens the caption; with it, the pool is idle and
    only the window's trajectories are reported.
    """
    record = trace["steps"][index]
    vocab = trace["vocab"]
    if record.get("kind") == "prefill":
        return prefill_caption(trace, record)
    sentences = []
    if record.get("note"):
        sentences.append(escape(record["note"]) + ".")
        sentences.append(f"{window_clause(record, vocab)}, so {commit_clause(record, vocab)}.")
    else:
        if record["warming_up"]:
            levels = plural(len(record["window"]), "level")
            sentences.append(f"Warm-up: the window has {levels} and gains one this step.")
        sentences.append(f"{pool_clause(record, vocab)}, so {commit_clause(record, vocab)}.")
    accepted = accepted_length(record)
    if accepted and len(record["committed"]) < accepted + 1:
        sentences.append("The stop rule cut the accepted block short.")
    if record.get("stop"):
        sentences.append(f"Decoding stops: {STOPS[record['stop']]}.")
    return " ".join(sentences)


def step_header(trace: dict, index: int) -> str:
    """Step number, position, tokens fed and the measured time of the forward pass, with the device."""
    record = trace["steps"][index]
    last = len(trace["steps"]) - 1
    device = trace["meta"]["machine"]["device_name"]
    millis = record["forward_seconds"] * 1000
    return (
        f"Step {record['step']} of {last} · position {record['position']} · "
        f"{plural(record['tokens_fed'], 'token')} fed · forward pass {millis:.0f} ms on {device}"
    )


def caption_html(trace: dict, index: int) -> str:
    return (
        f'<div class="ll-caption"><div class="ll-stephead">{escape(step_header(trace, index))}</div>'
        f"<p>{step_caption(trace, index)}</p></div>"
    )
