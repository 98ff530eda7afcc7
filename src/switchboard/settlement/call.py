"""What a call's ending commits in the transaction that writes its usage record (SPEC §13)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from switchboard.idempotency.service import Claim, StoredResponse
from switchboard.limits.allowance_rows import Part
from switchboard.limits.rules import Limit


class Settlement(NamedTuple):
    """`call_id`'s limit holds are replaced by the record's actual usage counted against `limits`
    (`drawn`: `call_id` is the allowance the call was admitted on, whose rows the usage is drawn from;
    `returned`: what goes back of allowances on these limits, drawn from their rows after the usage);
    `claim` (an idempotency claim) is completed with `stored`, or released when `stored` is None.
    `record_id`: the id the record must have (the one the call's record for recovery names).
    An `abandoned` settlement is recovery's: its record is written only if it still frees something
    (the dead call's holds or claim), so that two replicas recovering the same call write it once;
    one `listed` on a row of running calls' records is written unless its id is already stored.
    A tuple: every settled call makes one, and a frozen dataclass sets each field through
    object.__setattr__.
    """

    call_id: str | None = None
    limits: tuple[Limit, ...] = ()
    claim: Claim | None = None
    stored: StoredResponse | None = None
    drawn: bool = False
    returned: Sequence[Part] = ()
    abandoned: bool = False
    record_id: uuid.UUID | None = None
    listed: bool = False
