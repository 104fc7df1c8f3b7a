"""Helpers for the Telegram tests: what a served channel is, an echoing model, webhook posts, and
waiting on a `vaultbot run` subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.app import App
from bot.bus import INBOUND, Bus, InboundMessage, Published
from bot.channels.telegram import TelegramChannel
from bot.clock import unstamp
from bot.runner import ModelReply
from tests.fakes.scripted_model import say
from tests.fakes.telegram_server import FakeTelegram

ANN = 42  # the allowlisted user


@dataclass
class Served:
    """A channel running in-process on ``app``, talking to ``fake``; ``task`` is its run()."""

    app: App
    fake: FakeTelegram
    channel: TelegramChannel
    task: asyncio.Task[None]


Serve = Callable[..., Awaitable[Served]]
# Starts `vaultbot --verbose run` with these environment variables (the ``vaultbot_run`` fixture).
RunVaultbot = Callable[..., subprocess.Popen[str]]


def echo(messages: list[dict[str, Any]]) -> ModelReply:
    """A model that repeats what the user wrote (what it was sent, less the time stamp before it)."""
    return say(f"You said: {unstamp(messages[-1]['content'])}")


def before_publish(
    monkeypatch: pytest.MonkeyPatch, bus: Bus, update_id: int, hook: Callable[[], Awaitable[None]]
) -> None:
    """Await ``hook`` before every publish of the inbound message of Telegram update ``update_id``:
    it may wait (the update is not durable meanwhile) or raise (the publish fails, as on a full disk)."""
    publish = bus.publish

    async def publishing(topic: str, message: BaseModel, **options: Any) -> Published:
        if topic == INBOUND and isinstance(message, InboundMessage) and message.meta.get("update_id") == update_id:
            await hook()
        return await publish(topic, message, **options)

    monkeypatch.setattr(bus, "publish", publishing)


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def post(port: int, body: bytes, secret: str | None, host: str = "127.0.0.1") -> int:
    """POST ``body`` to the webhook as Telegram would; the HTTP status."""
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = secret
    request = urllib.request.Request(f"http://{host}:{port}/hook", data=body, headers=headers, method="POST")

    def send() -> int:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            error.close()
            return int(error.code)

    return await asyncio.to_thread(send)


async def post_declared(port: int, length: int, secret: str) -> int:
    """POST that declares a ``length``-byte body and sends none of it; the HTTP status.

    A server that refuses a post from its headers answers at once and closes, so a client still
    writing a large body would race that close (a reset instead of the status). Sending no body
    takes the race away and shows the refusal did not wait for the body.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            (
                "POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\nContent-Length: {length}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        return int(status_line.split()[1])
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def wait_until(condition: Callable[[], bool], what: str, process: subprocess.Popen[str], timeout: float = 60) -> None:
    """Block until ``condition()`` holds; fail at once if ``process`` exits first. The default wait is
    long enough for a `vaultbot run` to start on a busy machine, and still bounded."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            errors = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"vaultbot run exited ({process.returncode}) before {what}: {errors}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM) -> str:
    """Send ``sig``, wait for the process to end, and return its standard error."""
    process.send_signal(sig)
    return finish(process)


def finish(process: subprocess.Popen[str], timeout: float = 60) -> str:
    """Wait for the process to end and return its standard error."""
    try:
        process.wait(timeout=timeout)
    finally:
        stderr = process.stderr.read() if process.stderr else ""
        if process.stderr:
            process.stderr.close()
    return stderr


def bus_statuses(db: Path, topic: str) -> list[str]:
    """What the bus on disk says about every message of ``topic``, oldest first."""
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
        return [row[0] for row in conn.execute("SELECT status FROM bus_messages WHERE topic = ? ORDER BY id", (topic,))]
