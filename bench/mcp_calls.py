"""An MCP call's overhead: what vaultbot adds to the server's own time.

Two connections to the same test server (tests/fakes/mcp_stdio_server.py, the SDK's ``MCPServer`` on
stdio), each its own process: the SDK's ``Client`` alone (the server's own time, the round trip
included), and vaultbot's path, the dispatcher calling ``mcp__bench__echo`` (input validation, the
shared session, the call, masking and mapping the result, through the leash). Calls alternate between
the two so both see the same load. Prints p50/p95 of each, of the difference call by call, and
the difference of the two medians.

    .venv/bin/python bench/mcp_calls.py [--calls 500] [--size 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client, StdioServerParameters  # noqa: E402

from bot.mcp import McpServers  # noqa: E402
from bot.settings import McpServerSettings  # noqa: E402
from bot.tools import Dispatcher, ToolContext  # noqa: E402

SERVER = ROOT / "tests" / "fakes" / "mcp_stdio_server.py"


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q * 100) - 1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--size", type=int, default=100, help="characters of text echoed per call")
    args = parser.parse_args()
    text = "x" * args.size
    config = McpServerSettings(command=sys.executable, args=[str(SERVER)], env={"SECRET": "a-secret-to-mask"})
    servers = McpServers({"bench": config})
    await servers.start()
    dispatcher = Dispatcher([], servers)
    context = ToolContext("bench", "terminal", "bench", "run", "inbound")
    raw: list[float] = []
    ours: list[float] = []
    try:
        async with Client(StdioServerParameters(command=sys.executable, args=[str(SERVER)])) as client:
            for i in range(args.calls + 20):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": text})
                between = time.perf_counter()
                outcome = await dispatcher.call("mcp__bench__echo", {"text": text}, context)
                ended = time.perf_counter()
                assert not outcome.is_error, outcome.result
                if i >= 20:  # warm-up
                    raw.append((between - started) * 1000)
                    ours.append((ended - between) * 1000)
    finally:
        await servers.close()
    added = [b - a for a, b in zip(raw, ours, strict=True)]
    for label, values in [
        ("server alone (SDK client)", raw),
        ("through vaultbot", ours),
        ("added, call by call", added),
    ]:
        print(f"{label:26} p50 {statistics.median(values):6.2f} ms   p95 {quantile(values, 0.95):6.2f} ms")
    print(f"{'added, p50 over p50':26} {statistics.median(ours) - statistics.median(raw):6.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
