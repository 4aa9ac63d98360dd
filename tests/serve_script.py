"""A scripted LLM for serve tests, as a config file: a real server process can load it.

Rules are ``[user regex, reply, system regex]`` (see ``hydra_vr.llm.scripted``): the planner,
reasoner and summarizer are told apart by their system prompts. The programs are real and run on
the real embedded vision tools. Questions the script knows:

- "How many people ...": two steps (find the people, count them), then the summarizer answers;
- "the bus" (ground): one step whose program returns the bus patch;
- any query containing "explode": the planner proposes a step no program exists for, so the
  reasoner's LLM call fails and the episode ends with an error.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

PLANNER, REASONER, SUMMARIZER = "You plan the next step", "You write short Python programs", "You decide whether"


def plan(*instructions: str) -> str:
    n = len(instructions)
    total = n * (n + 1) / 2
    return json.dumps({"instructions": [{"instruction": s, "probability": round((n - i) / total, 3)}
                                        for i, s in enumerate(instructions)], "answer": ""})


def code(body: str) -> str:
    return f"```python\n{body}\n```"


def decide(decision: str, answer: str = "") -> str:
    return json.dumps({"decision": decision, "answer": answer})


RULES = [
    [r"Query: [^\n]*explode", plan("Explode the image"), PLANNER],
    [r"find\('person'\)", plan("Count the people", "Find the bus"), PLANNER],
    [r"Query: the bus", plan("Find the bus"), PLANNER],
    [r"Query:", plan("Find the people", "Find the bus", "Count everything"), PLANNER],
    [r"Instruction: Find the people", code('image_patch = ImagePatch(image)\npeople = image_patch.find("person")'), REASONER],
    [r"Instruction: Count the people", code("final_answer = str(len(people))"), REASONER],
    [r"Instruction: Find the bus", code('final_answer = ImagePatch(image).find("bus")[0]'), REASONER],
    [r"Instruction: write one program",
     code('people = ImagePatch(image).find("person")\nfinal_answer = str(len(people))'), REASONER],
    # The summarizer repeats the count the program found (a config holds no code: one rule per count).
    *([rf"Step 2:[\s\S]*final_answer = '?{n}\b", decide("answer", str(n)), SUMMARIZER] for n in range(31)),
    [r"Query:", decide("continue"), SUMMARIZER],
]


def scripted_serve_config(path: Path, **agent: object) -> Path:
    """Write a config whose LLM is the script above (no model file needed) and return its path."""
    data = {"name": "scripted-serve", "agent": {"mode": "no_rl", "max_steps": 3, "num_options": 3, **agent},
            "llm": {"backend": "scripted", "options": {"rules": RULES}}}
    path.write_text(yaml.safe_dump(data))
    return path


# A small eval run for the runs browser: the same script on the bus photo, one right answer, one
# grounding sample with its ground-truth box, one wrong answer (the script counts people only).
EVAL_ROWS = [
    {"id": "count", "image": "sample:bus", "question": "How many people are in the picture?", "answers": ["4", "four"]},
    {"id": "bus-box", "image": "sample:bus", "question": "the bus", "box": [17, 230, 800, 740], "task": "grounding"},
    {"id": "wrong", "image": "sample:bus", "question": "How many people wear hats?", "answers": ["0", "none"]},
]


def make_eval_run(run_dir: Path, config: Path) -> Path:
    """Run ``hydra-vr eval`` on :data:`EVAL_ROWS` into ``run_dir`` with the scripted config."""
    from typer.testing import CliRunner

    from hydra_vr.cli.main import app

    data = run_dir.parent / f"{run_dir.name}-data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in EVAL_ROWS))
    result = CliRunner().invoke(app, ["eval", "--dataset", "user", "--data-root", str(data), "--out", str(run_dir),
                                      "--config", str(config), "--no-progress"])
    assert result.exit_code == 0, result.output
    return run_dir
