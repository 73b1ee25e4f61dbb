"""Build a ``Config`` from its three sources: CLI flags, ``OVNK_*`` env and a TOML file.

Priority is CLI over environment over file over built-in default.  The TOML
file is a flat table whose keys are the flag names (``enable-multi-network =
true``); sections are allowed for grouping and are ignored.  Every value is
parsed by the option's own parser, so a bad value is reported the same way
whichever source it came from, naming the source.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ovnk_core.config.model import Config
from ovnk_core.config.options import OPTIONS, OPTIONS_BY_FLAG, Option
from ovnk_core.config.validation import validate
from ovnk_core.errors import ConfigError

CONFIG_FILE_ENV = "OVNK_CONFIG"


def add_config_arguments(parser: argparse.ArgumentParser, exclude: Collection[str] = (),
                         title: str = "configuration (flag > OVNK_* env > --config file)",
                         ) -> None:
    """Add every option (and ``--config FILE``) to ``parser``; unset flags stay absent.

    ``exclude``: ``Config`` fields whose flags are left out (a command that sets them
    itself, e.g. ``ovnk local up`` for the addresses of its own databases).
    """
    group = parser.add_argument_group(title)
    group.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                       help=f"TOML config file (env {CONFIG_FILE_ENV}).")
    for option in OPTIONS:
        if option.field in exclude:
            continue
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
    defaults: Mapping[str, Any] | None = None,
    defaults_source: str = "default",
) -> Config:
    """Merge the sources, parse every value and run the consistency checks.

    :param cli: parsed arguments (only explicitly given flags are present).
    :param env: environment to read ``OVNK_*`` from (default ``os.environ``).
    :param config_file: TOML path; else ``--config`` from ``cli``, else ``$OVNK_CONFIG``.
    :param defaults: raw values (by ``Config`` field) that replace the built-in defaults,
        below every other source; reported as ``defaults_source``.
    :raises ConfigError: listing every problem found.
    """
    given = dict(vars(cli) if isinstance(cli, argparse.Namespace) else (cli or {}))
    environ = os.environ if env is None else env
    path = config_file or given.pop("config", None) or environ.get(CONFIG_FILE_ENV) or None
    file_values = _read_toml(Path(path)) if path else {}
    base = dict(defaults or {})

    kwargs: dict[str, Any] = {}
    sources: dict[str, str] = {}
    problems: list[str] = []
    for option in OPTIONS:
        if option.field not in given and option.env_var not in environ \
                and option.field not in file_values and option.field in base:
            raw, source = base[option.field], defaults_source
        else:
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


def given_options(args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """The options explicitly given in ``args`` (by ``Config`` field), in table order;
    anything else in it (``--config``, a command's own arguments) left out."""
    values = vars(args) if isinstance(args, argparse.Namespace) else args
    return {option.field: values[option.field] for option in OPTIONS if option.field in values}


def as_flags(given: Mapping[str, Any]) -> list[str]:
    """``given`` (raw values by ``Config`` field) as the command-line flags that set them,
    ``--flag=value`` in table order, so a process started with them parses the same
    values (a boolean given as a bare flag is ``--flag=true``)."""
    flags = []
    for option in OPTIONS:
        if option.field in given:
            flags.append(f"--{option.flag}={_flag_text(given[option.field])}")
    return flags


def as_environment(given: Mapping[str, Any]) -> dict[str, str]:
    """``given`` (raw values by ``Config`` field) as the ``OVNK_*`` variables that set them,
    for a process whose command line ovnk does not own (an API server loading ovnk's
    admission hooks reads its configuration as every component does: ``load_config()``)."""
    return {option.env_var: _flag_text(given[option.field])
            for option in OPTIONS if option.field in given}


def _flag_text(raw: Any) -> str:
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, list | tuple):
        return ",".join(_flag_text(item) for item in raw)
    return str(raw)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The raw values of a TOML config file by ``Config`` field (not parsed yet).

    :raises ConfigError: the file is missing, unreadable, not TOML or names unknown keys.
    """
    return _read_toml(Path(path))


def config_file_text(values: Mapping[str, Any], header: str = "") -> str:
    """A TOML config file holding ``values`` (raw values by ``Config`` field, keys written as
    flag names, in table order) that ``read_config_file`` reads back as they are.

    :raises ConfigError: a value TOML cannot hold as a flat key (a table, a date, NaN).
    """
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for option in OPTIONS:
        if option.field in values:
            lines.append(f"{option.flag} = {_toml_value(option.flag, values[option.field])}")
    return "\n".join(lines) + "\n"


def _toml_value(flag: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    if isinstance(value, str) and not any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        # a TOML basic string: JSON's escapes are TOML's, and TOML wants DEL escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(flag, item) for item in value) + "]"
    raise ConfigError(f"{flag}: {value!r} cannot be written to a config file")


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
