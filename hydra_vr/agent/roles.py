"""The three LLM roles of the loop: planner, reasoner, summarizer (plus the final-answer merge).

Each role keeps its system prompt fixed for a task, so the llama.cpp backend can reuse the
prompt's KV cache across calls and only pay for the new tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hydra_vr.agent.parsing import extract_code, parse_planner_output
from hydra_vr.answer_types import AnswerSpec, clean, expected_type
from hydra_vr.agent.types import PlannerOutput, Task
from hydra_vr.api.choose import names_one_thing
from hydra_vr.api.names import expression_names
from hydra_vr.api.operations import skill_text
from hydra_vr.api.spec import render_api
from hydra_vr.llm.base import ChatMessage, ChatModel, LLMError
from hydra_vr.llm.typed import answer_schema, ask_typed, parse_json_reply
from hydra_vr.prompts import load_examples, render_prompt


def planner_schema(n: int) -> dict[str, Any]:
    """Exactly ``n`` options, each a compact ``[instruction, weight in percent]`` pair: the planner's reply is decoded
    token by token (about 0.1 s each on a 2-core CPU), and pairs need about half the tokens of
    ``{"instruction": ..., "probability": ...}`` objects. Weights are normalised when parsed."""
    pair = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2}
    return {
        "type": "object",
        "properties": {
            "instructions": {"type": "array", "minItems": n, "maxItems": n, "items": pair},
            "answer": {"type": "string"},
        },
        "required": ["instructions"],
    }


def planner_reply(instructions: list[dict[str, Any]], answer: str, n: int) -> str:
    """A few-shot example's reply (the YAML's ``{instruction, probability}`` items) in the format the planner writes."""
    pairs = [[o["instruction"], round(100 * float(o["probability"]))] for o in instructions[:n]]
    return json.dumps({"instructions": pairs, "answer": answer})


@dataclass
class PromptSet:
    """Task wording and few-shot examples for one (task, dataset style)."""

    task: Task
    examples: dict[str, Any]

    @classmethod
    def for_task(cls, task: Task, example_set: str | None = None) -> PromptSet:
        name = example_set or ("grounding" if task == "grounding" else "vqa")
        return cls(task, load_examples(name))

    @property
    def task_description(self) -> str:
        return self.examples["task_description"]

    @property
    def skills(self) -> str:
        """The planner's skill list: the operation table's phrases plus this task's own additions."""
        return skill_text(self.examples.get("skills_extra", ""))


class Planner:
    def __init__(self, llm: ChatModel, prompts: PromptSet, n: int = 5, max_tokens: int = 320, retries: int = 1) -> None:
        self.llm, self.prompts, self.n = llm, prompts, n
        self.max_tokens, self.retries = max_tokens, retries
        system = render_prompt("planner_system", task_description=prompts.task_description,
                               skills=prompts.skills, n=n)
        # Few-shot examples as earlier chat turns: small models imitate a turn far better than an
        # example quoted inside the system prompt (which they tend to copy verbatim).
        shots = []
        for ex in prompts.examples.get("planner", []):
            reply = planner_reply(ex["reply"]["instructions"], ex["reply"].get("answer", ""), n)
            shots.append((render_prompt("planner_user", query=ex["query"], memory=ex["memory"].strip()), reply))
        self._prefix = _prefix_messages(system, shots)

    def propose(self, query: str, memory: str, temperature: float = 0.0) -> PlannerOutput:
        user = render_prompt("planner_user", query=query, memory=memory)
        out = PlannerOutput([])
        for attempt in range(self.retries + 1):
            res = self.llm.chat(
                [*self._prefix, ChatMessage("user", user)],
                max_tokens=self.max_tokens, temperature=temperature if attempt == 0 else max(temperature, 0.7),
                json_schema=planner_schema(self.n),
            )
            out = parse_planner_output(res.text, self.n)
            if out.options or out.direct_answer:  # an answer with no further step is a valid reply
                return out
            out.parse_notes.append(f"attempt {attempt + 1}: no usable instruction in the reply")
        return out


class Reasoner:
    def __init__(self, llm: ChatModel, prompts: PromptSet, max_tokens: int = 360) -> None:
        self.llm, self.prompts, self.max_tokens = llm, prompts, max_tokens
        final_rule = (
            "When the query is answered, set `final_answer` to the answer as a short string."
            if prompts.task == "vqa"
            else "When the object is found, set `final_answer` to its ImagePatch."
        )
        system = render_prompt("reasoner_system", api=render_api(), final_rule=final_rule)
        shots = [
            (render_prompt("reasoner_user", query=ex["query"], instruction=ex["instruction"], memory="No steps yet.",
                           variables="none", previous_code="", error=""),
             f"```python\n{ex['code'].strip()}\n```")
            for ex in prompts.examples.get("reasoner", [])
        ]
        self._prefix = _prefix_messages(system, shots)

    def write(self, query: str, instruction: str, memory: str, variables: str, previous_code: str = "", error: str = "") -> str:
        user = render_prompt("reasoner_user", query=query, instruction=instruction, memory=memory, variables=variables,
                             previous_code=previous_code, error=error)
        res = self.llm.chat([*self._prefix, ChatMessage("user", user)], max_tokens=self.max_tokens)
        return extract_code(res.text)

    def write_whole_program(self, query: str, previous_code: str = "", error: str = "") -> str:
        """ViperGPT mode: one program straight from the query, no planner."""
        # the task's own ending: told "a short string" and "ask simple_query", grounding programs returned
        # simple_query's text, not a patch, in 53 of 61 labelled episodes (50 then ran the fallback)
        user = render_prompt("vipergpt_user", query=query, task=self.prompts.task, previous_code=previous_code, error=error)
        res = self.llm.chat([*self._prefix, ChatMessage("user", user)], max_tokens=self.max_tokens)
        return extract_code(res.text)


def _prefix_messages(system: str, shots: list[tuple[str, str]]) -> list[ChatMessage]:
    """System prompt then example (user, assistant) turns: the stable prefix of every call."""
    messages = [ChatMessage("system", system)]
    for user, assistant in shots:
        messages += [ChatMessage("user", user), ChatMessage("assistant", assistant)]
    return messages


def fallback_program(query: str, task: Task, last_resort: bool = False) -> str:
    """A ViperGPT-style last resort when every generated program failed.

    ``last_resort``: the episode ends with this program (no later step may find a box), so where no name finds
    anything, a grounding of an expression that tells its thing from no other ("the rocket", not "the tower on the left") takes
    the region that stands out from the photo by colour: the thing is there, and a photo's subject stands out."""
    if task == "grounding":
        # The first name the detector finds anything for (the head noun usually comes first: "the girl
        # in the yellow raincoat"); the expression then picks among those boxes. Where no name finds anything,
        # the thing is still there (the expression names it): the detector's likeliest box for the first name it
        # has a class for. The whole image at worst.
        names = expression_names(query)
        standout = last_resort and names_one_thing(query)
        return (
            "image_patch = ImagePatch(image)\n"
            "candidates = []\n"
            f"for name in {names!r}:\n"
            "    candidates = image_patch.find(name)\n"
            "    if candidates:\n"
            "        break\n"
            f"for name in ([] if candidates else {names!r}):\n"
            "    candidates = image_patch.find(name, presumed=True)\n"
            "    if candidates:\n"
            "        break\n"
            + ("candidates = candidates or image_patch.standout()\n" if standout else "")
            + f"final_answer = best_image_match(candidates, [{query!r}]) if candidates else image_patch\n"
        )
    return f"image_patch = ImagePatch(image)\nfinal_answer = image_patch.simple_query({query!r})\n"


@dataclass
class Decision:
    kind: str  # "answer" | "continue"
    answer: str | None
    note: str | None = None  # why an answer was refused (shown to the planner in the memory)


_DECISION = {"decision": {"type": "string", "enum": ["answer", "continue"]}}


class Summarizer:
    def __init__(self, llm: ChatModel, prompts: PromptSet, max_tokens: int = 48, retries: int = 1) -> None:
        self.llm, self.prompts, self.max_tokens, self.retries = llm, prompts, max_tokens, retries
        self._system = render_prompt("summarizer_system", task_description=prompts.task_description, task=prompts.task)
        shots = [(render_prompt("summarizer_user", query=ex["query"], memory=ex["memory"].strip(),
                                expected=expected_type(ex["query"]).describe()),
                  json.dumps({"decision": ex["decision"], "answer": str(ex.get("answer", ""))}))
                 for ex in prompts.examples.get("summarizer", [])]
        self._prefix = _prefix_messages(self._system, shots)
        self._final_system = render_prompt("final_answer_system", task_description=prompts.task_description)

    def decide(self, query: str, memory: str, spec: AnswerSpec | None = None) -> Decision:
        """Answer or continue; an answer that does not fit ``spec`` is re-asked with the reason, then refused."""
        spec = spec or expected_type(query)
        messages = [*self._prefix, ChatMessage("user", render_prompt("summarizer_user", query=query, memory=memory,
                                                                      expected=spec.describe()))]
        schema = answer_schema(spec, extra=_DECISION)
        note = None
        for _ in range(self.retries + 1):
            res = self.llm.chat(messages, max_tokens=self.max_tokens, json_schema=schema)
            text = res.text.strip()
            data = parse_json_reply(text)
            decision = str(data.get("decision", "")).lower()
            # a reply cut inside the decision word still says which it began
            decision = next((d for d in ("answer", "continue") if decision and d.startswith(decision)), decision)
            if decision not in ("answer", "continue"):
                # Unparseable: a bare "continue" is that, anything else an answer to check.
                decision = "continue" if "continue" in text.lower() or not text else "answer"
                raw = text if decision == "answer" else ""
            else:
                raw = "" if data.get("answer") is None else str(data.get("answer"))
            if decision == "continue" or clean(raw) == "continue":
                return Decision("continue", None, note)
            value = spec.coerce(raw)
            if value is not None:
                return Decision("answer", value)
            note = f"the summarizer's answer was refused: {spec.check(raw)}"
            messages += [ChatMessage("assistant", text or "{}"),
                         ChatMessage("user", f"That answer does not fit: {spec.check(raw)} Answer with the right kind of "
                                             "answer, or reply continue if the steps do not say.")]
        return Decision("continue", None, note)

    def final_answer(self, query: str, memory: str, guesses: list[str], spec: AnswerSpec | None = None) -> str | None:
        """The best answer of the right type from the steps, or None when the LLM gives none that fits."""
        spec = spec or expected_type(query)
        user = render_prompt("final_answer_user", query=query, memory=memory, guesses=guesses, expected=spec.describe())
        reply = ask_typed(self.llm, [ChatMessage("system", self._final_system), ChatMessage("user", user)], spec,
                          max_tokens=24, retries=self.retries)
        return reply.answer


# One normalisation of short answers for every role (kept under its old name for callers).
normalize_short_answer = clean


__all__ = ["Decision", "LLMError", "Planner", "PromptSet", "Reasoner", "Summarizer", "fallback_program", "normalize_short_answer", "planner_reply", "planner_schema"]
