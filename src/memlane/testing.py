"""Test doubles shipped with memlane, for its own tests and for agents built on it."""

from __future__ import annotations

from memlane.embeddings.hashing import HashEmbedder

__all__ = ["HashEmbedder"]
