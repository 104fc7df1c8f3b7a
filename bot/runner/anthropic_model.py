"""The real model: Claude through the official ``anthropic`` SDK, streamed.

Every call streams (the SDK's ``messages.stream`` helper): a listener hears the text as it is
written, and the reply is the SDK's accumulated final message, the same one a non-streamed call
returns. An answer that stops before the API's ``message_stop`` is an outage, never a reply.

SDK retries are kept small on purpose: a model that stays down is retried by the bus with
backoff, where the message is durable, rather than inside one request that holds a lease.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
from anthropic.lib.streaming import AsyncMessageStream

from bot.runner.errors import ModelRejected, ModelUnavailable
from bot.runner.model import ModelReply, TextListener, Usage

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
        self._timeout = timeout
        self._base_url = base_url
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def check(self) -> str:
        """Ask the API about this model (``GET /v1/models/{name}``: free, no tokens), which proves
        the API reachable and the key accepted; the model's id as the API names it. Raises
        :class:`ModelRejected` (key refused, model unknown) or :class:`ModelUnavailable`."""
        try:
            found = await self._client.models.retrieve(self.name)
        except anthropic.APIStatusError as exc:
            raise _classify(exc, self._base_url) from None
        except anthropic.APITimeoutError:
            raise ModelUnavailable(f"the model API did not answer within {self._timeout:g} s") from None
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelUnavailable(f"could not reach the model API ({_cause(exc)})") from None
        except (anthropic.APIResponseValidationError, ValueError):
            raise ModelUnavailable("the model API sent a response that could not be read") from None
        return str(found.id)

    async def complete(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        listener: TextListener | None = None,
    ) -> ModelReply:
        """One streamed Messages API call, with SDK errors sorted into transient and permanent."""
        try:
            async with self._client.messages.stream(
                model=self.name,
                max_tokens=self._max_tokens,
                system=system,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                **({"tools": tools} if tools else {}),  # type: ignore[arg-type]
            ) as stream:
                response = await _read(stream, listener)
        except anthropic.APIStatusError as exc:
            raise _classify(exc, self._base_url) from None
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            # The SDK wraps failures to connect; a connection that breaks mid-answer surfaces raw.
            raise ModelUnavailable(f"could not reach the model API ({type(exc).__name__})") from None
        except (anthropic.APIResponseValidationError, ValueError):
            # A body that is not the Messages API's events (a proxy's error page), or tool input
            # that is not JSON. Treated like an outage, since it usually is one.
            raise ModelUnavailable("the model API sent a response that could not be read") from None
        return ModelReply(
            content=[_block(b) for b in response.content],
            stop_reason=response.stop_reason or "end_turn",
            usage=_usage(response.usage),
            model=response.model,
        )


async def _read(stream: AsyncMessageStream[Any], listener: TextListener | None) -> Any:
    """Read the events to the end, telling ``listener`` the text; the final message."""
    ended = False
    written = separate = False  # text written in this segment; a blank line due before the next block's
    async for event in stream:
        if event.type == "message_stop":
            ended = True
        elif listener is None:
            continue
        elif event.type == "content_block_start" and event.content_block.type == "tool_use":
            listener.tool_call(event.content_block.name)
            written = separate = False
        elif event.type == "content_block_start" and event.content_block.type == "text":
            separate = written
        elif event.type == "text" and event.text:
            if separate:  # ModelReply.text joins text blocks with a blank line
                listener.text("\n\n")
                separate = False
            listener.text(event.text)
            written = True
    if not ended:
        raise ModelUnavailable("the model API's answer stopped before its end")
    return await stream.get_final_message()


def _classify(exc: anthropic.APIStatusError, base_url: str | None) -> Exception:
    if exc.status_code < 400:  # an error event in the middle of a 200 stream, such as overloaded_error
        return ModelUnavailable(f"the model API failed mid-answer ({_error_type(exc)})")
    if isinstance(exc, anthropic.NotFoundError) and base_url and base_url.rstrip("/").endswith("/v1"):
        # The SDK puts /v1/ before every path, so this address asked for /v1/v1/…: the model is not the problem.
        return ModelRejected(
            f"ANTHROPIC_BASE_URL ends in /v1, and the SDK adds /v1 itself: take the /v1 off (HTTP {exc.status_code})"
        )
    for cls, hint in _PERMANENT_HINTS.items():
        if isinstance(exc, cls):
            return ModelRejected(f"{hint} (HTTP {exc.status_code})")
    retry_after = _retry_after(exc)
    return ModelUnavailable(f"the model API answered HTTP {exc.status_code}", retry_after=retry_after)


def _cause(exc: Exception) -> str:
    """What lies under the SDK's "Connection error.": the refusal or lookup failure itself."""
    under = exc.__cause__ or exc.__context__
    return str(under) if under is not None and str(under) else type(exc).__name__


def _error_type(exc: anthropic.APIStatusError) -> str:
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else "an error"


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
