"""Record episodes of the real loop for offline training (see :mod:`hydra_vr.training.episodes`).

:class:`EpisodeRecorder` runs ``HydraAgent.run`` with two hooks:

- a wrapping controller logs every planner round (options, probabilities, choice, REPLANs) and
  chooses with the recording policy (planner probability by default, a DQN, ...), or, with
  probability ``epsilon``, uniformly among the options and REPLAN (while allowed);
- the loop's ``observer`` closes each step. With ``explore="all"`` it also executes every option
  the loop did not choose, on a *side* sandbox: reset, replay the programs of the steps already
  taken (their final code) to rebuild the namespace, run the option (reasoner, retries, fallback,
  via ``HydraAgent.execute``), textualize it, and ask the summarizer whether that memory answers
  the query, exactly as the loop would at that step. Its output is scored against the ground truth.
  That costs (N - 1) programs plus (N - 1) * (t - 1) replayed ones, and LLM calls, per step t;
  ``explore="chosen"`` records only the executed option.

Caveats: the side namespace is rebuilt from each step's last attempt, so variables a failed
attempt assigned before the working one are missing there; tool calls are not cached across
replays unless the toolbox caches them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra_vr.agent.loop import HydraAgent, _boxes_of
from hydra_vr.agent.roles import normalize_short_answer
from hydra_vr.agent.types import Option, StepTrace
from hydra_vr.controller.base import REPLAN, Controller, ControllerState
from hydra_vr.controller.observation import ObservationEncoder, memory_tail
from hydra_vr.datasets import Sample
from hydra_vr.memory import MemoryEntry, StateMemoryBank, textualize_step
from hydra_vr.training.episodes import OptionOutcome, RecordedEpisode, RecordedOption, RecordedRound, RecordedStep
from hydra_vr.training.reward import reward_metric

EXPLORE_MODES = ("all", "chosen")


@dataclass
class _Round:
    step: int
    options: list[str]
    probabilities: list[float]
    choice: int


@dataclass
class _Step:
    step: int
    memory: str
    rounds: list[_Round]
    outcomes: list[OptionOutcome]


@dataclass
class _EpisodeLog:
    rounds: list[_Round] = field(default_factory=list)
    steps: list[_Step] = field(default_factory=list)
    bank: StateMemoryBank | None = None
    codes: list[str] = field(default_factory=list)  # the programs whose variables the namespace holds


class _LoggingController:
    """Chooses with ``inner`` (or at random with probability ``epsilon``) and logs every round."""

    name = "recording"

    def __init__(self, inner: Controller, log: _EpisodeLog, epsilon: float, rng: random.Random) -> None:
        self.inner, self.log, self.epsilon, self.rng = inner, log, epsilon, rng

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int:
        if options and self.rng.random() < self.epsilon:
            actions = list(range(len(options))) + ([REPLAN] if state.replans < state.max_replans else [])
            choice = self.rng.choice(actions)
        else:
            choice = self.inner.select(options, probabilities, state)
        self.log.rounds.append(_Round(state.step, list(options), list(probabilities), choice))
        return choice


class EpisodeRecorder:
    """Records one sample at a time: ``record(sample, dataset) -> RecordedEpisode``.

    ``agent`` is a ready :class:`HydraAgent`; its controller is the recording policy. ``side_runner``
    (a second sandbox on the agent's toolbox) is needed for ``explore="all"``; the caller owns it.
    """

    def __init__(self, agent: HydraAgent, encoder: ObservationEncoder, *, explore: str = "all",
                 side_runner: Any = None, epsilon: float = 0.0, seed: int = 0) -> None:
        if explore not in EXPLORE_MODES:
            raise ValueError(f"explore must be one of {EXPLORE_MODES}, not {explore!r}")
        if explore == "all" and side_runner is None:
            raise ValueError("explore='all' needs a side_runner (a second Sandbox) to execute the other options")
        self.agent, self.encoder, self.explore = agent, encoder, explore
        self.side_runner, self.epsilon = side_runner, epsilon
        self.rng = random.Random(seed)
        self._side_agent = HydraAgent(agent.config, agent.llm, agent.toolbox, side_runner) if side_runner is not None else None

    # ------------------------------------------------------------------ run
    def record(self, sample: Sample, dataset: str) -> RecordedEpisode:
        log = _EpisodeLog(bank=StateMemoryBank(sample.query))
        controller, observer = self.agent.controller, self.agent.observer
        self.agent.controller = _LoggingController(controller, log, self.epsilon, self.rng)
        self.agent.observer = lambda state, options, choice, trace: self._observe(sample, dataset, log, state, options, trace)
        try:
            result = self.agent.run(str(sample.image_path), sample.query, sample.task)
        finally:
            self.agent.controller, self.agent.observer = controller, observer
        if log.steps:  # the last executed option ended the episode: its outcome is the episode's
            last = log.steps[-1]
            chosen = last.outcomes[last.rounds[-1].choice]
            chosen.final, chosen.answer, chosen.boxes = True, result.answer, list(result.boxes)
            chosen.metric = reward_metric(sample, dataset, result.answer, result.boxes)
        return self._episode(sample, dataset, log, result)

    def _observe(self, sample: Sample, dataset: str, log: _EpisodeLog, state: ControllerState,
                 options: list[Option], trace: StepTrace) -> None:
        rounds = [r for r in log.rounds if r.step == state.step]
        rounds[-1].choice = trace.choice  # the loop's own choice (after a REPLAN past the bound, its fallback)
        outcomes: list[OptionOutcome] = []
        for i, option in enumerate(options):
            if i == trace.choice:
                outcomes.append(OptionOutcome(True, trace.feedback, bool(trace.result.get("ok")), trace.decision, trace.guess))
            elif self.explore == "all":
                outcomes.append(self._try_option(sample, dataset, log, option.instruction))
            else:
                outcomes.append(OptionOutcome())
        log.steps.append(_Step(state.step, state.memory_text, rounds, outcomes))
        assert log.bank is not None
        log.bank.add(MemoryEntry(trace.step, trace.instruction, trace.code, trace.feedback, trace.result.get("variables", []),
                                 bool(trace.result.get("ok")), trace.guess))
        log.codes.append(trace.code)

    def _try_option(self, sample: Sample, dataset: str, log: _EpisodeLog, instruction: str) -> OptionOutcome:
        """Run one unchosen option from the state before this step, as the loop would have."""
        agent, side, toolbox = self.agent, self._side_agent, self.agent.toolbox
        assert side is not None and log.bank is not None
        image, task = str(sample.image_path), sample.task
        _, reasoner, summarizer = agent.roles(task)  # type: ignore[arg-type]
        self.side_runner.reset()
        for code in log.codes:
            self.side_runner.run(code, image)
        if toolbox is not None:
            toolbox.drain_calls()  # the replayed steps' calls are not this option's
        attempts, program = side.execute(reasoner, image, sample.query, task, instruction, log.bank)  # type: ignore[arg-type]
        feedback = textualize_step(program, toolbox.drain_calls() if toolbox is not None else [])
        ok = bool(program.ok)
        guess = None
        if ok and program.has_final_answer and task == "vqa" and not isinstance(program.final_answer, (dict, list)):
            guess = normalize_short_answer(str(program.final_answer))
        boxes = _boxes_of(program.final_answer) if ok and program.has_final_answer else []
        if task == "grounding":
            decision, answer = ("answer" if boxes else "continue"), None
        elif agent.max_steps == 1:
            decision, answer = "answer", guess
        else:
            entry = MemoryEntry(len(log.bank.entries) + 1, instruction, attempts[-1].code, feedback,
                                [v.to_dict() for v in program.variables], ok, guess)
            memory = StateMemoryBank(log.bank.query, [*log.bank.entries, entry], log.bank.max_chars)
            d = summarizer.decide(sample.query, memory.render())
            decision, answer = d.kind, d.answer or (guess if d.kind == "answer" else None)
        final = decision == "answer"
        metric = reward_metric(sample, dataset, answer, boxes) if final else None
        return OptionOutcome(True, feedback, ok, decision, answer or guess, boxes, metric, final)

    # ------------------------------------------------------------- episode
    def _episode(self, sample: Sample, dataset: str, log: _EpisodeLog, result: Any) -> RecordedEpisode:
        enc = self.encoder
        texts = [sample.query] + [memory_tail(s.memory, enc.memory_chars) for s in log.steps]
        texts += [o for s in log.steps for r in s.rounds for o in r.options]
        table = enc.embed_texts(texts)
        steps = [RecordedStep(
            s.step, s.memory, table[memory_tail(s.memory, enc.memory_chars)],
            [RecordedRound([RecordedOption(o, p, table[o]) for o, p in zip(r.options, r.probabilities)], r.choice) for r in s.rounds],
            s.outcomes) for s in log.steps]
        gt = {k: v for k, v in {"answers": list(sample.answers), "answer": sample.answer, "choices": sample.choices,
                                "correct_choice": sample.correct_choice,
                                "box": list(sample.box) if sample.box is not None else None}.items() if v not in (None, [])}
        return RecordedEpisode(
            id=sample.id, query=sample.query, task=sample.task, gt=gt, embedding_name=enc.embedding_name,
            embedding_dim=enc.embedding_dim, num_options=enc.num_options, max_steps=self.agent.max_steps,
            max_replans=self.agent.config.max_replans, query_vec=table[sample.query], steps=steps, dataset=dataset,
            image=str(sample.image_path), explore=self.explore,
            result={"answer": result.answer, "boxes": result.boxes, "steps": len(result.steps), "error": result.error,
                    "seconds": round(result.seconds, 2),
                    "metric": reward_metric(sample, dataset, result.answer, result.boxes)},
        )
