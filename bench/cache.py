"""Prompt-cache benchmark: how much of a conversation's input is read from the prompt cache.

Ten "remember …" turns run through the real runner and the real ``anthropic`` SDK against the
fake Messages API with its prompt-cache accounting (``tests/fakes/prompt_cache.py``, the
documented rules: breakpoint prefixes written, 20-block lookback, 1,024-token minimum). Two
shapes of turn: four model calls (vault_write, log_interaction, send_message, then the end of the
turn) and two (vault_write + log_interaction together, then the reply as final text).

With ``--profile`` the vault holds a profile note (``About me.md``, about 120 words) that every turn
reads into the cached system block, as a person's would.

Prints, per shape, the share of input tokens read from the cache over the ten turns and the
tokens of the tenth turn's last call that were not read from the cache (input + cache writes).

    .venv/bin/python bench/cache.py [--turns 10] [--profile] [--dir /tmp/somewhere]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import App  # noqa: E402
from bot.bus import INBOUND, InboundMessage, Sender  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes import anthropic_server as api  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402

FACTS = [
    "the plumber comes on Thursday at 9 and wants the code for the side gate, which is 4471",
    "Mia's birthday present idea: the blue ceramic teapot we saw at the market on Saturday",
    "the car's next service is due at 60,000 km; the garage on Elm Street quoted 240 euros",
    "I promised to send Tom the slides from the planning meeting before Friday lunchtime",
    "the Wi-Fi password for the cabin is written under the router: 'pinecone-27-lake'",
    "renew the passport before the trip in March; the photo booth at the station takes cards",
    "Grandma's lentil soup: onions, carrots, red lentils, cumin, a bay leaf, lemon at the end",
    "the dentist moved my appointment to the 14th at 16:30, same room as last time",
    "idea for the garden: a raised bed by the south fence for tomatoes and basil next spring",
    "book club picked 'The Remains of the Day' for next month; meeting at Sara's place",
]


def _step(body: dict[str, Any]) -> tuple[str, int]:
    """The user's text of the current turn and how many model calls the turn has made before this one."""
    messages = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and _text(m) is not None)
    return _text(messages[start]) or "", sum(1 for m in messages[start:] if m["role"] == "assistant")


def _text(message: dict[str, Any]) -> str | None:
    content = message["content"]
    if isinstance(content, str):
        return content
    if any(b.get("type") == "tool_result" for b in content):
        return None
    return "".join(b.get("text", "") for b in content)


def _note(text: str) -> tuple[str, dict[str, Any]]:
    fact = text.removeprefix("remember that ")
    title = fact.split(":")[0].split(",")[0][:60]
    body = f"{fact[0].upper()}{fact[1:]}.\n\nNoted from a message; see the interaction log for when."
    return ("vault_write", {"folder": "Inbox", "title": title, "content": body, "tags": ["remember"]})


def four_calls(body: dict[str, Any]) -> api.Canned:
    """vault_write, log_interaction, send_message, then the end of the turn: one call each."""
    text, step = _step(body)
    fact = text.removeprefix("remember that ")
    if step == 0:
        return api.tool_use(_note(text))
    if step == 1:
        return api.tool_use(("log_interaction", {"summary": f"Saved a note: {fact[:80]}", "category": "note"}))
    if step == 2:
        return api.tool_use(("send_message", {"text": "Saved it to your Inbox."}))
    return api.text("Done.")


def two_calls(body: dict[str, Any]) -> api.Canned:
    """vault_write + log_interaction in one response, then the reply as the final text."""
    text, step = _step(body)
    fact = text.removeprefix("remember that ")
    if step == 0:
        return api.tool_use(
            _note(text), ("log_interaction", {"summary": f"Saved a note: {fact[:80]}", "category": "note"})
        )
    return api.text("Saved it to your Inbox.")


PROFILE = (
    "Ann Keller, 41, lives in Leeds with her partner Tom and their daughter Mia (9). Works as a product "
    "manager at a logistics firm, hybrid, in the office on Tuesdays and Thursdays. Vegetarian; allergic to "
    "penicillin. Runs three times a week and is training for a 10k in May. Learning Spanish (B1) on Tuesday "
    "evenings. Her mother Rosa lives in Ventnor and turns 90 in August. Prefers short answers, metric units "
    "and dates written as 3 May. Keeps work notes under Work/ and recipes under Recipes/. Drives a 2019 "
    "Skoda Octavia; the insurance renews in July. Cat called Milo, dog called Biscuit."
)


async def scenario(
    root: Path, shape: Callable[[dict[str, Any]], api.Canned], turns: int, profile: bool
) -> tuple[float, int]:
    """Run ``turns`` messages in one conversation; return (% read from cache, last call's uncached tokens)."""
    if profile:
        (root / "vault").mkdir(parents=True)
        (root / "vault" / "About me.md").write_text(PROFILE + "\n", encoding="utf-8")
    with FakeAnthropic(prompt_cache=True) as fake:
        fake.handler = shape
        settings = Settings(
            _env_file=None,
            anthropic_api_key="sk-ant-bench",
            anthropic_base_url=fake.base_url,
            vault={"path": root / "vault"},
            store={"path": root / "vaultbot.db"},
            model={"name": "claude-bench", "sdk_max_retries": 0},
        )
        app = await App.open(settings)
        try:
            for i in range(turns):
                text = f"remember that {FACTS[i % len(FACTS)]}"
                message = InboundMessage(channel="bench", conversation="bench:ann", sender=Sender(id="ann"), text=text)
                await app.bus.publish(INBOUND, message, conversation=message.conversation)
                await app.runner_worker().run(burst=True)
        finally:
            await app.close()
        read = sum(u["cache_read_input_tokens"] for u in fake.usages)
        total = sum(
            u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] + u["input_tokens"] for u in fake.usages
        )
        last = fake.usages[-1]
        return 100 * read / total, last["input_tokens"] + last["cache_creation_input_tokens"]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="a profile note in the vault")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the databases and vaults")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for name, shape in [("4 calls/turn", four_calls), ("2 calls/turn", two_calls)]:
            share, uncached = await scenario(Path(tmp) / name.split()[0], shape, args.turns, args.profile)
            print(
                f"{name}  {args.turns} turns  read from cache {share:5.1f} %  last call uncached {uncached:6d} tokens"
            )


if __name__ == "__main__":
    asyncio.run(main())
