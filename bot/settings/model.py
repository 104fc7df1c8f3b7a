"""Settings: environment (``VAULTBOT_`` prefix, ``__`` between section and key), ``.env``,
then ``config/vaultbot.toml`` (or the file named by ``VAULTBOT_CONFIG``). The environment wins.

Build one :class:`Settings` at the edge with :func:`load_settings` and pass it down.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as _PydanticSettingsError

from bot.settings.errors import describe_parse_error, describe_validation_error
from bot.settings.errors import unknown_settings as _unknown_settings

ENV_PREFIX = "VAULTBOT_"
DEFAULT_CONFIG = Path("config/vaultbot.toml")
OPENAI_BASE_URL = "https://api.openai.com/v1"
# Where the review page signs a person in with Telegram's init data (bot.web serves it), under the page's
# own path: apart from the webhook's usual /telegram, so both can share one host behind one proxy.
MINI_APP_PATH = "/sign-in/telegram"
# The first segment of every address the review page answers (tests/web checks the route table against
# it). A public address's path must not start with one: behind a proxy that strips the path, /runs/…
# could not be told from the page's own /runs.
PAGE_SEGMENTS = frozenset(
    {
        "runs",
        "questions",
        "notes",
        "usage",
        "health",
        "dead-letters",
        "vault",
        "static",
        "sign-in",
        "sign-out",
        "favicon.ico",
    }
)
# Shorter tokens can be guessed; the generated one has 32 characters.
MIN_TOKEN_LENGTH = 16


# A bot token as @BotFather gives it (``123456789:AA…``), wherever it is found.
_BOT_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]{20,}")


def _blank_is_none(value: SecretStr | None) -> SecretStr | None:
    return value if value is not None and value.get_secret_value().strip() else None


# A key, token or secret; set to blank (an empty line in .env, a placeholder cleared), it is unset.
Secret = Annotated[SecretStr | None, AfterValidator(_blank_is_none)]


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
    git: bool = Field(
        False, description="In a vault that is a git repository: commit each run that changed notes (never pushes)."
    )
    index_staleness: float = Field(
        1.0, ge=0, le=3600, description="Seconds between checks of the disk for edits made outside vaultbot; 0: always."
    )
    search_by_meaning: bool = Field(
        True, description="Search by meaning too: a local model embeds the notes in the background (~150 MB)."
    )
    # Reading a document (a PDF, a text, CSV or JSON file) happens in a process of its own, within these.
    document_seconds: float = Field(
        15.0, gt=0, le=3600, description="Processor seconds reading one document may take; the rest is left out."
    )
    page_seconds: float = Field(
        2.0, gt=0, le=3600, description="Processor seconds one page of a PDF may take; a slower page is skipped."
    )
    document_memory_mb: int = Field(
        512, ge=128, le=65536, description="Megabytes of memory reading one document may use."
    )


_PERIOD = re.compile(r"(\d+)\s*([mhdw])")
_PERIOD_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class BackupSettings(BaseModel):
    """Backups that ``vaultbot run`` takes on its own (``vaultbot backup`` takes one at any time)."""

    every: timedelta | None = Field(
        None, description="How often, such as 1d, 12h or 1w; unset: never on its own. Once a period, across restarts."
    )
    keep: int = Field(7, ge=1, le=10_000, description="The newest backups kept in the folder; older ones are removed.")
    path: Path = Field(Path("./data/backups"), description="The folder the scheduled backups go into.")

    @field_validator("every", mode="before")
    @classmethod
    def _period(cls, v: object) -> object:
        if v is None or isinstance(v, timedelta) or (isinstance(v, str) and not v.strip()):
            return v or None
        found = _PERIOD.fullmatch(str(v).strip().lower())
        if not found or int(found.group(1)) == 0:
            raise ValueError("expected a period such as 30m, 12h, 1d or 1w")
        return timedelta(**{_PERIOD_UNITS[found.group(2)]: int(found.group(1))})


class MemorySettings(BaseModel):
    """What the assistant knows about its person."""

    note: str = Field(
        "About me.md", min_length=1, description="The profile note, vault-relative: read before every turn."
    )


class StoreSettings(BaseModel):
    """The SQLite file holding the bus, history, runs and the interaction log."""

    path: Path = Path("./data/vaultbot.db")


class TelegramSettings(BaseModel):
    """The Telegram channel; it is enabled when a token is set."""

    token: Secret = None
    allowed_users: list[int] = Field(default_factory=list)
    allow_groups: bool = False
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    # Webhook mode instead of long polling: Telegram posts updates to this public HTTPS URL, which
    # must reach webhook_listen:webhook_port (usually through a reverse proxy).
    webhook_url: str | None = None
    webhook_secret: Secret = None
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = Field(8443, ge=1, le=65535)
    draft_interval: float = Field(
        1.0,
        ge=0,
        le=60,
        description="Seconds between updates of a reply shown as it is written (sendMessageDraft); 0: no drafts.",
    )
    album_wait: float = Field(
        1.0,
        ge=0,
        le=60,
        description="Seconds without a new photo of an album before the album goes to the model as one message.",
    )

    @field_validator("webhook_secret")
    @classmethod
    def _secret_shape(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_-]{16,256}", v.get_secret_value()):
            raise ValueError("must be 16 to 256 characters of A-Z, a-z, 0-9, _ and -")
        return v

    @model_validator(mode="after")
    def _bot_api_addresses(self) -> TelegramSettings:
        # The Bot API takes the token right after the address (``…/bot<token>/getMe``): an address
        # without ``/bot`` makes a URL with the token in its host or port, which fails far from here.
        for key, ending in (("base_url", "/bot"), ("base_file_url", "/file/bot")):
            address = getattr(self, key).strip()
            address = address[:-1] if address.endswith(f"{ending}/") else address
            name = f"VAULTBOT_TELEGRAM__{key.upper()}"
            if _BOT_TOKEN.search(address):
                raise ValueError(
                    f"{name}: the bot token goes in VAULTBOT_TELEGRAM__TOKEN, not in the address "
                    "(the value is not shown: it holds a token)"
                )
            if not _bot_api_address(address, ending):
                raise ValueError(
                    f"{name}: expected a Bot API address ending in {ending}, as Telegram's "
                    f"https://api.telegram.org{ending} (the token goes after it), got {address!r}"
                )
            setattr(self, key, address)
        return self

    @model_validator(mode="after")
    def _webhook_needs_a_secret(self) -> TelegramSettings:
        if self.webhook_url and self.webhook_secret is None:
            raise ValueError(
                "VAULTBOT_TELEGRAM__WEBHOOK_URL is set without VAULTBOT_TELEGRAM__WEBHOOK_SECRET: "
                "set a secret so strangers cannot post updates"
            )
        return self


def _bot_api_address(address: str, ending: str) -> bool:
    """Whether ``address`` is an http(s) address with a host (and a port that is a number) whose
    path ends in ``ending``."""
    parts = urlsplit(address)
    try:
        parts.port  # noqa: B018 (a port that is no number raises)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path.endswith(ending)


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
    pricing: Path = Field(
        Path("config/pricing.toml"),
        description="Prices per model; its entries win over the built-in table, which is used when it is missing.",
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
    token: Secret = Field(
        None,
        description=f"The access token, at least {MIN_TOKEN_LENGTH} characters; generated once and kept in the "
        "store when unset.",
    )
    public_url: str | None = Field(
        None,
        description="The https:// address (a reverse proxy's) that reaches the page, perhaps with a path: it opens "
        "in Telegram as a Mini App.",
    )

    @field_validator("token")
    @classmethod
    def _long_enough(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value().strip()) < MIN_TOKEN_LENGTH:
            raise ValueError(f"must be at least {MIN_TOKEN_LENGTH} characters, so it cannot be guessed")
        return v

    @field_validator("public_url")
    @classmethod
    def _public_address(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        # Telegram opens only https; a path is the proxy's (passed on or stripped), in plain characters.
        found = re.fullmatch(r"https://[^/\s?#@]+((?:/[A-Za-z0-9._~-]+)*)/?", v.strip())
        if found is None or {".", ".."} & set(found.group(1).split("/")):
            raise ValueError(
                "expected an https:// address, with a path or not, such as https://review.example.com "
                "or https://home.example.com/review"
            )
        first = found.group(1).split("/")[1] if found.group(1) else ""
        if first in PAGE_SEGMENTS:
            raise ValueError(f"its path must not start with /{first}, which is an address of the page itself")
        return v.strip().rstrip("/")

    @property
    def public_path(self) -> str:
        """The public address's path, without the last ``/`` (``/review``; ``""`` at a host's root)."""
        return urlsplit(self.public_url).path.rstrip("/") if self.public_url else ""

    @property
    def app_url(self) -> str | None:
        """The address Telegram opens as the Mini App (the page's sign-in with Telegram), or None
        when there is no public address."""
        return f"{self.public_url}{MINI_APP_PATH}" if self.public_url else None


class RemindersSettings(BaseModel):
    """Scheduled messages (``schedule_message``)."""

    max_pending: int = Field(50, ge=1, le=10_000, description="Pending reminders one conversation may have.")
    model_runs_per_day: int = Field(
        24,
        ge=1,
        le=1440,
        description="Scheduled tasks (run_model) one conversation may run per day; past it they are skipped "
        "until midnight, and the person is told once.",
    )


class ConsentSettings(BaseModel):
    """Questions for consent: what someone else's words cannot make the assistant do without a tap."""

    timeout: float = Field(
        3600.0, gt=0, le=30 * 86400, description="Seconds a question waits for Allow or Deny before it is declined."
    )


class BudgetSettings(BaseModel):
    """A cap on what the model may cost per day, in the user's time zone."""

    daily_usd: float | None = Field(
        None, gt=0, description="Once today's spend reaches it, messages are filed in capture mode until midnight."
    )


class TranscribeSettings(BaseModel):
    """Speech to text for voice notes, audio files and video notes: any OpenAI-compatible
    ``/audio/transcriptions`` endpoint. Off unless a key or a base URL is set."""

    base_url: str | None = Field(
        None, description="The endpoint's base URL, version included (OpenAI's when only a key is set)."
    )
    api_key: Secret = None
    model: str = Field("whisper-1", min_length=1)
    # OpenAI and Groq take files up to 25 MB; gpt-4o-transcribe takes up to 1,400 s of audio.
    max_seconds: int = Field(1200, ge=1, description="Longer recordings are kept and filed without a transcript.")
    max_bytes: int = Field(25 * 1024 * 1024, ge=1, description="Larger files are kept and filed without a transcript.")
    timeout: float = Field(60.0, gt=0, description="Seconds before one transcription request gives up.")
    attempts: int = Field(3, ge=1, le=10, description="Requests per recording before it is filed without a transcript.")
    backoff_seconds: float = Field(1.0, ge=0, description="First wait between attempts; doubles each time.")
    backoff_max_seconds: float = Field(30.0, ge=0, description="Longest wait between attempts, a Retry-After included.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        if not re.match(r"https?://[^/\s]+", v.strip()):
            raise ValueError("expected an http(s) URL such as https://api.openai.com/v1")
        return v.strip().rstrip("/")

    @property
    def enabled(self) -> bool:
        """Whether recordings are transcribed: a key (OpenAI, Groq) or a base URL (a local server) is set."""
        return self.api_key is not None or self.base_url is not None

    @property
    def endpoint(self) -> str:
        """The base URL in force: the configured one, else OpenAI's."""
        return self.base_url or OPENAI_BASE_URL


class ClipSettings(BaseModel):
    """Fetching links into notes (``clip_link``)."""

    allow_private: bool = Field(
        False,
        description="Fetch loopback, private, link-local, unique-local, multicast and reserved addresses too.",
    )
    folder: str = Field("Clippings", min_length=1, description="Where clipped pages are filed.")
    max_bytes: int = Field(5 * 1024 * 1024, ge=1, description="Larger pages (after decompression) are refused.")
    timeout: float = Field(20.0, gt=0, description="Seconds a whole fetch may take, redirects and body included.")


# An address as vaultbot compares them: one @, no spaces or angle brackets (lower-cased when read).
ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+\.[^@\s<>,;\".]+")


def _an_address(value: str) -> str:
    address = value.strip().lower()
    if not ADDRESS.fullmatch(address):
        raise ValueError("expected an e-mail address such as ann@example.com")
    return address


class EmailSettings(BaseModel):
    """The e-mail channel: new mail by IMAP (IDLE, polling where the server lacks it), replies by SMTP.
    On when ``imap_host`` is set."""

    imap_host: str | None = Field(None, description="The IMAP server; the channel is on when it is set.")
    imap_port: int = Field(993, ge=1, le=65535)
    imap_security: Literal["ssl", "starttls", "none"] = "ssl"
    smtp_host: str | None = None
    smtp_port: int = Field(465, ge=1, le=65535)
    smtp_security: Literal["ssl", "starttls", "none"] = "ssl"
    username: str | None = Field(None, description="The login of the bot's mail account (IMAP and SMTP).")
    password: Secret = Field(None, description="Its password: an app password where the provider has them.")
    address: str | None = Field(None, description="The bot's own address: the From of its replies.")
    mailbox: str = Field("INBOX", min_length=1, description="The IMAP folder new mail is read from.")
    allowed_senders: list[str] = Field(default_factory=list, description="Addresses whose mail is answered.")
    trusted_authserv_id: str | None = Field(
        None, description="The authserv-id of the receiving server's Authentication-Results header."
    )
    require_authenticated: bool = Field(
        True, description="Believe a From only with a passing DKIM or SPF result for its domain."
    )

    @field_validator("imap_host", "smtp_host", "username", "trusted_authserv_id")
    @classmethod
    def _one_line(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        if re.search(r"[\x00-\x1f\x7f]", v):
            raise ValueError("expected one line of text")
        return v.strip()

    @field_validator("password")
    @classmethod
    def _sendable(cls, v: SecretStr | None) -> SecretStr | None:
        # It goes into IMAP's LOGIN and SMTP's AUTH lines, which a line break or NUL would cut.
        if v is not None and re.search(r"[\x00\r\n]", v.get_secret_value()):
            raise ValueError("expected one line without NUL characters")
        return v

    @field_validator("mailbox")
    @classmethod
    def _mailbox_name(cls, v: str) -> str:
        # Sent in IMAP commands as a quoted string: printable ASCII only (no modified UTF-7 here).
        if not re.fullmatch(r"[\x20-\x7e]+", v) or not v.strip():
            raise ValueError("expected a folder name of printable ASCII characters, such as INBOX")
        return v.strip()

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None or not v.strip() else _an_address(v)

    @field_validator("allowed_senders")
    @classmethod
    def _addresses(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(_an_address(address) for address in v))

    @model_validator(mode="after")
    def _complete(self) -> EmailSettings:
        if self.imap_host is None:
            return self
        missing = [
            f"VAULTBOT_EMAIL__{name.upper()}"
            for name in ("smtp_host", "username", "password", "address")
            if getattr(self, name) is None
        ]
        if missing:
            raise ValueError(f"VAULTBOT_EMAIL__IMAP_HOST is set without {', '.join(missing)}: set them too")
        if self.require_authenticated and self.trusted_authserv_id is None:
            raise ValueError(
                "VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID is unset: name the receiving server's authserv-id (the first "
                "word of the Authentication-Results header of a mail it delivered, such as mx.google.com), or set "
                "VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED=false to believe every From"
            )
        return self

    @property
    def enabled(self) -> bool:
        """Whether the e-mail channel is on: an IMAP host is set."""
        return self.imap_host is not None


# A Matrix user id: ``@localpart:server`` (the server name may carry a port).
MATRIX_USER_ID = re.compile(r"@[a-z0-9._=/+-]+:[A-Za-z0-9.-]+(:\d{1,5})?|@[^:\s]+:\[[0-9A-Fa-f:.]+\](:\d{1,5})?")


def _a_matrix_id(value: str) -> str:
    user = value.strip()
    if not MATRIX_USER_ID.fullmatch(user):
        raise ValueError("expected a Matrix user id such as @ann:example.org")
    return user


class MatrixSettings(BaseModel):
    """The Matrix channel: the bot's own account on a homeserver, syncing, in direct rooms with the
    allowlisted people. On when ``homeserver`` is set."""

    homeserver: str | None = Field(None, description="The bot's homeserver; the channel is on when it is set.")
    user_id: str | None = Field(None, description="The bot's own account, such as @vaultbot:example.org.")
    password: Secret = Field(None, description="Its password (or give an access token instead).")
    access_token: Secret = Field(None, description="An access token of the account, instead of the password.")
    allowed_users: list[str] = Field(default_factory=list, description="Matrix user ids that are served.")
    device_name: str = Field("vaultbot", min_length=1, max_length=100, description="The name of the bot's device.")

    @field_validator("homeserver")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        address = v.strip().rstrip("/")
        if not _bot_api_address(address + "/", "/"):
            raise ValueError("expected the homeserver's address, such as https://matrix.example.org")
        return address

    @field_validator("user_id")
    @classmethod
    def _user(cls, v: str | None) -> str | None:
        return None if v is None or not v.strip() else _a_matrix_id(v)

    @field_validator("allowed_users")
    @classmethod
    def _users(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(_a_matrix_id(user) for user in v))

    @model_validator(mode="after")
    def _complete(self) -> MatrixSettings:
        if self.homeserver is None:
            return self
        if self.user_id is None:
            raise ValueError("VAULTBOT_MATRIX__HOMESERVER is set without VAULTBOT_MATRIX__USER_ID: set it too")
        if self.password is None and self.access_token is None:
            raise ValueError(
                "VAULTBOT_MATRIX__HOMESERVER is set without VAULTBOT_MATRIX__PASSWORD or "
                "VAULTBOT_MATRIX__ACCESS_TOKEN: set one of them"
            )
        return self

    @property
    def enabled(self) -> bool:
        """Whether the Matrix channel is on: a homeserver is set."""
        return self.homeserver is not None


MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9-]{1,32}")


class McpServerSettings(BaseModel):
    """One MCP server: a command to start (stdio) or a URL to reach (streamable HTTP).

    The values of ``env`` and ``headers`` are secrets: never shown, and masked (``***``) wherever the
    server echoes them back."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = Field(None, min_length=1, description="A stdio server: the program to start.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict, description="Variables added to the server's environment.")
    url: str | None = Field(None, description="A streamable-HTTP server: its endpoint, e.g. http://127.0.0.1:9000/mcp.")
    headers: dict[str, SecretStr] = Field(default_factory=dict, description="Sent with every request to the URL.")
    tools: list[str] | None = Field(None, description="Only these of the server's tools; all of them when unset.")
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds for one call.")
    start_timeout: float = Field(
        30.0, gt=0, le=3600, description="Seconds for the server to start and list its tools (npx may download)."
    )
    trusted: bool = Field(
        False, description="Called without a consent question even when the run holds someone else's words."
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"https?://[^/\s]+", v.strip()):
            raise ValueError("expected an http(s) URL such as http://127.0.0.1:9000/mcp")
        return v.strip() if v is not None else None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a streamable-HTTP server)")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a url server; a command server takes env")
        if self.url is not None and (self.env or self.args):
            raise ValueError("args and env are for a command server; a url server takes headers")
        return self


class McpSettings(BaseModel):
    """Model Context Protocol servers whose tools the model may call (``mcp__SERVER__TOOL``)."""

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, v: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in v:
            if not MCP_SERVER_NAME.fullmatch(name):
                raise ValueError(f"the server name {name!r} must be 1 to 32 letters, digits or '-'")
        return v


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
    memory: MemorySettings = Field(default_factory=MemorySettings)
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    bus: BusSettings = Field(default_factory=BusSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    reminders: RemindersSettings = Field(default_factory=RemindersSettings)
    consent: ConsentSettings = Field(default_factory=ConsentSettings)
    transcribe: TranscribeSettings = Field(default_factory=TranscribeSettings)
    clip: ClipSettings = Field(default_factory=ClipSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    email: EmailSettings = Field(default_factory=EmailSettings)
    matrix: MatrixSettings = Field(default_factory=MatrixSettings)
    backup: BackupSettings = Field(default_factory=BackupSettings)
    timezone: str | None = Field(None, description="The user's IANA time zone; the machine's when unset.")
    # The SDK's own variables, honoured as the SDK names them.
    anthropic_api_key: Secret = Field(None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key"))
    anthropic_base_url: str | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "anthropic_base_url")
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        try:
            ZoneInfo(v.strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("expected an IANA time zone name such as Europe/Berlin") from None
        return v.strip()

    @property
    def zone(self) -> tzinfo:
        """The user's time zone: ``VAULTBOT_TIMEZONE``, else the machine's."""
        return ZoneInfo(self.timezone) if self.timezone else tzlocal.get_localzone()

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
    if config_file().exists() and not config_file().is_file():  # pydantic-settings would pass over it
        raise SettingsError(f"cannot read {config_file()}: it is not a file")
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe_validation_error(exc, Settings, config_file())) from None
    except _PydanticSettingsError as exc:
        raise SettingsError(_describe_parse_error(exc)) from None
    except OSError as exc:  # the TOML file cannot be read (permission denied, a folder)
        raise SettingsError(f"cannot read {config_file()}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a malformed TOML file
        raise SettingsError(f"cannot read {config_file()}: {exc}") from None


def unknown_settings() -> list[str]:
    """A line for each variable, ``.env`` entry or TOML key that sets nothing vaultbot has,
    naming the closest setting that exists (pydantic-settings passes over them in silence)."""
    return _unknown_settings(Settings, config_file())


def _describe_parse_error(exc: _PydanticSettingsError) -> str:
    # pydantic-settings names only the section: 'error parsing value for field "telegram" …'.
    text = str(exc)
    section = text.split('"')[1] if text.count('"') >= 2 else ""
    return describe_parse_error(section, Settings)
