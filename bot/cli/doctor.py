"""``vaultbot doctor``: what is configured, and whether each part works."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.logs import log_file, log_files
from bot.clock import Clock
from bot.db import WAL_FILES
from bot.private_files import open_private, readable_by_others
from bot.redact import without_credentials
from bot.runner.pricing import PriceTable, PricingError, load_prices
from bot.settings import Settings, config_file, unknown_settings
from bot.startup import StartupError, capture_folder, open_database, probe_folder
from vault import PRIVATE_DIR, find_conflicts

if TYPE_CHECKING:
    from bot.transcribe import TranscriptionError

# Seconds the doctor waits for an endpoint: it reports a hung one rather than hanging with it.
DOCTOR_TIMEOUT = 10.0


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str


async def diagnose(settings: Settings, clock: Clock | None = None) -> list[Check]:
    """Run every check; none of them changes anything but a scratch file, and the model and
    transcription endpoints and Telegram are each asked one free question."""
    clock = clock or Clock(settings.zone)
    source, in_force, *rest = configured(settings, clock)
    return [
        source,
        in_force,
        *[Check("settings", False, warning) for warning in unknown_settings()],
        await asyncio.to_thread(_log, settings),
        await asyncio.to_thread(_vault, settings),
        await asyncio.to_thread(_sync_conflicts, settings),
        await _database(settings.store.path),
        await asyncio.to_thread(_privacy, settings),
        *[await _asked(settings, check) for check in rest],
        await asyncio.to_thread(_system_prompt, settings),
        await _transcription(settings),
        *await _money(settings, clock),
        *await _mcp(settings),
        *await _email_servers(settings),
        *await _matrix(settings),
    ]


def configured(settings: Settings, clock: Clock) -> list[Check]:
    """The checks that only read the settings: config file, settings in force, model, channels,
    time zone."""
    source = config_file()
    return [
        Check("config file", True, f"{source} ({'read' if source.is_file() else 'absent; defaults and environment'})"),
        Check("settings", True, _in_force(settings)),
        Check(
            "model",
            True,
            "capture mode: no ANTHROPIC_API_KEY, messages are filed in the inbox"
            if settings.capture_mode
            else f"{settings.model.name} via {settings.anthropic_base_url or 'the Anthropic API'} (key present)",
        ),
        _telegram(settings),
        _email(settings),
        Check(
            "time zone",
            True,
            f"{clock.tz} ({'VAULTBOT_TIMEZONE' if settings.timezone else 'the machine' + chr(39) + 's'})",
        ),
    ]


async def _asked(settings: Settings, check: Check) -> Check:
    """A check of what is configured, replaced by the answer of what it names where there is one to
    ask: the model API (with a key), Telegram (with a token and someone to serve)."""
    if check.name == "model" and not settings.capture_mode:
        return await _model(settings)
    if check.name == "telegram" and check.ok and settings.telegram.token is not None:
        return await _telegram_me(settings)
    return check


def _system_prompt(settings: Settings) -> Check:
    """Which system prompt the model gets: the file the setting names, or the built-in one."""
    path = settings.model.system_prompt
    if not path.exists():
        return Check("system prompt", True, f"the built-in one ({path} does not exist; VAULTBOT_MODEL__SYSTEM_PROMPT)")
    try:
        words = len(path.read_text(encoding="utf-8").split())
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Check(
            "system prompt", False, f"{path} cannot be read ({reason}): VAULTBOT_MODEL__SYSTEM_PROMPT names it"
        )
    return Check("system prompt", True, f"{path.resolve()} ({words} words; VAULTBOT_MODEL__SYSTEM_PROMPT)")


def _in_force(settings: Settings) -> str:
    model, bus = settings.model, settings.bus
    return (
        f"model {model.name}, max {model.max_tool_calls} tool calls per run, {model.history_turns} turns of history; "
        f"{bus.max_attempts} attempts per message, {bus.concurrency} conversations at once"
    )


def _log(settings: Settings) -> Check:
    path = log_file(settings)
    try:
        with open(path, "a", encoding="utf-8", opener=open_private):
            pass
    except OSError as exc:
        return Check("log", False, f"{path} cannot be written ({exc.strerror or exc}): warnings go to standard error")
    return Check(
        "log", True, f"warnings and errors go to {path.resolve()} (with -v, INFO and up on standard error too)"
    )


def _vault(settings: Settings) -> Check:
    """A probe file written and removed where capture files messages (the vault itself while
    that folder does not exist yet)."""
    root = settings.vault.path
    with contextlib.suppress(OSError):  # made as the first start would; the probe says what stops it
        root.mkdir(parents=True, exist_ok=True)
    folder = capture_folder(settings.vault, root)
    problem = probe_folder(root) or (probe_folder(folder) if folder != root else None)
    if problem is not None:
        return Check("vault", False, problem)
    where = f"in {folder.relative_to(root)}/" if folder != root else "at its top, where capture makes its folder"
    return Check("vault", True, f"{root.resolve()} is writable (a probe file written and removed {where})")


def _sync_conflicts(settings: Settings) -> Check:
    """The conflict copies and git conflict markers a sync tool left in the vault, each named."""
    root = settings.vault.path
    found = find_conflicts(root) if root.is_dir() else []
    if not found:
        return Check("sync conflicts", True, "none in the vault")
    shown = "; ".join(conflict.describe() for conflict in found[:10])
    more = f"; and {len(found) - 10} more" if len(found) > 10 else ""
    return Check("sync conflicts", False, f"{len(found)} to merge by hand (not searched as notes): {shown}{more}")


async def _database(path: Path) -> Check:
    from bot.store import StoreReader

    try:
        db = await open_database(path)
    except StartupError as exc:  # the finding itself
        return Check("database", False, str(exc))
    try:
        counts = await StoreReader(db).message_counts()
    finally:
        await db.close()
    waiting = counts.get("pending", 0) + counts.get("leased", 0)
    dead = counts.get("dead", 0)
    detail = f"{path.resolve()} opens and is migrated; {waiting} message(s) waiting, {dead} dead-lettered"
    return Check("database", True, detail + (" (see `vaultbot log`)" if dead else ""))


def _privacy(settings: Settings) -> Check:
    """Whether vaultbot's files can be read by other users of this machine: its data folder, the
    store, the log, and the vault's bookkeeping (``.vaultbot``); never the person's own notes."""
    store = settings.store.path
    paths = [
        store.parent,
        store,
        *(store.with_name(store.name + suffix) for suffix in WAL_FILES),
        *log_files(settings),
        settings.vault.path / PRIVATE_DIR,
    ]
    loose = readable_by_others(paths)
    if loose:
        found = ", ".join(f"{path} ({mode:04o})" for path, mode in loose)
        fix = " ".join(shlex.quote(str(path)) for path, _ in loose)
        return Check("privacy", False, f"readable by other users of this machine: {found}; chmod go-rwx {fix}")
    return Check(
        "privacy",
        True,
        f"the store, the log, their folder {store.parent.resolve()} and the vault's {PRIVATE_DIR} "
        "are readable by their owner only",
    )


async def _model(settings: Settings) -> Check:
    """Asks the API about the configured model (``GET /v1/models/{name}``): free, no tokens, and
    it needs the key, so one request says whether the API is reachable, the key accepted and the
    model known."""
    from bot.app import build_model
    from bot.runner import AnthropicModel, ModelError

    model = build_model(settings, Clock(settings.zone), timeout=min(settings.model.timeout, DOCTOR_TIMEOUT))
    assert isinstance(model, AnthropicModel)  # a key is set: not capture mode
    base = settings.anthropic_base_url
    where = f"{settings.model.name} via {without_credentials(base) if base else 'the Anthropic API'}"
    try:
        answered = await model.check()
    except ModelError as exc:
        return Check("model", False, f"{where}: {exc}")
    finally:
        await model.close()
    named = f" (the API calls it {answered})" if answered != settings.model.name else ""
    return Check("model", True, f"{where}: reachable, key accepted, model known{named}")


async def _money(settings: Settings, clock: Clock) -> list[Check]:
    """The price table, models it cannot price, and the daily budget."""
    from bot.runner.budget import DailyBudget
    from bot.store import Store

    try:
        prices = await asyncio.to_thread(load_prices, settings.model.pricing)
    except PricingError as exc:
        return [Check("pricing", False, str(exc))]
    try:
        db = await open_database(settings.store.path, write=False)
    except StartupError:  # the database check above already says why
        return [_pricing(settings, prices, [])]
    try:
        store = Store(db)
        checks = [_pricing(settings, prices, await store.models_used())]
        if settings.budget.daily_usd is None:
            checks.append(Check("budget", True, "no daily cap (set VAULTBOT_BUDGET__DAILY_USD to set one)"))
        else:
            state = await DailyBudget(store, clock, settings.budget.daily_usd).state()
            reached = "; reached: messages are filed in capture mode until then" if state.exhausted else ""
            checks.append(Check("budget", True, state.describe() + reached))
    finally:
        await db.close()
    return checks


def _pricing(settings: Settings, prices: PriceTable, used: list[tuple[str, str]]) -> Check:
    """Only the models in force are judged: a model that earlier runs used and the table cannot price
    (a name misspelt once, and set right since) is a note, not a failure."""
    source = settings.model.pricing
    where = f"built-in table{f' with {source}' if source.is_file() else ''}"
    configured = [] if settings.capture_mode else [m for m in (settings.model.name, settings.model.summary_model) if m]
    top = prices.highest
    highest = f"counted at the highest price (${top.input:g} in / ${top.output:g} out per million tokens)"
    unknown = [m for m in dict.fromkeys(configured) if not prices.knows(m)]
    if unknown:
        return Check(
            "pricing",
            False,
            f"{', '.join(unknown)} not in the price table ({where}): {highest}; add an entry to {source}",
        )
    # A call is priced by the name the API answered with, else by the name asked for.
    past = [sent for sent, answered in used if not prices.knows(answered) and not prices.knows(sent)]
    past = [m for m in dict.fromkeys(past) if m not in configured]
    note = f"; earlier runs used {', '.join(past)}, not in the table: {highest}" if past else ""
    return Check("pricing", True, f"{len(prices.prices)} models priced ({where}){note}")


async def _transcription(settings: Settings) -> Check:
    """Asks the endpoint for its models (``GET {base_url}/models``): free, no audio sent, and it needs
    the key, so one request says whether the service is reachable, the key accepted and the model offered."""
    from bot.transcribe import TranscriptionError, build_transcriber

    config = settings.transcribe
    client = build_transcriber(settings, timeout=min(config.timeout, DOCTOR_TIMEOUT))
    if client is None:
        return Check(
            "transcription",
            True,
            "off: voice notes are filed without a transcript "
            "(set VAULTBOT_TRANSCRIBE__API_KEY, or __BASE_URL for a local server)",
        )
    where = without_credentials(config.endpoint)
    try:
        offered = await client.models()
    except TranscriptionError as exc:
        if exc.status != 404 or not config.endpoint.endswith("/v1"):
            return Check("transcription", False, f"{config.model} at {where}: {_unversioned(exc)}")
        offered = None  # a local server under /v1 that lists no models (e.g. whisper.cpp's)
    finally:
        await client.close()
    key = "key accepted" if config.api_key else "no key"
    limits = f"up to {config.max_seconds} s and {config.max_bytes // (1024 * 1024)} MB per recording"
    if offered is None:
        return Check("transcription", True, f"{config.model} at {where}: reachable, lists no models ({key}); {limits}")
    if config.model not in offered:
        listed = ", ".join(sorted(offered)[:8]) or "none"
        return Check(
            "transcription",
            False,
            f"{where} ({key}) does not offer {config.model}; it offers: {listed} (set VAULTBOT_TRANSCRIBE__MODEL)",
        )
    return Check("transcription", True, f"{config.model} at {where}: reachable, {key}; {limits}")


def _unversioned(exc: TranscriptionError) -> str:
    """Why the endpoint failed, with the fix when a 404 comes from an address that lacks its version:
    voice notes would be sent to ``…/audio/transcriptions`` there and fail the same way."""
    if exc.status != 404:
        return exc.reason
    return (
        "its /models answered HTTP 404: OpenAI-compatible services answer under /v1; "
        "add /v1 to VAULTBOT_TRANSCRIBE__BASE_URL, or every voice note would fail"
    )


async def _mcp(settings: Settings) -> list[Check]:
    """Each MCP server, started and stopped as the bot would: its state and the tools the model sees."""
    if not settings.mcp.servers:
        return [Check("mcp", True, "no servers configured (see docs/mcp.md)")]
    from bot.mcp.report import report

    return [Check(f"mcp {server.name}", server.ok, server.describe()) for server in await report(settings)]


def _telegram(settings: Settings) -> Check:
    tg = settings.telegram
    if tg.token is None:
        return Check("telegram", True, "not configured (set VAULTBOT_TELEGRAM__TOKEN to enable)")
    if not tg.allowed_users:
        return Check(
            "telegram", False, "token set but VAULTBOT_TELEGRAM__ALLOWED_USERS is empty: nobody would be served"
        )
    return Check("telegram", True, f"token set; {_served(settings)}; API {without_credentials(tg.base_url)}")


async def _telegram_me(settings: Settings) -> Check:
    """Asks Telegram who the bot is (``getMe``): free, and it needs the token, so one request says
    whether Telegram is reachable at the configured address and accepts the token."""
    from telegram import Bot
    from telegram.request import HTTPXRequest

    from bot.channels.telegram import TelegramRefused, TelegramUnreachable, introduce

    tg = settings.telegram
    assert tg.token is not None
    waits = {f"{kind}_timeout": DOCTOR_TIMEOUT for kind in ("connect", "read", "write", "pool")}
    bot = Bot(tg.token.get_secret_value(), base_url=tg.base_url, request=HTTPXRequest(**waits))
    try:
        me = await introduce(bot, tg)
    except (TelegramRefused, TelegramUnreachable) as exc:
        return Check("telegram", False, str(exc))
    finally:
        await bot.shutdown()
    where = without_credentials(tg.base_url)
    return Check("telegram", True, f"@{me.username} via {where}: token accepted; {_served(settings)}")


def _served(settings: Settings) -> str:
    tg = settings.telegram
    users = ", ".join(str(u) for u in tg.allowed_users)
    return f"serving user ids {users}; {'groups on' if tg.allow_groups else 'groups off'}"


def _email(settings: Settings) -> Check:
    mail = settings.email
    if not mail.enabled:
        return Check("email", True, "not configured (set VAULTBOT_EMAIL__IMAP_HOST to enable)")
    if not mail.allowed_senders:
        return Check(
            "email", False, "IMAP host set but VAULTBOT_EMAIL__ALLOWED_SENDERS is empty: nobody would be answered"
        )
    believed = (
        f"a From believed only with DKIM or SPF passing in the Authentication-Results of {mail.trusted_authserv_id}"
        if mail.require_authenticated
        else "every From believed (VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED=false: a forged From would be answered)"
    )
    senders = ", ".join(mail.allowed_senders)
    return Check("email", True, f"{mail.address} reads {mail.mailbox}; answering {senders}; {believed}")


async def _email_servers(settings: Settings) -> list[Check]:
    """The IMAP login, folder and IDLE, and the SMTP server's login, when the channel is on: nothing is sent."""
    if not settings.email.enabled:
        return []
    from bot.channels.email import probe

    return [Check(found.name, found.ok, found.detail) for found in await probe(settings.email, timeout=DOCTOR_TIMEOUT)]


async def _matrix(settings: Settings) -> list[Check]:
    """The Matrix login and the room with each allowlisted person, when the channel is on: nothing is sent."""
    matrix = settings.matrix
    if not matrix.enabled:
        return []
    if not matrix.allowed_users:
        empty = "homeserver set but VAULTBOT_MATRIX__ALLOWED_USERS is empty: nobody would be served"
        return [Check("matrix", False, empty)]
    from bot.channels.matrix import probe

    found = await probe(matrix, settings.store.path.parent, timeout=DOCTOR_TIMEOUT)
    return [Check(line.name, line.ok, line.detail) for line in found]
