"""Tests of switchboard.db."""
