"""A page is counted after every layer of its content coding: a stacked gzip bomb costs a real
`vaultbot chat` no memory to speak of (its peak read from /proc), the event loop keeps its turn while a
bomb is undone, codings vaultbot did not ask for are refused rather than filed as the page, and the
codings it asks for come out whole. A PDF link is read as documents are, within limits of time and
memory, and clipped in part when it meets them. Pages come over HTTP from the fake site on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from bot.clip import ClipError
from bot.clip.fetch import Fetcher
from tests.clip.conftest import ClipApp
from tests.clip.test_clip_link import clip
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.pdfs import slow_pdf
from tests.fakes.web_server import FakeWeb, html, wait_until
from tests.helpers import peak_memory_mb, reset_peak_memory, subprocess_env

PAGE = "<html><head><title>Codings</title></head><body><article><p>" + "Words that came out whole. " * 400
PAGE += "</p></article></body></html>"
GIBIBYTE = 1024 * 1024 * 1024


@pytest.mark.slow
def test_a_stacked_gzip_bomb_costs_a_real_chat_no_memory_and_is_refused_as_too_large(
    tmp_path: Path, web: FakeWeb
) -> None:
    web.gzip_bomb("/bomb", GIBIBYTE, codings="gzip, gzip")  # 2.5 KB on the wire, a gibibyte of page
    with subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(VAULTBOT_CLIP__ALLOW_PRIVATE="true"),
    ) as chat:
        assert chat.stdin is not None and chat.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(chat.stdout or []), daemon=True)
        reader.start()

        def say(text: str, replies: int) -> None:
            assert chat.stdin is not None
            chat.stdin.write(text + "\n")
            chat.stdin.flush()
            wait_until(lambda: sum(line.startswith("vaultbot>") for line in list(lines)) >= replies, timeout=45)

        try:
            say("hello", 1)  # started and warmed up: what it costs without the bomb
            before = peak_memory_mb(chat.pid)
            say(web.url("/bomb"), 2)
            after = peak_memory_mb(chat.pid)
            chat.stdin.close()
            assert chat.wait(timeout=30) == 0
        finally:
            if chat.poll() is None:
                chat.kill()
        reader.join(timeout=10)
    assert after - before < 64, f"the bomb took the peak from {before:.0f} MB to {after:.0f} MB"
    assert "Saved to Inbox/127.0.0.1 bomb.md" in "".join(lines)  # filed as a link, not clipped
    logged = subprocess.run(
        [sys.executable, "-m", "bot", "log", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=30,
    )
    summaries = [entry["summary"] for entry in json.loads(logged.stdout)]
    assert any("larger than 5.0 MB (VAULTBOT_CLIP__MAX_BYTES)" in summary for summary in summaries), summaries


async def fetch(web: FakeWeb, path: str, **limits: float) -> bytes:
    fetcher = Fetcher(allow_private=True, max_bytes=int(limits.get("max_bytes", 5 * 1024 * 1024)), timeout=20)
    try:
        return (await fetcher.fetch(web.url(path))).data
    finally:
        await fetcher.close()


async def refusal(web: FakeWeb, path: str, **limits: float) -> ClipError:
    with pytest.raises(ClipError) as refused:
        await fetch(web, path, **limits)
    return refused.value


@pytest.mark.parametrize("codings", ["gzip, gzip", "gzip, gzip, gzip", "gzip"])
async def test_the_event_loop_keeps_its_turn_and_memory_stays_flat_while_a_bomb_is_undone(
    web: FakeWeb, codings: str
) -> None:
    web.gzip_bomb("/bomb", GIBIBYTE, codings=codings)
    stalls: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.01)
            stalls.append(time.monotonic() - last)
            last = time.monotonic()

    ticker = asyncio.create_task(tick())
    reset_peak_memory()
    before = peak_memory_mb()
    refused = await refusal(web, "/bomb")
    done.set()
    await ticker
    assert refused.error_type == "too_large" and "larger than 5.0 MB" in str(refused)
    # Undone a piece at a time: a gibibyte held at once would show here, and stall the loop for seconds.
    assert peak_memory_mb() - before < 64
    assert max(stalls) < 2.0, f"the event loop stalled {max(stalls):.1f} s"  # 16 s before, for a gibibyte


def deflate(data: bytes, *, raw: bool = False) -> bytes:
    squeeze = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return squeeze.compress(data) + squeeze.flush()


@pytest.mark.parametrize(
    ("codings", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", deflate),
        ("deflate", lambda data: deflate(data, raw=True)),  # raw deflate, as some servers send and browsers read
        ("gzip, gzip", lambda data: gzip.compress(gzip.compress(data))),
        ("deflate, gzip", lambda data: gzip.compress(deflate(data))),
        ("identity", lambda data: data),
        ("GZIP , identity", gzip.compress),
    ],
    ids=["gzip", "x-gzip", "deflate", "raw-deflate", "gzip-gzip", "deflate-gzip", "identity", "spelled-loosely"],
)
async def test_the_codings_vaultbot_asks_for_come_out_whole(web: FakeWeb, codings: str, encode: object) -> None:
    body = PAGE.encode()
    assert callable(encode)
    web.routes["/coded"] = (200, {"Content-Type": "text/html", "Content-Encoding": codings}, encode(body))
    assert await fetch(web, "/coded") == body


@pytest.mark.parametrize(
    ("codings", "said"),
    [
        ("br", "the br coding, which vaultbot does not read"),
        ("zstd", "the zstd coding, which vaultbot does not read"),
        ("compress", "the compress coding, which vaultbot does not read"),
        ("x-made-up", "the x-made-up coding, which vaultbot does not read"),
        ("gzip, gzip, gzip, gzip", "compressed 4 times over"),
    ],
)
async def test_a_coding_vaultbot_did_not_ask_for_is_refused_not_filed_as_the_page(
    web: FakeWeb, codings: str, said: str
) -> None:
    web.routes["/coded"] = (200, {"Content-Type": "text/html", "Content-Encoding": codings}, b"\x8b\x00 not a page")
    refused = await refusal(web, "/coded")
    assert refused.error_type == "unsupported_content" and said in str(refused) and "not clipped" in str(refused)


async def test_every_layer_counts_against_the_limit_and_a_damaged_coding_is_said_to_be(web: FakeWeb) -> None:
    # The outer layer alone is over the limit, though the page inside it would fit.
    big_inside = gzip.compress(bytes(range(256)) * 4000, compresslevel=0)  # ~1 MB of gzip, stored, ~1 MB of page
    twice, once = ({"Content-Type": "text/html", "Content-Encoding": c} for c in ("gzip, gzip", "gzip"))
    web.routes["/layered"] = (200, twice, gzip.compress(big_inside))
    assert (await refusal(web, "/layered", max_bytes=500_000)).error_type == "too_large"
    web.routes["/cut"] = (200, once, gzip.compress(PAGE.encode())[:-40])
    web.routes["/garbage"] = (200, once, b"not gzip at all" * 50)
    for path in ("/cut", "/garbage"):
        damaged = await refusal(web, path)
        assert damaged.error_type == "fetch_failed" and "arrived damaged: its gzip coding" in str(damaged)
    web.routes["/plain"] = html(PAGE)
    assert await fetch(web, "/plain") == PAGE.encode()


async def test_a_slow_pdf_link_is_clipped_in_part_and_the_model_told_what_was_left_out(
    clip_app: ClipApp, fake_anthropic: FakeAnthropic, web: FakeWeb
) -> None:
    app = await clip_app(vault={"page_seconds": 0.5, "document_seconds": 2.0})
    report = ["Quarterly report\nThe marmalade line doubled.", "Outlook\nWe expect more marmalade."]
    web.routes["/slow.pdf"] = (200, {"Content-Type": "application/pdf"}, slow_pdf(report, 58))  # 13 KB, 2 minutes
    result = await clip(app, fake_anthropic, web.url("/slow.pdf"))
    assert result["success"] and result["path"] == "Clippings/127.0.0.1 slow.md"
    assert result["excerpt"].startswith("--- Page 1 ---\nQuarterly report\nThe marmalade line doubled.")
    left_out = result["left_out"]
    assert left_out.startswith("Only part of the PDF could be read and clipped: pages 3–")
    assert "(of 60) were not read: reading the document took more than the " in left_out  # its CPU, or the clock
    note = (app.notes.root / result["path"]).read_text(encoding="utf-8")
    assert "--- Page 2 ---\nOutlook\nWe expect more marmalade." in note
    assert "\n\n[Left out: pages 3–" in note and "vaultbot allows one.]" in note
