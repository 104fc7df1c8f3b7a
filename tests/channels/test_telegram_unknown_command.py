"""An unknown slash command in Telegram is answered as unknown, with the help, without the model and
without filing anything."""

from __future__ import annotations

from tests.channels.telegram_harness import Serve
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel


async def test_an_unknown_command_is_answered_with_the_help_and_reaches_no_model(serve: Serve) -> None:
    model = ScriptedModel()  # any call to it fails the turn
    served = await serve(model)
    served.fake.push_update(tg.text_update("/bogus"))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [reply] = served.fake.sent_texts
    assert reply.startswith("I don't know the command /bogus, so I did nothing with that message.")
    assert "/note" in reply and "/find" in reply
    assert model.calls == []
    assert not (served.app.notes.root / "Inbox").exists()
