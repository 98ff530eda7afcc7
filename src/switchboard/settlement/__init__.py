"""Settlement: a call's ending (or its recovery) committed in one transaction with its usage record."""
