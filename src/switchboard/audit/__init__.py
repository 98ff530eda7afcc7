"""The audit trail (SPEC §22): who changed what, in the change's own transaction, hash-chained."""
