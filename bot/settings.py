"""Settings: environment (``VAULTBOT_`` prefix, ``__`` between section and key), ``.env``,
then ``config/vaultbot.toml`` (or the file named by ``VAULTBOT_CONFIG``). The environment wins.

Build one :class:`Settings` at the edge with :func:`load_settings` and pass it down.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as _PydanticSettingsError

ENV_PREFIX = "VAULTBOT_"
DEFAULT_CONFIG = Path("config/vaultbot.toml")


class SettingsError(Exception):
    """A setting has a value vaultbot cannot use; the message names the setting and the problem."""


class VaultSettings(BaseModel):
    """Where the Markdown vault lives."""

    path: Path = Path("./data/vault")
    inbox: str = Field("Inbox", min_length=1, description="Folder that capture mode files messages into.")
    capture_to: Literal["inbox", "daily"] = Field(
        "inbox", description="Capture mode: a note per message in the inbox, or a line in the day's note."
    )
    daily_folder: str = Field("Daily", min_length=1)
    daily_pattern: str = Field("%Y-%m-%d", min_length=1, description="strftime pattern naming the day's note.")
    index_staleness: float = Field(
        1.0, ge=0, le=3600, description="Seconds between checks of the disk for edits made outside vaultbot; 0: always."
    )


class StoreSettings(BaseModel):
    """The SQLite file holding the bus, history, runs and the interaction log."""

    path: Path = Path("./data/vaultbot.db")


class TelegramSettings(BaseModel):
    """The Telegram channel; it is enabled when a token is set."""

    token: SecretStr | None = None
    allowed_users: list[int] = Field(default_factory=list)
    allow_groups: bool = False
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    # Webhook mode instead of long polling: Telegram posts updates to this public HTTPS URL, which
    # must reach webhook_listen:webhook_port (usually through a reverse proxy).
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = Field(8443, ge=1, le=65535)

    @field_validator("token", "webhook_secret")
    @classmethod
    def _blank_secret_is_none(cls, v: SecretStr | None) -> SecretStr | None:
        return v if v is not None and v.get_secret_value().strip() else None

    @field_validator("webhook_secret")
    @classmethod
    def _secret_shape(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_-]{16,256}", v.get_secret_value()):
            raise ValueError("must be 16 to 256 characters of A-Z, a-z, 0-9, _ and -")
        return v

    @model_validator(mode="after")
    def _webhook_needs_a_secret(self) -> TelegramSettings:
        if self.webhook_url and self.webhook_secret is None:
            raise ValueError(
                "webhook_url needs webhook_secret (VAULTBOT_TELEGRAM__WEBHOOK_SECRET) so strangers cannot post updates"
            )
        return self


class ModelSettings(BaseModel):
    """The model and the limits of one run."""

    name: str = Field("claude-sonnet-5", min_length=1)
    max_tokens: int = Field(2048, ge=1, le=64_000)
    max_tool_calls: int = Field(20, ge=1, le=500, description="Cap on tool calls in one run.")
    history_turns: int = Field(20, ge=0, le=1000, description="Past turns given to the model at most.")
    history_tokens: int = Field(
        12_000, ge=0, le=500_000, description="Token budget for past turns; older turns are dropped."
    )
    summary_model: str | None = Field(
        None, description="A small model that summarises long steps for the audit trail; off when unset."
    )
    sdk_max_retries: int = Field(1, ge=0, le=5, description="Retries inside the SDK; the bus retries beyond.")
    timeout: float = Field(120.0, gt=0, description="Seconds before one model request gives up.")
    system_prompt: Path = Field(
        Path("config/system_prompt.md"), description="The system prompt; the built-in one when the file is missing."
    )


class BusSettings(BaseModel):
    """The durable message bus."""

    max_attempts: int = Field(5, ge=1, le=50)
    lease_seconds: float = Field(
        30.0, gt=0, description="How long a crashed worker's message waits before redelivery (live ones renew it)."
    )
    concurrency: int = Field(16, ge=1, le=256)
    backoff_seconds: float = Field(2.0, gt=0, description="First retry delay; doubles each attempt, with jitter.")
    backoff_max_seconds: float = Field(300.0, gt=0)


class ReviewSettings(BaseModel):
    """The review web page (``vaultbot review``, or served by ``vaultbot run`` when enabled)."""

    enabled: bool = Field(False, description="Serve the review page from `vaultbot run` too.")
    host: str = Field("127.0.0.1", min_length=1, description="Address to listen on; the default is this machine only.")
    port: int = Field(8765, ge=0, le=65535)
    token: SecretStr | None = Field(None, description="The access token; generated once and kept in the store when unset.")

    @field_validator("token")
    @classmethod
    def _blank_token_is_none(cls, v: SecretStr | None) -> SecretStr | None:
        return v if v is not None and v.get_secret_value().strip() else None


class Settings(BaseSettings):
    """Everything vaultbot can be told. Secrets are ``SecretStr`` and never printed."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    vault: VaultSettings = Field(default_factory=VaultSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    bus: BusSettings = Field(default_factory=BusSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    # The SDK's own variables, honoured as the SDK names them.
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    anthropic_base_url: str | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "anthropic_base_url")
    )

    @field_validator("anthropic_api_key")
    @classmethod
    def _blank_key_is_none(cls, v: SecretStr | None) -> SecretStr | None:
        return v if v is not None and v.get_secret_value().strip() else None

    @property
    def capture_mode(self) -> bool:
        """No API key: messages are filed into the inbox without a model."""
        return self.anthropic_api_key is None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file())
        return (init_settings, env_settings, dotenv_settings, toml, file_secret_settings)


def config_file() -> Path:
    """The TOML file in force: ``VAULTBOT_CONFIG`` if set, else ``config/vaultbot.toml``."""
    named = os.environ.get(f"{ENV_PREFIX}CONFIG")
    return Path(named) if named else DEFAULT_CONFIG


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, turning any bad value into one :class:`SettingsError` line."""
    named = os.environ.get(f"{ENV_PREFIX}CONFIG")
    if named and not Path(named).is_file():
        raise SettingsError(f"{ENV_PREFIX}CONFIG names {named}, which is not a readable file.")
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None
    except _PydanticSettingsError as exc:
        raise SettingsError(_describe_parse_error(exc)) from None
    except (ValueError, OSError) as exc:  # a malformed TOML file
        raise SettingsError(f"cannot read {config_file()}: {exc}") from None


def env_name(loc: tuple[Any, ...]) -> str:
    """The environment variable that sets the field at ``loc`` (``("telegram", "token")``)."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    if parts and parts[0].isupper():  # an SDK alias such as ANTHROPIC_BASE_URL
        return parts[0]
    return ENV_PREFIX + "__".join(p.upper() for p in parts)


def _describe(exc: ValidationError) -> str:
    err = exc.errors(include_url=False, include_input=False)[0]
    loc = tuple(err["loc"])
    where = env_name(loc)
    index = next((p for p in loc if isinstance(p, int)), None)
    item = f" (item {index})" if index is not None else ""
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    return f"invalid setting {where}{item}: {err['msg']}{more}"


def _describe_parse_error(exc: _PydanticSettingsError) -> str:
    # pydantic-settings names only the section ('error parsing value for field "telegram"'), so
    # find the variable in that section whose value is not the JSON its field needs.
    text = str(exc)
    section = text.split('"')[1] if text.count('"') >= 2 else ""
    prefix = f"{ENV_PREFIX}{section.upper()}__"
    for key, value in os.environ.items():
        if key.upper().startswith(prefix) and value.lstrip()[:1] in "[{":
            try:
                json.loads(value)
            except ValueError:
                return f"invalid setting {key.upper()}: not valid JSON (a list is written like [123, 456])"
    return f"invalid setting in section {section!r}: a value is not valid JSON"
