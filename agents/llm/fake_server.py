"""A scripted fake LLM server: real HTTP speaking the OpenAI Chat Completions and Anthropic
Messages wire formats (streaming too), so tests and demos drive the real ``openai`` and
``anthropic`` clients with no network and no keys. Standard library only.

The script is a list of rules (JSON-able dicts, or ``Rule``)::

    {"when": "substring of the prompt" | null, "times": n | null (= forever), "reply": REPLY}

REPLY is one of ``{"text": "..."}``, ``{"status": 429, "retry_after": 0}`` (any HTTP status, with an
optional Retry-After), ``{"garbled": true}`` (a 200 whose body is not JSON), ``{"empty": true}``
(a 200 with empty text); any of them may add ``"delay_s": x`` (wait before answering). The first
rule that matches and has uses left wins; when none does the reply is a 200 whose text is
``fake server: no rule matched``. Token counts are ceil(chars / 4) of prompt and reply.

    with FakeLLMServer([{"when": None, "times": None, "reply": {"text": "hi"}}]) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url_openai        # ".../v1"
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url_anthropic  # the SDK appends /v1/messages

``context=FakeContext(tokens, style)`` (agents/llm/fake_context.py) adds a context window that
refuses, cuts and publishes as llama-cpp-python, vLLM, llama.cpp's server or Ollama do.

``python -m agents.llm.fake_server --script rules.json [--port N] [--context N --context-style S]``
serves until interrupted and prints its base URL (the first line of stdout).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from design_space.errors import ConfigError

from agents.llm.fake_context import STYLES, FakeContext

NO_MATCH_TEXT = "fake server: no rule matched"
_REPLY_KINDS = ("text", "status", "garbled", "empty")
_REPLY_KEYS = set(_REPLY_KINDS) | {"retry_after", "delay_s"}
_CHUNK_CHARS = 16  # streamed text arrives in pieces this long, so clients must assemble it
_GARBLED = b"<html>502 this is not json {"


@dataclass
class Rule:
    when: Optional[str]
    reply: dict
    times: Optional[int] = None  # None: forever

    @classmethod
    def from_data(cls, data: Union["Rule", dict], index: int = 0) -> "Rule":
        rule = data if isinstance(data, Rule) else _rule_from_dict(data, index)
        _check_reply(rule.reply, index)
        return rule


def _rule_from_dict(data: Any, index: int) -> Rule:
    if not isinstance(data, dict) or "reply" not in data or set(data) - {"when", "times", "reply"}:
        raise ConfigError(f"fake server rule {index} is not a rule: {data!r}",
                          'write {"when": "prompt substring" or null, "times": n or null, "reply": {...}}')
    times = data.get("times")
    if times is not None and (not isinstance(times, int) or times < 0):
        raise ConfigError(f"fake server rule {index} has times={times!r}", "give a count >= 0, or null for forever")
    return Rule(when=data.get("when"), reply=dict(data["reply"]), times=times)


def _check_reply(reply: Any, index: int) -> None:
    kinds = [k for k in _REPLY_KINDS if isinstance(reply, dict) and k in reply]
    if not isinstance(reply, dict) or len(kinds) != 1 or set(reply) - _REPLY_KEYS:
        raise ConfigError(f"fake server rule {index} has an unreadable reply: {reply!r}",
                          'reply with one of {"text": ...}, {"status": 429, "retry_after": 0}, {"garbled": true}, '
                          '{"empty": true}, optionally with "delay_s"')


def load_script(script: Union[Sequence[Union[Rule, dict]], str, Path]) -> list[Rule]:
    """Rules from a list, or from a JSON file holding a list (or ``{"rules": [...]}``)."""
    if isinstance(script, (str, Path)):
        try:
            data = json.loads(Path(script).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the fake server script {script}: {exc}",
                              "give a JSON file holding a list of rules") from None
        script = data.get("rules", data) if isinstance(data, dict) else data
    if not isinstance(script, (list, tuple)):
        raise ConfigError("the fake server script is not a list of rules", "give a list of rules")
    return [Rule.from_data(rule, i) for i, rule in enumerate(script)]


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    model: Optional[str]
    prompt: str  # "[system]\n...\n\n[user]\n..." -- the same text as LLMRequest.prompt_text
    stream: bool
    body: dict = field(repr=False, default_factory=dict)


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _content_text(content: Any) -> str:
    """A message's content: a string, or a list of blocks of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def prompt_text(wire: str, body: dict) -> str:
    messages = body.get("messages") or []
    if wire == "anthropic":
        system = _content_text(body.get("system") or "")
    else:
        system = "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") == "system")
        messages = [m for m in messages if m.get("role") != "system"]
    parts = [f"[system]\n{system}"] + [f"[{m.get('role')}]\n{_content_text(m.get('content'))}" for m in messages]
    return "\n\n".join(parts)


def _max_tokens(body: dict) -> int:
    value = body.get("max_tokens") or body.get("max_completion_tokens")
    return int(value) if isinstance(value, int) and value > 0 else 16  # the servers' default


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 stalls bursts of concurrent calls by ~1 s
    daemon_threads = True
    fake: "FakeLLMServer"


def placeholder_key() -> str:
    """A value for OPENAI_API_KEY / ANTHROPIC_API_KEY while the SDKs talk to this server, which
    ignores keys. Made at run time, so no file holds anything key-shaped."""
    return f"fake-{uuid.uuid4().hex}"


class FakeLLMServer:
    def __init__(self, script: Union[Sequence[Union[Rule, dict]], str, Path], *, host: str = "127.0.0.1",
                 port: int = 0, context: Optional[FakeContext] = None) -> None:
        self.rules = load_script(script)
        self.context = context
        self.served = [0] * len(self.rules)  # how often each rule answered
        self.unmatched = 0  # requests no rule answered
        self._uses_left = [r.times for r in self.rules]
        self._requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.fake = self
        self._thread: Optional[threading.Thread] = None

    # -- life cycle
    def start(self) -> "FakeLLMServer":
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="fake-llm-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what tests read
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url_openai(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def base_url_anthropic(self) -> str:
        return self.base_url

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    # -- serving
    def _pick(self, prompt: str) -> dict:
        with self._lock:
            for i, rule in enumerate(self.rules):
                left = self._uses_left[i]
                if (left is None or left > 0) and (rule.when is None or rule.when in prompt):
                    if left is not None:
                        self._uses_left[i] = left - 1
                    self.served[i] += 1
                    return rule.reply
            self.unmatched += 1
            return {"text": NO_MATCH_TEXT}

    def _refused(self, prompt: str, body: dict) -> Optional[tuple[int, dict]]:
        return None if self.context is None else self.context.refusal(tokens(prompt), _max_tokens(body))

    def published(self, method: str, path: str, body: Optional[dict] = None) -> Optional[dict]:
        """A context-discovery answer (GET /props, GET /v1/models, POST /api/show), or None."""
        if self.context is None:
            return None
        with self._lock:
            model = (body or {}).get("model") or next((r.model for r in reversed(self._requests) if r.model), None)
        return self.context.published(method, path, model)

    def handle(self, handler: "_Handler", wire: str, body: dict) -> None:
        prompt = prompt_text(wire, body)
        stream = bool(body.get("stream"))
        with self._lock:
            self._requests.append(ReceivedRequest(handler.path, body.get("model"), prompt, stream, body))
        refused = self._refused(prompt, body) if wire == "openai" else None
        if refused is not None:
            return send_json(handler, *refused)
        reply = self._pick(prompt)
        if reply.get("delay_s") and self._stopping.wait(float(reply["delay_s"])):
            return  # shutting down: drop the request
        if self.context is not None and "text" in reply:  # a reply ends where the window does
            reply = {**reply, "text": str(reply["text"])[: 4 * self.context.reply_room(tokens(prompt))]}
        writer = _OpenAIWriter(handler, body) if wire == "openai" else _AnthropicWriter(handler, body)
        if "status" in reply:
            writer.error(int(reply["status"]), reply.get("retry_after"))
        elif reply.get("garbled"):
            writer.garbled(stream)
        else:
            text = "" if reply.get("empty") else str(reply["text"])
            (writer.stream if stream else writer.message)(text, tokens(prompt), tokens(text))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    _ROUTES = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- quiet: tests read .requests
        pass

    def do_POST(self) -> None:  # noqa: N802
        wire = self._ROUTES.get(self.path.split("?")[0].rstrip("/"))
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            shown = self.server.fake.published("POST", self.path, body if isinstance(body, dict) else None)
            if shown is not None:
                return send_json(self, 200, shown)
            if wire is None:
                return send_json(self, 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            self.server.fake.handle(self, wire, body)
        except ValueError as exc:
            send_json(self, 400, {"error": {"message": f"bad request body: {exc}", "type": "invalid_request_error"}})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): nothing to answer

    def do_GET(self) -> None:  # noqa: N802
        shown = self.server.fake.published("GET", self.path)
        if shown is not None:
            return send_json(self, 200, shown)
        send_json(self, 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})


def send_json(handler: BaseHTTPRequestHandler, status: int, data: Any, headers: Optional[dict] = None,
              raw: Optional[bytes] = None) -> None:
    payload = raw if raw is not None else json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.send_header("Connection", "close")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(payload)


def send_events(handler: BaseHTTPRequestHandler, events: Sequence[tuple[Optional[str], str]]) -> None:
    """Server-sent events; the body ends when the connection closes."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        handler.wfile.write(((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode())
        handler.wfile.flush()


def _pieces(text: str) -> list[str]:
    return [text[i:i + _CHUNK_CHARS] for i in range(0, len(text), _CHUNK_CHARS)]


class _OpenAIWriter:
    def __init__(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        self.handler, self.model = handler, body.get("model") or "fake"
        self.id, self.created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

    def _usage(self, tin: int, tout: int) -> dict:
        return {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}

    def message(self, text: str, tin: int, tout: int) -> None:
        send_json(self.handler, 200, {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": self._usage(tin, tout)})

    def _chunk(self, choices: list, usage: Optional[dict] = None) -> tuple[None, str]:
        return None, json.dumps({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                 "model": self.model, "choices": choices, "usage": usage})

    def stream(self, text: str, tin: int, tout: int) -> None:
        first = [self._chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
        deltas = [self._chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]) for p in _pieces(text)]
        end = [self._chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
               self._chunk([], self._usage(tin, tout)), (None, "[DONE]")]
        send_events(self.handler, first + deltas + end)

    def error(self, status: int, retry_after: Any) -> None:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        send_json(self.handler, status, {"error": {"message": f"fake server: scripted HTTP {status}",
                                                   "type": "fake_error", "param": None, "code": str(status)}}, headers)

    def garbled(self, stream: bool) -> None:
        if stream:
            send_events(self.handler, [(None, _GARBLED.decode())])
        else:
            send_json(self.handler, 200, None, raw=_GARBLED)


class _AnthropicWriter:
    _ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}

    def __init__(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        self.handler, self.model = handler, body.get("model") or "fake"
        self.id = f"msg_{uuid.uuid4().hex[:12]}"

    def _message(self, content: list, tin: int, tout: int, stop: Optional[str]) -> dict:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
                "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": tin, "output_tokens": tout}}

    def message(self, text: str, tin: int, tout: int) -> None:
        send_json(self.handler, 200, self._message([{"type": "text", "text": text}], tin, tout, "end_turn"))

    def stream(self, text: str, tin: int, tout: int) -> None:
        def event(name: str, **data: Any) -> tuple[str, str]:
            return name, json.dumps({"type": name, **data})
        deltas = [event("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in _pieces(text)]
        send_events(self.handler, [
            event("message_start", message=self._message([], tin, 1, None)),
            event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            event("ping"), *deltas,
            event("content_block_stop", index=0),
            event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                  usage={"output_tokens": tout}),
            event("message_stop")])

    def error(self, status: int, retry_after: Any) -> None:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        kind = self._ERROR_TYPES.get(status, "api_error")
        send_json(self.handler, status, {"type": "error", "error": {
            "type": kind, "message": f"fake server: scripted HTTP {status}"}}, headers)

    def garbled(self, stream: bool) -> None:
        if stream:
            send_events(self.handler, [("content_block_delta", _GARBLED.decode())])
        else:
            send_json(self.handler, 200, None, raw=_GARBLED)


def main(argv: Optional[Sequence[str]] = None) -> int:
    summary = __doc__.split("\n\n")[0].replace("\n", " ")
    parser = argparse.ArgumentParser(prog="python -m agents.llm.fake_server", description=summary)
    parser.add_argument("--script", required=True, help="JSON file holding the list of rules")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default): any free port")
    parser.add_argument("--context", type=int, default=None, help="a context window of this many tokens")
    parser.add_argument("--context-style", choices=STYLES, default="llama-cpp-python",
                        help="whose refusals and discovery endpoint the window imitates")
    args = parser.parse_args(argv)
    try:
        context = FakeContext(args.context, args.context_style) if args.context else None
        server = FakeLLMServer(args.script, host=args.host, port=args.port, context=context)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with server:
        print(server.base_url, flush=True)
        print(f"OPENAI_BASE_URL={server.base_url_openai}\nANTHROPIC_BASE_URL={server.base_url_anthropic}",
              file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
