"""The base of every section, and the limits the sections share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# not from a seed: user, agent and session ids are keys and directory names; longer is a mistake
MAX_ID_CHARS = 256


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
