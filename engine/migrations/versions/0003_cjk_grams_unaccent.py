"""Short CJK words and accent-blind words on both backends.

SQLite: ``messages_cjk``, an index of the one- and two-character grams of CJK text (the
trigram index cannot look up a word shorter than three characters, and a CJK run is a single
token of the word index). PostgreSQL: a text search configuration ``cairn`` that folds accents
(``unaccent``, when the server has it) for the generated ``search`` column, and an index of
the same CJK grams.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The characters whose runs are split into grams: kana (with the prolonged sound and iteration
# marks), bopomofo, CJK ideographs (々, extension A, unified, compatibility) and Hangul
# syllables. Korean separates words with spaces, but a two-syllable word inside a longer one is
# still only reachable this way. All of them take three bytes in UTF-8, which the SQLite
# expression below relies on.
CJK_CLASS = (
    "[\u3005\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff]"
)
# Lead bytes of those characters in UTF-8 (U+3000–U+DFFF and U+F000–U+FFFF): a byte search for
# them rules a message out far faster than GLOB, which costs ~300 ns a character; only messages
# holding one of them pay for the gram expression.
_LEAD_BYTES = [*range(0xE3, 0xEE), 0xEF]
# 0..255 with its multiples by 256 and 65536, to count byte positions with (stored: the
# multiplications cost a third of the gram expression's time).
DIGITS = "messages_cjk_digits"


def _has_cjk(column: str) -> str:
    """SQLite: whether ``column`` may hold CJK text (never false when it does)."""
    blob = f"CAST({column} AS BLOB)"
    lead = " OR ".join(f"instr({blob}, x'{b:02X}')" for b in _LEAD_BYTES)
    # All-ASCII text (most messages) is ruled out by its length alone.
    return f"(length({column}) < length({blob}) AND ({lead}))"


def _ranges() -> list[tuple[str, str]]:
    """CJK_CLASS as (first, last) characters: single ones stand for themselves."""
    body, out, i = CJK_CLASS[1:-1], [], 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            out.append((body[i], body[i + 2]))
            i += 3
        else:
            out.append((body[i], body[i]))
            i += 1
    # The unified ideographs first: most text in the class is Chinese or kanji, and the
    # conditions below stop at the first range that holds the character.
    return sorted(out, key=lambda r: r[0] != "\u4e00")


def _in_class(window: str) -> str:
    """SQLite: whether the 3-byte BLOB ``window`` is one character of CJK_CLASS. UTF-8 keeps
    code point order under byte comparison, so each range is one BETWEEN on blobs, a memcmp;
    GLOB with the class cost ~1 µs a character, three times over."""

    def blob(ch: str) -> str:
        return "x'" + ch.encode().hex().upper() + "'"

    return (
        "(" + " OR ".join(f"{window} BETWEEN {blob(a)} AND {blob(b)}" for a, b in _ranges()) + ")"
    )


def _grams(column: str) -> str:
    """SQLite: the grams of ``column`` separated by spaces: for each CJK character, it and the
    next one when that is CJK too, else the character alone (so every character starts exactly
    one gram, and a prefix query on one character finds all of its occurrences).

    SQLite has no regular expressions, so the expression walks the bytes of the UTF-8 text
    (``substr`` of a BLOB is a constant-time slice; of TEXT it counts characters from the
    start). The byte positions come from three joined copies of a 256-row table, each bounded
    by an index range: a recursive CTE was ten times slower, and ``json_each`` cannot be read
    by FTS5 through the view when it rebuilds. Text past 16 MiB (256³ bytes) is not split.
    A position inside a character starts with a byte below 0xE3 and is skipped at once. This
    costs ~0.1 µs a byte and ~1 µs a CJK character, on messages that have CJK only.
    """
    blob = f"CAST({column} AS BLOB)"
    size = f"length({blob})"
    at = "a.high + b.mid + c.d + 1"
    here, after = f"substr({blob}, {at}, 3)", f"substr({blob}, {at} + 3, 3)"
    return (
        f"(SELECT group_concat(CAST(substr({blob}, {at}, "
        f"CASE WHEN {_in_class(after)} THEN 6 ELSE 3 END) AS TEXT), ' ') "
        f"FROM {DIGITS} AS a, {DIGITS} AS b, {DIGITS} AS c "
        f"WHERE a.d < ({size} + 65535) / 65536 AND b.d < ({size} - a.high + 255) / 256 "
        f"AND c.d < {size} - a.high - b.mid "
        f"AND substr({blob}, {at}, 1) >= x'E3' AND {_in_class(here)})"
    )


def sqlite_statements() -> list[str]:
    # External content over a view of the CJK messages only, so that 'rebuild' and
    # 'integrity-check' work as on the other two indexes and visit only those messages; the
    # triggers read the same view, so what is deleted is exactly what was inserted.
    # The 'ascii' tokenizer keeps every non-ASCII character in its token: a gram is one token
    # exactly as written. prefix='1' indexes each gram's first character, for one-character
    # queries.
    grams_of = "SELECT {}id, grams FROM messages_cjk_source WHERE id = {}.id"
    return [
        f"CREATE TABLE {DIGITS} (d INTEGER PRIMARY KEY, mid INTEGER, high INTEGER)",
        f"""WITH RECURSIVE n(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM n WHERE d < 255)
            INSERT INTO {DIGITS}(d, mid, high) SELECT d, d * 256, d * 65536 FROM n""",
        f"""CREATE VIEW messages_cjk_source AS
            SELECT id, {_grams("content")} AS grams FROM messages WHERE {_has_cjk("content")}""",
        """CREATE VIRTUAL TABLE messages_cjk USING fts5(
            grams, content='messages_cjk_source', content_rowid='id', tokenize='ascii',
            prefix='1')""",
        f"""CREATE TRIGGER messages_cjk_ai AFTER INSERT ON messages
            WHEN {_has_cjk("new.content")} BEGIN
            INSERT INTO messages_cjk(rowid, grams) {grams_of.format("", "new")};
        END""",
        # Before the row goes, while the view can still read it.
        f"""CREATE TRIGGER messages_cjk_bd BEFORE DELETE ON messages
            WHEN {_has_cjk("old.content")} BEGIN
            INSERT INTO messages_cjk(messages_cjk, rowid, grams)
                {grams_of.format("'delete', ", "old")};
        END""",
        f"""CREATE TRIGGER messages_cjk_bu BEFORE UPDATE OF content ON messages
            WHEN {_has_cjk("old.content")} BEGIN
            INSERT INTO messages_cjk(messages_cjk, rowid, grams)
                {grams_of.format("'delete', ", "old")};
        END""",
        f"""CREATE TRIGGER messages_cjk_au AFTER UPDATE OF content ON messages
            WHEN {_has_cjk("new.content")} BEGIN
            INSERT INTO messages_cjk(rowid, grams) {grams_of.format("", "new")};
        END""",
        "INSERT INTO messages_cjk(messages_cjk) VALUES ('rebuild')",
    ]


# PostgreSQL: the same grams as a text[] (each character and each pair of neighbours within a
# CJK run), in a GIN expression index. PL/pgSQL, not SQL: an SQL function in an index
# expression is planned again for every INSERT statement (147 µs a row against 30 µs, measured
# with executemany), while PL/pgSQL keeps its plans for the session. Text without CJK costs
# one regular-expression scan.
POSTGRES_GRAMS = f"""CREATE FUNCTION cairn_cjk_grams(body text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    BEGIN
        IF body !~ '{CJK_CLASS}' THEN
            RETURN '{{}}';
        END IF;
        RETURN ARRAY(
            SELECT DISTINCT substr(run[1], i, n)
            FROM regexp_matches(body, '{CJK_CLASS}+', 'g') AS run,
                generate_series(1, char_length(run[1])) AS i, (VALUES (1), (2)) AS width(n)
            WHERE i + n - 1 <= char_length(run[1])
            ORDER BY 1);
    END
$$"""

# Token types that can hold non-ASCII letters; the ASCII-only ones need no folding.
_FOLDED_TOKENS = "word, hword, hword_part, numword, numhword, email, url, host, file, url_path"


def _search_column(config: str) -> list[str]:
    return [
        "DROP INDEX IF EXISTS ix_messages_search",
        "ALTER TABLE messages DROP COLUMN IF EXISTS search",
        f"""ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (
            to_tsvector('{config}', coalesce(content, '') || ' ' || coalesce(tool_name, '')
                || ' ' || coalesce(tool_calls, ''))) STORED""",
        "CREATE INDEX ix_messages_search ON messages USING gin (search)",
    ]


def _unaccent_schema(conn: Connection) -> str | None:
    """The schema of the ``unaccent`` extension, installing it if the server allows; None when
    it is not available (then accents are kept, as before)."""
    available = conn.execute(
        text("SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent'")
    ).scalar()
    if available:
        try:
            with conn.begin_nested():
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS unaccent"))
        except DBAPIError:  # e.g. not permitted for this role: search still works, unfolded
            pass
    return conn.execute(
        text(
            "SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'unaccent'"
        )
    ).scalar()


def _upgrade_postgres(conn: Connection) -> None:
    schema = _unaccent_schema(conn)
    conn.execute(text("CREATE TEXT SEARCH CONFIGURATION cairn (COPY = pg_catalog.simple)"))
    if schema is not None:
        dictionary = '"' + schema.replace('"', '""') + '".unaccent'
        conn.execute(
            text(
                f"ALTER TEXT SEARCH CONFIGURATION cairn ALTER MAPPING FOR {_FOLDED_TOKENS} "
                f"WITH {dictionary}, pg_catalog.simple"
            )
        )
    for statement in [
        *_search_column("cairn"),
        POSTGRES_GRAMS,
        "CREATE INDEX ix_messages_cjk_grams ON messages USING gin (cairn_cjk_grams(content))",
    ]:
        conn.execute(text(statement))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for statement in sqlite_statements():
            conn.execute(text(statement))
    elif conn.dialect.name == "postgresql":
        _upgrade_postgres(conn)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for name in ("messages_cjk_ai", "messages_cjk_bd", "messages_cjk_bu", "messages_cjk_au"):
            conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
        conn.execute(text("DROP TABLE IF EXISTS messages_cjk"))
        conn.execute(text("DROP VIEW IF EXISTS messages_cjk_source"))
        conn.execute(text(f"DROP TABLE IF EXISTS {DIGITS}"))
    elif conn.dialect.name == "postgresql":
        conn.execute(text("DROP INDEX IF EXISTS ix_messages_cjk_grams"))
        conn.execute(text("DROP FUNCTION IF EXISTS cairn_cjk_grams(text)"))
        for statement in _search_column("simple"):
            conn.execute(text(statement))
        conn.execute(text("DROP TEXT SEARCH CONFIGURATION IF EXISTS cairn"))
