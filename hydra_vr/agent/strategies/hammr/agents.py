"""HAMMR's agents: what each may call, how its tools read in its prompt, and its few-shot turns.

Specialists follow STRATEGIES.md section 1.2 [ours]: spatial/attribute (GQA), counting, text/OCR,
knowledge (identify, recall, answer with context, two-hop split) and grounding (returns a patch).
The flat baseline is one agent with every tool. Tool docs are generated from the live ImagePatch
API (first docstring line and signature), so the prompts cannot drift from the code.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Literal

from hydra_vr.agent.strategies.hammr.acts import Allowlist
from hydra_vr.answer_types import AnswerSpec, expected_type
from hydra_vr.api.helpers import API_FUNCTIONS
from hydra_vr.api.image_patch import ImagePatch
from hydra_vr.llm.base import ChatMessage
from hydra_vr.prompts import load_examples, render_prompt

EXAMPLES = "hammr"

ALL_METHODS = ("find", "exists", "verify_property", "best_text_match", "simple_query", "read_text", "compute_depth", "crop",
               "overlaps_with")
ALL_FUNCTIONS = tuple(f.__name__ for f in API_FUNCTIONS)
LLM_TOOLS = {
    "Recall": ("Recall(entity: str) -> str", "what the language model itself knows about entity (its own memory, not a source)"),
    "AnswerWithContext": ("AnswerWithContext(question: str, context: str) -> str", "a short answer to question using the context text"),
    "DecomposeQuestion": ("DecomposeQuestion(question: str) -> list[str]",
                          "two simpler questions: the first about the image, the second about the first one's answer"),
}


@dataclass(frozen=True)
class AgentSpec:
    """One ReAct agent: its name (as a tool), its route key, its purpose and its allowlist."""

    name: str  # how other agents call it: CountingAgent("How many ...?")
    key: str  # the route label and the trace role agent:<key>
    purpose: str  # one line, for the dispatcher and the agent's own prompt
    methods: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    llm_tools: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    returns: Literal["answer", "box"] = "answer"

    @property
    def role(self) -> str:
        return "dispatcher" if self.key == "dispatcher" else f"agent:{self.key}"

    def allowlist(self) -> Allowlist:
        return Allowlist(frozenset(self.methods), frozenset(self.functions), frozenset(self.llm_tools + self.agents))


SPATIAL_FUNCTIONS = ("best_image_match", "distance", "bool_to_yesno", "sort_patches_left_to_right", "sort_patches_top_to_bottom",
                     "sort_patches_front_to_back", "get_middle_patch", "get_patch_closest_to_anchor_object",
                     "get_patch_farthest_from_anchor_object")

SPECIALISTS: tuple[AgentSpec, ...] = (
    AgentSpec("SpatialAgent", "spatial", "questions about objects, their attributes (colour, material, state) and where they are",
              methods=("find", "exists", "verify_property", "best_text_match", "simple_query", "compute_depth", "crop", "overlaps_with"),
              functions=SPATIAL_FUNCTIONS, agents=("GroundingAgent", "CountingAgent")),
    AgentSpec("CountingAgent", "counting", "questions about how many things there are",
              methods=("find", "exists", "verify_property", "simple_query", "crop")),
    AgentSpec("TextAgent", "text", "questions about text written in the image (signs, labels, numbers, brands)",
              methods=("find", "read_text", "simple_query", "crop"), functions=("sort_patches_left_to_right", "sort_patches_top_to_bottom")),
    AgentSpec("KnowledgeAgent", "knowledge", "questions that need world knowledge about what is seen (uses, origins, history, facts)",
              methods=("find", "exists", "simple_query"), llm_tools=tuple(LLM_TOOLS), agents=("SpatialAgent", "TextAgent")),
    AgentSpec("GroundingAgent", "grounding", "finding the one object a phrase refers to (returns its patch and box)",
              methods=("find", "exists", "verify_property", "best_text_match", "simple_query", "compute_depth", "crop"),
              functions=SPATIAL_FUNCTIONS, returns="box"),
)
# The paper's naive baseline: one agent with every tool and no specialists.
GENERIC = AgentSpec("GenericAgent", "generic", "any question about the image", methods=ALL_METHODS, functions=ALL_FUNCTIONS,
                    llm_tools=tuple(LLM_TOOLS))
DISPATCHER = AgentSpec("QuestionDispatcher", "dispatcher", "routing each question to the specialist agent for its type",
                       methods=("simple_query",), agents=tuple(s.name for s in SPECIALISTS if s.returns == "answer"))


def agent_table(flat: bool) -> dict[str, AgentSpec]:
    """Every agent by name (the flat baseline has one)."""
    return {GENERIC.name: GENERIC} if flat else {a.name: a for a in (*SPECIALISTS, DISPATCHER)}


def _first_line(obj: Any) -> str:
    return (inspect.getdoc(obj) or "").strip().splitlines()[0].rstrip(".").replace("``", "")


def _signature(func: Any, drop_self: bool) -> str:
    sig = inspect.signature(func)
    params = [p for p in sig.parameters.values() if p.kind is not p.KEYWORD_ONLY and not (drop_self and p.name == "self")]
    return str(sig.replace(parameters=params)).replace("'", "")


def tool_docs(spec: AgentSpec, agents: dict[str, AgentSpec]) -> str:
    """One line per tool the agent may call: signature and what it does, from the live objects."""
    helpers = {f.__name__: f for f in API_FUNCTIONS}
    lines = [f"patch.{m}{_signature(getattr(ImagePatch, m), True)}: {_first_line(getattr(ImagePatch, m))}" for m in spec.methods]
    lines += [f"{f}{_signature(helpers[f], False)}: {_first_line(helpers[f])}" for f in spec.functions]
    lines += [f"{LLM_TOOLS[t][0]}: {LLM_TOOLS[t][1]}" for t in spec.llm_tools]
    lines += [f"{a}(question: str) -> {'ImagePatch' if agents[a].returns == 'box' else 'str'}: an agent for {agents[a].purpose}"
              for a in spec.agents if a in agents]
    return "\n".join(f"- {line}" for line in lines)


def system_prompt(spec: AgentSpec, agents: dict[str, AgentSpec]) -> str:
    return render_prompt("hammr_agent_system", agent=spec.name, purpose=spec.purpose, tools=tool_docs(spec, agents),
                         returns=spec.returns)


def question_prompt(question: str, spec: AnswerSpec | None) -> str:
    """The agent's question, with the answer type it must finish with (none for a box)."""
    return render_prompt("hammr_agent_user", question=question, expects=spec.describe() if spec else "", box=spec is None)


def example_turns(spec: AgentSpec) -> list[ChatMessage]:
    """The agent's few-shot traces as earlier chat turns (user question, assistant Thought/Act, user Observe)."""
    data = load_examples(EXAMPLES)["agents"]
    if spec.name == GENERIC.name:  # the flat agent sees one trace of each kind, as in the paper's naive baseline
        traces = [data[a.name][0] for a in SPECIALISTS if a.returns == spec.returns]
    else:
        traces = data[spec.name]
    messages: list[ChatMessage] = []
    for trace in traces:
        q = trace["question"]
        messages.append(ChatMessage("user", question_prompt(q, None if spec.returns == "box" else expected_type(q))))
        for turn in trace["turns"]:
            head = f"Thought: {turn['thought']}\n"
            if "finish" in turn:
                messages.append(ChatMessage("assistant", f"{head}Finish: {turn['finish']}"))
            else:
                messages.append(ChatMessage("assistant", f"{head}Act: {turn['act']}"))
                messages.append(ChatMessage("user", f"Observe: {turn['observe']}"))
    return messages


def dispatch_messages(routes: list[AgentSpec]) -> list[ChatMessage]:
    """The dispatcher's stable prefix: the agents it may choose and its routing examples."""
    system = render_prompt("hammr_dispatch_system", agents=[(a.key, a.purpose) for a in routes])
    messages = [ChatMessage("system", system)]
    keys = {a.key for a in routes}
    for ex in load_examples(EXAMPLES)["dispatcher"]:
        if ex["agent"] in keys:
            messages += [ChatMessage("user", f"Question: {ex['question']}"), ChatMessage("assistant", f'{{"agent": "{ex["agent"]}"}}')]
    return messages


__all__ = ["AgentSpec", "DISPATCHER", "GENERIC", "LLM_TOOLS", "SPECIALISTS", "agent_table", "dispatch_messages", "example_turns",
           "question_prompt", "system_prompt", "tool_docs"]
