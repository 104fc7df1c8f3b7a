"""How fast someone can guess the review page's token: serves the real page (uvicorn on 127.0.0.1) over a
fresh store and sends wrong tokens as fast as ``--connections`` keep-alive connections allow for
``--seconds``, then counts the answers: a 403 is a guess the page checked, a 429 one it refused to check.

    .venv/bin/python bench/review_guessing.py [--seconds 5] [--connections 4]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.db import Database  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.web import ReviewServer, review_page, review_token  # noqa: E402


def guess(base: str, seconds: float) -> tuple[Counter[int], float]:
    """Wrong tokens for ``seconds``: the statuses answered, and the time it took."""
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=base) as client:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            statuses[client.get("/", params={"token": secrets.token_urlsafe(4)}).status_code] += 1
        return statuses, time.perf_counter() - began


async def bench(folder: Path, seconds: float, connections: int) -> None:
    db = await Database.open(folder / "vaultbot.db")
    try:
        settings = Settings(_env_file=None, vault={"path": folder / "vault"}, store={"path": folder / "vaultbot.db"})
        token = await review_token(settings, db)
        async with review_page(settings, token) as page:
            server = ReviewServer(page, "127.0.0.1", 0)
            stop = asyncio.Event()
            serving = asyncio.create_task(server.serve(stop))
            try:
                base = f"http://127.0.0.1:{server.port}"
                results = await asyncio.gather(*(asyncio.to_thread(guess, base, seconds) for _ in range(connections)))
            finally:
                stop.set()
                await serving
    finally:
        await db.close()
    statuses = sum((found for found, _ in results), Counter())
    took = max(took for _, took in results)
    checked = statuses[403]
    print(f"{sum(statuses.values()):,} requests in {took:.1f} s: {dict(sorted(statuses.items()))}")
    print(f"guesses checked: {checked:,} ({checked / took:,.1f} a second)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(bench(Path(folder), args.seconds, args.connections))


if __name__ == "__main__":
    main()
