"""Tasks the bench enqueues on a real cluster (B3's baseline)."""

from __future__ import annotations


def nada() -> None:
    """A no-op: what django-q2 alone costs per task, with nothing to do."""
