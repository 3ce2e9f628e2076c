"""Errors memlane raises on purpose.

    MemlaneError
    ├── ConfigError (ValueError)        a setting is unknown or out of range
    │   └── MissingExtra (ImportError)  an optional framework or package is not installed
    ├── ValidationError (ValueError)    bad input; names the field and the limit
    │   └── Conflict                    well-formed, but the record's state forbids it (it exists already)
    ├── NotFound (KeyError)             no such record in this scope
    └── BackendError                    an LLM, embedder or database failed; see __cause__
        └── ExtractionError             the LLM replied, but not in the promised shape (.raw)
"""

from __future__ import annotations


class MemlaneError(Exception):
    """Base of every error memlane raises on purpose."""


class ConfigError(MemlaneError, ValueError):
    """A configuration value is unknown, malformed or out of range."""


class MissingExtra(ConfigError, ImportError):
    """An optional dependency (a framework adapter's extra) is not installed; the message names
    the pip extra. It is an ImportError too, so `except ImportError` around an optional import
    catches it as it would the framework's own error, and a ConfigError for code that treats a
    missing extra as a setup mistake."""


class ValidationError(MemlaneError, ValueError):
    """Input was rejected; `field` names what was wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class Conflict(ValidationError):
    """The input is well-formed but conflicts with the record's current state (restoring a
    memory that exists, a change another caller made first); a server answers 409."""


class NotFound(MemlaneError, KeyError):
    """No record with that id exists in this scope."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence
        return str(self.args[0]) if self.args else "not found"


class BackendError(MemlaneError):
    """An LLM, embedder or database failed; the original error is in __cause__."""


class ExtractionError(BackendError):
    """The LLM replied, but not in the promised shape; the reply is kept in `raw`."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw
