"""Tests of switchboard.serving."""
