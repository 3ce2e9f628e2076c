"""Named, ordered schema migrations for the PostgreSQL store, each in a transaction with the
record that it ran (table `migrations`), as store/migrations.py does for SQLite.

The tables mirror SQLite's. Times are epoch seconds (float8) and JSON is text, as there, so
store/rows.py parses both stores' rows. Full text lives in each corpus's own row: `fts`, a
tsvector of the tokens SQLite's FTS5 stores for the same text (store/pgtext.py), a body's
at weight A and a turn's neighbour context at weight B, and `fts_len`, the row's token count
as FTS5 counts it. A turn's neighbour context is kept as text too (`fts_context`, as
SQLite's turns_fts.context holds it), so `memlane copy` moves it either way. Every index leads with the scope (btree_gin puts the user in the GIN
index, m002); vectors get their tables from `PostgresStore.ensure_vectors`, once the width is known.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PgMigration = Callable[[Any], None]
PG_MIGRATIONS: list[PgMigration] = []
migration = PG_MIGRATIONS.append


@migration
def m001_core(db: Any) -> None:
    db.execute(
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE sessions(
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', id TEXT NOT NULL,
            started_at FLOAT8 NOT NULL, ended_at FLOAT8, summary TEXT NOT NULL DEFAULT '',
            message_count INTEGER NOT NULL DEFAULT 0, extraction_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY(user_id, agent_id, id));

        CREATE TABLE turns(
            rowid BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL,
            seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, name TEXT,
            tool_calls TEXT, created_at FLOAT8 NOT NULL, token_count INTEGER NOT NULL,
            archived TEXT NOT NULL DEFAULT 'false', compacted INTEGER NOT NULL DEFAULT 0,
            embedded INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}',
            import_key TEXT, fts_context TEXT NOT NULL DEFAULT '',
            fts TSVECTOR NOT NULL DEFAULT ''::tsvector, fts_len INTEGER NOT NULL DEFAULT 1,
            UNIQUE(user_id, agent_id, session_id, seq));
        CREATE INDEX turns_scope_time ON turns(user_id, agent_id, created_at);
        CREATE INDEX turns_scope_len ON turns(user_id, agent_id) INCLUDE (fts_len);
        CREATE INDEX turns_unembedded ON turns(rowid) WHERE embedded = 0;
        CREATE UNIQUE INDEX turns_import_key ON turns(user_id, agent_id, import_key) WHERE import_key IS NOT NULL;
        CREATE INDEX turns_fts ON turns USING gin(user_id, agent_id, fts);

        CREATE TABLE memories(
            rowid BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL, category TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'semantic',
            score FLOAT8 NOT NULL, confidence FLOAT8 NOT NULL DEFAULT 1.0, subject TEXT, predicate TEXT,
            created_at FLOAT8 NOT NULL, updated_at FLOAT8 NOT NULL, last_activated FLOAT8 NOT NULL,
            activation_count INTEGER NOT NULL DEFAULT 0, expires_at FLOAT8,
            source TEXT NOT NULL, verified INTEGER NOT NULL DEFAULT 0, source_session TEXT,
            status TEXT NOT NULL DEFAULT 'active', pinned INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}', embedded INTEGER NOT NULL DEFAULT 0,
            fts TSVECTOR NOT NULL DEFAULT ''::tsvector, fts_len INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX memories_scope ON memories(user_id, agent_id, status, score DESC)
            INCLUDE (last_activated, expires_at, category, source_session, created_at, fts_len);
        CREATE INDEX memories_unembedded ON memories(rowid) WHERE embedded = 0;
        CREATE INDEX memories_fts ON memories USING gin(user_id, agent_id, fts);

        CREATE TABLE episodes(
            rowid BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL,
            summary TEXT NOT NULL, goal TEXT NOT NULL DEFAULT '', outcome TEXT NOT NULL DEFAULT '',
            entities TEXT NOT NULL DEFAULT '[]', tools_used TEXT NOT NULL DEFAULT '[]',
            started_at FLOAT8 NOT NULL, ended_at FLOAT8 NOT NULL, score FLOAT8 NOT NULL DEFAULT 1.0,
            created_at FLOAT8 NOT NULL, embedded INTEGER NOT NULL DEFAULT 0,
            fts TSVECTOR NOT NULL DEFAULT ''::tsvector, fts_len INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX episodes_scope ON episodes(user_id, agent_id, ended_at) INCLUDE (fts_len);
        CREATE INDEX episodes_unembedded ON episodes(rowid) WHERE embedded = 0;
        CREATE INDEX episodes_fts ON episodes USING gin(user_id, agent_id, fts);

        CREATE TABLE scratchpad(
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '',
            current_focus TEXT NOT NULL DEFAULT '', recent_tasks TEXT NOT NULL DEFAULT '[]',
            updated_at FLOAT8 NOT NULL, PRIMARY KEY(user_id, agent_id));

        CREATE TABLE extraction_jobs(
            id BIGSERIAL PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0,
            next_at FLOAT8 NOT NULL, last_error TEXT, created_at FLOAT8 NOT NULL,
            UNIQUE(user_id, agent_id, session_id, first_seq, last_seq));
        CREATE INDEX extraction_jobs_due ON extraction_jobs(status, next_at);

        CREATE TABLE memory_events(
            id BIGSERIAL PRIMARY KEY, memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL,
            before TEXT, after TEXT, actor TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
            created_at FLOAT8 NOT NULL);
        CREATE INDEX memory_events_memory ON memory_events(user_id, agent_id, memory_id, id);

        CREATE TABLE embedding_cache(
            model TEXT NOT NULL, hash TEXT NOT NULL, vector BYTEA NOT NULL,
            PRIMARY KEY(model, hash));

        CREATE TABLE attachments(
            rowid BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', session_id TEXT,
            name TEXT NOT NULL, media_type TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
            uri TEXT, data BYTEA, size INTEGER NOT NULL, sha256 TEXT NOT NULL,
            created_at FLOAT8 NOT NULL, expires_at FLOAT8, metadata TEXT NOT NULL DEFAULT '{}');
        CREATE INDEX attachments_scope ON attachments(user_id, agent_id, session_id, created_at);

        CREATE TABLE events(
            id BIGSERIAL PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL, subject TEXT NOT NULL, source TEXT NOT NULL,
            payload TEXT NOT NULL DEFAULT '{}', at FLOAT8 NOT NULL,
            status TEXT NOT NULL, actions TEXT NOT NULL DEFAULT '[]');
        CREATE INDEX events_scope ON events(user_id, agent_id, at);
        CREATE INDEX events_pending ON events(user_id, agent_id, status) WHERE status = 'pending';
        """
    )


# tables holding a user_id column, besides the corpora (forgetting a scope must miss none)
SCOPE_TABLES = ("ann_pending", "api_keys", "attachments", "events", "extraction_jobs", "fts_stats", "fts_terms",
                "memory_events", "scratchpad", "sessions")
CORPORA = ("memories", "turns", "episodes")
TERMS_KEPT = ("memories", "episodes")  # corpora whose words' documents fts_terms keeps (m009)


@migration
def m002_fts_by_user(db: Any) -> None:
    """The full-text GIN indexes lead with the user alone: with `agent_id` in them, a query
    also walked the posting list of its agent, which most rows share ('' by default: every
    row of the table; 3.2 → 0.4 ms a scope query at 1M rows). The agent is checked on the row."""
    for corpus in CORPORA:
        db.execute(f"DROP INDEX IF EXISTS {corpus}_fts")
        db.execute(f"CREATE INDEX {corpus}_fts ON {corpus} USING gin(user_id, fts)")


@migration
def m003_fts_stats(db: Any) -> None:
    """Each scope's documents and tokens per corpus (BM25's N and average length), kept by
    statement-level triggers in the writing transaction: a query reads one row instead of
    counting its scope (35 ms at 100k rows in one scope). The triggers group a statement's
    rows by scope and upsert them in scope order, so concurrent writers lock rows in one
    order; an update that changes no length or owner writes nothing."""
    db.execute(
        """
        CREATE TABLE fts_stats(
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL, corpus TEXT NOT NULL,
            docs BIGINT NOT NULL, tokens BIGINT NOT NULL, PRIMARY KEY(user_id, agent_id, corpus));

        CREATE FUNCTION fts_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens)
            SELECT user_id, agent_id, TG_TABLE_NAME, count(*), sum(fts_len) FROM new_rows
            GROUP BY user_id, agent_id ORDER BY user_id, agent_id
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens;
            RETURN NULL;
        END $$;

        CREATE FUNCTION fts_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE fts_stats s SET docs = s.docs - o.n, tokens = s.tokens - o.t
            FROM (SELECT user_id, agent_id, count(*) AS n, sum(fts_len) AS t FROM old_rows
                  GROUP BY user_id, agent_id ORDER BY user_id, agent_id) o
            WHERE s.user_id = o.user_id AND s.agent_id = o.agent_id AND s.corpus = TG_TABLE_NAME;
            RETURN NULL;
        END $$;

        CREATE FUNCTION fts_stats_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens)
            SELECT user_id, agent_id, TG_TABLE_NAME, sum(n), sum(t) FROM (
                SELECT user_id, agent_id, 1 AS n, fts_len AS t FROM new_rows
                UNION ALL SELECT user_id, agent_id, -1, -fts_len FROM old_rows) d
            GROUP BY user_id, agent_id HAVING sum(n) <> 0 OR sum(t) <> 0 ORDER BY user_id, agent_id
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens;
            RETURN NULL;
        END $$;
        """
    )
    for corpus in CORPORA:
        db.execute(f"INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens) "
                   f"SELECT user_id, agent_id, '{corpus}', count(*), sum(fts_len) FROM {corpus} GROUP BY 1, 2")
        db.execute(f"CREATE TRIGGER {corpus}_fts_add AFTER INSERT ON {corpus} REFERENCING NEW TABLE AS new_rows "
                   "FOR EACH STATEMENT EXECUTE FUNCTION fts_stats_add()")
        db.execute(f"CREATE TRIGGER {corpus}_fts_remove AFTER DELETE ON {corpus} REFERENCING OLD TABLE AS old_rows "
                   "FOR EACH STATEMENT EXECUTE FUNCTION fts_stats_remove()")
        db.execute(f"CREATE TRIGGER {corpus}_fts_change AFTER UPDATE ON {corpus} REFERENCING OLD TABLE AS old_rows "
                   "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fts_stats_change()")


@migration
def m004_api_keys(db: Any) -> None:
    """The server's API keys (SQLite's m012): in the shared database, so every `memlane serve`
    process on any host sharing it accepts a key created on one and refuses it once revoked."""
    db.execute(
        """
        CREATE TABLE api_keys(
            id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE,
            user_id TEXT, agent_id TEXT NOT NULL DEFAULT '', admin INTEGER NOT NULL DEFAULT 0,
            name TEXT NOT NULL DEFAULT '', created_at FLOAT8 NOT NULL, revoked_at FLOAT8);
        CREATE INDEX api_keys_active ON api_keys(revoked_at);
        """
    )


@migration
def m005_fts_stats_version(db: Any) -> None:
    """fts_stats gets a version, a new number from one sequence each time a statement changes
    any full text of the scope (a row added, removed, or its tsvector, length or owner
    changed): a process may keep a large scope's per-word document counts while the version
    it read them at is the scope's current one, in the same statement as the query."""
    db.execute(
        """
        CREATE SEQUENCE fts_stats_version;
        ALTER TABLE fts_stats ADD COLUMN version BIGINT NOT NULL DEFAULT nextval('fts_stats_version');

        CREATE OR REPLACE FUNCTION fts_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens, version)
            SELECT user_id, agent_id, TG_TABLE_NAME, count(*), sum(fts_len), nextval('fts_stats_version')
            FROM new_rows GROUP BY user_id, agent_id ORDER BY user_id, agent_id
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens,
                version = excluded.version;
            RETURN NULL;
        END $$;

        CREATE OR REPLACE FUNCTION fts_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE fts_stats s SET docs = s.docs - o.n, tokens = s.tokens - o.t, version = nextval('fts_stats_version')
            FROM (SELECT user_id, agent_id, count(*) AS n, sum(fts_len) AS t FROM old_rows
                  GROUP BY user_id, agent_id ORDER BY user_id, agent_id) o
            WHERE s.user_id = o.user_id AND s.agent_id = o.agent_id AND s.corpus = TG_TABLE_NAME;
            RETURN NULL;
        END $$;

        CREATE OR REPLACE FUNCTION fts_stats_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            WITH c AS (
                SELECT o.user_id AS ou, o.agent_id AS oa, o.fts_len AS ol, n.user_id AS nu, n.agent_id AS na,
                       n.fts_len AS nl
                FROM old_rows o JOIN new_rows n USING (rowid)
                WHERE o.fts IS DISTINCT FROM n.fts OR o.fts_len <> n.fts_len OR o.user_id <> n.user_id
                      OR o.agent_id <> n.agent_id)
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens, version)
            SELECT u, a, TG_TABLE_NAME, sum(dn), sum(dt), nextval('fts_stats_version') FROM (
                SELECT nu AS u, na AS a, 1 AS dn, nl AS dt FROM c
                UNION ALL SELECT ou, oa, -1, -ol FROM c) d
            GROUP BY u, a ORDER BY u, a
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens,
                version = excluded.version;
            RETURN NULL;
        END $$;
        """
    )


@migration
def m006_sessions_by_start(db: Any) -> None:
    """A scope's sessions newest first from an index (SQLite's m013)."""
    db.execute("CREATE INDEX sessions_scope_start ON sessions(user_id, agent_id, started_at)")


@migration
def m007_memory_validity(db: Any) -> None:
    """Facts in time (issue 32; SQLite's m014): validity and supersession columns, a memory
    already stored valid from its creation."""
    db.execute(
        """
        ALTER TABLE memories ADD COLUMN valid_from FLOAT8, ADD COLUMN valid_to FLOAT8,
            ADD COLUMN superseded_at FLOAT8, ADD COLUMN superseded_by TEXT, ADD COLUMN supersedes TEXT;
        UPDATE memories SET valid_from = created_at WHERE valid_from IS NULL;
        """
    )


@migration
def m008_large_scopes(db: Any) -> None:
    """A large scope ranked without scoring every row that holds a query word (issue 34).

    `fts_rep`: the row's lexemes that occur three times or more in it (a generated column, so
    every writer keeps it). A row outside it holds each query lexeme at most twice, so what a
    word can add to its score is bounded well below BM25's idf·(k1+1) (store/pgtext.py
    `ranked_sql`, `once_bound`); its GIN index finds the few rows where a query word repeats
    more, which are ranked with the others.

    The vector tables (made by `ensure_vectors`) get partial scope indexes: rows in the HNSW
    graph (`ann`) and rows outside it, so a search decides exact or HNSW from an index probe
    instead of counting up to ann_threshold rows (1-3 ms at 100k), and a large scope's rows
    waiting for the graph (a bulk insert defers them) are scanned exactly beside it."""
    db.execute(
        """
        CREATE FUNCTION memlane_fts_rep(tsvector) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT array_to_tsvector(COALESCE(array_agg(x.lexeme), '{}'))
            FROM unnest($1) x WHERE cardinality(x.positions) > 2 $$;
        """
    )
    for corpus in CORPORA:
        db.execute(f"ALTER TABLE {corpus} ADD COLUMN fts_rep TSVECTOR GENERATED ALWAYS AS (memlane_fts_rep(fts)) STORED")
        db.execute(f"CREATE INDEX {corpus}_fts_rep ON {corpus} USING gin(user_id, fts_rep)")
        if db.execute(f"SELECT to_regclass('vec_{corpus}')").fetchall()[0][0] is not None:
            for sql in vector_indexes(corpus):
                db.execute(sql)
    # scopes with vectors waiting to join the HNSW graph (PostgresVectors.fold_pending)
    db.execute("CREATE TABLE ann_pending(corpus TEXT NOT NULL, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, "
               "PRIMARY KEY(corpus, user_id, agent_id))")


def vector_indexes(corpus: str) -> list[str]:
    """The partial scope indexes of a vector table (m008): its rows in the graph, and not."""
    return [f"CREATE INDEX IF NOT EXISTS vec_{corpus}_in_ann ON vec_{corpus}(user_id, agent_id) WHERE ann",
            f"CREATE INDEX IF NOT EXISTS vec_{corpus}_exact ON vec_{corpus}(user_id, agent_id) WHERE NOT ann"]


@migration
def m009_term_documents(db: Any) -> None:
    """Each scope's documents per lexeme and corpus (`fts_terms`: in all, at weight A, at
    weight B), kept by the full-text statistics' statement triggers in the writing transaction,
    as fts_stats is: BM25's document frequencies and `scope_documents` read rows instead of
    counting the scope's posting lists (a word in every row of 100k: ~60 ms a count, again
    after each write; issue 34). Rows are upserted in (scope, lexeme) order, so concurrent
    writers lock them in one order; a count that reaches 0 stays as a row.

    Memories and episodes only (`TERMS_KEPT`): a turn holds hundreds of distinct words and
    ingest rewrites its neighbours' context, so the counts cost turns ingest a third of its
    rate (long turns on 2 busy cores: ~108 → ~69 turns/s); turns' words are counted as before."""
    db.execute(
        """
        CREATE TABLE fts_terms(
            user_id TEXT NOT NULL, agent_id TEXT NOT NULL, corpus TEXT NOT NULL, lexeme TEXT NOT NULL,
            docs BIGINT NOT NULL, docs_a BIGINT NOT NULL, docs_b BIGINT NOT NULL,
            PRIMARY KEY(user_id, agent_id, corpus, lexeme));

        CREATE OR REPLACE FUNCTION fts_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens, version)
            SELECT user_id, agent_id, TG_TABLE_NAME, count(*), sum(fts_len), nextval('fts_stats_version')
            FROM new_rows GROUP BY user_id, agent_id ORDER BY user_id, agent_id
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens,
                version = excluded.version;
            IF TG_TABLE_NAME = 'turns' THEN
                RETURN NULL;
            END IF;
            INSERT INTO fts_terms(user_id, agent_id, corpus, lexeme, docs, docs_a, docs_b)
            SELECT n.user_id, n.agent_id, TG_TABLE_NAME, x.lexeme, count(*),
                   count(*) FILTER (WHERE 'A' = ANY(x.weights)), count(*) FILTER (WHERE 'B' = ANY(x.weights))
            FROM new_rows n, unnest(n.fts) x GROUP BY 1, 2, 4 ORDER BY 1, 2, 4
            ON CONFLICT (user_id, agent_id, corpus, lexeme) DO UPDATE
            SET docs = fts_terms.docs + excluded.docs, docs_a = fts_terms.docs_a + excluded.docs_a,
                docs_b = fts_terms.docs_b + excluded.docs_b;
            RETURN NULL;
        END $$;

        CREATE OR REPLACE FUNCTION fts_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE fts_stats s SET docs = s.docs - o.n, tokens = s.tokens - o.t, version = nextval('fts_stats_version')
            FROM (SELECT user_id, agent_id, count(*) AS n, sum(fts_len) AS t FROM old_rows
                  GROUP BY user_id, agent_id ORDER BY user_id, agent_id) o
            WHERE s.user_id = o.user_id AND s.agent_id = o.agent_id AND s.corpus = TG_TABLE_NAME;
            IF TG_TABLE_NAME = 'turns' THEN
                RETURN NULL;
            END IF;
            UPDATE fts_terms t SET docs = t.docs - o.n, docs_a = t.docs_a - o.na, docs_b = t.docs_b - o.nb
            FROM (SELECT r.user_id, r.agent_id, x.lexeme, count(*) AS n,
                         count(*) FILTER (WHERE 'A' = ANY(x.weights)) AS na,
                         count(*) FILTER (WHERE 'B' = ANY(x.weights)) AS nb
                  FROM old_rows r, unnest(r.fts) x GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) o
            WHERE t.user_id = o.user_id AND t.agent_id = o.agent_id AND t.corpus = TG_TABLE_NAME
                  AND t.lexeme = o.lexeme;
            RETURN NULL;
        END $$;

        CREATE OR REPLACE FUNCTION fts_stats_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            WITH c AS (
                SELECT o.user_id AS ou, o.agent_id AS oa, o.fts_len AS ol, n.user_id AS nu, n.agent_id AS na,
                       n.fts_len AS nl
                FROM old_rows o JOIN new_rows n USING (rowid)
                WHERE o.fts IS DISTINCT FROM n.fts OR o.fts_len <> n.fts_len OR o.user_id <> n.user_id
                      OR o.agent_id <> n.agent_id)
            INSERT INTO fts_stats(user_id, agent_id, corpus, docs, tokens, version)
            SELECT u, a, TG_TABLE_NAME, sum(dn), sum(dt), nextval('fts_stats_version') FROM (
                SELECT nu AS u, na AS a, 1 AS dn, nl AS dt FROM c
                UNION ALL SELECT ou, oa, -1, -ol FROM c) d
            GROUP BY u, a ORDER BY u, a
            ON CONFLICT (user_id, agent_id, corpus) DO UPDATE
            SET docs = fts_stats.docs + excluded.docs, tokens = fts_stats.tokens + excluded.tokens,
                version = excluded.version;
            IF TG_TABLE_NAME = 'turns' THEN
                RETURN NULL;
            END IF;
            WITH c AS (
                SELECT o.user_id AS ou, o.agent_id AS oa, o.fts AS ofts, n.user_id AS nu, n.agent_id AS na,
                       n.fts AS nfts
                FROM old_rows o JOIN new_rows n USING (rowid)
                WHERE o.fts IS DISTINCT FROM n.fts OR o.user_id <> n.user_id OR o.agent_id <> n.agent_id)
            INSERT INTO fts_terms(user_id, agent_id, corpus, lexeme, docs, docs_a, docs_b)
            SELECT u, a, TG_TABLE_NAME, lexeme, sum(dn), sum(da), sum(db) FROM (
                SELECT c.nu AS u, c.na AS a, x.lexeme, 1 AS dn, ('A' = ANY(x.weights))::int AS da,
                       ('B' = ANY(x.weights))::int AS db FROM c, unnest(c.nfts) x
                UNION ALL
                SELECT c.ou, c.oa, x.lexeme, -1, -('A' = ANY(x.weights))::int, -('B' = ANY(x.weights))::int
                FROM c, unnest(c.ofts) x) d
            GROUP BY u, a, lexeme HAVING sum(dn) <> 0 OR sum(da) <> 0 OR sum(db) <> 0 ORDER BY u, a, lexeme
            ON CONFLICT (user_id, agent_id, corpus, lexeme) DO UPDATE
            SET docs = fts_terms.docs + excluded.docs, docs_a = fts_terms.docs_a + excluded.docs_a,
                docs_b = fts_terms.docs_b + excluded.docs_b;
            RETURN NULL;
        END $$;
        """
    )
    for corpus in TERMS_KEPT:
        db.execute(f"""
            INSERT INTO fts_terms(user_id, agent_id, corpus, lexeme, docs, docs_a, docs_b)
            SELECT r.user_id, r.agent_id, '{corpus}', x.lexeme, count(*),
                   count(*) FILTER (WHERE 'A' = ANY(x.weights)), count(*) FILTER (WHERE 'B' = ANY(x.weights))
            FROM {corpus} r, unnest(r.fts) x GROUP BY 1, 2, 4""")


@migration
def m010_large_scope_bounds(db: Any) -> None:
    """Tighter bounds for ranking a large scope without scoring every row holding a query word
    (issue 34; store/pgtext.py `once_bound`).

    `fts_rep` holds the row's lexemes held twice or more (m008: three times or more): a row
    outside it holds each query lexeme once, so what a word adds to it is bounded by one hit,
    not two (the bound that says whether the rows ranked first are the top of all: 1.47 →
    1.10 per unit of idf in rows of ~10 tokens). Recomputed for every row (a rewrite of each
    corpus table), with its GIN index.

    `{corpus}_by_len`: the rows by scope and length, so a query reads its scope's shortest
    row in one index probe; the bound is taken at that length, not at the shortest possible
    row (two tokens)."""
    db.execute(
        """
        CREATE FUNCTION memlane_fts_twice(tsvector) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT array_to_tsvector(COALESCE(array_agg(x.lexeme), '{}'))
            FROM unnest($1) x WHERE cardinality(x.positions) > 1 $$;
        """
    )
    for corpus in CORPORA:
        db.execute(f"ALTER TABLE {corpus} DROP COLUMN fts_rep")  # its index with it
        db.execute(f"ALTER TABLE {corpus} ADD COLUMN fts_rep TSVECTOR GENERATED ALWAYS AS (memlane_fts_twice(fts)) "
                   "STORED")
        db.execute(f"CREATE INDEX {corpus}_fts_rep ON {corpus} USING gin(user_id, fts_rep)")
        db.execute(f"CREATE INDEX IF NOT EXISTS {corpus}_by_len ON {corpus}(user_id, agent_id, fts_len, rowid)")
    db.execute("DROP FUNCTION memlane_fts_rep(tsvector)")
