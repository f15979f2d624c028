"""A scripted fake LLM server per test, stopped by the fixture. The fake server is the only fake:
the clients under test are the real ``openai`` and ``anthropic`` SDKs talking HTTP to it."""

import pytest

from agents.llm.fake_server import FakeLLMServer


@pytest.fixture
def serve():
    """``serve(rules) -> FakeLLMServer``, started; every server is stopped after the test."""
    servers = []

    def start(rules):
        server = FakeLLMServer(rules).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def calls():
    """A recorder: the list every recorded LLMCall is appended to."""
    return []
