"""The price table vaultbot ships, and how a model's name finds its price."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from bot.runner import Usage
from bot.runner.pricing import PricingError, load_prices
from tests.helpers import ROOT


def test_a_fresh_checkouts_config_holds_no_defaults_the_person_would_edit_in_the_package() -> None:
    # Tracked files of config/, as a clone has them: no link into bot/defaults, whose edits a pull would conflict with.
    listed = subprocess.run(["git", "ls-files", "-s", "config"], cwd=ROOT, capture_output=True, text=True, check=True)
    tracked = {line.split("\t")[1]: line.split()[0] for line in listed.stdout.splitlines()}
    assert tracked == {"config/vaultbot.example.toml": "100644"}


def test_the_packaged_table_prices_the_default_model_without_a_file_of_ones_own() -> None:
    prices = load_prices(Path("no-such-file.toml"))
    assert prices.knows("claude-sonnet-5")
    for family in ("opus", "sonnet", "haiku"):
        assert any(family in name for name in prices.prices)


def test_cache_prices_follow_anthropics_rules() -> None:
    table = tomllib.loads((ROOT / "bot" / "defaults" / "pricing.toml").read_text())["models"]
    for name, price in table.items():
        assert price["cache_write"] == pytest.approx(1.25 * price["input"]), name
        assert price["cache_read"] <= 0.1 * price["input"] + 1e-9, name


def test_dated_ids_and_aliases_find_their_family_and_unknown_models_pay_the_most() -> None:
    prices = load_prices(Path("no-such-file.toml"))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert prices.cost(usage, "claude-sonnet-4-5-20250929") == pytest.approx(3 + 15)
    assert prices.cost(usage, "claude-haiku-4-5-latest") == pytest.approx(1 + 5)
    assert not prices.knows("claude-sonnet-9")
    top = prices.highest
    assert prices.cost(usage, "claude-sonnet-9") == pytest.approx(top.input + top.output)
    # The name the API answered with comes first; the name asked for prices what it does not know.
    assert prices.cost(usage, "claude-haiku-4-5-20251001", "claude-sonnet-5") == pytest.approx(1 + 5)
    assert prices.cost(usage, "claude-fake", "claude-sonnet-5") == pytest.approx(2 + 10)
    assert top.input >= max(p.input for p in prices.prices.values())


def test_the_users_file_overrides_and_adds(tmp_path: Path) -> None:
    mine = tmp_path / "pricing.toml"
    mine.write_text(
        '[models."claude-sonnet-5"]\ninput = 1\noutput = 1\ncache_write = 1\ncache_read = 1\n'
        '[models."my-proxy-model"]\ninput = 0\noutput = 0\ncache_write = 0\ncache_read = 0\n'
    )
    prices = load_prices(mine)
    assert prices.cost(Usage(1_000_000, 0), "claude-sonnet-5") == pytest.approx(1.0)
    assert prices.cost(Usage(1_000_000, 1_000_000), "my-proxy-model") == 0.0
    assert prices.knows("claude-haiku-4-5")  # untouched entries keep their built-in price


@pytest.mark.parametrize(
    "text",
    [
        "[models.x\n",
        '[models."x"]\ninput = 1\n',
        '[models."x"]\ninput = -1\noutput = 1\ncache_write = 1\ncache_read = 1\n',
    ],
)
def test_a_broken_file_names_itself(tmp_path: Path, text: str) -> None:
    mine = tmp_path / "pricing.toml"
    mine.write_text(text)
    with pytest.raises(PricingError, match=str(mine)):
        load_prices(mine)
