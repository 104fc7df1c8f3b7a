"""Mail bombs: what reading each costs, in time and memory.

Each bomb is read in a fresh process of its own (so its peak memory is its own): the header as the
access decision reads it (all a stranger's mail ever costs), and the whole mail as a served sender's is
read (in the channel that happens in a bounded worker, bot/channels/email/bounded.py; here without the
limits, to see the real cost). Figures: wall seconds, CPU seconds and the process's peak RSS in MB
(the baseline line is an interpreter with the reading code imported). ``python bench/email_bombs.py
OLD_TREE`` measures another checkout's ``bot`` (one without ``headers`` shows that line as an error:
it read the whole mail before deciding).

    .venv/bin/python bench/email_bombs.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, re, sys, time
sys.path.insert(0, sys.argv[1])
sys.setrecursionlimit(10_000)
from bot.channels.email import reading
raw = sys.stdin.buffer.read()
what = sys.argv[2]
started, cpu = time.perf_counter(), time.process_time()
error = None
try:
    if what == "header":
        from bot.channels.email.headers import read_headers
        read_headers(raw)
    elif what == "mail":
        reading.read_mail(raw)
except BaseException as exc:
    error = type(exc).__name__
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would be this bench's own peak.
peak = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
print(json.dumps({"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu, "rss_mb": peak,
                  "error": error}))
"""


def _mail(body: str = "hi", *, subject: str = "Bomb", html: str | None = None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Ann <ann@example.com>"
    message["Subject"] = subject
    if html is not None:
        message.set_content(html, subtype="html")
    else:
        message.set_content(body)
    return message


def bombs() -> dict[str, bytes]:
    """Mail that once cost the bot far more than its size (and a short one to compare)."""
    nested_lists = "<ul>" * 8_000 + "<li>x" * 8_000 + "</ul>" * 8_000  # about 128 KB
    many = _mail("see attached")
    for n in range(20_000):
        many.add_attachment(b"x", maintype="application", subtype="octet-stream", filename=f"{n}.bin")
    inner = b"From: bob@example.net\nSubject: x\n\nhi\n"
    for _ in range(3_000):
        inner = b"From: bob@example.net\nContent-Type: message/rfc822\n\n" + inner
    return {
        "baseline (a short mail)": bytes(_mail()),
        "a 280 KB Subject": b"Subject: " + b"a " * 140_000 + b"\n" + bytes(_mail()),
        "128 KB of nested-list HTML": bytes(_mail(html=nested_lists)),
        '8,000 lines starting "On "': bytes(_mail("On the list\n" * 8_000)),
        "24 KB of lines ending in wrote:": bytes(_mail("On x wrote:\n" * 2_000)),
        "message/rfc822 3,000 deep": b"From: Ann <ann@example.com>\nContent-Type: message/rfc822\n\n" + inner,
        "20,000 attachments": bytes(many),
    }


def measure(code: Path, what: str, raw: bytes) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(code), what], input=raw, capture_output=True, timeout=900, check=False
    )
    if done.returncode != 0:
        return {"error": done.stderr.decode()[-200:]}
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    code = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    print(f"{'mail':34} {'part':7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  error")
    for name, raw in bombs().items():
        for what in ("header", "mail"):
            got = measure(code, what, raw)
            wall, cpu, rss = (got.get(k, float("nan")) for k in ("wall", "cpu", "rss_mb"))
            print(f"{name:34} {what:7} {wall:8.2f} {cpu:8.2f} {rss:8.0f}  {got.get('error') or ''}")


if __name__ == "__main__":
    main()
