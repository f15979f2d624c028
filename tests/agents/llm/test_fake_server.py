"""The scripted fake LLM server itself: rule semantics, scripts from files, the command line,
and bursts of concurrent calls."""

import json
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from agents.llm import create_llm
from agents.llm.fake_server import NO_MATCH_TEXT, FakeLLMServer, load_script
from design_space.errors import ConfigError
from tests.agents.llm.helpers import FAST, always, ask, fake_env


def test_the_first_matching_rule_with_uses_left_answers(serve):
    server = serve([
        {"when": "repair", "times": 1, "reply": {"text": "first repair"}},
        {"when": "repair", "times": None, "reply": {"text": "later repairs"}},
        {"when": "mutate", "times": 2, "reply": {"text": "mutation"}},
    ])
    client = create_llm("openai:gpt-4o", environ=fake_env(server), **FAST)
    texts = [client.complete(ask(t)).text for t in ("repair", "repair", "mutate", "mutate", "mutate", "other")]

    assert texts == ["first repair", "later repairs", "mutation", "mutation", NO_MATCH_TEXT, NO_MATCH_TEXT]
    assert server.served == [1, 1, 2] and server.unmatched == 2
    assert [r.prompt.endswith(t) for r, t in zip(server.requests, ("repair", "other"))] == [True, False]


def test_the_system_prompt_is_matched_too(serve):
    server = serve([{"when": "JUDGE", "times": None, "reply": {"text": "diagnosis"}}])
    client = create_llm("anthropic:claude-sonnet-4-5", environ=fake_env(server), **FAST)
    assert client.complete(ask("logs...", system="you are the JUDGE")).text == "diagnosis"


def test_a_script_file_is_read(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": always("from a file")}))
    [rule] = load_script(path)
    assert rule.reply == {"text": "from a file"} and rule.times is None and rule.when is None


@pytest.mark.parametrize("rules", [
    [{"when": None, "reply": {"txt": "typo"}}],
    [{"when": None, "reply": {"text": "a", "status": 500}}],
    [{"reply": {"text": "a"}, "times": -1}],
    [{"match": "x", "reply": {"text": "a"}}],
    {"when": None},
])
def test_an_unreadable_rule_says_how_to_write_one(rules):
    with pytest.raises(ConfigError) as raised:
        FakeLLMServer(rules)
    assert raised.value.fix


def test_unknown_paths_are_404s(serve):
    server = serve(always("x"))
    request = urllib.request.Request(f"{server.base_url}/v1/completions", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=5)
    raised.value.close()
    assert raised.value.code == 404


@pytest.mark.parametrize("name", ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"], ids=["openai", "anthropic"])
def test_eight_concurrent_calls_are_all_served(serve, calls, name):
    server = serve([{"when": None, "times": None, "reply": {"delay_s": 0.1, "text": "together"}}])
    client = create_llm(name, recorder=calls.append, environ=fake_env(server), stream=True, **FAST)
    texts, lock = [], threading.Lock()

    def one(i):
        text = client.complete(ask(f"call {i}")).text
        with lock:
            texts.append(text)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)

    assert texts == ["together"] * 8 and len(calls) == 8 and server.served == [8]
    assert {r.prompt.rsplit(" ", 1)[-1] for r in server.requests} == {str(i) for i in range(8)}
    assert time.monotonic() - started < 2.0  # served in parallel, no listen-backlog stall


def test_the_command_line_serves_a_script_and_prints_its_base_url(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(always("from the command line")))
    with subprocess.Popen([sys.executable, "-m", "agents.llm.fake_server", "--script", str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            base_url = proc.stdout.readline().strip()
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
            request = urllib.request.Request(f"{base_url}/v1/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=5) as response:
                reply = json.load(response)
        finally:
            proc.terminate()
            proc.wait(timeout=5)
    assert proc.returncode == 0  # SIGTERM stops it cleanly
    assert base_url.startswith("http://127.0.0.1:")
    assert reply["choices"][0]["message"]["content"] == "from the command line"
    assert reply["usage"] == {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}


def test_a_bad_script_on_the_command_line_exits_with_the_fix(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text("[{")
    done = subprocess.run([sys.executable, "-m", "agents.llm.fake_server", "--script", str(path)],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 2 and "fix:" in done.stderr
