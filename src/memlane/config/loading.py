"""`Config`: every section, built from defaults ← profile ← memlane.toml ← MEMLANE_* ← arguments."""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, PrivateAttr, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from memlane.config.base import _Section
from memlane.config.events import EventsConfig
from memlane.config.profiles import PROFILES
from memlane.config.retrieval import EmbeddingConfig, SearchConfig
from memlane.config.serving import ServerConfig, WebConfig
from memlane.config.sessions import ContextConfig, SessionConfig
from memlane.config.storage import ArchiveConfig, LifecycleConfig, StoreConfig
from memlane.config.writing import ExtractionConfig, LLMConfig, PolicyConfig
from memlane.errors import ConfigError


class Config(_Section):
    profile: str = "default"  # MEMLANE_PROFILE; one of PROFILES, applied under every other layer
    store: StoreConfig = StoreConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    llm: LLMConfig = LLMConfig()
    search: SearchConfig = SearchConfig()
    policy: PolicyConfig = PolicyConfig()
    context: ContextConfig = ContextConfig()
    session: SessionConfig = SessionConfig()
    extraction: ExtractionConfig = ExtractionConfig()
    archive: ArchiveConfig = ArchiveConfig()
    lifecycle: LifecycleConfig = LifecycleConfig()
    events: EventsConfig = EventsConfig()
    server: ServerConfig = ServerConfig()
    web: WebConfig = WebConfig()
    # "section.field" → where its value came from (`memlane config`); filled by `load`
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _toml_path: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        """`Config(profile="companion")` gets the companion settings, under anything given beside
        the name: a profile that only renamed itself would silently run the defaults."""
        if not isinstance(data, dict):
            return data
        name = data.get("profile", "default")
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
        base = copy.deepcopy(PROFILES[name])
        _merge(base, dict(data))
        return base

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value not in PROFILES:
            raise ValueError(f"unknown profile {value!r}; choose one of {', '.join(PROFILES)}")
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "profile":  # the profile's settings were applied when the config was built
            raise ConfigError("profile: a built config's profile cannot change; build another with "
                              f"Config.load({value!r}) or Config(profile={value!r})")
        super().__setattr__(name, value)

    @property
    def home(self) -> Path:
        return self.store.home.expanduser()

    @property
    def db_path(self) -> Path:
        return self.home / self.store.db_name

    @property
    def toml_path(self) -> Path | None:
        """The TOML file `load` was given (it may not exist), or None."""
        return self._toml_path

    @property
    def sources(self) -> dict[str, str]:
        """Where each setting came from: "default", "profile NAME", the TOML file's path,
        "env MEMLANE_X" or "argument" (a flag or keyword override); defaults are left out."""
        return dict(self._sources)

    @classmethod
    def load(
        cls,
        profile: str = "default",
        *,
        toml_path: Path | None = None,
        env: dict[str, str] | None = None,
        **overrides: Any,
    ) -> Config:
        """Build a config: defaults ← profile ← TOML file ← env mapping ← keyword overrides.

        A `profile` keyword override, or a `profile = "…"` line in the file, picks the profile."""
        file_data: dict[str, Any] = {}
        if toml_path is not None and toml_path.exists():
            try:
                file_data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{toml_path}: not valid TOML ({exc}); fix or remove the file") from exc
        env_data, env_names = _env_overrides(env or {})
        profile_from = "argument"
        if "profile" in file_data and profile == "default":
            profile, profile_from = file_data["profile"], str(toml_path)
        if profile not in PROFILES:
            raise ConfigError(f"profile: unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
        layers: list[tuple[str, dict[str, Any]]] = [
            (f"profile {profile}", copy.deepcopy(PROFILES[profile])),
            (str(toml_path), {k: v for k, v in file_data.items() if k != "profile"}),
            ("env", env_data),
            ("argument", overrides),
        ]
        data: dict[str, Any] = {"profile": profile}
        sources: dict[str, str] = {"profile": profile_from} if profile != "default" else {}
        for label, layer in layers:
            _merge(data, layer)
            for key in _leaves(layer):
                sources[key] = env_names.get(key, "env") if label == "env" else label
        try:
            cfg = cls.model_validate(data)
        except PydanticValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "config"
            source = sources.get(where)
            raise ConfigError(f"{where}: {err['msg'].removeprefix('Value error, ')}"
                              + (f" (set by {source})" if source else "")
                              + "; `memlane config` shows every setting and its source") from exc
        cfg._sources = sources
        cfg._toml_path = toml_path
        return cfg

    @classmethod
    def resolve(cls, config: Any, home: str | Path | None) -> Config:
        """What `Memory(config, home=...)` was given: a Config, or a data directory (as a
        path, or as `home`) configured as `open_memory(path)` and `memlane --home path` are."""
        if isinstance(config, str | Path):
            if home is not None:
                raise ConfigError("Memory: give the data directory once, as Memory(path) or Memory(home=path)")
            config, home = None, config
        if config is not None and not isinstance(config, Config):
            raise ConfigError(f"Memory: config must be a memlane.Config or a data directory path, got "
                              f"{type(config).__name__}; e.g. Memory(Config.load('companion')) or Memory('~/.memlane')")
        if config is not None and home is not None:
            raise ConfigError("Memory: give a Config or home, not both; a Config sets its data directory "
                              "with Config.from_env(home=...) or Config.load(store={'home': ...})")
        return config if config is not None else cls.from_env(home=home)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, *, home: str | Path | None = None,
                 **overrides: Any) -> Config:
        """The one place the environment is read, and the one way every entry point resolves
        configuration: the data directory is `home` (a `--home` flag, `open_memory(home)`,
        `Memory(home=…)`), else a `store.home` override, else MEMLANE_HOME, else ~/.memlane;
        the TOML file is MEMLANE_CONFIG, else `<data directory>/memlane.toml`; then the
        profile (argument, else MEMLANE_PROFILE, else the file's `profile`), MEMLANE_* and the
        keyword overrides, in that order."""
        env = dict(os.environ if environ is None else environ)
        if home is not None:
            overrides.setdefault("store", {})["home"] = str(home)
        store = overrides.get("store")
        given = store.get("home") if isinstance(store, dict) else getattr(store, "home", None)
        home_dir = Path(given or env.get("MEMLANE_HOME") or "~/.memlane")
        toml_path = Path(env["MEMLANE_CONFIG"]) if env.get("MEMLANE_CONFIG") else home_dir.expanduser() / "memlane.toml"
        if "MEMLANE_CONFIG" in env and not toml_path.is_file():
            raise ConfigError(f"MEMLANE_CONFIG={env['MEMLANE_CONFIG']}: no such file; unset it or point it at a memlane.toml")
        profile = overrides.pop("profile", None)
        from_env = not profile and bool(env.get("MEMLANE_PROFILE"))
        cfg = cls.load(profile or env.get("MEMLANE_PROFILE") or "default", toml_path=toml_path, env=env,
                       **overrides)
        if from_env and cfg.profile != "default":
            cfg._sources["profile"] = "env MEMLANE_PROFILE"
        return cfg


# Short names for the settings people set most; anything else is MEMLANE_SECTION__FIELD.
_ENV_ALIASES = {
    "MEMLANE_HOME": ("store", "home"),
    "MEMLANE_EMBEDDER": ("embedding", "provider"),
    "MEMLANE_EMBEDDING_MODEL": ("embedding", "model"),
    "MEMLANE_EMBEDDING_BASE_URL": ("embedding", "base_url"),
    "MEMLANE_EMBEDDING_API_KEY": ("embedding", "api_key"),
    "MEMLANE_LLM_BASE_URL": ("llm", "base_url"),
    "MEMLANE_LLM_MODEL": ("llm", "model"),
    "MEMLANE_LLM_API_KEY": ("llm", "api_key"),
    "MEMLANE_DATABASE_URL": ("store", "database_url"),
}
# Read by from_env and the CLI, not settings themselves: MEMLANE_PROFILE (the profile),
# MEMLANE_CONFIG (the TOML file, instead of <home>/memlane.toml), MEMLANE_USER (the CLI's --user),
# MEMLANE_CACHE_DIR (machine-wide caches, memlane.cjkwords; else $XDG_CACHE_HOME/memlane).
ENV_OTHER = ("MEMLANE_PROFILE", "MEMLANE_CONFIG", "MEMLANE_USER", "MEMLANE_CACHE_DIR")


def _env_overrides(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The MEMLANE_* settings in `env`, and which variable set each "section.field"."""
    out: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key, value in env.items():
        if key in _ENV_ALIASES:
            section, field = _ENV_ALIASES[key]
        elif key.startswith("MEMLANE_") and "__" in key:
            section, _, field = key[len("MEMLANE_"):].lower().partition("__")
            if section not in Config.model_fields or field not in _section_fields(section):
                raise ConfigError(f"{key}: no setting {section}.{field}; `memlane config` lists them")
        else:
            continue
        out.setdefault(section, {})[field] = value
        names[f"{section}.{field}"] = f"env {key}"
    return out, names


def env_name(section: str, field: str) -> str:
    """The environment variable that sets `section.field` (its short alias when it has one)."""
    for name, target in _ENV_ALIASES.items():
        if target == (section, field):
            return name
    return f"MEMLANE_{section.upper()}__{field.upper()}"


def _leaves(layer: dict[str, Any]) -> list[str]:
    """The "section.field" keys a layer sets (a field's own dict value is one leaf)."""
    keys: list[str] = []
    for section, value in layer.items():
        if isinstance(value, dict) and section in Config.model_fields and section != "profile":
            keys += [f"{section}.{field}" for field in value]
        elif isinstance(value, BaseModel):
            keys += [f"{section}.{field}" for field in value.model_fields_set]
        else:
            keys.append(section)
    return keys


def _section_fields(section: str) -> dict[str, Any]:
    annotation = Config.model_fields[section].annotation
    return getattr(annotation, "model_fields", {})


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key != "decay":
            _merge(base[key], value)
        else:
            base[key] = value
