"""A running call's reservation against its limits (SPEC §13), as `enforce.reserve` returns it."""

from __future__ import annotations

from collections.abc import Sequence

from switchboard.limits.allowance import Allowance
from switchboard.limits.allowance_rows import Part
from switchboard.limits.call_records import Flight
from switchboard.limits.leases import HoldLeases
from switchboard.limits.rules import Limit


class Hold:
    """A running call's reservation; ended by the settlement that writes its usage record.

    `call_id` names the hold rows: the call's own id, or, for a call admitted on an allowance
    (limits/allowances.py), the allowance's, which its settlement draws what it used from."""

    __slots__ = ("_allowance", "_flight", "_leases", "call_id", "headers", "limits")

    def __init__(
        self,
        call_id: str,
        limits: tuple[Limit, ...],
        headers: dict[str, str],
        *,
        leases: HoldLeases | None = None,
        allowance: Allowance | None = None,
        flight: Flight | None = None,
    ) -> None:
        self.call_id = call_id
        self.limits = limits
        self.headers = headers
        self._leases = leases
        self._allowance = allowance
        self._flight = flight

    @property
    def flight(self) -> Flight:
        assert self._flight is not None
        return self._flight

    @property
    def drawn(self) -> bool:
        """Admitted on an allowance: its settlement draws from the allowance's rows."""
        return self._flight is not None

    def settling(self) -> list[Part]:
        """The settlement is about to be handed over. Returns what it gives back of the allowance on
        its limits (the last call running on them gives it all back)."""
        return self._allowance.settling() if self._allowance is not None else []

    async def stop(self, used: Sequence[int] | None = None) -> None:
        """The call settled (`used`: what it counted per limit; None when that is unknown): its lease
        is no longer renewed, and an allowance it ran on has its worst case back less what it used."""
        if self._leases is not None:
            self._leases.discard(self.call_id)
        if self._allowance is not None:
            self._allowance.ended(self._flight, used)
