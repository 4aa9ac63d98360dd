"""A synthetic recorded set with a learnable rule, for tests and the report script (not real data).

Every episode asks about one object; each planner round offers 2..N options drawn from three kinds:

- "right": the instruction contains the keyword ``crop`` ("Crop the cup and ask ..."): executing
  it answers right (metric 1) at once;
- "wrong": it answers at once, wrongly (metric 0);
- "continue": it finds things and the summarizer asks for another step.

The planner's probabilities are random: the right option is the most probable only about a third
of the time, so following them is often wrong. The data is recorded as ``explore all`` with the
planner-probability policy choosing: every option's outcome is known, continuations only for the
chosen one. Where a step has no right option the most probable option is a "continue" one, so the
episode goes on to a step that has one. A policy that picks the option whose text contains the
keyword when there is one, and the planner's choice otherwise, is optimal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hydra_vr.controller.observation import ObservationEncoder, memory_tail
from hydra_vr.training.episodes import OptionOutcome, RecordedEpisode, RecordedOption, RecordedRound, RecordedStep

OBJECTS = ["cup", "bus", "dog", "cat", "car", "bench", "kite", "clock"]
COLOURS = ["red", "blue", "green", "white", "black", "yellow"]
QUERIES = ["What color is the {o}?", "What colour does the {o} have?", "Which color is the {o} in this picture?"]
RIGHT = ["Crop the {o} and ask what color it is", "Crop around the {o} and query its colour", "Crop each {o} patch and compare colors"]
WRONG = ["Guess the answer from the image caption", "Answer from common sense about a {o}", "Ask the whole image directly what color it is"]
CONTINUE = ["Find the {o}", "Locate every {o} in the image", "Count the {o}s in the image"]


def _memory(history: list[tuple[str, str]]) -> str:
    if not history:
        return "No steps yet."
    return "\n\n".join(f"Step {i}: {instr}\nResult:\n{fb}" for i, (instr, fb) in enumerate(history, 1))


def _planned_step(rng: np.random.Generator, obj: str, num_options: int, with_right: bool) -> list[tuple[str, str]]:
    """(kind, instruction) pairs; the most probable first is NOT implied (probabilities come later)."""
    n = int(rng.integers(2, num_options + 1))
    kinds = (["right"] if with_right else []) + ["continue"]
    while len(kinds) < n:
        kinds.append(str(rng.choice(["wrong", "continue"])))
    rng.shuffle(kinds)
    pools = {"right": RIGHT, "wrong": WRONG, "continue": CONTINUE}
    used: set[str] = set()
    out = []
    for kind in kinds:
        choices = [t.format(o=obj) for t in pools[kind] if t.format(o=obj) not in used]
        text = str(rng.choice(choices)) if choices else f"{kind} step about the {obj} #{len(out)}"
        used.add(text)
        out.append((kind, text))
    return out


def _probabilities(rng: np.random.Generator, kinds: list[str]) -> list[float]:
    p = rng.dirichlet(np.ones(len(kinds)))
    if "right" not in kinds:  # the recording must continue: the planner's top choice is a "continue"
        top = int(np.argmax(p))
        target = kinds.index("continue")
        p[top], p[target] = p[target], p[top]
    return [float(v) for v in p]


def synthetic_episodes(count: int, encoder: ObservationEncoder, *, seed: int = 0, max_steps: int = 3,
                       max_replans: int = 2, right_at_first_step: float = 0.7) -> list[RecordedEpisode]:
    """``count`` recorded episodes following the module's rule, embedded with ``encoder``."""
    rng = np.random.default_rng(seed)
    raw: list[dict[str, Any]] = []
    for index in range(count):
        obj, colour = str(rng.choice(OBJECTS)), str(rng.choice(COLOURS))
        query = str(rng.choice(QUERIES)).format(o=obj)
        history: list[tuple[str, str]] = []
        steps = []
        for t in range(1, max_steps + 1):
            last = t == max_steps
            planned = _planned_step(rng, obj, encoder.num_options, with_right=t > 1 or rng.random() < right_at_first_step)
            kinds = [k for k, _ in planned]
            probs = _probabilities(rng, kinds)
            chosen = int(np.argmax(probs))
            outcomes = []
            for i, (kind, instr) in enumerate(planned):
                if kind == "right":
                    outcomes.append(OptionOutcome(True, f"final_answer = {colour}", True, "answer", colour, [], 1.0, True))
                elif kind == "wrong":
                    outcomes.append(OptionOutcome(True, "final_answer = unknown", True, "answer", "unknown", [], 0.0, True))
                else:
                    fb = f"find('{obj}'): 1 found: {obj} 0.80 at [{10 * t}, 20, 120, 140]"
                    end = last and i == chosen  # the step limit: the merged answer is wrong here
                    outcomes.append(OptionOutcome(True, fb, True, "continue", None, [], 0.0 if end else None, end))
            steps.append((t, _memory(history), planned, probs, chosen, outcomes))
            kind, instr = planned[chosen]
            if outcomes[chosen].final:
                break
            history.append((instr, outcomes[chosen].feedback))
        raw.append({"id": f"synthetic-{seed}-{index}", "query": query, "colour": colour, "steps": steps})

    texts = [r["query"] for r in raw]
    for r in raw:
        for _, memory, planned, *_ in r["steps"]:
            texts.append(memory_tail(memory, encoder.memory_chars))
            texts.extend(instr for _, instr in planned)
    table = encoder.embed_texts(texts)
    episodes = []
    for r in raw:
        rec_steps = [RecordedStep(t, memory, table[memory_tail(memory, encoder.memory_chars)],
                                  [RecordedRound([RecordedOption(instr, p, table[instr]) for (_, instr), p in zip(planned, probs)], chosen)],
                                  outcomes)
                     for t, memory, planned, probs, chosen, outcomes in r["steps"]]
        end = rec_steps[-1].outcomes[rec_steps[-1].executed.choice]
        episodes.append(RecordedEpisode(
            id=r["id"], query=r["query"], task="vqa", gt={"answers": [r["colour"]], "answer": r["colour"]}, embedding_name=encoder.embedding_name,
            embedding_dim=encoder.embedding_dim, num_options=encoder.num_options, max_steps=max_steps, max_replans=max_replans,
            query_vec=table[r["query"]], steps=rec_steps, dataset="synthetic", explore="all",
            result={"metric": end.metric, "steps": len(rec_steps)},
        ))
    return episodes
