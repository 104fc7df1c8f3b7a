"""Wiring: one place that builds the database, bus, store, vault, model and handler from settings."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.bus import CONSENT, INBOUND, Bus, Worker
from bot.clip import Clipper, Resolver, resolve
from bot.clock import Clock
from bot.consent import Policy, Provenance, Questions
from bot.db import Database
from bot.memory import profile_reader
from bot.reminders import ReminderBook, Scheduler
from bot.runner import (
    Assistant,
    Audit,
    CaptureModel,
    CommandRunner,
    Inputs,
    Limits,
    ModelClient,
    ReviewLink,
    StandIns,
    Storage,
    TurnHandler,
    Window,
    load_system_prompt,
)
from bot.runner.asking import Asking
from bot.runner.budget import DailyBudget
from bot.runner.capture import ENABLE_HINT
from bot.runner.documents import Documents
from bot.runner.photos import Photos
from bot.runner.pricing import load_prices
from bot.runner.summary import AuditSummarizer
from bot.settings import Settings
from bot.startup import open_database, open_vault
from bot.store import Store
from bot.streaming import Progress
from bot.tools import build_dispatcher
from bot.transcribe import TranscriptionClient, VoiceNotes, build_transcriber
from bot.undo import Undoer
from vault import ATTACHMENTS, Vault

if TYPE_CHECKING:
    from bot.mcp import McpServers
    from bot.runner import AnthropicModel


@dataclass
class App:
    """The parts a command runs on. Open with :meth:`open`, always :meth:`close`
    (``async with await App.open(settings) as app:`` does both)."""

    settings: Settings
    db: Database
    bus: Bus
    store: Store
    notes: Vault
    model: ModelClient
    handler: TurnHandler
    summarizer: AuditSummarizer | None
    clock: Clock
    review: ReviewLink
    reminders: ReminderBook
    scheduler: Scheduler
    transcriber: TranscriptionClient | None
    # Replies as they are written, for the channels that show them (ephemeral, in-process).
    progress: Progress
    clipper: Clipper
    # The MCP servers, started with the app when there is a model to call their tools.
    mcp: McpServers | None = None

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        model: ModelClient | None = None,
        clock: Clock | None = None,
        resolver: Resolver = resolve,
    ) -> App:
        """Open the store and vault and build the runner. ``model`` replaces the configured one;
        ``clock`` (the user's zone and ``now``) replaces the real one; ``resolver`` the name lookup
        of ``clip_link``'s fetching."""
        clock = clock or Clock(settings.zone)
        prices = await asyncio.to_thread(load_prices, settings.model.pricing)
        db = await open_database(settings.store.path)
        notes: Vault | None = None
        try:
            bus, store = Bus(db), Store(db)
            notes = await asyncio.to_thread(open_vault, settings.vault)
            model = model or build_model(settings, clock)
            system = await asyncio.to_thread(load_system_prompt, settings.model.system_prompt)
        except BaseException:
            if notes is not None:
                await asyncio.to_thread(notes.close)
            await db.close()
            raise
        reminders = ReminderBook(
            db,
            bus,
            store,
            clock,
            max_pending=settings.reminders.max_pending,
            model_runs_per_day=settings.reminders.model_runs_per_day,
        )
        scheduler = Scheduler(reminders)
        clipper = Clipper(
            notes=notes, db=db, settings=settings.clip, resolver=resolver, profile_note=settings.memory.note
        )
        provenance = Provenance(db)
        mode = "capture" if isinstance(model, CaptureModel) else "assistant"
        mcp = await _mcp(settings) if settings.mcp.servers and mode == "assistant" else None
        # Notes there hold someone else's words: what the tools return of them is labelled as such.
        foreign = {settings.clip.folder: "clipped page", ATTACHMENTS: "attached file"}
        dispatcher = build_dispatcher(notes, bus, store, reminders, scheduler.wake, clipper, mcp, foreign, provenance)
        summarizer = build_summarizer(settings)
        budget = None
        if settings.budget.daily_usd is not None and mode == "assistant":
            budget = DailyBudget(store, clock, settings.budget.daily_usd)
        review = ReviewLink(token=settings.review.token, app_url=settings.review.app_url)
        transcriber = build_transcriber(settings)
        voice = VoiceNotes(
            db=db, bus=bus, store=store, vault_root=notes.root, settings=settings.transcribe, client=transcriber
        )
        progress = Progress()
        handler = TurnHandler(
            storage=Storage(db, bus, store),
            assistant=Assistant(
                model=model,
                mode=mode,
                system=system,
                dispatcher=dispatcher,
                limits=Limits(max_tool_calls=settings.model.max_tool_calls),
                clock=clock,
                profile=profile_reader(notes, settings.memory.note, provenance),
                policy=Policy(
                    profile_note=settings.memory.note,
                    trusted_servers=frozenset(name for name, server in settings.mcp.servers.items() if server.trusted),
                ),
            ),
            window=Window(turns=settings.model.history_turns, tokens=settings.model.history_tokens),
            audit=Audit(prices, summarizer),
            max_attempts=settings.bus.max_attempts,
            inputs=Inputs(
                voice=voice,
                documents=Documents(notes=notes, bus=bus, store=store),
                photos=Photos(store=store, vault_root=notes.root),
            ),
            stand_ins=StandIns(
                # Dead letters get a note each in the inbox, even with daily capture: filing one again after
                # a crash then finds the same note instead of appending a second line to the day's note.
                filer=CaptureModel(settings.vault.inbox, hint=None, log=False),
                budget=budget,
                over_budget=_capture(settings, clock, hint=None) if budget else None,
                # A link sent alone is clipped with the assistant on too, as capture mode clips it.
                links=_capture(settings, clock, hint=None) if mode == "assistant" else None,
            ),
            progress=progress,
            asking=Asking(db=db, bus=bus, store=store, questions=Questions(db), timeout=settings.consent.timeout),
            commands=CommandRunner(
                dispatcher=dispatcher,
                store=store,
                inbox=settings.vault.inbox,
                mode=mode,
                model_name=model.name,
                clock=clock,
                budget=budget,
                review=review,
                reminders=reminders,
                undoer=Undoer(notes, store),
            ),
        )
        return cls(
            settings,
            db,
            bus,
            store,
            notes,
            model,
            handler,
            summarizer,
            clock,
            review,
            reminders,
            scheduler,
            transcriber,
            progress,
            clipper,
            mcp,
        )

    def runner_worker(self) -> Worker:
        """The worker that runs the model on inbound messages."""
        return Worker(
            self.bus,
            INBOUND,
            self.handler,
            concurrency=self.settings.bus.concurrency,
            lease=self.settings.bus.lease_seconds,
            max_attempts=self.settings.bus.max_attempts,
            backoff=self.settings.bus.backoff_seconds,
            backoff_max=self.settings.bus.backoff_max_seconds,
            on_dead=self.handler.on_dead,
            name="runner",
        )

    def consent_worker(self) -> Worker:
        """The worker that declines questions for consent nobody answered in time."""
        return Worker(
            self.bus,
            CONSENT,
            self.handler,
            concurrency=1,
            lease=self.settings.bus.lease_seconds,
            max_attempts=self.settings.bus.max_attempts,
            backoff=self.settings.bus.backoff_seconds,
            backoff_max=self.settings.bus.backoff_max_seconds,
            name="consent",
        )

    async def __aenter__(self) -> App:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the MCP servers; release the models' connections and the database."""
        if self.mcp is not None:
            await self.mcp.close()
        close = getattr(self.model, "close", None)
        if close is not None:
            await close()
        if self.summarizer is not None:
            await self.summarizer.close()
        if self.transcriber is not None:
            await self.transcriber.close()
        await self.clipper.close()
        await asyncio.to_thread(self.notes.close)
        await self.db.close()


def build_model(settings: Settings, clock: Clock, *, timeout: float | None = None) -> ModelClient:
    """Claude when an API key is set, else capture mode. A ``timeout`` replaces the setting's and
    turns off the SDK's retries: one short question (the doctor's), not a turn."""
    if settings.anthropic_api_key is None:
        return _capture(settings, clock)
    if timeout is not None:
        return _claude(settings, settings.model.name, settings.model.max_tokens, timeout=timeout, retries=0)
    return _claude(settings, settings.model.name, settings.model.max_tokens)


async def _mcp(settings: Settings) -> McpServers:
    # The MCP SDK (a second of imports) only for a bot that has servers to call.
    from bot.mcp import McpServers

    mcp = McpServers(settings.mcp.servers)
    await mcp.start()
    return mcp


def _capture(settings: Settings, clock: Clock, *, hint: str | None = ENABLE_HINT) -> CaptureModel:
    vault = settings.vault
    daily = (vault.daily_folder, vault.daily_pattern) if vault.capture_to == "daily" else None
    return CaptureModel(vault.inbox, daily=daily, now=clock.now, hint=hint)


def build_summarizer(settings: Settings) -> AuditSummarizer | None:
    """The audit trail's summariser, when a summary model is set and there is a key to run it."""
    if settings.anthropic_api_key is None or not settings.model.summary_model:
        return None
    return AuditSummarizer(_claude(settings, settings.model.summary_model, max_tokens=200))


def _claude(
    settings: Settings, name: str, max_tokens: int, *, timeout: float | None = None, retries: int | None = None
) -> AnthropicModel:
    from bot.runner import AnthropicModel  # the SDK only for a bot that calls the model

    assert settings.anthropic_api_key is not None
    return AnthropicModel(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
        model=name,
        max_tokens=max_tokens,
        max_retries=settings.model.sdk_max_retries if retries is None else retries,
        timeout=settings.model.timeout if timeout is None else timeout,
    )
