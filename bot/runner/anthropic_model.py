"""The real model: Claude through the official ``anthropic`` SDK.

SDK retries are kept small on purpose: a model that stays down is retried by the bus with
backoff, where the message is durable, rather than inside one request that holds a lease.
"""

from __future__ import annotations

from typing import Any

import anthropic

from bot.runner.errors import ModelRejected, ModelUnavailable
from bot.runner.model import ModelReply, Usage

_PERMANENT_HINTS: dict[type[anthropic.APIStatusError], str] = {
    anthropic.AuthenticationError: "The Anthropic API key was refused; check ANTHROPIC_API_KEY.",
    anthropic.PermissionDeniedError: "The Anthropic API key may not use this model; check the key's permissions.",
    anthropic.PaymentRequiredError: "The Anthropic account's spend limit or credit is exhausted; check billing.",
    anthropic.NotFoundError: "The model was not found; check VAULTBOT_MODEL__NAME.",
    anthropic.BadRequestError: "The model API rejected the request as invalid.",
}


class AnthropicModel:
    """A :class:`~bot.runner.model.ModelClient` over ``AsyncAnthropic``."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        max_tokens: int,
        base_url: str | None = None,
        max_retries: int = 1,
        timeout: float = 120.0,
    ) -> None:
        self.name = model
        self._max_tokens = max_tokens
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def complete(
        self, *, system: list[dict[str, Any]], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply:
        """One Messages API call, with SDK errors sorted into transient and permanent."""
        try:
            response = await self._client.messages.create(
                model=self.name,
                max_tokens=self._max_tokens,
                system=system,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                **({"tools": tools} if tools else {}),  # type: ignore[arg-type]
            )
        except anthropic.APIStatusError as exc:
            raise _classify(exc) from None
        except anthropic.APIConnectionError as exc:
            raise ModelUnavailable(f"could not reach the model API ({type(exc).__name__})") from None
        except (anthropic.APIResponseValidationError, ValueError):
            # A 200 whose body is not the Messages API (a proxy's error page): the SDK raises a
            # JSON decode error for it. Treated like an outage, since it usually is one.
            raise ModelUnavailable("the model API sent a response that could not be read") from None
        if not hasattr(response, "content"):
            raise ModelUnavailable("the model API sent a response that could not be read")
        return ModelReply(
            content=[_block(b) for b in response.content],
            stop_reason=response.stop_reason or "end_turn",
            usage=_usage(response.usage),
            model=response.model,
        )


def _classify(exc: anthropic.APIStatusError) -> Exception:
    for cls, hint in _PERMANENT_HINTS.items():
        if isinstance(exc, cls):
            return ModelRejected(f"{hint} (HTTP {exc.status_code})")
    retry_after = _retry_after(exc)
    return ModelUnavailable(f"the model API answered HTTP {exc.status_code}", retry_after=retry_after)


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _block(block: Any) -> dict[str, Any]:
    # Only the request-shaped fields go back into the conversation.
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return dict(block.model_dump(exclude_none=True))


def _usage(usage: Any) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
    )
