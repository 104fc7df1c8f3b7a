"""No request of vaultbot's own: the libraries that search by meaning loads are told, in code, to call no one.

onnxruntime (the English model's runtime) sends usage events to ``mobile.events.data.microsoft.com`` from
its native library, through any proxy the environment names, while a model loads and runs: 4 attempts in
45 s measured, 14-23 in a longer run. Its Python switch (``disable_telemetry_events``) does not stop them;
``ORT_DISABLE_TELEMETRY`` does, read when its native environment starts, so it is set before onnxruntime is
imported. The Hugging Face libraries are told the same, should a model package ever bring them in.
tests/vault/test_vault_no_requests.py searches with every proxy variable pointing at a tripwire.
"""

from __future__ import annotations

import os
import sys

# Set whatever the person's environment says: a notes assistant makes no request its person did not ask for.
_SWITCHES = {"ORT_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"}


def no_telemetry() -> None:
    """Turn the libraries' telemetry off; call it before a model loads (it is cheap, and may be called again)."""
    for name, value in _SWITCHES.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    runtime = sys.modules.get("onnxruntime")
    if runtime is not None:  # already imported by someone: its own switch too, for what it still covers
        runtime.disable_telemetry_events()
