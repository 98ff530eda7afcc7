"""How `scripts/test` spreads the suite over its xdist workers (`--dist loadgroup`).

Every test file is one group, as `--dist loadfile` made it, so that its module-scoped gateways start
once, on one worker; a test marked `xdist_group(NAME)` goes with the other tests of that name instead
(a long file split up so that both workers share it).

Groups are handed out in the order they are collected, each to the first worker free. A long group
handed out last sets the wall time of the whole run while the other worker idles, so the longest go
first: those measured below, then the rest by their number of tests. The order changes when a test
runs, never what it checks.
"""

from __future__ import annotations

import pytest

# Seconds a group took on SQLite (2 workers sharing one core, `taskset -c 0`, on a busy 2-core machine,
# 2026-11-28): the groups of 10 s or more that take over twice what their number of tests says. Any
# group may be missing: it is then costed by its number of tests.
MEASURED_SECONDS = {
    "tests/console/test_console_flows.py": 64,
    "tests/console/test_console_manage.py": 63,
    "readme-examples-0": 36,
    "tests/limits/test_limits_cli.py": 34,
    "tests/settlement/test_recovery.py": 33,
    "readme-examples-1": 31,
    "tests/limits/test_allowances.py": 30,
    "tests/observability/test_streams_gauge.py": 23,
    "tests/foundation/test_first_hour.py": 21,
    "tests/metering/test_rollups.py": 19,
    "tests/audit/test_chain.py": 18,
    "tests/groups/test_members.py": 18,
    "readme-examples-limits": 18,
    "tests/sso/test_console_sso.py": 17,
    "tests/serving/test_supervisor.py": 16,
    "tests/limits/test_upper_bound.py": 16,
    "tests/serving/test_slow_bodies.py": 15,
    "streams-gauge-in-process": 13,
    "streams-gauge-served": 13,
    "tests/console/test_console_audit.py": 12,
    "tests/audit/test_origins.py": 12,
    "tests/auth/test_login.py": 11,
    "tests/upstream/test_timeouts.py": 11,
    "tests/upstream/test_isolation.py": 10,
    "first-hour-bad-database-urls": 10,
}
SECONDS_PER_TEST = 0.22  # the median group's seconds per test, in the same run


def group_of(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return item.nodeid.split("::", 1)[0]
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


def longest_groups_first(items: list[pytest.Item]) -> None:
    """Gives every test its group (its file's, unless marked) and sorts `items`, in place, by group,
    the longest first; a group's tests keep their order."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group_of(item)))
        groups.setdefault(group_of(item), []).append(item)

    def cost(name: str) -> float:
        return MEASURED_SECONDS.get(name, SECONDS_PER_TEST * len(groups[name]))

    items[:] = [item for name in sorted(groups, key=cost, reverse=True) for item in groups[name]]


def mark_groups_in_node_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker under `--dist loadgroup`: each test's id ends in `@GROUP`, which is what the
    controller schedules by. xdist 3.8 appends it by setting `item._nodeid`, which pytest 9 no
    longer reads (an item's id is its `_id`): every test went out on its own, a file's tests to both
    workers, and each worker started the file's module-scoped gateways. Idempotent: an id that
    already names its group (a fixed xdist) is left alone."""
    if not config.getoption("loadgroup", default=False) or not hasattr(config, "workerinput"):
        return
    try:
        from _pytest.nodeid import NodeId  # private: a pytest without it runs the tests ungrouped
    except ImportError:
        return

    for item in items:
        suffix = f"@{group_of(item)}"
        if not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + suffix)
