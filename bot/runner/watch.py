"""Watching a run as it goes: failure patterns (informational) and error judgement (may escalate).

After every tool call the loop asks :class:`RunWatch` what it sees. Patterns (a tool failing
over and over, steps that change nothing, the cap coming up, calls refused by policy) become
``failure.detected`` events and a hint for the model; the run goes on. Tool errors are sorted
by whether retrying can help; each error signature (tool and error type) gets a budget of
attempts, after which the run escalates to the user, and too many escalations end the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Retrying cannot help: the same call fails the same way.
PERMANENT = frozenset({"path_not_allowed", "invalid_input", "unknown_tool"})
# Retrying may help: the disk, the database or a deadline, not the call itself.
TRANSIENT = frozenset({"storage_error", "internal_error", "timeout"})
# Refusals by policy, as opposed to failures.
POLICY = frozenset({"path_not_allowed", "guard_stopped"})

REPEAT = 3  # the same tool failing, or the same result, this many times in a row is a pattern
SIGNATURE_BUDGET = 3  # attempts per error signature before the run escalates
MAX_ESCALATIONS = 2  # escalations in one run before it ends


@dataclass(frozen=True)
class Finding:
    """A failure pattern seen in the run."""

    pattern: str  # repeated_tool_error | no_progress | cap_approaching | rejection_loop
    description: str
    suggestion: str
    tool: str | None

    def as_event(self) -> dict[str, Any]:
        """The ``failure.detected`` event's data."""
        return {
            "pattern": self.pattern,
            "description": self.description,
            "suggested_action": self.suggestion,
            "tool": self.tool,
        }


@dataclass(frozen=True)
class Escalation:
    """An error signature that used up its attempts."""

    signature: str
    attempts: int
    message: str


@dataclass
class Verdict:
    """What the watch saw after one tool call."""

    findings: list[Finding] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    escalation: Escalation | None = None
    end_run: str | None = None  # why the run must end, if it must


def classify(error_type: str, retryable: bool) -> str:
    """``permanent``, ``transient`` or ``replan`` (the model should try another way)."""
    if error_type in PERMANENT:
        return "permanent"
    if error_type in TRANSIENT or retryable:
        return "transient"
    return "replan"


@dataclass
class _Call:
    tool: str
    result: dict[str, Any]  # compared as a value (key order aside), never changed after the call
    is_error: bool
    error_type: str | None


class RunWatch:
    """One run's failure detector and error tracker."""

    def __init__(self, max_tool_calls: int) -> None:
        self._max_calls = max_tool_calls
        self._calls: list[_Call] = []
        self._reported: set[tuple[str, str | None]] = set()
        self._attempts: dict[str, int] = {}
        self._escalated: set[str] = set()
        self.escalations = 0

    def after_tool(self, tool: str, result: dict[str, Any], is_error: bool) -> Verdict:
        """Judge the call just made and look for patterns in the run so far."""
        error_type = str(result.get("error_type")) if is_error else None
        self._calls.append(_Call(tool, result, is_error, error_type))
        verdict = Verdict()
        if is_error and error_type is not None:
            self._judge(tool, error_type, bool(result.get("retryable")), verdict)
        for finding in self._patterns(tool):
            key = (finding.pattern, finding.tool)
            if key not in self._reported:
                self._reported.add(key)
                verdict.findings.append(finding)
                verdict.hints.append(f"[vaultbot] {finding.description} {finding.suggestion}")
        return verdict

    def _judge(self, tool: str, error_type: str, retryable: bool, verdict: Verdict) -> None:
        kind = classify(error_type, retryable)
        if kind == "permanent":
            verdict.hints.append(f"[vaultbot] The {tool} error ({error_type}) is permanent: do not repeat that call.")
        elif kind == "replan":
            verdict.hints.append(f"[vaultbot] {tool} failed ({error_type}); try a different approach.")
        signature = f"{tool}:{error_type}"
        self._attempts[signature] = attempts = self._attempts.get(signature, 0) + 1
        if attempts < SIGNATURE_BUDGET or signature in self._escalated:
            return
        self._escalated.add(signature)
        self.escalations += 1
        verdict.escalation = Escalation(
            signature, attempts, f"{tool} keeps failing ({error_type}, {attempts} times); it needs your attention."
        )
        verdict.hints.append(f"[vaultbot] {tool} failed {attempts} times with {error_type}; stop using it in this run.")
        if self.escalations >= MAX_ESCALATIONS:
            verdict.end_run = f"{self.escalations} different tools kept failing"

    def _patterns(self, tool: str) -> list[Finding]:
        found = []
        recent = self._calls[-REPEAT:]
        if len(recent) == REPEAT and all(c.tool == tool and c.is_error for c in recent):
            found.append(
                Finding(
                    "repeated_tool_error",
                    f"{tool} failed {REPEAT} times in a row.",
                    "Read the error and change the input, or use another tool.",
                    tool,
                )
            )
        # Identical failures are the repeated error above; identical successes are no progress.
        same = all(c.result == recent[0].result for c in recent)
        if len(recent) == REPEAT and not any(c.is_error for c in recent) and same:
            found.append(
                Finding(
                    "no_progress",
                    f"The last {REPEAT} tool calls returned the same result.",
                    "Repeating them will not help; answer with what you have.",
                    tool,
                )
            )
        if len(self._calls) == self._max_calls - 1:
            found.append(
                Finding(
                    "cap_approaching",
                    f"One tool call is left before this run's limit of {self._max_calls}.",
                    "Finish now: reply to the user with what you have.",
                    None,
                )
            )
        if sum(1 for c in self._calls if c.error_type in POLICY) >= REPEAT:
            found.append(
                Finding(
                    "rejection_loop",
                    f"{REPEAT} calls were refused by policy (paths outside the vault or hidden folders).",
                    "Use vault-relative paths in ordinary folders.",
                    None,
                )
            )
        return found
