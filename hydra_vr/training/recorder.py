"""Record episodes of the real loop for offline training (see :mod:`hydra_vr.training.episodes`).

:class:`EpisodeRecorder` runs ``HydraAgent.run`` with two hooks:

- a wrapping controller logs every planner round (options, probabilities, choice, REPLANs) and
  chooses with the recording policy (planner probability by default, a DQN, ...), or, with
  probability ``epsilon``, uniformly among the options and REPLAN (while allowed);
- the loop's ``observer`` closes each step. With ``explore="all"`` it also executes every option
  the loop did not choose, on a *side* sandbox: reset, replay the programs of the steps already
  taken (their final code) to rebuild the namespace, run the option (reasoner, retries, fallback,
  the shared step :func:`hydra_vr.agent.step.run_step`), textualize it, and ask the summarizer whether that memory answers
  the query, exactly as the loop would at that step. Its output is scored against the ground truth.
  That costs (N - 1) programs plus (N - 1) * (t - 1) replayed ones, and LLM calls, per step t;
  ``explore="chosen"`` records only the executed option.

Epsilon choices are seeded per sample (``seed`` and the sample id), so an episode does not depend
on which samples a process recorded before it: a resumed run, or one spread over Ray actors
(:func:`record_with_spec`), makes the same choices.

Caveats: the side namespace is rebuilt from each step's last attempt, so variables a failed
attempt assigned before the working one are missing there; tool calls are not cached across
replays unless the toolbox caches them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra_vr.eval.sample_eval import AgentSpec

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.agent.step import EpisodeState
from hydra_vr.agent.strategies.hydra import answered_whole, execute, is_whole_query
from hydra_vr.agent.strategy import Episode
from hydra_vr.agent.types import EpisodeResult, Option, StepTrace
from hydra_vr.controller.base import REPLAN, Controller, ControllerState
from hydra_vr.controller.observation import ObservationEncoder, memory_tail
from hydra_vr.datasets import Sample
from hydra_vr.memory import MemoryEntry, StateMemoryBank
from hydra_vr.question.frame import QuestionFrame, parse
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
    frame: QuestionFrame | None = None  # the sample's question, parsed once for every unchosen option


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
        self.seed = seed
        self.rng = random.Random(seed)
        self._side_agent = HydraAgent(agent.config, agent.llm, agent.toolbox, side_runner) if side_runner is not None else None

    # ------------------------------------------------------------------ run
    def record(self, sample: Sample, dataset: str) -> RecordedEpisode:
        log = _EpisodeLog(bank=StateMemoryBank(sample.query),
                          frame=parse(sample.query, sample.choices) if sample.task == "vqa" else None)
        self.rng.seed(f"{self.seed}:{sample.id}")
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
        chosen = OptionOutcome(True, trace.feedback, bool(trace.result.get("ok")), trace.decision, trace.guess)
        # An option whose program is one this step already ran gives that option's outcome: the same code on the
        # same restored state runs the same calls, so the summarizer is not asked again (about half the options
        # of the first easy-VQA episodes repeated a program). The chosen option's outcome object is shared, so
        # the episode's final answer, filled in at the end, is its copies' too.
        seen: dict[str, OptionOutcome] = {trace.code: chosen} if trace.code else {}
        for i, option in enumerate(options):
            if i == trace.choice:
                outcomes.append(chosen)
            elif self.explore == "all":
                outcomes.append(self._try_option(sample, dataset, log, option.instruction, seen))
            else:
                outcomes.append(OptionOutcome())
        log.steps.append(_Step(state.step, state.memory_text, rounds, outcomes))
        assert log.bank is not None
        log.bank.add(MemoryEntry(trace.step, trace.instruction, trace.code, trace.feedback, trace.result.get("variables", []),
                                 bool(trace.result.get("ok")), trace.guess, trace.extra.get("note")))
        log.codes.append(trace.code)

    def _try_option(self, sample: Sample, dataset: str, log: _EpisodeLog, instruction: str,
                    seen: dict[str, OptionOutcome] | None = None) -> OptionOutcome:
        """Run one unchosen option from the state before this step, as the loop would have (the same shared step);
        ``seen``: this step's outcomes by program, reused when the reasoner writes one of them again."""
        agent, side = self.agent, self._side_agent
        assert side is not None and log.bank is not None
        image, task = str(sample.image_path), sample.task
        _, reasoner, summarizer = agent.roles(task)  # type: ignore[arg-type]
        bank = StateMemoryBank(log.bank.query, max_chars=log.bank.max_chars)
        EpisodeState.save(log.bank, log.codes).restore(bank, self.side_runner, image)
        episode = Episode(image, sample.query, task, log.frame,  # type: ignore[arg-type]
                          EpisodeResult(sample.query, task, image, agent.config.mode, None, [], []))  # type: ignore[arg-type]
        out = execute(side, reasoner, episode, instruction, bank)
        if seen is not None and out.code and out.code in seen:
            return seen[out.code]
        if task == "grounding":
            decision, answer = ("answer" if out.boxes else "continue"), None
        elif agent.max_steps == 1 or answered_whole(instruction, out):  # as the loop decides
            decision, answer = "answer", out.guess
        else:
            bank.add(MemoryEntry(len(bank.entries) + 1, instruction, out.code, out.observation,
                                 [v.to_dict() for v in out.program.variables], out.ok, out.guess, out.note))
            d = summarizer.decide(sample.query, bank.render(), episode.spec)
            decision, answer = d.kind, d.answer or (out.guess if d.kind == "answer" else None)
        final = decision == "answer"
        metric = reward_metric(sample, dataset, answer, out.boxes) if final else None
        outcome = OptionOutcome(True, out.observation, out.ok, decision, answer or out.guess, out.boxes, metric, final)
        if seen is not None and out.code:
            seen[out.code] = outcome
        return outcome

    def rerun_whole(self, episode: RecordedEpisode, sample: Sample, dataset: str) -> bool:
        """Re-run, with this code, step 1's whole-question option (:data:`~hydra_vr.agent.strategies.hydra.WHOLE_QUERY`)
        of a recorded VQA episode where it was executed and did not end the episode; True when it now does.

        Why only that option: a whole-question program that fails now runs the fallback program, and its typed
        answer ends the episode (:func:`~hydra_vr.agent.strategies.hydra.execute`). Episodes recorded before that
        hold "continue" there, so a controller trained on them undervalues the option. An option that answered is
        left as it was. Where the loop had chosen that option, the steps after it are dropped and the episode's
        result becomes the option's: the loop would have stopped there. The other options keep their recording."""
        if sample.task != "vqa" or not episode.steps:
            return False
        first = episode.steps[0]
        options = first.executed.options
        slot = next((i for i, o in enumerate(options) if is_whole_query(o.instruction)), None)
        if slot is None or slot >= len(first.outcomes) or not first.outcomes[slot].recorded or first.outcomes[slot].final:
            return False
        log = _EpisodeLog(bank=StateMemoryBank(sample.query), frame=parse(sample.query, sample.choices))
        outcome = self._try_option(sample, dataset, log, options[slot].instruction)
        if not outcome.final:
            return False
        first.outcomes[slot] = outcome
        episode.result = {**episode.result, "whole_rerun": True}  # marks what this code re-ran
        if first.executed.choice == slot:
            del episode.steps[1:]
            episode.result.update(answer=outcome.answer, boxes=outcome.boxes, steps=1, metric=outcome.metric)
        return True

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


# ----------------------------------------------------------------------------- one per process
@dataclass(frozen=True)
class RecordSpec:
    """Everything needed to build a recorder in another process (a Ray actor): picklable."""

    agent: AgentSpec
    explore: str = "all"
    epsilon: float = 0.0
    seed: int = 0

    def key(self) -> str:
        return f"{self.agent.key()}|{self.explore}|{self.epsilon}|{self.seed}"


def build_recorder(spec: RecordSpec) -> EpisodeRecorder:
    """The agent, the observation encoder and (for ``explore="all"``) the side sandbox, built here."""
    from hydra_vr.controller.observation import ObservationEncoder
    from hydra_vr.llm import build_embedder
    from hydra_vr.sandbox import Sandbox
    from hydra_vr.training.settings import load_training_config

    cfg = spec.agent.config
    agent = spec.agent.build()
    encoder = ObservationEncoder(build_embedder(cfg.embedding, cfg.cache_path), cfg.agent.num_options,
                                 load_training_config().observation.memory_chars)
    side = Sandbox(agent.toolbox, config=cfg.sandbox) if spec.explore == "all" else None
    return EpisodeRecorder(agent, encoder, explore=spec.explore, side_runner=side, epsilon=spec.epsilon, seed=spec.seed)


def close_recorder(recorder: EpisodeRecorder) -> None:
    """Stop the sandbox children :func:`build_recorder` started."""
    for runner in (recorder.agent.runner, recorder.side_runner):
        if runner is not None and hasattr(runner, "close"):
            runner.close()


_PROCESS_RECORDER: dict[str, EpisodeRecorder] = {}  # filled only in the process that records


def record_with_spec(spec: RecordSpec, dataset: str, sample: Sample) -> dict[str, Any]:
    """One episode as a JSON-able dict, with this process's recorder for ``spec`` (built once)."""
    key = spec.key()
    if key not in _PROCESS_RECORDER:
        for old in _PROCESS_RECORDER.values():
            close_recorder(old)
        _PROCESS_RECORDER.clear()
        _PROCESS_RECORDER[key] = build_recorder(spec)
    return _PROCESS_RECORDER[key].record(sample, dataset).to_dict()
