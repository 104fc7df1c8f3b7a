"""The tools' inputs as the model must send them. Names and fields are a public contract."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.reminders import TimingError, check_repeat

MAX_MESSAGE_CHARS = 100_000


class ToolInput(BaseModel):
    """Unknown fields are ignored: a recipient or chat id the model adds changes nothing."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class VaultWriteInput(ToolInput):
    """Write a note."""

    folder: str = Field(description='Vault folder, "" for the root, e.g. "Tasks" or "Projects/Home".')
    title: str = Field(min_length=1, max_length=300, description="The note's title; the file name comes from it.")
    content: str = Field(description="The note's Markdown body.")
    tags: list[str] | None = Field(None, description="Tags without '#'.")
    confidence: int | None = Field(None, ge=0, le=100, description="How sure you are of this note, 0–100.")
    mode: Literal["create", "append", "replace"] = Field(
        "create",
        description="create: a new note, never overwrites; append: add to the end; "
        "replace: new body, the old version is kept recoverable.",
    )


class VaultReadInput(ToolInput):
    """Read a note."""

    path: str = Field(min_length=1, description='Vault-relative path, ".md" optional, or a note title.')


class VaultListInput(ToolInput):
    """List a folder."""

    folder: str = Field("", description='Vault folder, "" for the root.')
    limit: int = Field(50, ge=1, le=500)


class VaultSearchInput(ToolInput):
    """Search the notes."""

    query: str = Field(min_length=1, max_length=500, description="Words to look for.")
    limit: int = Field(10, ge=1, le=100)
    tags: list[str] | None = Field(None, description="Only notes with all of these tags.")
    folder: str | None = Field(None, description="Only notes in this folder or below it.")


class LogInteractionInput(ToolInput):
    """Record what this interaction was about."""

    summary: str = Field(min_length=1, max_length=2000, description="One or two sentences on what was done.")
    category: str = Field("general", min_length=1, max_length=50, description="e.g. note, task, question, link.")


class SendMessageInput(ToolInput):
    """Send the user a message."""

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="Markdown text for the user.")


class ScheduleMessageInput(ToolInput):
    """Schedule a message or a task for later."""

    text: str = Field(max_length=MAX_MESSAGE_CHARS, description="What to send (or, with run_model, what to do).")
    at: str = Field(
        min_length=1,
        max_length=100,
        description="ISO 8601 date-time of the first occurrence; without an offset it is the user's local time.",
    )
    repeat: str | None = Field(
        None, max_length=500, description="RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=MO; at most once a minute."
    )
    run_model: bool = Field(
        False, description="false: send text as it is; true: at that time text is handled as a message from the user."
    )

    @model_validator(mode="after")
    def _not_too_often(self) -> ScheduleMessageInput:
        # Refused before anything else, a question for consent included: no tap can allow it.
        if self.repeat:
            try:
                check_repeat(self.repeat, run_model=self.run_model)
            except TimingError as exc:
                raise ValueError(str(exc)) from None
        return self


class ListScheduledInput(ToolInput):
    """List the pending scheduled messages."""


class CancelScheduledInput(ToolInput):
    """Cancel a scheduled message."""

    id: str = Field(min_length=1, max_length=50, description="The id schedule_message or list_scheduled gave.")
