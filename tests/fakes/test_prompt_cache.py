"""The fake API's prompt-cache accounting follows the documented rules, so hit rates measured
against it mean something."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.prompt_cache import LOOKBACK_BLOCKS, PromptCache, count_tokens

CACHED = {"type": "ephemeral"}
BIG = "x" * 5000  # ~1,250 tokens: above the 1,024-token minimum on its own


def request(messages: list[dict[str, Any]], system: str = BIG) -> dict[str, Any]:
    return {"system": [{"type": "text", "text": system, "cache_control": CACHED}], "messages": messages}


def user(text: str, *, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    return {"role": "user", "content": [{**block, "cache_control": CACHED} if cached else block]}


def total(usage: Any) -> int:
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


def test_a_prefix_is_written_at_its_breakpoint_and_read_by_the_next_request() -> None:
    cache = PromptCache()
    first = cache.account(request([user("hello")]))
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens == count_tokens('system:{"type": "text", "text": "' + BIG + '"}')
    assert first.input_tokens == total(first) - first.cache_creation_input_tokens > 0
    second = cache.account(request([user("something else")]))
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0


def test_a_prefix_under_the_minimum_is_never_cached() -> None:
    cache = PromptCache()
    for _ in range(2):
        usage = cache.account(request([user("hello", cached=True)], system="short"))
        assert usage.cache_read_input_tokens == usage.cache_creation_input_tokens == 0


def test_a_moving_breakpoint_reads_what_the_last_one_wrote_within_the_lookback() -> None:
    cache = PromptCache()
    history = [user("one", cached=True)]
    cache.account(request(history))
    grown = [user("one"), *[user(f"block {i}") for i in range(LOOKBACK_BLOCKS - 1)], user("last", cached=True)]
    hit = cache.account(request(grown))
    written_before = count_tokens('system:{"type": "text", "text": "' + BIG + '"}') + count_tokens(
        'user:{"type": "text", "text": "one"}'
    )
    assert hit.cache_read_input_tokens == written_before
    assert hit.input_tokens == 0  # everything past the read prefix is written at the new breakpoint


def test_a_breakpoint_more_than_twenty_blocks_on_misses_the_earlier_write() -> None:
    cache = PromptCache()
    cache.account(request([user("one", cached=True)]))
    grown = [user("one"), *[user(f"block {i}") for i in range(LOOKBACK_BLOCKS)], user("last", cached=True)]
    usage = cache.account(request(grown))
    # Only the system prompt's own breakpoint still hits.
    assert usage.cache_read_input_tokens == count_tokens('system:{"type": "text", "text": "' + BIG + '"}')


@pytest.mark.parametrize(
    "changed",
    [
        [user("one, edited")],  # the content differs
        [{"role": "user", "content": [{"text": "one", "type": "text"}]}],  # the same keys in another order
    ],
)
def test_any_change_before_a_breakpoint_misses_from_there(changed: list[dict[str, Any]]) -> None:
    cache = PromptCache()
    cache.account(request([user("one"), user("two", cached=True)]))
    usage = cache.account(request([*changed, user("two", cached=True)]))
    assert usage.cache_read_input_tokens == count_tokens('system:{"type": "text", "text": "' + BIG + '"}')


def test_string_content_and_cache_control_do_not_change_the_prefix() -> None:
    cache = PromptCache()
    first = cache.account(request([user("one", cached=True)]))
    again = cache.account(request([{"role": "user", "content": "one"}, user("two", cached=True)]))
    assert again.cache_read_input_tokens == first.cache_creation_input_tokens


def test_the_real_sdk_reads_the_usage_and_a_fifth_breakpoint_is_refused() -> None:
    with (
        FakeAnthropic(prompt_cache=True) as fake,
        anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0) as client,
    ):
        fake.handler = lambda body: api.text("ok")
        body = request([user("hello", cached=True)])
        first = client.messages.create(model="m", max_tokens=10, **body)
        second = client.messages.create(model="m", max_tokens=10, **body)
        assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
        assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
        assert fake.usages == [first.usage.model_dump(exclude_none=True), second.usage.model_dump(exclude_none=True)]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
            client.messages.create(model="m", max_tokens=10, **request([user(str(i), cached=True) for i in range(4)]))
