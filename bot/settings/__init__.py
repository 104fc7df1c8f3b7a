"""Settings, read once at the edge and passed down: ``model`` declares them (environment, ``.env``,
``config/vaultbot.toml``; the environment wins) and loads them; ``errors`` turns what pydantic says
about a bad or unknown setting into one line a person can act on."""

from bot.settings.model import (
    DEFAULT_CONFIG,
    ENV_PREFIX,
    OPENAI_BASE_URL,
    BudgetSettings,
    BusSettings,
    ModelSettings,
    RemindersSettings,
    ReviewSettings,
    Settings,
    SettingsError,
    StoreSettings,
    TelegramSettings,
    TranscribeSettings,
    VaultSettings,
    config_file,
    load_settings,
    unknown_settings,
)

__all__ = [
    "DEFAULT_CONFIG",
    "ENV_PREFIX",
    "OPENAI_BASE_URL",
    "BudgetSettings",
    "BusSettings",
    "ModelSettings",
    "RemindersSettings",
    "ReviewSettings",
    "Settings",
    "SettingsError",
    "StoreSettings",
    "TelegramSettings",
    "TranscribeSettings",
    "VaultSettings",
    "config_file",
    "load_settings",
    "unknown_settings",
]
