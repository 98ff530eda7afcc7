"""Routing (SPEC §14): which attempts a call makes (candidates by credentials), in what order, and when."""
