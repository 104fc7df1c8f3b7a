"""The one backoff every retrying loop waits with (bus workers, the Telegram poller and its storing,
transcription retries)."""

from __future__ import annotations

from bot.backoff import Backoff, describe


def test_the_wait_doubles_from_the_first_up_to_the_cap() -> None:
    backoff = Backoff(first=2.0, most=60.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_an_outage_of_thousands_of_failures_still_waits_the_cap() -> None:
    # The Telegram poller counts failed getUpdates calls for as long as the network is down: at 60 s
    # apiece, 1,100 of them are some 18 hours, after which 2.0 ** failures no longer fits in a float.
    assert Backoff(first=2.0, most=60.0).delay(1_100) == 60.0
    assert Backoff(first=0.1, most=5.0).delay(100_000) == 5.0


def test_jitter_waits_half_to_all_of_the_wait() -> None:
    backoff = Backoff(first=1.0, most=300.0, jitter=True)
    delays = [backoff.delay(4) for _ in range(200)]
    assert all(4.0 <= d <= 8.0 for d in delays)
    assert len(set(delays)) > 1


def test_an_error_is_described_by_its_type_and_its_message() -> None:
    assert describe(OSError(28, "No space left on device")) == "OSError: [Errno 28] No space left on device"
    assert describe(TimeoutError()) == "TimeoutError"
