"""Schema migrations as functions, after Simon Willison's llm.

Each migration is a plain function taking a ``sqlite3.Connection``; :data:`MIGRATIONS` lists them
in order and the names of applied ones are recorded in ``_migrations``. Never edit an applied
migration: append a new one. All pending migrations run in one ``BEGIN IMMEDIATE`` transaction, so
two processes opening a fresh file at once cannot both apply them.

Times the bus schedules by (``available_at``, ``lease_until``, ``due``) are Unix seconds (REAL)
because they are compared on every claim; every other timestamp is ISO 8601 UTC text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "migrate"]

Migration = Callable[[sqlite3.Connection], None]


def _script(conn: sqlite3.Connection, sql: str) -> None:
    """Run each statement of ``sql`` in the current transaction.

    ``executescript`` would commit first, so statements are split with
    ``sqlite3.complete_statement``, which understands trigger bodies.
    """
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in migration: {statement!r}")


def m001_bus(conn: sqlite3.Connection) -> None:
    """The durable bus: messages, and the head (oldest unfinished message) of each conversation.

    ``bus_heads`` is maintained by triggers and lets claim find due work in O(log n): a
    conversation's head is claimable when ``due <= now``, where ``due`` is the head's
    ``available_at`` while pending and its ``lease_until`` while leased (an expired lease is
    redelivered). Only a head is ever claimed, which gives FIFO and one in flight per conversation.
    """
    _script(
        conn,
        """
        CREATE TABLE bus_messages (
            id           INTEGER PRIMARY KEY,
            topic        TEXT NOT NULL,
            conversation TEXT NOT NULL,
            dedupe_key   TEXT,
            payload      TEXT NOT NULL CHECK (json_valid(payload)),
            status       TEXT NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'leased', 'done', 'dead')),
            attempts     INTEGER NOT NULL DEFAULT 0,
            available_at REAL NOT NULL,
            lease_until  REAL,
            owner        TEXT,
            last_error   TEXT,
            created_at   TEXT NOT NULL,
            updated_at   TEXT NOT NULL,
            UNIQUE (topic, dedupe_key)
        );
        CREATE INDEX bus_messages_open ON bus_messages (topic, conversation, id)
            WHERE status IN ('pending', 'leased');
        CREATE INDEX bus_messages_dead ON bus_messages (id) WHERE status = 'dead';
        CREATE TABLE bus_heads (
            topic        TEXT NOT NULL,
            conversation TEXT NOT NULL,
            head_id      INTEGER NOT NULL,
            due          REAL NOT NULL,
            PRIMARY KEY (topic, conversation)
        ) WITHOUT ROWID;
        CREATE INDEX bus_heads_due ON bus_heads (topic, due);

        -- A new message is its conversation's head only if the conversation had none open.
        CREATE TRIGGER bus_head_on_insert AFTER INSERT ON bus_messages
        WHEN NEW.status IN ('pending', 'leased')
        BEGIN
            INSERT INTO bus_heads (topic, conversation, head_id, due)
            SELECT NEW.topic, NEW.conversation, NEW.id, NEW.available_at
            WHERE NOT EXISTS (
                SELECT 1 FROM bus_heads WHERE topic = NEW.topic AND conversation = NEW.conversation
            );
        END;

        -- A finished head hands over to the next open message of its conversation, if any.
        CREATE TRIGGER bus_head_on_finish AFTER UPDATE OF status ON bus_messages
        WHEN NEW.status IN ('done', 'dead') AND OLD.status IN ('pending', 'leased')
        BEGIN
            DELETE FROM bus_heads
            WHERE topic = NEW.topic AND conversation = NEW.conversation AND head_id = NEW.id;
            INSERT INTO bus_heads (topic, conversation, head_id, due)
            SELECT topic, conversation, id,
                   CASE status WHEN 'pending' THEN available_at ELSE lease_until END
            FROM bus_messages
            WHERE topic = NEW.topic AND conversation = NEW.conversation
              AND status IN ('pending', 'leased')
              AND NOT EXISTS (
                  SELECT 1 FROM bus_heads WHERE topic = NEW.topic AND conversation = NEW.conversation
              )
            ORDER BY id LIMIT 1;
        END;

        -- Claim, nack and extend move the head's due time.
        CREATE TRIGGER bus_head_on_schedule
        AFTER UPDATE OF status, available_at, lease_until ON bus_messages
        WHEN NEW.status IN ('pending', 'leased')
        BEGIN
            UPDATE bus_heads
            SET due = CASE NEW.status WHEN 'pending' THEN NEW.available_at ELSE NEW.lease_until END
            WHERE topic = NEW.topic AND conversation = NEW.conversation AND head_id = NEW.id;
        END;
        """,
    )


def m002_store(conn: sqlite3.Connection) -> None:
    """History turns, runs with their steps (the audit trail), and the interaction log."""
    _script(
        conn,
        """
        CREATE TABLE turns (
            id           INTEGER PRIMARY KEY,
            conversation TEXT NOT NULL,
            inbound_id   TEXT NOT NULL,
            messages     TEXT NOT NULL CHECK (json_valid(messages)),
            created_at   TEXT NOT NULL,
            UNIQUE (conversation, inbound_id)
        );
        CREATE INDEX turns_by_conversation ON turns (conversation, id);

        CREATE TABLE runs (
            id           TEXT PRIMARY KEY,
            conversation TEXT NOT NULL,
            inbound_id   TEXT,
            model        TEXT NOT NULL,
            mode         TEXT NOT NULL,
            status       TEXT NOT NULL,
            reason       TEXT,
            usage        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage)),
            tools_called TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tools_called)),
            final_text   TEXT,
            started_at   TEXT NOT NULL,
            finished_at  TEXT,
            duration_ms  REAL
        );
        CREATE INDEX runs_by_started ON runs (started_at);

        CREATE TABLE steps (
            run_id      TEXT NOT NULL REFERENCES runs (id),
            idx         INTEGER NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('model', 'tool', 'event')),
            name        TEXT NOT NULL,
            input       TEXT NOT NULL CHECK (json_valid(input)),
            output      TEXT NOT NULL CHECK (json_valid(output)),
            is_error    INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            usage       TEXT CHECK (usage IS NULL OR json_valid(usage)),
            created_at  TEXT NOT NULL,
            PRIMARY KEY (run_id, idx)
        ) WITHOUT ROWID;

        -- run_id is not a foreign key: an entry about a dead-lettered message has no run.
        CREATE TABLE interactions (
            id           INTEGER PRIMARY KEY,
            created_at   TEXT NOT NULL,
            conversation TEXT NOT NULL,
            category     TEXT NOT NULL,
            summary      TEXT NOT NULL,
            run_id       TEXT
        );
        CREATE INDEX interactions_by_created ON interactions (created_at);
        """,
    )


def m003_resets_and_progress(conn: sqlite3.Connection) -> None:
    """Fresh starts of a conversation's history (/new), and how much of a split outbound message
    a channel has already sent, so a retry resumes after the last chunk that went out."""
    _script(
        conn,
        """
        CREATE TABLE history_resets (
            conversation TEXT PRIMARY KEY,
            after_turn   INTEGER NOT NULL,
            created_at   TEXT NOT NULL
        );
        CREATE TABLE bus_progress (
            message_id INTEGER PRIMARY KEY REFERENCES bus_messages (id),
            done       INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        );
        """,
    )


def m004_step_summaries(conn: sqlite3.Connection) -> None:
    """A short summary of a long step, written by a small model, kept beside the raw output."""
    conn.execute("ALTER TABLE steps ADD COLUMN summary TEXT")


def m005_running_runs(conn: sqlite3.Connection) -> None:
    """Finding the runs a crash left open, without scanning every run."""
    conn.execute("CREATE INDEX runs_running ON runs (inbound_id) WHERE status = 'running'")


def m006_turn_tokens(conn: sqlite3.Connection) -> None:
    """Each turn's estimated token cost, computed once when it is stored rather than on every load."""
    conn.execute("ALTER TABLE turns ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0")


def m007_usage(conn: sqlite3.Connection) -> None:
    """One row per model call: the model asked for (``model``, the name sent to the API) and the
    one that answered (``api_model``, as the API named it, often a dated id), its token counts and
    what it cost.

    Indexed by time for "spend today" and usage per day, and by run for a run's cost. The run id
    is not a foreign key, so calls outside a run (none yet) could be counted too.
    """
    _script(
        conn,
        """
        CREATE TABLE usage (
            id                 INTEGER PRIMARY KEY,
            created_at         TEXT NOT NULL,
            run_id             TEXT,
            model              TEXT NOT NULL,
            api_model          TEXT NOT NULL,
            input_tokens       INTEGER NOT NULL,
            output_tokens      INTEGER NOT NULL,
            cache_read_tokens  INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            cost_usd           REAL NOT NULL
        );
        CREATE INDEX usage_by_time ON usage (created_at);
        CREATE INDEX usage_by_run ON usage (run_id);
        """,
    )


def m008_review(conn: sqlite3.Connection) -> None:
    """What the review web page reads fast: full-text search over the interaction log (an FTS5 index
    kept by triggers), filters by category, conversation and run, the notes each run wrote (an
    index on the written path), a run's other attempts, and the page's access token."""
    _script(
        conn,
        """
        CREATE VIRTUAL TABLE interactions_fts USING fts5(
            summary, category, conversation, content='interactions', content_rowid='id'
        );
        CREATE TRIGGER interactions_fts_insert AFTER INSERT ON interactions BEGIN
            INSERT INTO interactions_fts (rowid, summary, category, conversation)
            VALUES (NEW.id, NEW.summary, NEW.category, NEW.conversation);
        END;
        CREATE TRIGGER interactions_fts_delete AFTER DELETE ON interactions BEGIN
            INSERT INTO interactions_fts (interactions_fts, rowid, summary, category, conversation)
            VALUES ('delete', OLD.id, OLD.summary, OLD.category, OLD.conversation);
        END;
        CREATE TRIGGER interactions_fts_update AFTER UPDATE ON interactions BEGIN
            INSERT INTO interactions_fts (interactions_fts, rowid, summary, category, conversation)
            VALUES ('delete', OLD.id, OLD.summary, OLD.category, OLD.conversation);
            INSERT INTO interactions_fts (rowid, summary, category, conversation)
            VALUES (NEW.id, NEW.summary, NEW.category, NEW.conversation);
        END;
        INSERT INTO interactions_fts (interactions_fts) VALUES ('rebuild');

        CREATE INDEX interactions_by_category ON interactions (category, id);
        CREATE INDEX interactions_by_conversation ON interactions (conversation, id);
        CREATE INDEX interactions_by_run ON interactions (run_id) WHERE run_id IS NOT NULL;
        CREATE INDEX runs_by_inbound ON runs (inbound_id);
        CREATE INDEX steps_by_note ON steps (json_extract(output, '$.path'), created_at)
            WHERE kind = 'tool' AND name = 'vault_write';
        CREATE INDEX steps_notes_by_time ON steps (created_at)
            WHERE kind = 'tool' AND name = 'vault_write';

        CREATE TABLE review_token (
            id         INTEGER PRIMARY KEY CHECK (id = 1),
            token      TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    )


def m009_reminders(conn: sqlite3.Connection) -> None:
    """Scheduled messages. ``next_at`` (Unix seconds, like the bus's times) is the next occurrence
    still to fire, NULL once the reminder is done or cancelled. ``request_key`` (inbound message,
    call sequence) makes scheduling idempotent: a re-run after a crash finds its reminder again.
    """
    _script(
        conn,
        """
        CREATE TABLE reminders (
            id           TEXT PRIMARY KEY,
            conversation TEXT NOT NULL,
            channel      TEXT NOT NULL,
            recipient    TEXT NOT NULL,
            text         TEXT NOT NULL,
            at           TEXT NOT NULL,
            repeat       TEXT,
            run_model    INTEGER NOT NULL,
            status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'cancelled')),
            next_at      REAL,
            fired        INTEGER NOT NULL DEFAULT 0,
            request_key  TEXT UNIQUE,
            created_at   TEXT NOT NULL,
            updated_at   TEXT NOT NULL
        );
        CREATE INDEX reminders_due ON reminders (next_at) WHERE status = 'pending';
        CREATE INDEX reminders_by_conversation ON reminders (conversation, status);
        """,
    )


def m010_transcripts(conn: sqlite3.Connection) -> None:
    """What transcribing each recording came to, keyed by its vault path, so a re-run after a crash
    reuses the transcript (or the reason there is none) instead of asking the service again."""
    _script(
        conn,
        """
        CREATE TABLE transcripts (
            audio       TEXT PRIMARY KEY,
            status      TEXT NOT NULL CHECK (status IN ('transcribed', 'failed', 'too_long', 'too_big')),
            text        TEXT NOT NULL,
            detail      TEXT NOT NULL,
            attempts    INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            created_at  TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    )


def m011_lighter_turn_writes(conn: sqlite3.Connection) -> None:
    """Fewer pages written per turn.

    ``steps`` becomes a rowid table with its primary key as an index. As a ``WITHOUT ROWID`` table
    it kept whole rows, JSON and all, in a tree keyed by a random run id, interior pages included:
    each step landed on a random page and split bulky ones. Now rows are appended at the end of the
    table and only the small key lands at random. Columns, their order and the primary key stay.

    ``runs_running`` goes: ``runs_by_inbound`` finds a message's runs (the few a re-run looks at
    for one still running) as well, and the partial index cost every run an insert and a delete.
    """
    _script(
        conn,
        """
        CREATE TABLE steps_rowid (
            run_id      TEXT NOT NULL REFERENCES runs (id),
            idx         INTEGER NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('model', 'tool', 'event')),
            name        TEXT NOT NULL,
            input       TEXT NOT NULL CHECK (json_valid(input)),
            output      TEXT NOT NULL CHECK (json_valid(output)),
            is_error    INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            usage       TEXT CHECK (usage IS NULL OR json_valid(usage)),
            created_at  TEXT NOT NULL,
            summary     TEXT,
            PRIMARY KEY (run_id, idx)
        );
        INSERT INTO steps_rowid
            (run_id, idx, kind, name, input, output, is_error, duration_ms, usage, created_at, summary)
        SELECT run_id, idx, kind, name, input, output, is_error, duration_ms, usage, created_at, summary
        FROM steps ORDER BY created_at, run_id, idx;
        DROP TABLE steps;
        ALTER TABLE steps_rowid RENAME TO steps;
        CREATE INDEX steps_by_note ON steps (json_extract(output, '$.path'), created_at)
            WHERE kind = 'tool' AND name = 'vault_write';
        CREATE INDEX steps_notes_by_time ON steps (created_at)
            WHERE kind = 'tool' AND name = 'vault_write';

        DROP INDEX runs_running;
        """,
    )


def m012_dead_letters(conn: sqlite3.Connection) -> None:
    """Dead letters as a person sees them: each message the model could not answer, filed in the vault.

    ``run_id`` is the run that filed it, the id ``vaultbot retry`` takes; ``message_id`` is unique, so
    a dead letter handled again after a crash is filed and told once. ``path`` is where the message
    was filed (NULL when even that failed); ``retry_message_id`` is the bus message a retry published.
    """
    _script(
        conn,
        """
        CREATE TABLE dead_letters (
            run_id           TEXT PRIMARY KEY,
            message_id       INTEGER NOT NULL UNIQUE REFERENCES bus_messages (id),
            conversation     TEXT NOT NULL,
            text             TEXT NOT NULL,
            error            TEXT NOT NULL,
            path             TEXT,
            created_at       TEXT NOT NULL,
            retried_at       TEXT,
            retry_message_id INTEGER REFERENCES bus_messages (id)
        );
        CREATE INDEX dead_letters_waiting ON dead_letters (created_at) WHERE retried_at IS NULL;
        """,
    )


def m013_review_reads(conn: sqlite3.Connection) -> None:
    """What lets the review page only read: the addresses where processes serve it (recorded by each
    before it serves, so ``/review`` in chat can name one that is still alive), and the running bot's
    configuration as it recorded it on start (secret-free JSON), which the health page shows."""
    _script(
        conn,
        """
        CREATE TABLE review_pages (
            pid          INTEGER PRIMARY KEY,
            address      TEXT NOT NULL,
            host         TEXT NOT NULL,
            port         INTEGER NOT NULL,
            token_sha256 TEXT NOT NULL,
            started_at   TEXT NOT NULL
        );
        CREATE TABLE bot_config (
            id          INTEGER PRIMARY KEY CHECK (id = 1),
            config      TEXT NOT NULL CHECK (json_valid(config)),
            recorded_at TEXT NOT NULL
        );
        """,
    )


def m014_clips(conn: sqlite3.Connection) -> None:
    """Pages clipped by ``clip_link``, by the address asked for: the same URL clipped again returns
    the note filed the first time (while it is still in the vault) instead of fetching it again."""
    _script(
        conn,
        """
        CREATE TABLE clips (
            url        TEXT PRIMARY KEY,
            path       TEXT NOT NULL,
            title      TEXT NOT NULL,
            excerpt    TEXT NOT NULL,
            words      INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    )


def m015_consent(conn: sqlite3.Connection) -> None:
    """Questions for consent (``bot.consent``): a call the model asked for in a run that holds someone
    else's words, waiting for the person's Allow or Deny. ``waiting`` is the run as it stood (its turn
    so far and the calls left), so the answer resumes it with no coroutine kept in memory; ``outcome``
    is the call's result once made (``{"calling": true}`` while it is being made), so a run resumed
    again after a crash never makes it twice. ``sent_messages`` remembers where a channel showed a
    message it may edit later (the question's buttons, once decided)."""
    _script(
        conn,
        """
        CREATE TABLE consent_questions (
            id             TEXT PRIMARY KEY,
            run_id         TEXT NOT NULL,
            conversation   TEXT NOT NULL,
            tool           TEXT NOT NULL,
            input          TEXT NOT NULL CHECK (json_valid(input)),
            question       TEXT NOT NULL,
            state          TEXT NOT NULL DEFAULT 'asked'
                           CHECK (state IN ('asked', 'allowed', 'denied', 'expired', 'declined')),
            waiting        TEXT NOT NULL CHECK (json_valid(waiting)),
            answer_message INTEGER,
            outcome        TEXT CHECK (outcome IS NULL OR json_valid(outcome)),
            asked_at       TEXT NOT NULL,
            expires_at     TEXT NOT NULL,
            decided_at     TEXT,
            decided_by     TEXT
        );
        CREATE INDEX consent_open ON consent_questions (conversation) WHERE state = 'asked';
        CREATE INDEX consent_by_run ON consent_questions (run_id);
        CREATE TABLE sent_messages (
            key        TEXT PRIMARY KEY,
            chat       TEXT NOT NULL,
            message    TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    )


def m016_scheduled_model_runs(conn: sqlite3.Connection) -> None:
    """How many scheduled tasks (reminders with ``run_model``) each conversation ran each day (the
    user's day, ``YYYY-MM-DD``), so a cap holds however many tasks there are."""
    _script(
        conn,
        """
        CREATE TABLE scheduled_model_runs (
            conversation TEXT NOT NULL,
            day          TEXT NOT NULL,
            runs         INTEGER NOT NULL,
            PRIMARY KEY (conversation, day)
        ) WITHOUT ROWID;
        """,
    )


def m017_refusals(conn: sqlite3.Connection) -> None:
    """Strangers refused, one row per channel and sender for the window (an hour) that began with
    their first message: how many they sent since, and the ``access_denied`` entry that says so.
    The sender ``''`` counts every stranger past the window's cap; a row whose window is over is
    deleted when the next stranger comes, so the table stays as small as one window's strangers."""
    _script(
        conn,
        """
        CREATE TABLE refusals (
            channel        TEXT NOT NULL,
            sender         TEXT NOT NULL,
            window_start   REAL NOT NULL,
            messages       INTEGER NOT NULL,
            interaction_id INTEGER NOT NULL,
            PRIMARY KEY (channel, sender)
        ) WITHOUT ROWID;
        """,
    )


def m018_change_sets(conn: sqlite3.Connection) -> None:
    """Change sets: each file a run created, appended to, replaced, moved to the trash or put back
    (digests before and after, where the other side's bytes are kept, what to show), as a JSON array
    on the run's own row, written by the statement that ends the run; and which run took back which
    (an undo is a run whose change set takes back another's)."""
    _script(
        conn,
        """
        ALTER TABLE runs ADD COLUMN changes TEXT CHECK (changes IS NULL OR json_valid(changes));

        CREATE TABLE undos (
            undo_run   TEXT PRIMARY KEY REFERENCES runs (id),
            run_id     TEXT NOT NULL REFERENCES runs (id),
            created_at TEXT NOT NULL
        );
        CREATE INDEX undos_by_run ON undos (run_id);
        """,
    )


def m019_clippings_in_the_notes_list(conn: sqlite3.Connection) -> None:
    """The review page's notes list and a note's page count the pages ``clip_link`` filed as well as
    the notes ``vault_write`` wrote: their two indexes cover both tools' steps."""
    _script(
        conn,
        """
        DROP INDEX steps_by_note;
        DROP INDEX steps_notes_by_time;
        CREATE INDEX steps_by_note ON steps (json_extract(output, '$.path'), created_at)
            WHERE kind = 'tool' AND name IN ('vault_write', 'clip_link');
        CREATE INDEX steps_notes_by_time ON steps (created_at)
            WHERE kind = 'tool' AND name IN ('vault_write', 'clip_link');
        """,
    )


def m020_email_mails(conn: sqlite3.Connection) -> None:
    """Every e-mail the e-mail channel has taken from the mailbox, by its dedupe key (its Message-ID,
    else mailbox, UIDVALIDITY and UID): what became of it (``published`` on the bus, ``refused``,
    ``ignored`` as automatic mail, ``too_big`` and told so, ``unreadable`` and logged), and for a
    published one the thread its replies join (its Message-ID, the References they carry, its
    subject), found by the inbound message's id."""
    _script(
        conn,
        """
        CREATE TABLE email_mails (
            key          TEXT PRIMARY KEY,
            outcome      TEXT NOT NULL CHECK (outcome IN ('published', 'refused', 'ignored', 'too_big', 'unreadable')),
            conversation TEXT NOT NULL,
            inbound_id   TEXT,
            message_id   TEXT,
            refs         TEXT NOT NULL DEFAULT '',
            subject      TEXT NOT NULL DEFAULT '',
            created_at   TEXT NOT NULL
        );
        CREATE INDEX email_mails_inbound ON email_mails (inbound_id) WHERE inbound_id IS NOT NULL;
        CREATE INDEX email_mails_threads ON email_mails (conversation, created_at) WHERE outcome = 'published';
        """,
    )


def m021_backups(conn: sqlite3.Connection) -> None:
    """The backups ``vaultbot run`` takes on its own, one row per period (its number counted from the
    epoch in the person's local time), claimed before it starts and finished once the archive is
    named: a restart after a crash mid-backup takes that period's again, a finished one never. And
    ``git_history``: each run whose changes ``VAULTBOT_VAULT__GIT`` has committed (or passed over:
    ``git_commit`` NULL when there was nothing new to commit, or the run was before git mode). And
    ``sync_conflicts_told``: the conflict copies the person has been told of in chat, once each."""
    _script(
        conn,
        """
        CREATE TABLE backups (
            period      INTEGER PRIMARY KEY,
            started_at  TEXT NOT NULL,
            finished_at TEXT,
            path        TEXT,
            bytes       INTEGER
        );
        CREATE TABLE sync_conflicts_told (
            path     TEXT PRIMARY KEY,
            told_at  TEXT NOT NULL
        );
        CREATE TABLE git_history (
            run_id      TEXT PRIMARY KEY,
            git_commit  TEXT,
            recorded_at TEXT NOT NULL
        );
        """,
    )


def m022_provenance(conn: sqlite3.Connection) -> None:
    """Provenance (``bot.consent.provenance``): each text a run holding someone else's words wrote in the
    vault, with the run, the note, the kind of change and the sources (a JSON array), found again by its
    fingerprints (``provenance_marks``) or, for a short one, by its whole text (``short``, as read).
    Reminders keep the sources of the run that scheduled them (NULL: a clean run), so a task is as
    tainted when it runs as the run that made it."""
    _script(
        conn,
        """
        CREATE TABLE provenance (
            id         INTEGER PRIMARY KEY,
            run_id     TEXT NOT NULL,
            path       TEXT NOT NULL,
            kind       TEXT NOT NULL,
            sources    TEXT NOT NULL,
            short      TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX provenance_runs ON provenance (run_id);
        CREATE TABLE provenance_marks (
            mark INTEGER NOT NULL,
            span INTEGER NOT NULL REFERENCES provenance (id),
            PRIMARY KEY (mark, span)
        ) WITHOUT ROWID;
        ALTER TABLE reminders ADD COLUMN sources TEXT;
        """,
    )


MIGRATIONS: list[Migration] = [
    m001_bus,
    m002_store,
    m003_resets_and_progress,
    m004_step_summaries,
    m005_running_runs,
    m006_turn_tokens,
    m007_usage,
    m008_review,
    m009_reminders,
    m010_transcripts,
    m011_lighter_turn_writes,
    m012_dead_letters,
    m013_review_reads,
    m014_clips,
    m015_consent,
    m016_scheduled_model_runs,
    m017_refusals,
    m018_change_sets,
    m019_clippings_in_the_notes_list,
    m020_email_mails,
    m021_backups,
    m022_provenance,
]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the pending migrations to ``conn`` (autocommit mode); returns the names applied."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
        applied = []
        for migration in MIGRATIONS:
            if migration.__name__ in done:
                continue
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (migration.__name__,),
            )
            applied.append(migration.__name__)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
