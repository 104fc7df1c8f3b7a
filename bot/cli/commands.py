"""The subcommands of ``vaultbot``: each loads settings, opens what it needs and prints."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from bot.cli import tables
from bot.cli.logs import send_logs
from bot.clock import day_bounds
from bot.settings import Settings, SettingsError, load_settings, unknown_settings
from bot.startup import StartupError, only_run, open_database
from bot.store import MIN_PREFIX

T = TypeVar("T")


def _settings(ctx: click.Context) -> Settings:
    settings: Settings = ctx.obj
    return settings


def _run(coro: Awaitable[T]) -> T:
    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except (SettingsError, StartupError) as exc:  # a file or folder a setting names is unusable
        click.echo(f"vaultbot: {exc}", err=True)
        raise SystemExit(2) from None
    except sqlite3.DatabaseError as exc:
        _store_failed(exc)
    except BaseExceptionGroup as group:  # from the task groups of `run` and `chat`
        failed = [e for e in _leaves(group) if isinstance(e, sqlite3.DatabaseError)]
        if not failed:
            raise
        _store_failed(failed[0])


def _store_failed(exc: sqlite3.DatabaseError) -> NoReturn:
    """A store that is corrupt, not a database, or unusable ends the command with one line (the
    traceback with -v): waiting cannot fix it, and a traceback tells a person nothing more."""
    logging.getLogger(__name__).info("the store failed", exc_info=exc)
    path = click.get_current_context().obj.store.path
    click.echo(f"vaultbot: the store {path} cannot be used: {exc} (VAULTBOT_STORE__PATH names it).", err=True)
    raise SystemExit(1) from None


_HELP_ONLY = "vaultbot.help_only"


class _Commands(click.Group):
    """Ctrl-C ends any command, at whatever line it arrives (a prompt being printed, a module being
    imported, a loop running), with status 130, as the shell reports a program SIGINT ended, rather
    than click's "Aborted!" and 1. A subcommand's help is shown without reading the settings, so
    that ``vaultbot run -h`` helps the person whose settings are wrong."""

    def invoke(self, ctx: click.Context) -> object:
        given = ctx.args[: ctx.args.index("--")] if "--" in ctx.args else ctx.args
        ctx.meta[_HELP_ONLY] = any(arg in ctx.help_option_names for arg in given)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise SystemExit(130) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vaultbot", message="%(prog)s %(version)s")
@click.option(
    "-v", "--verbose", is_flag=True, help="Log what happens to standard error (warnings always go to the log file)."
)
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """vaultbot: a personal assistant that keeps your notes in a Markdown vault."""
    if ctx.meta[_HELP_ONLY]:
        return
    try:
        ctx.obj = load_settings()
    except SettingsError as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(2)
    ctx.call_on_close(send_logs(ctx.obj, verbose=verbose))
    if ctx.invoked_subcommand != "doctor":  # the doctor reports them with the rest
        for warning in unknown_settings():
            click.echo(f"vaultbot: warning: {warning}", err=True)


@cli.command()
@click.pass_context
def chat(ctx: click.Context) -> None:
    """Talk to vaultbot in this terminal (or pipe lines in)."""
    from bot.cli.chat import PROMPT

    settings = _settings(ctx)
    interactive = sys.stdin.isatty()
    if interactive:
        # Said, and the prompt shown, before the app is imported and opened (the SDK, the vault, MCP
        # servers: seconds): what is typed meanwhile waits in the terminal and is the first line read.
        click.echo(_chat_banner(settings), err=True)
        click.echo(PROMPT, nl=False, err=True)
    from bot.channels import OutputClosed

    async def main() -> None:
        from bot.app import App
        from bot.cli.chat import chat as run_chat

        async with await App.open(settings) as app:
            _settle_heap()
            await run_chat(app, sys.stdin, sys.stdout, interactive=interactive, prompted=interactive)

    try:
        _run(main())
    except OutputClosed:
        # What a Unix filter does when its reader goes away: no traceback, and the status of a
        # program ended by SIGPIPE. Standard output points nowhere, so exiting cannot fail on it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        ctx.exit(141)


def _chat_banner(settings: Settings) -> str:
    """What ``vaultbot chat`` says at a terminal first: the mode, where notes go, and how to quit."""
    inbox = settings.vault.path / settings.vault.inbox
    if settings.capture_mode:
        said = f"Capture mode (no ANTHROPIC_API_KEY): messages are filed in {inbox}."
    else:
        said = f"Assistant mode with {settings.model.name}: notes go to the vault at {settings.vault.path}."
    relative = [path for path in (settings.vault.path, settings.store.path) if not path.is_absolute()]
    if relative:  # a chat started in another folder would find none of these notes
        said += (
            f" Those folders follow the current one ({Path.cwd()}): VAULTBOT_VAULT__PATH and "
            "VAULTBOT_STORE__PATH fix them."
        )
    return said + " Ctrl-D to quit."


@cli.command()
@click.argument("ids", nargs=-1)
@click.pass_context
def retry(ctx: click.Context, ids: tuple[str, ...]) -> None:
    """Send dead-lettered messages to the model again (all of them without IDs)."""
    from bot.cli.retry import NothingToRetry, nothing_waiting
    from bot.store import UnknownDeadLetter

    async def main() -> bool:
        if not ids and await nothing_waiting(_settings(ctx).store.path):
            raise NothingToRetry
        from bot.app import App  # the model, the vault and the MCP servers: only for something to send
        from bot.cli.retry import retry as run_retry

        async with await App.open(_settings(ctx)) as app:
            return await run_retry(app, list(ids), sys.stdout)

    try:
        answered = _run(main())
    except UnknownDeadLetter as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(1)
    except NothingToRetry as exc:
        click.echo(str(exc))
        ctx.exit(0)
    ctx.exit(0 if answered else 1)


@cli.command("run")
@click.pass_context
def run_command(ctx: click.Context) -> None:
    """Serve every configured channel with the workers, until SIGINT or SIGTERM."""
    from bot.app import App
    from bot.channels.telegram import TelegramConflict, TelegramRefused
    from bot.cli.serve import serve
    from bot.web import CannotListen

    settings = _settings(ctx)
    if settings.telegram.token is not None and not settings.telegram.allowed_users:
        click.echo(
            "vaultbot: VAULTBOT_TELEGRAM__ALLOWED_USERS is empty, so the bot would refuse everyone; "
            "add your numeric Telegram user id (see the README).",
            err=True,
        )
        ctx.exit(2)
    if settings.email.enabled and not settings.email.allowed_senders:
        click.echo(
            "vaultbot: VAULTBOT_EMAIL__ALLOWED_SENDERS is empty, so the bot would answer no one; "
            "add your own address (see the README).",
            err=True,
        )
        ctx.exit(2)
    if settings.matrix.enabled and not settings.matrix.allowed_users:
        click.echo(
            "vaultbot: VAULTBOT_MATRIX__ALLOWED_USERS is empty, so the bot would serve no one; "
            "add your own Matrix id, such as [\"@you:example.org\"] (see the README).",
            err=True,
        )
        ctx.exit(2)
    if settings.telegram.token is None and not settings.email.enabled and not settings.matrix.enabled:
        click.echo(
            "vaultbot: no channel is configured (set VAULTBOT_TELEGRAM__TOKEN, VAULTBOT_EMAIL__IMAP_HOST or "
            "VAULTBOT_MATRIX__HOMESERVER); "
            "serving the message bus only. Use `vaultbot chat` to talk in this terminal.",
            err=True,
        )

    # A login or token to fix is a start-up problem like a bad setting (matrix-nio is loaded only when on).
    refused: tuple[type[Exception], ...] = (TelegramRefused,)
    if settings.matrix.enabled:
        from bot.channels.matrix import MatrixRefused

        refused = (TelegramRefused, MatrixRefused)

    async def main() -> None:
        with only_run(settings.store.path.parent):
            async with await App.open(settings) as app:
                _settle_heap()
                await serve(app, stop_on_signals(), announce=_page_served, tell=lambda line: click.echo(line, err=True))

    try:
        _run(main())
    except* TelegramConflict as group:
        click.echo(f"vaultbot: {_leaves(group)[0]}", err=True)
        ctx.exit(1)
    except* refused as group:  # a token or address to fix: a start-up problem like a bad setting
        click.echo(f"vaultbot: {_leaves(group)[0]}", err=True)
        ctx.exit(2)
    except* CannotListen as group:  # a port in use: a start-up problem like a bad setting
        click.echo(f"vaultbot: {_leaves(group)[0]}", err=True)
        ctx.exit(2)
    except* StartupError as group:  # a channel's set-up that cannot work (a mail login refused)
        click.echo(f"vaultbot: {_leaves(group)[0]}", err=True)
        ctx.exit(2)


def _settle_heap() -> None:
    """Before a long-running command starts its work: what start-up built (the SDKs, pydantic's
    schemas, the app) lives as long as the process, so the cyclic garbage collector stops walking
    it; otherwise every full collection walks some 160,000 objects, a pause of ~0.1 s."""
    gc.freeze()


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _announce(url: str) -> None:
    click.echo("The review page (Ctrl-C to stop):", err=True)
    click.echo(url)


def _page_served(url: str) -> None:
    """The review page's address, under the line of `vaultbot run` that already says Ctrl-C stops it."""
    click.echo("The review page:", err=True)
    click.echo(url)


@cli.command("review")
@click.option("--host", help="Address to listen on (default 127.0.0.1: this machine only).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default 8765; 0: any free port).")
@click.pass_context
def review_command(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve the review web page (read-only) until Ctrl-C."""
    from bot.store import Store
    from bot.web import CannotListen, ReviewServer, review_page, review_token

    settings = _settings(ctx)
    host = host or settings.review.host
    port = settings.review.port if port is None else port

    async def main() -> None:
        async with AsyncExitStack() as stack:
            # The only writes, before it serves: the store brought up to date, the token kept, the
            # address recorded. Then the writable connection closes: the page reads through its own.
            db = await open_database(settings.store.path)
            try:
                token = await review_token(settings, db)
                page = await stack.enter_async_context(review_page(settings, token, listen=host))
                server = ReviewServer(page, host, port)
                await Store(db).record_review_page(server.served(token))
            finally:
                await db.close()
            stop = stop_on_signals()  # before the address is out: a Ctrl-C right after it stops cleanly
            _announce(server.url(token))
            await server.serve(stop)

    try:
        _run(main())
    except CannotListen as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(2)


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    """The exceptions inside nested task groups."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return tables.parse_since(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None


@cli.command("log")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--since", help="Only entries since then: an ISO 8601 date or time, or an age such as 2h or 7d.")
@click.pass_context
def log_command(ctx: click.Context, as_json: bool, limit: int, since: str | None) -> None:
    """Show the interaction log, newest first."""
    entries = _run(_with_store(ctx, lambda store: store.list_interactions(limit=limit, since=_since(since))))
    _print(entries, as_json, lambda rows: tables.interactions_table(rows, _settings(ctx).zone))


@cli.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--since", help="Only runs since then: an ISO 8601 date or time, or an age such as 2h or 7d.")
@click.pass_context
def runs(ctx: click.Context, as_json: bool, limit: int, since: str | None) -> None:
    """Show runs (the audit trail), newest first."""
    if ctx.invoked_subcommand is not None:
        return
    found = _run(_with_store(ctx, lambda store: store.list_runs(limit=limit, since=_since(since))))
    _print(found, as_json, lambda rows: tables.runs_table(rows, _settings(ctx).zone))


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with its steps.")
@click.pass_context
def runs_show(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Show one run with every step (RUN_ID: its id, or the first 6 or more characters of it)."""
    zone = _settings(ctx).zone
    prefix = run_id.strip().lower()
    if len(prefix) < MIN_PREFIX:
        click.echo(
            f"vaultbot: {run_id!r} is too short to name a run: give at least {MIN_PREFIX} characters "
            "of its id (see `vaultbot runs`).",
            err=True,
        )
        ctx.exit(1)

    async def find(store: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        found = await store.runs_starting_with(prefix)
        if len(found) != 1:
            return None, found
        return await store.get_run(found[0]["id"]), found

    run, matches = _run(_with_store(ctx, find))
    if len(matches) > 1:
        click.echo(tables.ambiguous_run(run_id, matches, zone), err=True)
        ctx.exit(1)
    if run is None:
        click.echo(f"vaultbot: no run with id {run_id!r} (see `vaultbot runs`).", err=True)
        ctx.exit(1)
    if as_json:
        click.echo(json.dumps(run, indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(tables.run_detail(run, zone))


@cli.command("undo")
@click.argument("run_id")
@click.option("--dry-run", is_flag=True, help="Say what would be taken back, and change nothing.")
@click.pass_context
def undo_command(ctx: click.Context, run_id: str, dry_run: bool) -> None:
    """Take back what a run changed in the vault (RUN_ID: 6 or more characters of its id).

    Exit status 0 when everything was taken back, 1 when a note was left because it changed since,
    2 when no run could be undone."""
    from bot.cli.undo import undo

    complete, said = _run(undo(_settings(ctx), run_id, dry_run=dry_run))
    if complete is None:
        click.echo(f"vaultbot: {said}", err=True)
        ctx.exit(2)
    click.echo(said)
    ctx.exit(0 if complete else 1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--since", help="Only days since then: an ISO 8601 date or time, or an age such as 7d (whole days).")
@click.pass_context
def usage(ctx: click.Context, as_json: bool, since: str | None) -> None:
    """Show tokens and cost per day (in your time zone) and per model."""
    zone = _settings(ctx).zone
    start = _first_day(since, zone)
    rows = _run(_with_store(ctx, lambda store: store.usage_by_day(start, zone)))
    if as_json:
        click.echo(json.dumps([tables.usage_json(row) for row in rows], indent=2))
    else:
        click.echo(tables.usage_table(rows))


def _first_day(since: str | None, zone: tzinfo) -> datetime | None:
    """Whole days: the start of the day ``since`` falls on, in ``zone``; a bare date is a day there."""
    if since is None:
        return None
    try:
        day = date.fromisoformat(since.strip())
    except ValueError:
        start = _since(since)
        assert start is not None
        day = start.astimezone(zone).date()
    return day_bounds(day, zone)[0]


@cli.command("backup")
@click.argument("dest", required=False, type=click.Path(path_type=Path))
@click.option(
    "--with-secrets", is_flag=True, help="Keep .env, the config file's secrets and the Matrix login in the archive."
)
@click.option(
    "--verify", "archive", type=click.Path(path_type=Path), metavar="ARCHIVE", help="Check every hash of ARCHIVE."
)
@click.pass_context
def backup_command(ctx: click.Context, dest: Path | None, with_secrets: bool, archive: Path | None) -> None:
    """Back up the store, the vault and the config into one .tar.gz (DEST: a file or a folder), while
    vaultbot runs.

    Exit status 1 when the backup could not be written or the archive checked is not whole."""
    from bot.backup import BackupError
    from bot.cli.backup import back_up, checked

    if archive is not None and (dest is not None or with_secrets):
        raise click.UsageError("--verify ARCHIVE takes nothing else.")
    try:
        if archive is not None:
            click.echo(_run(checked(archive)))
        else:
            click.echo(_run(back_up(_settings(ctx), dest, with_secrets=with_secrets)).describe())
    except BackupError as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(1)


@cli.command("restore")
@click.argument("archive", type=click.Path(path_type=Path))
@click.pass_context
def restore_command(ctx: click.Context, archive: Path) -> None:
    """Restore a backup into an empty data folder and vault, every hash checked first.

    Exit status 1 when the archive is not whole, 2 when the store or the vault is not empty."""
    from bot.backup import BadArchive, TargetNotEmpty
    from bot.cli.backup import restore_from

    try:
        click.echo(_run(restore_from(_settings(ctx), archive)))
    except BadArchive as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(1)
    except TargetNotEmpty as exc:
        click.echo(f"vaultbot: {exc}", err=True)
        ctx.exit(2)


@cli.command()
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """Check the configuration and say what works and what does not."""
    from bot.cli.doctor import diagnose

    checks = _run(diagnose(_settings(ctx)))
    for check in checks:
        click.echo(f"{'ok ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    ctx.exit(0 if all(c.ok for c in checks) else 1)


@cli.group("mcp")
def mcp_group() -> None:
    """The MCP servers and their tools."""


@mcp_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per server.")
@click.pass_context
def mcp_list(ctx: click.Context, as_json: bool) -> None:
    """Start each MCP server, list the tool names the model sees, and stop it."""
    if not _settings(ctx).mcp.servers:  # told without loading the MCP SDK
        click.echo("[]" if as_json else "No MCP servers are configured (see docs/mcp.md).")
        return
    from bot.mcp.report import report

    servers = _run(report(_settings(ctx)))
    if as_json:
        click.echo(json.dumps([server.as_json() for server in servers], indent=2, ensure_ascii=False))
    elif not servers:
        click.echo("No MCP servers are configured (see docs/mcp.md).")
    for server in [] if as_json else servers:
        click.echo(
            f"{server.name} ({server.transport}): {server.state}" + (f": {server.reason}" if server.reason else "")
        )
        for tool in server.tools:
            click.echo(f"  {tool}")
        for warning in server.warnings:
            click.echo(f"  warning: {warning}")
    ctx.exit(0 if all(server.ok for server in servers) else 1)


async def _with_store(ctx: click.Context, use: Callable[[Any], Awaitable[T]]) -> T:
    from bot.store import Store

    db = await open_database(_settings(ctx).store.path, write=False)
    try:
        return await use(Store(db))
    finally:
        await db.close()


def _print(rows: list[dict[str, Any]], as_json: bool, table: Callable[[list[dict[str, Any]]], str]) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(table(rows))


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="vaultbot")
