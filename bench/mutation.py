"""Mutation testing of the modules that carry the README's guarantees, with mutmut 3.

mutmut makes one small break at a time in a copy of the code (under ``mutants/``) and runs the tests
that call the broken function; a break no test notices "survives". Which modules are mutated and
which tests run is configured in ``[tool.mutmut]`` in pyproject.toml. Each run starts from a fresh
copy, so the figures are always those of this checkout. Prints one row per module and every
survivor as a one-line diff.

    .venv/bin/python bench/mutation.py [MODULE ...] [--children 8] [--report]

MODULE is a path from the configured list (``vault/paths.py``) or a package (``bot/bus``); none
means all of them. ``--report`` prints the table of the last run without running again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
VENV_BIN = Path(sys.executable).parent
# mutmut's exit codes per mutant (mutmut/stats.py); anything else counts as "other".
STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    36: "timeout",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    None: "not run",
}


def pattern(module: str) -> str:
    """``vault/paths.py`` → ``vault.paths.*``, the mutant names of that module (or package)."""
    return module.removesuffix(".py").strip("/").replace("/", ".") + ".*"


def run(modules: list[str], children: int) -> None:
    """Run mutmut at the lowest CPU priority (the machine is shared), its chatter into mutants/run.log."""
    try:
        import mutmut  # noqa: F401
    except ImportError:
        subprocess.run([VENV_BIN / "pip", "install", "-q", "-e", f"{ROOT}[test,mutation]"], check=True)
    shutil.rmtree(MUTANTS, ignore_errors=True)
    MUTANTS.mkdir()
    command = ["nice", "-n", "19", VENV_BIN / "mutmut", "run", "--max-children", str(children)]
    started = time.monotonic()
    with (MUTANTS / "run.log").open("w") as log:
        done = subprocess.run([*command, *map(pattern, modules)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    print(f"mutmut finished in {time.monotonic() - started:.0f} s (exit {done.returncode}; log: mutants/run.log)")


def one_line_diff(name: str) -> str:
    """What one mutant changed, ``old → new``, cut to the differing words (from ``mutmut show``)."""
    shown = subprocess.run([VENV_BIN / "mutmut", "show", name], cwd=ROOT, capture_output=True, text=True).stdout
    lines = [line for line in shown.splitlines() if line[:3] not in ("---", "+++")]
    old = " ⏎ ".join(line[1:].strip() for line in lines if line.startswith("-"))
    new = " ⏎ ".join(line[1:].strip() for line in lines if line.startswith("+"))
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0  # length of the common tail
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    # Widen to whole words so "sort_keys=True → sort_keys=None" reads as code.
    while start > 0 and old[start - 1] not in " (,":
        start -= 1
    while end > 0 and old[len(old) - end] not in " ),":
        end -= 1
    return f"{old[start : len(old) - end]} → {new[start : len(new) - end]}"


def report(modules: list[str]) -> None:
    """Print one row per module of the last run, then every survivor as a one-line diff."""
    wanted = [pattern(m).removesuffix("*") for m in modules]
    rows, survivors = [], []
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        results = json.loads(meta.read_text())["exit_code_by_key"]
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        if not results or (wanted and not any(name.startswith(tuple(wanted)) for name in results)):
            continue
        counts = Counter(STATUS.get(code, "other") for code in results.values())
        caught, tried = counts["killed"] + counts["timeout"], len(results) - counts["not run"]
        rows.append((module, len(results), counts, f"{100 * caught / tried:.0f}%" if tried else "-"))
        survivors += [name for name, code in sorted(results.items()) if STATUS.get(code) == "survived"]
    if not rows:
        print("No results: run without --report first.")
        return
    columns = ("killed", "survived", "timeout", "no tests", "not run", "other")
    print(f"{'module':40} {'mutants':>7} " + " ".join(f"{c:>8}" for c in columns) + "    score")
    for module, total, counts, score in rows:
        print(f"{module:40} {total:>7} " + " ".join(f"{counts[c]:>8}" for c in columns) + f" {score:>8}")
    print("\nscore = (killed + timeout) / mutants run. Survivors (`.venv/bin/mutmut show NAME` for the full diff):")
    for name in survivors:
        print(f"  {name}: {one_line_diff(name)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules or packages to mutate (default: all configured)")
    # The tests mostly wait (on local servers, pacing, timeouts), not compute: on two cores, eight
    # mutants at once ran 1,089 in 12 minutes where one at a time ran 8 a minute.
    parser.add_argument("--children", type=int, default=8, help="mutants tested at once (default 8)")
    parser.add_argument("--report", action="store_true", help="only print the table of the last run")
    args = parser.parse_args()
    if not args.report:
        run(args.modules, args.children)
    report(args.modules)


if __name__ == "__main__":
    main()
