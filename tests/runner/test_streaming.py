"""The streamed model call: the real anthropic SDK against the fake's server-sent events gives the
same reply a whole response would, and tells a listener the text as it is written."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.runner import AnthropicModel
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic


class Heard:
    """A listener that keeps what it is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def tool_call(self, name: str) -> None:
        self.events.append(("tool", name))


@pytest.fixture
async def claude(fake_anthropic: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = AnthropicModel(api_key="sk-ant-x", base_url=fake_anthropic.base_url, model="claude-test", max_tokens=512)
    yield model
    await model.close()


async def test_the_streamed_reply_is_the_whole_message_and_the_listener_hears_it_in_order(
    claude: AnthropicModel, fake_anthropic: FakeAnthropic
) -> None:
    content = [
        {"type": "text", "text": "First block of text."},
        {"type": "text", "text": "Second block."},
        {"type": "tool_use", "id": "toolu_1", "name": "vault_write", "input": {"folder": "Inbox", "tags": ["a", "b"]}},
    ]
    usage = {"input_tokens": 120, "output_tokens": 40, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 9}
    fake_anthropic.enqueue(api.streamed(api.message(content, "tool_use", usage), delta_chars=3))
    heard = Heard()
    reply = await claude.complete(system=[], messages=[{"role": "user", "content": "hi"}], tools=[], listener=heard)

    assert fake_anthropic.requests[0].body["stream"] is True
    assert reply.content == content and reply.stop_reason == "tool_use" and reply.model == "claude-fake"
    assert reply.usage.as_dict() == usage
    texts = [delta for kind, delta in heard.events if kind == "text"]
    assert len(texts) > 3 and "".join(texts) == reply.text  # blocks joined as ModelReply.text joins them
    assert heard.events[-1] == ("tool", "vault_write")


async def test_without_a_listener_the_reply_is_the_same(claude: AnthropicModel, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.streamed(api.text("Plain answer.")))
    reply = await claude.complete(system=[], messages=[{"role": "user", "content": "hi"}], tools=[])
    assert reply.text == "Plain answer." and reply.stop_reason == "end_turn"
    assert json.loads(api.text("Plain answer.").body)["content"] == reply.content
