"""Limit holds keyed by (limit, call), with no other index; on SQLite both ledger tables WITHOUT ROWID.

Every call under a limit inserts its holds and deletes them again when it settles. Each b-tree a
row lives in is one more page written per transaction: the holds had five (the table, its `id` key
and three indexes), and now have one on SQLite and two on PostgreSQL. The table only ever holds the
running calls' rows, so the upkeep's reads by lease or call scan a few rows.

On PostgreSQL it also creates `switchboard_reserve`, a reservation in one statement: under the limits'
row locks it reads each limit's counter and live holds (one snapshot per limit, so a settlement that
moved a hold into a counter is seen whole), and inserts the call's holds only if every one still fits.
A reservation then costs two round trips (read, reserve) instead of five.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _rate() -> sa.Column[float]:
    """A rolling window's refill per second as of its last settlement (0 for calendar windows): a
    settlement's upsert brings the bucket's debt to now from it, whatever else its statement holds."""
    return sa.Column("rate", sa.Float(), nullable=True)


_HOLD_COLUMNS = "call_id, limit_id, amount, lease_until, call"
_USAGE_COLUMNS = "limit_id, window_start, used, updated_at"


def _holds(name: str, *, keyed_by_limit: bool, key_name: str = "pk_limit_holds") -> None:
    key = (
        sa.PrimaryKeyConstraint("limit_id", "call_id", name=key_name)
        if keyed_by_limit
        else sa.PrimaryKeyConstraint("id", name=key_name)
    )
    op.create_table(
        name,
        *([] if keyed_by_limit else [sa.Column("id", sa.Uuid(), nullable=False)]),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("call", sa.JSON(), nullable=True),
        key,
        sqlite_with_rowid=not keyed_by_limit,
    )


def _usage(name: str, *, with_rowid: bool) -> None:
    op.create_table(
        name,
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        *([] if with_rowid else [_rate()]),
        sa.PrimaryKeyConstraint("limit_id", "window_start", name="pk_limit_usage"),
        sqlite_with_rowid=with_rowid,
    )


RESERVE_FUNCTION = """
CREATE OR REPLACE FUNCTION switchboard_reserve(
    p_ids uuid[], p_starts timestamptz[], p_rates float8[], p_amounts bigint[], p_needs bigint[],
    p_call_id text, p_call json, p_lease timestamptz, p_now timestamptz)
RETURNS TABLE (limit_id uuid, used bigint, reserved bigint, counted boolean, admitted boolean)
LANGUAGE plpgsql VOLATILE
-- A plain index scan marks the entries of settled (deleted) holds dead as it passes them, so later
-- reads skip them; a bitmap scan would visit every deleted hold of the limit until vacuum.
SET enable_bitmapscan = off
AS $$
DECLARE
    v_used bigint[] := '{}';
    v_reserved bigint[] := '{}';
    v_counted boolean[] := '{}';
    v_ok boolean := p_needs IS NOT NULL;
    u bigint;
    r bigint;
    c boolean;
BEGIN
    -- Without needs it only reads; with them it locks first, and each read below is a statement
    -- of its own, so it sees what every transaction that held these locks before committed.
    IF p_needs IS NOT NULL THEN
        PERFORM 1 FROM limits l WHERE l.id = ANY(p_ids) ORDER BY l.id FOR UPDATE;
    END IF;
    FOR i IN 1 .. cardinality(p_ids) LOOP
        SELECT
            (SELECT CASE WHEN p_rates[i] > 0
                THEN GREATEST(k.used - LEAST(floor(GREATEST(extract(epoch FROM p_now - k.updated_at), 0)
                     * p_rates[i]), k.used)::bigint, 0)
                ELSE k.used END
             FROM limit_usage k WHERE k.limit_id = p_ids[i] AND k.window_start = p_starts[i]),
            (SELECT COALESCE(SUM(h.amount), 0)::bigint
             FROM limit_holds h WHERE h.limit_id = p_ids[i] AND h.lease_until > p_now)
        INTO u, r;
        -- A calendar window without its counter yet: the caller counts the records (and admits).
        c := u IS NOT NULL OR p_rates[i] > 0;
        v_used := v_used || COALESCE(u, 0);
        v_reserved := v_reserved || r;
        v_counted := v_counted || c;
        IF NOT c OR p_needs[i] > p_amounts[i] - COALESCE(u, 0) - r THEN
            v_ok := false;
        END IF;
    END LOOP;
    IF v_ok THEN
        -- A hold is the running call's, gone when it settles: its commit need not wait for the WAL
        -- flush (a server crash may forget the newest holds; settlements stay synchronous).
        PERFORM set_config('synchronous_commit', 'off', true);
        INSERT INTO limit_holds (limit_id, call_id, amount, lease_until, call)
        SELECT p_ids[i], p_call_id, p_needs[i], p_lease, CASE WHEN i = 1 THEN p_call END
        FROM generate_subscripts(p_ids, 1) AS i;
    END IF;
    RETURN QUERY SELECT p_ids[i], v_used[i], v_reserved[i], v_counted[i], v_ok
        FROM generate_subscripts(p_ids, 1) AS i;
END
$$
"""
DROP_RESERVE_FUNCTION = (
    "DROP FUNCTION IF EXISTS switchboard_reserve("
    "uuid[], timestamptz[], float8[], bigint[], bigint[], text, json, timestamptz, timestamptz)"
)


def _copy(source: str, target: str, columns: str) -> None:
    op.execute(f"INSERT INTO {target} ({columns}) SELECT {columns} FROM {source}")  # noqa: S608


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # A table's rowid cannot be dropped in place: each table is made again and its rows copied.
        _holds("limit_holds_new", keyed_by_limit=True)
        _copy("limit_holds", "limit_holds_new", _HOLD_COLUMNS)
        op.drop_table("limit_holds")
        op.rename_table("limit_holds_new", "limit_holds")
        _usage("limit_usage_new", with_rowid=False)
        _copy("limit_usage", "limit_usage_new", _USAGE_COLUMNS)
        op.drop_table("limit_usage")
        op.rename_table("limit_usage_new", "limit_usage")
        return
    for index in ("ix_limit_holds_limit", "ix_limit_holds_call", "ix_limit_holds_lease"):
        op.drop_index(index, table_name="limit_holds")
    op.drop_constraint("pk_limit_holds", "limit_holds", type_="primary")
    op.drop_column("limit_holds", "id")
    op.create_primary_key("pk_limit_holds", "limit_holds", ["limit_id", "call_id"])
    op.add_column("limit_usage", _rate())
    op.execute(RESERVE_FUNCTION)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if not sqlite:
        op.execute(DROP_RESERVE_FUNCTION)
        op.drop_column("limit_usage", "rate")
    new_id = "lower(hex(randomblob(16)))" if sqlite else "gen_random_uuid()"
    # PostgreSQL's constraint names are unique per schema: the old key's name is given back below.
    _holds(
        "limit_holds_old", keyed_by_limit=False, key_name="pk_limit_holds" if sqlite else "pk_limit_holds_old"
    )
    op.execute(
        f"INSERT INTO limit_holds_old (id, {_HOLD_COLUMNS}) "  # noqa: S608
        f"SELECT {new_id}, {_HOLD_COLUMNS} FROM limit_holds"
    )
    op.drop_table("limit_holds")
    op.rename_table("limit_holds_old", "limit_holds")
    if not sqlite:
        op.execute("ALTER TABLE limit_holds RENAME CONSTRAINT pk_limit_holds_old TO pk_limit_holds")
    op.create_index("ix_limit_holds_limit", "limit_holds", ["limit_id", "lease_until"])
    op.create_index("ix_limit_holds_call", "limit_holds", ["call_id"])
    op.create_index("ix_limit_holds_lease", "limit_holds", ["lease_until"])
    if sqlite:
        _usage("limit_usage_old", with_rowid=True)
        _copy("limit_usage", "limit_usage_old", _USAGE_COLUMNS)
        op.drop_table("limit_usage")
        op.rename_table("limit_usage_old", "limit_usage")
