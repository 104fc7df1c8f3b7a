"""A photo prepared for the model: decode, orient, resize, encode (``bot.images.prepare``).

The photo is a 12-megapixel JPEG (4032 × 3024, as a phone camera takes it) of smooth colour with
grain, so it weighs what a phone's photo weighs (3–5 MB), held on its side (EXIF orientation 6) so
turning it is part of the work. Reports p50/p95 wall time and CPU time per photo, the load on the
machine while it ran (wall time on a shared host moves with it; CPU time much less), and the size of
what the model receives.

    .venv/bin/python bench/photo.py [--photos 30]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.images import Prepared, prepare  # noqa: E402

WIDTH, HEIGHT = 4032, 3024
ORIENTATION = 0x0112


def phone_photo() -> bytes:
    """A 12 MP JPEG with a phone's weight: colour gradients, grain, quality 92, orientation 6."""
    red = Image.linear_gradient("L").resize((WIDTH, HEIGHT))
    green = Image.radial_gradient("L").resize((WIDTH, HEIGHT))
    blue = Image.effect_noise((WIDTH, HEIGHT), 24)
    picture = Image.merge("RGB", (red, green, blue))
    grain = Image.effect_noise((WIDTH, HEIGHT), 18).convert("RGB")
    picture = Image.blend(picture, grain, 0.25)
    exif = Image.Exif()
    exif[ORIENTATION] = 6
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=92, exif=exif.tobytes())
    return out.getvalue()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=30)
    args = parser.parse_args()
    data = phone_photo()
    prepare(data)  # warm: Pillow's codecs loaded once
    walls: list[float] = []
    cpus: list[float] = []
    load_before = os.getloadavg()[0]
    for _ in range(args.photos):
        started, cpu = time.perf_counter(), time.process_time()
        prepared = prepare(data)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    load_after = os.getloadavg()[0]
    assert isinstance(prepared, Prepared)
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"load average (1 min) before/after: {load_before:.2f} / {load_after:.2f}")
    print(f"photo: {WIDTH}×{HEIGHT} JPEG, {len(data) / 1e6:.1f} MB, EXIF orientation 6")
    print(
        f"model sees: {prepared.width}×{prepared.height} {prepared.media_type}, {len(prepared.data) / 1e3:.0f} kB "
        f"({len(prepared.base64()) / 1e3:.0f} kB base64)"
    )
    print(
        f"prepare, {args.photos} photos: wall p50 {statistics.median(walls):.1f} ms, "
        f"p95 {percentile(walls, 0.95):.1f} ms; CPU p50 {statistics.median(cpus):.1f} ms, "
        f"p95 {percentile(cpus, 0.95):.1f} ms (target: wall p50 ≤ 150 ms)"
    )


if __name__ == "__main__":
    main()
