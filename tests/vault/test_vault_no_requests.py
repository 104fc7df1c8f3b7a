"""No request of its own: a search by meaning, both real models loaded, with every proxy variable pointing at
a tripwire that records any attempt to go anywhere (onnxruntime's telemetry went through the proxy)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

SCRIPT = """
import sys
from vault import EnglishEmbedder, MultilingualEmbedder, Vault
with Vault(sys.argv[1], embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as notes:
    notes.write("Health", "Dentist", "Appointment moved to Thursday at 3pm, Dr Okafor. Bring the X-rays.")
    notes.write("Garden", "Spring plans", "Tomatoes along the south fence, basil in pots.")
    notes.write("Notizen", "Zahnarzt", "Der Termin ist am Donnerstag um 15 Uhr, die Röntgenbilder mitbringen.")
    assert notes.wait_for_meaning(60)
    assert notes._recall.embedded() == [1, 2], notes._recall.embedded()
    for _ in range(50):  # onnxruntime reported as the model loaded and ran, and again at exit
        hits = notes.search("my teeth checkup")
    print(hits[0].path)
"""
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY")


class Tripwire:
    """A local port that answers nothing and records the first bytes of every connection made to it."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.attempts: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            connection, _ = self.server.accept()
            with connection:
                connection.settimeout(5)
                try:
                    first = connection.recv(200)
                except OSError:
                    first = b""
            if first == _LAST:
                return
            self.attempts.append(first or b"(connected, sent nothing)")

    def close(self) -> None:
        """Stop once every connection made so far is recorded: connections are accepted in order, so the
        tripwire's own last one comes after any the process made before it exited."""
        with socket.create_connection(self.server.getsockname(), timeout=5) as last:
            last.sendall(_LAST)
        self.thread.join(10)
        self.server.close()


_LAST = b"tripwire: that was all"


def test_a_search_by_meaning_makes_no_request_through_any_proxy(tmp_path: Path) -> None:
    tripwire = Tripwire()
    try:
        env = {key: value for key, value in os.environ.items() if key.upper() not in {"NO_PROXY", *PROXIES}}
        # The person's environment asks for nothing to be turned off: the code must do it.
        env = {key: value for key, value in env.items() if "TELEMETRY" not in key and not key.startswith("HF_")}
        for name in PROXIES:
            env[name] = env[name.lower()] = tripwire.url
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path / "vault")], env=env, capture_output=True, text=True, timeout=55
        )
    finally:
        tripwire.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Health/Dentist.md"
    assert tripwire.attempts == []
