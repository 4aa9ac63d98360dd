"""Batch evaluation on the official-schema fixtures: the real loop, sandbox and embedded toolbox,
with a scripted LLM whose programs are real; scores checked against the official metrics."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from skimage import data_dir
from typer.testing import CliRunner

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.cli.main import app
from hydra_vr.config import AgentConfig, load_config
from hydra_vr.datasets import load_dataset
from hydra_vr.eval.metrics import aokvqa_direct_answer, any_answer_match, box_iou, gqa_exact_match, vqa_accuracy
from hydra_vr.eval.runner import EvalError, EvalSettings, RunDirError, _worker_spec, run_eval
from hydra_vr.eval.sample_eval import AgentSpec, evaluate_sample
from hydra_vr.eval.scoring import choose_option
from hydra_vr.eval.store import RunLock
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.llm.wrapper import ManagedChatModel
from hydra_vr.sandbox import Sandbox

FIXTURES = Path(__file__).parent / "fixtures" / "datasets"
SKIMAGE = Path(data_dir)
REPO = Path(__file__).resolve().parents[1]

# Query -> the program the scripted reasoner writes for it: real ImagePatch calls whose results it reads, since an
# answer written down by a program that looked at nothing, or only at whether something is there, is refused (the
# literal_answer check).
LOOK = 'people = ImagePatch(image).find("person")\nwide = people[0].width if people else 0\n'
PROGRAMS = {
    "Is there a cup to the left of the cat?": 'final_answer = bool_to_yesno(ImagePatch(image).exists("cup"))',
    "Who is wearing the suit?": LOOK + 'final_answer = "astronaut"',
    "What color is the flag?": LOOK + 'final_answer = "the white"',  # exact 0, normalised 1
    "What sport can you use this for?": LOOK + 'final_answer = "racing"',
    "What is in the motorcyclist's mouth?": LOOK + 'final_answer = "a cigarette"',
    "What is the cat looking at?": LOOK + 'final_answer = "birds"',  # maps to the wrong choice "bird"
    "man in white suit": "final_answer = ImagePatch(image).crop(100, 20, 300, 500)",
    # no box: a grounding failure (the names' fallback finds no moon either; "astronaut" would find the person; the
    # expression places its thing, so the region standing out in the photo is no stand-in for it)
    "the moon on the left": 'giraffes = ImagePatch(image).find("giraffe")',
    "How many people are there?": 'final_answer = str(len(ImagePatch(image).find("person")))',
    "the person": 'final_answer = ImagePatch(image).find("person")[0]',
}
PLAN = json.dumps({"instructions": [{"instruction": "Answer the query", "probability": 1.0}], "answer": ""})


def scripted_rule(messages):
    """Planner -> one instruction; reasoner -> the query's program (roles told by system prompt)."""
    system, user = messages[0].content, messages[-1].content
    query = re.search(r"Query: (.*)", user).group(1).strip()
    if "You plan the next step" in system:
        return PLAN
    if "You write short Python programs" in system:
        return f"```python\n{PROGRAMS[query]}\n```"
    raise AssertionError(f"unexpected LLM call: {system[:80]!r}")


def _copy(src: str, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SKIMAGE / src, dst)  # PIL reads by content: a PNG under a .jpg name is fine


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The committed fixtures plus real scikit-image pictures under the official file names."""
    root = tmp_path_factory.mktemp("data")
    shutil.copytree(FIXTURES, root, dirs_exist_ok=True)
    _copy("chelsea.png", root / "gqa" / "images" / "n161313.jpg")
    _copy("astronaut.png", root / "gqa" / "images" / "2354786.jpg")
    _copy("motorcycle_left.png", root / "coco" / "val2014" / "COCO_val2014_000000297147.jpg")
    # COCO_val2014_000000393225.jpg is left missing: that OK-VQA sample must become an error record.
    _copy("motorcycle_left.png", root / "coco" / "val2017" / "000000461751.jpg")
    _copy("chelsea.png", root / "coco" / "val2017" / "000000100026.jpg")
    _copy("astronaut.png", root / "coco" / "train2014" / "COCO_train2014_000000581857.jpg")
    refs = [{"ref_id": 0, "ann_id": 1719310, "image_id": 581857, "split": "testA", "category_id": 1,
             "sentences": [{"sent_id": 1, "sent": "man in white suit"}, {"sent_id": 2, "sent": "the moon on the left"}]}]
    (root / "refcoco" / "refcoco" / "refs(unc).p").write_bytes(pickle.dumps(refs))
    _copy("astronaut.png", root / "user" / "astro.png")
    rows = [{"id": "u1", "image": "astro.png", "question": "How many people are there?", "answers": ["1", "one"],
             "category": "people"},
            {"id": "u2", "image": "astro.png", "question": "the person", "box": [100, 20, 300, 500], "task": "grounding",
             "category": "people"}]
    (root / "user" / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture(scope="module")
def sandbox(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=10) as sb:
        yield sb


@pytest.fixture
def make_agent(embedded_toolbox, sandbox):
    def make(mode: str = "one_step", rule=scripted_rule, disabled_checks: tuple[str, ...] = ()) -> HydraAgent:
        llm = ManagedChatModel(ScriptedChat(rule=rule), cache=False)  # as built from a config: counts usage
        return HydraAgent(AgentConfig(mode=mode, max_steps=2), llm, embedded_toolbox, sandbox, disabled_checks=disabled_checks)

    return make


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(data: Path, tmp_path: Path, agent: HydraAgent, dataset: str, root: str, **options):
    samples = load_dataset(dataset, data / root, **options)
    settings = EvalSettings(dataset=dataset, data_root=str(data / root), mode=agent.config.mode, options=options)
    outcome = run_eval(samples, tmp_path / "run", settings, agent=agent)
    resumed = run_eval(samples, tmp_path / "run", settings, agent=agent)  # same settings (paths too): all skipped
    assert (resumed.already_done, resumed.evaluated, resumed.report) == (len(samples), 0, outcome.report)
    by_id = {r["id"]: r for r in _lines(tmp_path / "run" / "results.jsonl")}
    assert list(by_id) == [s.id for s in samples]  # one line per sample, in order
    for r in by_id.values():
        if r["trace"]:
            trace = json.loads((tmp_path / "run" / r["trace"]).read_text())
            assert trace["query"] == r["query"] and len(trace["steps"]) == r["steps"] >= 1
    return outcome, by_id, tmp_path / "run"


def _json(path: Path):
    return json.loads(path.read_text())


# --------------------------------------------------------------------------------------------
# Full runs per dataset
# --------------------------------------------------------------------------------------------


def test_gqa_run_records_report_and_prediction_file(data, tmp_path, make_agent):
    outcome, by_id, run = _run(data, tmp_path, make_agent(), "gqa", "gqa")
    cat, suit, flag = by_id["20968379"], by_id["201307251"], by_id["20543396"]
    assert cat["prediction"] in ("yes", "no")  # the real detector decided
    assert cat["score"] == gqa_exact_match(cat["prediction"], "yes")
    assert (suit["prediction"], suit["score"]) == ("astronaut", 1.0)
    assert flag["prediction"] == "the white" and flag["scores"] == {"exact_match": 0.0, "normalized_match": 1.0}
    assert cat["meta"]["types"]["structural"] == "verify" and cat["gt"] == {"answers": ["yes"], "answer": "yes"}
    assert cat["llm"]["calls"] == 2 and cat["llm"]["prompt_tokens"] > 0 and cat["steps"] == 1
    assert cat["error"] is None and cat["mode"] == "one_step" and cat["seconds"] > 0

    report = outcome.report
    assert report == _json(run / "report.json")
    assert (report["n"], report["errors"], report["main_metric"]) == (3, 0, "exact_match")
    assert report["score"] == round(100 * (cat["score"] + 1) / 3, 2)
    assert report["metrics"]["normalized_match"]["score"] == round(100 * (cat["score"] + 2) / 3, 2)
    assert report["breakdowns"]["binary_open"]["open"] == {"score": 50.0, "normalized": 100.0, "n": 2}
    assert report["breakdowns"]["binary_open"]["binary"]["n"] == 1
    assert set(report["breakdowns"]["structural"]) == {"verify", "query"}
    assert report["breakdowns"]["semantic"]["attr"] == {"score": 0.0, "normalized": 100.0, "n": 1}
    assert report["cost"]["llm_calls"] == 6 and report["cost"]["mean_steps"] == 1.0
    md = (run / "report.md").read_text()
    assert "| gqa | testdev | one_step | 3 | 0 | exact_match |" in md and "## By structural" in md

    assert _json(run / "predictions" / "testdev_predictions.json") == [
        {"questionId": "20968379", "prediction": cat["prediction"]},
        {"questionId": "201307251", "prediction": "astronaut"},
        {"questionId": "20543396", "prediction": "the white"},
    ]


def test_okvqa_missing_image_is_an_error_record_not_a_crash(data, tmp_path, make_agent):
    outcome, by_id, run = _run(data, tmp_path, make_agent(), "okvqa", "okvqa", coco_root=data / "coco")
    ok, missing = by_id["2971475"], by_id["3932255"]
    assert ok["prediction"] == "racing" and ok["metric"] == "vqa_accuracy"
    assert ok["score"] == vqa_accuracy("racing", ok["gt"]["answers"]) == 1.0
    assert missing["crashed"] and "COCO_val2014_000000393225.jpg" in missing["error"] and missing["score"] == 0.0
    assert (outcome.report["errors"], outcome.report["crashed"], outcome.report["score"]) == (1, 1, 50.0)
    assert _json(run / "predictions" / "OpenEnded_mscoco_val2014_hydra_results.json") == [
        {"question_id": 2971475, "answer": "racing"}, {"question_id": 3932255, "answer": ""},
    ]


def test_aokvqa_direct_answer_and_multiple_choice(data, tmp_path, make_agent):
    outcome, by_id, run = _run(data, tmp_path, make_agent(), "aokvqa", "aokvqa", coco_root=data / "coco")
    mouth, cat = by_id["22jbM6gDxdaMaunuzgrsBB"], by_id["2EJ5aw4gJvwSiAxo7cjGs6"]
    assert mouth["choice"] == "cigarette" and mouth["scores"] == {"direct_answer": 1.0, "multiple_choice": 1.0}
    assert mouth["scores"]["direct_answer"] == aokvqa_direct_answer("a cigarette", mouth["gt"]["answers"])
    assert cat["choice"] == "bird" and cat["scores"]["multiple_choice"] == 0.0
    assert cat["meta"]["difficult_direct_answer"] is True
    metrics = outcome.report["metrics"]
    # DA skips difficult questions (official); MC counts both.
    assert metrics["direct_answer"] == {"score": 100.0, "n": 1}
    assert metrics["multiple_choice"] == {"score": 50.0, "n": 2}
    unified = _json(run / "predictions" / "predictions_val.json")
    assert unified == {
        "22jbM6gDxdaMaunuzgrsBB": {"multiple_choice": "cigarette", "direct_answer": "a cigarette"},
        "2EJ5aw4gJvwSiAxo7cjGs6": {"multiple_choice": "bird", "direct_answer": "birds"},
    }
    assert _json(run / "predictions" / "predictions_val-mc.json") == {"22jbM6gDxdaMaunuzgrsBB": "cigarette", "2EJ5aw4gJvwSiAxo7cjGs6": "bird"}
    assert _json(run / "predictions" / "predictions_val-da.json")["22jbM6gDxdaMaunuzgrsBB"] == "a cigarette"


def test_refcoco_iou_accuracy_failures_and_box_file(data, tmp_path, make_agent):
    outcome, by_id, run = _run(data, tmp_path, make_agent(mode="no_rl"), "refcoco", "refcoco", coco_root=data / "coco")
    hit, failed = by_id["1"], by_id["2"]
    gt = [100.0, 20.0, 300.5, 500.0]
    assert hit["gt"]["box"] == gt and hit["boxes"] == [[100.0, 20.0, 300.0, 500.0]]
    assert hit["scores"] == {"acc@0.5": 1.0, "iou": box_iou(hit["boxes"][0], gt)}
    assert failed["boxes"] == [] and "no box" in failed["error"] and failed["scores"] == {"acc@0.5": 0.0, "iou": 0.0}
    # the scripted planner only repeats its one step: the loop stops after it, tries the expression's
    # names with the detector (a traced fallback step that finds nothing here), and ends with no box, cleanly
    assert failed["steps"] == 2 and not failed["crashed"] and "the planner had no new step" in failed["error"]
    g = outcome.report["grounding"]
    assert g == {"acc@0.5": 50.0, "miou": round(100 * box_iou(hit["boxes"][0], gt) / 2, 2), "failure_rate": 50.0, "n": 2}
    assert _json(run / "predictions" / "refcoco_unc_testA_boxes.json") == [
        {"ref_id": 0, "sent_id": 1, "image_id": 581857, "box": [100.0, 20.0, 300.0, 500.0]},
        {"ref_id": 0, "sent_id": 2, "image_id": 581857, "box": None},
    ]


def test_user_file_mixes_vqa_and_grounding(data, tmp_path, make_agent):
    outcome, by_id, run = _run(data, tmp_path, make_agent(), "user", "user")
    count, box = by_id["u1"], by_id["u2"]
    # the answers are alternatives: 1 when the prediction matches either, not VQA's 10-annotator accuracy
    assert count["metric"] == "answer_match"
    assert count["score"] == any_answer_match(count["prediction"], ["1", "one"]) == float(count["prediction"] == "1")
    assert box["metric"] == "acc@0.5" and box["boxes"]  # NanoDet finds the astronaut
    assert box["scores"]["iou"] == box_iou(box["boxes"][0], [100, 20, 300, 500])
    report = outcome.report
    assert report["vqa"] == {"n": 1, "n_scored": 1, "metric": "answer_match", "score": 100 * count["score"]}
    assert report["grounding"]["n"] == 1 and report["grounding"]["acc@0.5"] == 100 * box["score"]
    assert "acc@0.5" not in report["metrics"] and (run / "report.md").read_text().count("acc@0.5") == 1
    assert report["breakdowns"]["category"] == {"people": {"score": 50 * (count["score"] + box["score"]), "n": 2}}
    assert report["answer_fit"]["by_kind"] == {"number": {"n": 1, "misfit": 0, "share": 0.0}}
    assert _json(run / "predictions" / "user_predictions.json")[1] == {"id": "u2", "box": box["boxes"][0]}


def test_choose_option_maps_free_answers_to_choices():
    choices = ["toothpick", "food", "popsicle stick", "cigarette"]
    assert choose_option("a cigarette", choices) == "cigarette"
    assert choose_option("stick", choices) == "popsicle stick"
    assert choose_option("cigarete", choices) == "cigarette"
    assert choose_option(None, choices) in choices


# --------------------------------------------------------------------------------------------
# Resume, settings, lock, workers
# --------------------------------------------------------------------------------------------


def _easy(limit: int):
    return load_dataset("easy-vqa", None, limit=limit)


def _counting_rule(seen: list[str]):
    def rule(messages):
        if "You write short Python programs" in messages[0].content:
            seen.append(re.search(r"Query: (.*)", messages[-1].content).group(1))
            return "```python\nseen = ImagePatch(image).exists('circle')\nfinal_answer = 'no'\n```"  # these are yes/no questions: a typed answer
        return PLAN

    return rule


def test_resume_skips_finished_ids_and_redoes_corrupt_lines(tmp_path, make_agent):
    samples = _easy(6)
    run = tmp_path / "run"
    run.mkdir()
    done = [{"id": s.id, "prediction": "PRE", "score": 1.0, "metric": "exact_match", "scores": {}} for s in samples[:3]]
    partial = json.dumps({"id": samples[4].id, "prediction": "cut"})[:25]  # a write cut short by a kill
    text = json.dumps(done[0]) + "\n" + "garbage{\n" + "".join(json.dumps(d) + "\n" for d in done[1:]) + partial
    (run / "results.jsonl").write_text(text)
    seen: list[str] = []
    settings = EvalSettings(dataset="easy-vqa", limit=6, mode="one_step")
    # the scripted program answers from nothing: the check that refuses such answers is off in this test of resuming
    outcome = run_eval(samples, run, settings, agent=make_agent(rule=_counting_rule(seen), disabled_checks=("presence_unsearched",)))
    assert (outcome.already_done, outcome.evaluated, outcome.dropped_lines) == (3, 3, 2)
    assert seen == [s.query for s in samples[3:]]  # only the unfinished samples ran the loop
    records = _lines(run / "results.jsonl")
    assert sorted(r["id"] for r in records) == sorted(s.id for s in samples)  # each id exactly once
    assert [r["prediction"] for r in records[:3]] == ["PRE"] * 3  # kept, not redone
    assert {r["id"]: r["prediction"] for r in records[3:]} == {s.id: "no" for s in samples[3:]}

    again = run_eval(samples, run, settings, agent=make_agent(rule=_counting_rule(seen)))
    assert (again.already_done, again.evaluated, len(seen)) == (6, 0, 3)


def test_other_settings_are_refused_unless_forced_and_lock_is_exclusive(tmp_path, make_agent):
    samples = _easy(2)
    run = tmp_path / "run"
    agent = make_agent(rule=_counting_rule([]))
    run_eval(samples, run, EvalSettings(dataset="easy-vqa", limit=2, mode="one_step"), agent=agent, progress=True)
    other = EvalSettings(dataset="easy-vqa", limit=2, mode="vipergpt")
    with pytest.raises(RunDirError, match=r"other settings \(mode: 'one_step' -> 'vipergpt'\).*--force"):
        run_eval(samples, run, other, agent=agent)
    outcome = run_eval(samples, run, other, agent=agent, force=True)
    assert outcome.report["mixed_settings"] is True
    assert _json(run / "run.json")["previous"][0]["mode"] == "one_step"
    with RunLock(run), pytest.raises(RunDirError, match="in use by another eval run"):
        run_eval(samples, run, other, agent=agent)
    run_eval(samples, run, other, agent=agent)  # released again


def test_a_longer_limit_extends_the_same_run(tmp_path, make_agent):
    run, seen = tmp_path / "run", []
    agent = make_agent(rule=_counting_rule(seen))
    run_eval(_easy(2), run, EvalSettings(dataset="easy-vqa", limit=2, mode="one_step"), agent=agent)
    more = run_eval(_easy(5), run, EvalSettings(dataset="easy-vqa", limit=5, mode="one_step"), agent=agent)
    assert (more.already_done, more.evaluated, len(seen)) == (2, 3, 5)  # only the 3 new samples ran
    assert _json(run / "run.json")["settings"]["limit"] == 5 and _json(run / "run.json")["previous"] == []
    assert more.report["n"] == 5 and not more.report.get("mixed_settings")


def test_exception_in_the_agent_becomes_an_error_record(tmp_path):
    class Broken:
        config = AgentConfig(mode="no_rl")

        def run(self, image_path, query, task, choices=None):
            raise RuntimeError("backend exploded")

    (sample,) = _easy(1)
    record = evaluate_sample(Broken(), sample, "easy-vqa", tmp_path)
    assert record["crashed"] and record["error"] == "RuntimeError: backend exploded"
    assert record["score"] == 0.0 and record["prediction"] is None and record["mode"] == "no_rl"
    json.dumps(record)  # JSON-able
    assert not list(tmp_path.iterdir())  # no trace for a crash


def _scripted_config(path: Path, mode: str = "one_step") -> Path:
    """A config file whose scripted LLM needs no Python callable, for worker processes and the CLI."""
    data = {"name": "scripted-eval", "agent": {"mode": mode, "max_steps": 2},
            "llm": {"backend": "scripted", "options": {"rules": [
                # answers of the type each question expects (an ill-typed one would be refused)
                ["Query: what is the colou?r", "```python\nshapes = ImagePatch(image).find('circle')\nwide = shapes[0].width if shapes else 0\nfinal_answer = 'red'\n```"],
                ["Query: what is the", "```python\nshapes = ImagePatch(image).exists('circle')\nfinal_answer = 'circle'\n```"],
                ["Instruction:", "```python\nfinal_answer = 'yes' if ImagePatch(image).exists('circle') else 'no'\n```"],
                ["Reply:", PLAN],
            ]}}}
    path.write_text(yaml.safe_dump(data))
    return path


def test_two_worker_processes_give_the_same_records(tmp_path):
    cfg = load_config(_scripted_config(tmp_path / "cfg.yaml"))
    samples = _easy(8)
    spec = AgentSpec(cfg)
    settings = EvalSettings(dataset="easy-vqa", limit=8, mode="one_step")
    serial = run_eval(samples, tmp_path / "serial", settings, agent_spec=spec)
    parallel = run_eval(samples, tmp_path / "parallel", settings, agent_spec=spec, workers=2)
    assert parallel.evaluated == 8
    one = {r["id"]: r for r in _lines(tmp_path / "serial" / "results.jsonl")}
    two = {r["id"]: r for r in _lines(tmp_path / "parallel" / "results.jsonl")}
    assert sorted(two) == sorted(s.id for s in samples) and len(_lines(tmp_path / "parallel" / "results.jsonl")) == 8
    assert {k: (r["prediction"], r["score"]) for k, r in two.items()} == {k: (r["prediction"], r["score"]) for k, r in one.items()}
    assert parallel.report["score"] == serial.report["score"]
    assert all((tmp_path / "parallel" / r["trace"]).is_file() for r in two.values())


def test_worker_build_failure_stops_the_run_without_error_records(tmp_path):
    cfg = load_config(_scripted_config(tmp_path / "cfg.yaml"), ["llm.backend=no_such_backend"])
    with pytest.raises(EvalError, match="no_such_backend"):
        run_eval(_easy(3), tmp_path / "run", EvalSettings(dataset="easy-vqa"), agent_spec=AgentSpec(cfg), workers=2)
    results = tmp_path / "run" / "results.jsonl"
    assert not results.exists() or not results.read_text()  # no error records that a resume would skip


def test_workers_split_llama_cpp_threads_unless_configured():
    spec = _worker_spec(AgentSpec(load_config("default")), 3)
    assert spec.config.llm.options["n_threads"] == 3
    pinned = AgentSpec(load_config("default", ["llm.options.n_threads=8"]))
    assert _worker_spec(pinned, 3) is pinned
    assert "n_threads" not in load_config("default").llm.options  # the caller's config is untouched


# --------------------------------------------------------------------------------------------
# CLI: kill and resume, errors, report-only
# --------------------------------------------------------------------------------------------


def _cli(run: Path, cfg: Path, limit: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hydra_vr.cli.main", "eval", "--dataset", "easy-vqa", "--limit", str(limit),
            "--out", str(run), "--config", str(cfg), "--no-progress", *extra]


def test_kill_and_resume_every_sample_exactly_once(tmp_path):
    limit = 120
    cfg = _scripted_config(tmp_path / "cfg.yaml")
    run = tmp_path / "run"
    results = run / "results.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(_cli(run, cfg, limit), cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (results.exists() and results.read_bytes().count(b"\n") >= 3):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no result line appeared"
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its sandbox child, mid-run
    finally:
        proc.wait(30)
        proc.stderr.close()
    before = results.read_bytes()
    finished_before = before.count(b"\n")
    assert 3 <= finished_before < limit, "the run finished before the kill: the test proves nothing"

    done = subprocess.run(_cli(run, cfg, limit, "--workers", "2"), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert f"{limit} samples: " in done.stdout and "evaluated now" in done.stdout
    after = results.read_bytes()
    complete = before[: before.rfind(b"\n") + 1]
    assert after.startswith(complete)  # finished lines were kept as they were
    ids = [json.loads(line)["id"] for line in after.splitlines()]
    assert len(ids) == limit and sorted(ids) == sorted(s.id for s in _easy(limit))
    assert _json(run / "report.json")["n"] == limit


def test_cli_missing_data_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["eval", "--dataset", "gqa", "--data-root", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "testdev_balanced_questions.json: file not found" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(app, ["eval", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--dataset is required" in result.output


def test_cli_report_only_rebuilds_from_results(tmp_path):
    cfg = _scripted_config(tmp_path / "cfg.yaml", mode="vipergpt")
    run = tmp_path / "run"
    first = CliRunner().invoke(app, ["eval", "--dataset", "easy-vqa", "--limit", "3", "--out", str(run),
                                     "--config", str(cfg), "--no-progress"])
    assert first.exit_code == 0, first.output
    assert "mode vipergpt" in first.output and "n=3" in first.output
    report = _json(run / "report.json")
    preds = _json(run / "predictions" / "easy-vqa_predictions.json")
    for name in ("report.json", "report.md"):
        (run / name).unlink()
    shutil.rmtree(run / "predictions")
    again = CliRunner().invoke(app, ["eval", "--out", str(run), "--report-only"])
    assert again.exit_code == 0, again.output
    assert _json(run / "report.json") == report
    assert _json(run / "predictions" / "easy-vqa_predictions.json") == preds
    assert report["mode"] == "vipergpt" and report["cost"]["llm_calls"] == 3  # one program per sample, no planner
