"""A run's end: its replies queued, its turn kept, its record closed and its message acked, in one
transaction, so a crash before it re-runs the message and a crash after it finds the message done."""

from __future__ import annotations

from collections.abc import Awaitable

from bot.bus import Bus, Button, Delivery, LeaseLost
from bot.runner.handler.recorder import Recorder
from bot.runner.handler.wiring import Storage
from bot.runner.history import compact, estimate_json_tokens
from bot.runner.loop import RunResult
from bot.runner.saved import with_where
from bot.store import encode_turn
from bot.tools import ToolContext, notice, reply


async def ack(bus: Bus, delivery: Delivery) -> None:
    """Ack ``delivery`` in the transaction that records its turn, fenced by its claim's attempt."""
    if not await bus.ack(delivery.id, attempt=delivery.attempts):
        raise LeaseLost(f"message {delivery.id} was claimed again since attempt {delivery.attempts}")


async def finish(
    storage: Storage,
    delivery: Delivery,
    context: ToolContext,
    result: RunResult,
    parts: list[int] | None = None,
    *,
    button: Button | None = None,
    trail: Recorder | None = None,
) -> None:
    """Write the steps ``trail`` holds, queue the replies (with ``button`` under the reply), keep
    the turn, end the run and ack the message (and the other ``parts`` of its album), in one
    transaction whose statements are sent together."""
    bus, store = storage.bus, storage.store
    kept = compact(result.messages)
    stored = encode_turn(kept)  # encoded once: for the estimate and for the row
    tokens = estimate_json_tokens(stored)
    replies = []
    # A run that never called send_message still answers, with its final text.
    if context.sent == 0 and result.final_text.strip():
        replies.append(reply(context, with_where(result.final_text, context.changes), button=button))
    # A failed run has already said what failed (a capture's or a command's own reply).
    if result.reason and result.status != "failed":
        replies.append(notice(context, f"I stopped here: {result.reason}.", key="stopped"))
    async with storage.db.transaction() as tx:
        # Coroutines made inside the block: if BEGIN fails, none is left unawaited.
        writes: list[Awaitable[object]] = [trail.flush()] if trail is not None else []
        writes += [bus.put(publication) for publication in replies]
        if kept:  # commands leave the conversation's history alone
            writes.append(store.append_encoded_turn(context.conversation, context.inbound_id, stored, tokens))
        writes.append(
            store.finish_run(
                context.run_id,
                status=result.status,
                reason=result.reason,
                usage=result.usage.as_dict(),
                tools_called=result.tools_called,
                final_text=result.final_text,
                changes=context.changes,  # what it changed in the vault, kept with it (bot.undo)
            )
        )
        writes += [*(bus.ack(message_id) for message_id in parts or []), ack(bus, delivery)]
        await tx.gather(*writes)
