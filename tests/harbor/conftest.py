"""Helpers for Harbor task tests: write a task directory, find the shared corpora."""

from __future__ import annotations





