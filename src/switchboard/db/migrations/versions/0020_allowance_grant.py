"""PostgreSQL: `switchboard_grant`, an allowance's grant in one statement (SPEC §13).

A busy process takes a share of what its limits have left as an allowance (limits/allowances.py).
The grant read, under the limits' row locks, each limit's counter, live holds and the processes
holding allowances there, then added to its rows: five round trips in a transaction, once per busy
spell. This function does the same in one statement, as `switchboard_reserve` (migration 0012) does
for a call's reservation. SQLite has nothing to create: its transactions cost no round trip.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

GRANT_FUNCTION = """
CREATE OR REPLACE FUNCTION switchboard_grant(
    p_ids uuid[], p_starts timestamptz[], p_rates float8[], p_amounts bigint[], p_sizes bigint[],
    p_wanted bigint, p_free bigint, p_share bigint, p_name text, p_own text,
    p_lease timestamptz, p_now timestamptz)
RETURNS TABLE (limit_id uuid, used bigint, reserved bigint, counted boolean, granted bigint)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
AS $$
DECLARE
    v_used bigint[] := '{}';
    v_reserved bigint[] := '{}';
    v_counted boolean := true;
    v_count bigint := p_wanted;
    u bigint;
    r bigint;
    holders bigint;
    asked boolean;
    size bigint;
BEGIN
    PERFORM 1 FROM limits l WHERE l.id = ANY(p_ids) ORDER BY l.id FOR UPDATE;
    FOR i IN 1 .. cardinality(p_ids) LOOP
        -- One statement per limit: its counter and its holds in one snapshot, so a settlement that
        -- moved a hold into the counter meanwhile is seen whole or not at all.
        SELECT
            (SELECT CASE WHEN p_rates[i] > 0
                THEN GREATEST(k.used - LEAST(floor(GREATEST(extract(epoch FROM p_now - k.updated_at), 0)
                     * p_rates[i]), k.used)::bigint, 0)
                ELSE k.used END
             FROM limit_usage k WHERE k.limit_id = p_ids[i] AND k.window_start = p_starts[i]),
            a.held, a.holders, a.asked
        INTO u, r, holders, asked
        FROM (
            SELECT COALESCE(SUM(h.amount), 0)::bigint AS held,
                   -- the other processes holding an allowance here (their rows share `slot-<process>-`)
                   count(DISTINCT left(h.call_id, length(p_own)))
                       FILTER (WHERE h.call_id LIKE 'slot-%' AND left(h.call_id, length(p_own)) <> p_own)
                       AS holders,
                   COALESCE(bool_or(h.call_id LIKE 'reclaim-%'), false) AS asked
            FROM limit_holds h WHERE h.limit_id = p_ids[i] AND h.lease_until > p_now
        ) a;
        IF u IS NULL AND NOT p_rates[i] > 0 THEN
            v_counted := false;  -- a calendar window without its counter yet: the caller counts
        END IF;
        u := COALESCE(u, 0);
        v_used := v_used || u;
        v_reserved := v_reserved || r;
        IF asked THEN
            v_count := 0;  -- a reclaim marker: another process was refused here
        END IF;
        size := GREATEST(p_sizes[i], 1);
        -- What the allowance may hold (its free part and the new worst cases) is at most what is
        -- left over p_share times the processes holding allowances here, this one included.
        v_count := LEAST(v_count,
            (GREATEST(p_amounts[i] - u - r, 0) + p_free * size) / (p_share * (holders + 1) * size) - p_free);
    END LOOP;
    IF v_counted AND v_count > 0 THEN
        INSERT INTO limit_holds AS h (limit_id, call_id, amount, lease_until, call)
        SELECT p_ids[i], p_name, v_count * p_sizes[i], p_lease, NULL
        FROM generate_subscripts(p_ids, 1) AS i
        ON CONFLICT ON CONSTRAINT pk_limit_holds
        DO UPDATE SET amount = h.amount + excluded.amount, lease_until = excluded.lease_until;
    END IF;
    RETURN QUERY SELECT p_ids[i], v_used[i], v_reserved[i], v_counted,
        CASE WHEN v_counted THEN GREATEST(v_count, 0) ELSE 0 END
        FROM generate_subscripts(p_ids, 1) AS i;
END
$$
"""
DROP_GRANT_FUNCTION = (
    "DROP FUNCTION IF EXISTS switchboard_grant(uuid[], timestamptz[], float8[], bigint[], bigint[], "
    "bigint, bigint, bigint, text, text, timestamptz, timestamptz)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(GRANT_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DROP_GRANT_FUNCTION)
