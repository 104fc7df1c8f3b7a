"""Scheduled messages: a durable book of reminders, their timing rules, and the loop that fires them."""

from __future__ import annotations

from bot.reminders.book import Reminder, ReminderBook, ReminderError, Who
from bot.reminders.scheduler import Scheduler
from bot.reminders.timing import TimingError, check_repeat

__all__ = ["Reminder", "ReminderBook", "ReminderError", "Scheduler", "TimingError", "Who", "check_repeat"]
