"""Tests of the discovery domain."""
