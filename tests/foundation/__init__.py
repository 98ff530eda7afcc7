"""Tests of the foundation domain."""
