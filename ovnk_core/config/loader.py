"""Build a ``Config`` from its three sources: CLI flags, ``OVNK_*`` env and a TOML file.

Priority is CLI over environment over file over built-in default.  The TOML
file is a flat table whose keys are the flag names (``enable-multi-network =
true``); sections are allowed for grouping and are ignored.  Every value is
parsed by the option's own parser, so a bad value is reported the same way
whichever source it came from, naming the source.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ovnk_core.config.model import Config
from ovnk_core.config.options import OPTIONS, OPTIONS_BY_FLAG, Option
from ovnk_core.config.validation import validate
from ovnk_core.errors import ConfigError

CONFIG_FILE_ENV = "OVNK_CONFIG"


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every option (and ``--config FILE``) to ``parser``; unset flags stay absent."""
    group = parser.add_argument_group("configuration (flag > OVNK_* env > --config file)")
    group.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                       help=f"TOML config file (env {CONFIG_FILE_ENV}).")
    for option in OPTIONS:
        names = [f"--{option.flag}"] + [f"--{alias}" for alias in option.aliases]
        default_text = option.default if not option.is_bool else "false"
        help_text = f"{option.help} [env {option.env_var}; default {default_text!r}]"
        if option.is_bool:
            group.add_argument(*names, dest=option.field, nargs="?", const="true",
                               default=argparse.SUPPRESS, metavar="BOOL", help=help_text)
        else:
            group.add_argument(*names, dest=option.field, default=argparse.SUPPRESS,
                               metavar="VALUE", help=help_text)


def load_config(
    cli: Mapping[str, Any] | argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
) -> Config:
    """Merge the sources, parse every value and run the consistency checks.

    :param cli: parsed arguments (only explicitly given flags are present).
    :param env: environment to read ``OVNK_*`` from (default ``os.environ``).
    :param config_file: TOML path; else ``--config`` from ``cli``, else ``$OVNK_CONFIG``.
    :raises ConfigError: listing every problem found.
    """
    given = dict(vars(cli) if isinstance(cli, argparse.Namespace) else (cli or {}))
    environ = os.environ if env is None else env
    path = config_file or given.pop("config", None) or environ.get(CONFIG_FILE_ENV) or None
    file_values = _read_toml(Path(path)) if path else {}

    kwargs: dict[str, Any] = {}
    sources: dict[str, str] = {}
    problems: list[str] = []
    for option in OPTIONS:
        raw, source = _pick(option, given, environ, file_values, str(path))
        try:
            kwargs[option.field] = option.parse(raw)
        except (ValueError, TypeError) as exc:
            problems.append(f"{source}: invalid value for --{option.flag}: {exc}")
            continue
        sources[option.field] = source.split(" ")[0]
    if problems:
        raise ConfigError(_report("invalid configuration", problems))
    config = Config(**kwargs, sources=sources)
    problems = validate(config)
    if problems:
        raise ConfigError(_report("inconsistent configuration", problems))
    return config


def _report(title: str, problems: list[str]) -> str:
    """One line for a single problem (the CLI shows errors as one line), else one per problem."""
    if len(problems) == 1:
        return f"{title}: {problems[0]}"
    return f"{title}:\n  " + "\n  ".join(problems)


def _pick(option: Option, given: Mapping[str, Any], environ: Mapping[str, str],
          file_values: Mapping[str, Any], path: str) -> tuple[Any, str]:
    if option.field in given:
        return given[option.field], f"cli --{option.flag}"
    if option.env_var in environ:
        return environ[option.env_var], f"env {option.env_var}"
    if option.field in file_values:
        return file_values[option.field], f"file {path}"
    return option.default, "default"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from None
    values: dict[str, Any] = {}
    unknown: list[str] = []
    _flatten(document, values, unknown, prefix="")
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown option(s) {', '.join(sorted(unknown))}; "
            "keys are flag names such as enable-multi-network"
        )
    return values


def _flatten(table: Mapping[str, Any], out: dict[str, Any], unknown: list[str],
             prefix: str) -> None:
    for key, value in table.items():
        if isinstance(value, dict):
            _flatten(value, out, unknown, prefix=f"{prefix}{key}.")
            continue
        option = OPTIONS_BY_FLAG.get(key.replace("_", "-"))
        if option is None:
            unknown.append(prefix + key)
        else:
            out[option.field] = value
