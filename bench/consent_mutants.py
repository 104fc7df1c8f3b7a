"""Hand-made mutants of the consent rules: each removes one rule DESIGN lists, and the tests must fail.

mutmut's own run starts with most of the suite and leaves out the process tests; these mutants are the
rules themselves, taken out one at a time in a copy of the tree, each checked by the tests that pin it.

    .venv/bin/python bench/consent_mutants.py [--workers 4] [--only WORDS] [--tests PATH ...]

``--only`` runs the mutants whose description holds WORDS; ``--tests`` checks them with these tests instead.

Prints one line per mutant: ``killed`` (a test failed, as it must) or ``SURVIVED``; exits 1 if any survived.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/consent",
    "tests/web/test_review_consent.py",
    "tests/mcp/test_mcp_servers.py",
    "tests/reminders/test_reminder_caps.py",
    "--deselect=tests/consent/test_consent_crash.py",  # slow: its guarantees have in-process twins
]

# (what the mutant removes, file, text, replacement)
MUTANTS = [
    ("ask only in a tainted run", "bot/consent/rule.py", "    if not taint.tainted:\n        return None\n", ""),
    (
        "ask before clip_link of an address the person did not send",
        "bot/consent/rule.py",
        "        if not address or address in taint.addresses:",
        "        if True:",
    ),
    (
        "the person's own address is clipped without asking",
        "bot/consent/rule.py",
        "        if not address or address in taint.addresses:",
        "        if not address:",
    ),
    ("ask before an MCP call", "bot/consent/rule.py", '    if name.startswith("mcp__"):', "    if False:"),
    (
        "a trusted server is not asked about",
        "bot/consent/rule.py",
        "        if server in policy.trusted_servers:",
        "        if False:",
    ),
    (
        "ask before a scheduled task",
        "bot/consent/rule.py",
        '    if name == "schedule_message" and input.get("run_model"):',
        "    if False:",
    ),
    (
        "ask before a write to the profile note",
        "bot/consent/rule.py",
        '    if name == "vault_write" and _is_profile(input, policy.profile_note):',
        "    if False:",
    ),
    (
        "look-alike tags neutralised",
        "bot/consent/untrusted.py",
        "    if not starts:\n        return text",
        "    if True:\n        return text",
    ),
    (
        "a label's id is a hash of what it holds",
        "bot/consent/untrusted.py",
        'boundary = hashlib.sha256(f"{source}\\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]',
        'boundary = "0123456789abcdef"',
    ),
    (
        "a tool's result from someone else is labelled",
        "bot/runner/loop.py",
        "    if untrusted is not None:\n        text = label(Untrusted(text, untrusted))",
        "",
    ),
    ("a forward or quote is labelled", "bot/runner/others.py", "return label(Untrusted(", "return (("),
    (
        "a document's text is labelled",
        "bot/runner/documents.py",
        'label(Untrusted(body, "document"))',
        "body",
    ),
    (
        "replace needs a read",
        "vault/vault.py",
        "        if read is not None and self._rel(existing) not in read:",
        "        if False:",
    ),
    (
        "a scheduled task at most hourly",
        "bot/reminders/timing.py",
        '(MODEL_RUN_EVERY, "A scheduled task (run_model)") if run_model',
        '(MIN_INTERVAL, "A scheduled task (run_model)") if run_model',
    ),
    (
        "scheduled tasks capped per day",
        "bot/reminders/book.py",
        '        if counted["runs"] <= self._model_runs_per_day:',
        "        if True:",
    ),
    (
        "no preview but of the person's own address",
        "bot/channels/telegram/sender.py",
        "            else LinkPreviewOptions(is_disabled=True)",
        "            else LinkPreviewOptions(is_disabled=False)",
    ),
    (
        "a new message declines the question",
        "bot/runner/asking.py",
        '                    await self._close(decided[0], "declined")',
        "                    pass",
    ),
    (
        "a question decided once",
        "bot/consent/questions.py",
        "WHERE id = ? AND state = 'asked' RETURNING *",
        "WHERE id = ? RETURNING *",
    ),
    (
        "the allowed call made at most once",
        "bot/runner/asking.py",
        '        if known is not None and known.get("calling"):',
        "        if False:",
    ),
    # Provenance: words keep their source (bot.consent.provenance).
    (
        "provenance: a tainted run's writes are kept",
        "bot/tools/vault_tools.py",
        "        if self._provenance is None or not context.sources:\n            return\n",
        "        return\n",
    ),
    (
        "provenance: a note holding kept words is labelled",
        "bot/tools/vault_tools.py",
        "            source = note_source(found) if found else None",
        "            source = None",
    ),
    (
        "provenance: a clip keeps the page's source in any folder",
        "bot/tools/clip_tool.py",
        "            if self._provenance is not None:",
        "            if False:",
    ),
    (
        "provenance: the profile's kept words are labelled",
        "bot/memory.py",
        'return instructions(rel, body, note_source(sources, "profile note")) if sources else text',
        "return text",
    ),
    (
        "provenance: the person's own words stay theirs",
        "bot/consent/provenance.py",
        "        marks = fingerprints(text) - theirs",
        "        marks = fingerprints(text)",
    ),
    (
        "provenance: no remote embed from a tainted run",
        "bot/tools/vault_tools.py",
        "        if context.sources:\n            plain = unlinked(",
        "        if False:\n            plain = unlinked(",
    ),
    (
        "provenance: a tainted run's task runs as someone else's words",
        "bot/runner/handler.py",
        "    if not sources or not message.text:",
        "    if True:",
    ),
    (
        "provenance: an allowed call keeps its run's sources",
        "bot/runner/asking.py",
        "        sources=frozenset(waiting.sources),\n",
        "",
    ),
    (
        "provenance: scheduled text is never a command",
        "bot/runner/handler.py",
        'return None if "reminder" in message.meta else parse_command(message.text)',
        "return parse_command(message.text)",
    ),
    (
        "provenance: a clip never writes the profile note",
        "bot/clip/clipper.py",
        "    if profile is not None and note_stem(title).casefold() == profile:",
        "    if False:",
    ),
    (
        "an MCP server's tool list taints the runs it is offered to",
        "bot/runner/loop.py",
        ".seeing(turn).offered(dispatcher.sources())",
        ".seeing(turn)",
    ),
    (
        "a trusted server's tool list does not taint",
        "bot/mcp/servers.py",
        "self.words = None if link.config.trusted else",
        "self.words = None if False else",
    ),
    (
        "a tool's input schema is labelled",
        "bot/mcp/described.py",
        "return label(Untrusted(value, source))",
        "return value",
    ),
    ("a built-in tool's name is refused", "bot/mcp/naming.py", "if _read_as(tool.name) in shadowed:", "if False:"),
    (
        "a name that is not plain is refused",
        "bot/mcp/naming.py",
        "if not PLAIN_NAME.fullmatch(tool.name):",
        "if False:",
    ),
    (
        "a reply to a forward is someone else's",
        "bot/channels/telegram/updates.py",
        "    if replied.forward_origin is not None:",
        "    if False:",
    ),
    (
        "a quote of another chat is someone else's",
        "bot/channels/telegram/updates.py",
        "    if message.external_reply is not None:",
        "    if False:",
    ),
    (
        "an image is labelled",
        "bot/images/content.py",
        '"text": label_of(Untrusted(text, IMAGE_SOURCE))}',
        '"text": text}',
    ),
    (
        "an answer counts only from the person asked",
        "bot/runner/asking.py",
        'if decision != "expired" and not await self._answerable(answer.question, message):',
        "if False:",
    ),
    (
        "a question goes to Telegram as plain text",
        "bot/channels/telegram/sender.py",
        "[plain(message.text)] if message.question is not None else",
        "[plain(message.text)] if False else",
    ),
    (
        "hidden characters shown as escapes",
        "bot/consent/shown.py",
        'if category in _HIDDEN or category == "Zs":',
        "if False:",
    ),
    (
        "quoted lines barred",
        "bot/consent/shown.py",
        "lines = [BAR + line for line in kept.split(",
        "lines = [line for line in kept.split(",
    ),
    (
        "a quoted part cut to fit one message",
        "bot/consent/shown.py",
        "kept = _cut(shown, QUOTED_AT_MOST)",
        "kept = shown",
    ),
    (
        "the review page takes an answer only from its own origin",
        "bot/web/questions.py",
        'if not access.own_origin(request.scope, request.headers.get("origin", "")):',
        "if False:",
    ),
]


def killed(tree: Path, workers: int, tests: list[str]) -> bool:
    """Whether the tests fail on the mutated tree."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-n", str(workers), *tests],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    return done.returncode != 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", default="", help="only the mutants whose description holds these words")
    parser.add_argument("--tests", nargs="+", default=TESTS, help="the tests that must fail on each mutant")
    args = parser.parse_args()
    mutants = [mutant for mutant in MUTANTS if args.only in mutant[0]]
    survived = 0
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".venv*", ".git", "mutants", "data", "__pycache__"))
        for what, path, text, replacement in mutants:
            source = tree / path
            original = source.read_text(encoding="utf-8")
            assert original.count(text) == 1, f"{what}: the text to mutate is not found once in {path}"
            source.write_text(original.replace(text, replacement), encoding="utf-8")
            try:
                result = "killed" if killed(tree, args.workers, args.tests) else "SURVIVED"
            finally:
                source.write_text(original, encoding="utf-8")
            survived += result == "SURVIVED"
            print(f"{result:<9} {what}  ({path})", flush=True)
    print(f"{len(mutants) - survived} of {len(mutants)} killed")
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
