"""``ovnk local up`` passes the ovnk components' options on (no cluster is started here).

The flags and ``--config FILE`` given to ``up`` are the core's option table (the parser is
``add_config_arguments``); they are checked as the components will load them before
anything starts, kept in ``cluster.json``, put on the command lines of the cluster manager,
the zone controller and every node agent, and shown by ``ovnk local status``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from ovnk_local import cluster as cluster_module
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import LOCAL_SETTINGS, OWNED, ComponentSettings
from ovnk_local.state import ProcessRecord

from ovnk_core.cli.main import build_parser, main
from ovnk_core.config import (
    as_environment,
    as_flags,
    config_file_text,
    given_options,
    load_config,
)
from ovnk_core.config.loader import read_config_file
from ovnk_core.config.options import OPTIONS, OPTIONS_BY_FIELD
from ovnk_core.errors import ConfigError

pytestmark = pytest.mark.unit

FLAGS = ["--enable-dynamic-udn-allocation", "--udn-deletion-grace-period=5s",
         "--enable-persistent-ips"]
PASSED_ON = ["--enable-dynamic-udn-allocation=true", "--udn-deletion-grace-period=5s",
             "--enable-persistent-ips=true"]


def up_args(*words: str) -> object:
    return build_parser().parse_args(["local", "up", *words])


@pytest.fixture(autouse=True)
def no_ovnk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    for key in [key for key in os.environ if key.startswith("OVNK_")]:
        monkeypatch.delenv(key)


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(record: ProcessRecord) -> ProcessRecord:
        raise AssertionError(f"{record.name} was started")
    monkeypatch.setattr(cluster_module, "spawn", refuse)


# -- the core's side: options given, as flags, as a file ------------------------------------
def test_flags_given_become_the_flags_a_component_parses_the_same() -> None:
    args = build_parser().parse_args(["config", *FLAGS, "--cluster-subnets", "10.128.0.0/14/23",
                                      "--enable-feature", "a,b", "--mtu=1300"])
    given = given_options(args)
    assert "config" not in given and "func" not in given
    flags = as_flags(given)
    assert flags == [*PASSED_ON[:3], "--enable-feature=a,b", "--cluster-subnets=10.128.0.0/14/23",
                     "--mtu=1300"]
    again = given_options(build_parser().parse_args(["config", *flags]))
    assert load_config(again, env={}, defaults=LOCAL_SETTINGS) == \
        load_config(given, env={}, defaults=LOCAL_SETTINGS)


def test_the_given_options_as_environment_load_the_same_config() -> None:
    given = given_options(up_args("--topologies", "layer3", "--enable-multi-network",
                                  "--mtu=1300", "--udn-deletion-grace-period=5s"))
    env = as_environment(given)
    assert env == {OPTIONS_BY_FIELD["topologies"].env_var: "layer3",
                   OPTIONS_BY_FIELD["enable_multi_network"].env_var: "true",
                   OPTIONS_BY_FIELD["mtu"].env_var: "1300",
                   OPTIONS_BY_FIELD["udn_deletion_grace_period"].env_var: "5s"}
    assert load_config({}, env=env) == load_config(given, env={})


def test_a_config_file_written_reads_back_as_it_was(tmp_path: Path) -> None:
    values = {"enable_multi_network": True, "mtu": 1300, "udn_deletion_grace_period": 7.5,
              "extra_features": ["a", "b"], "loglevel": 'de"bug\\\x7f\n\u00e9',
              "cluster_subnets": "10.128.0.0/14/23"}
    path = tmp_path / "ovnk.toml"
    path.write_text(config_file_text(values, "a header\nof two lines"))
    assert path.read_text().startswith("# a header\n# of two lines\n")
    assert read_config_file(path) == values
    with pytest.raises(ConfigError, match="mtu: .* cannot be written"):
        config_file_text({"mtu": {"nested": 1}})


def test_defaults_sit_below_every_other_source(tmp_path: Path) -> None:
    file = tmp_path / "user.toml"
    file.write_text("mtu = 1300\n")
    config = load_config({"udn_deletion_grace_period": "5s"}, env={"OVNK_LOGLEVEL": "debug"},
                         config_file=file,
                         defaults={"mtu": 1200, "loglevel": "error", "enable_multi_network": True,
                                   "udn_deletion_grace_period": "9s"},
                         defaults_source="ovnk-local")
    assert (config.mtu, config.loglevel, config.enable_multi_network,
            config.udn_deletion_grace_period) == (1300, "debug", True, 5.0)
    assert (config.sources["mtu"], config.sources["loglevel"],
            config.sources["enable_multi_network"],
            config.sources["udn_deletion_grace_period"]) == ("file", "env", "ovnk-local", "cli")


# -- ovnk local up's arguments ----------------------------------------------------------------
def test_up_takes_every_component_option_but_those_it_owns() -> None:
    parser = build_parser()
    for option in OPTIONS:
        if option.field in OWNED:
            with pytest.raises(SystemExit):
                parser.parse_args(["local", "up", f"--{option.flag}=x"])
        else:
            value = "true" if option.is_bool else "x"
            args = parser.parse_args(["local", "up", f"--{option.flag}={value}"])
            assert given_options(args) == {option.field: value}, option.flag


def test_up_arguments_are_the_components_flags(tmp_path: Path) -> None:
    settings = ComponentSettings.from_args(up_args("--dir", str(tmp_path), "--nodes", "3",
                                                   *FLAGS))
    assert settings.flags == PASSED_ON and settings.source == ""
    config = settings.check(LocalCluster(tmp_path).owned_settings())
    assert config.enable_dynamic_udn_allocation and config.enable_persistent_ips
    assert config.udn_deletion_grace_period == 5.0
    assert config.enable_network_segmentation  # ovnk local's own settings still apply
    assert config.sources["udn_deletion_grace_period"] == "cli"
    assert config.sources["enable_network_segmentation"] == "ovnk-local"
    assert "dynamic" in config.enabled_features


def test_the_users_config_file_is_merged_under_the_flags(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[features]\nenable-dynamic-udn-allocation = true\n"
                    "udn-deletion-grace-period = \"30s\"\nmtu = 1300\n")
    cluster = LocalCluster(tmp_path / ".ovnk")
    settings = ComponentSettings.from_args(up_args("--config", str(user),
                                                   "--udn-deletion-grace-period", "5s"))
    assert settings.source == str(user.resolve())
    assert settings.flags == ["--udn-deletion-grace-period=5s"]
    cluster.dir.mkdir()
    cluster.write_config(settings)
    written = tomllib.loads(cluster.config_file.read_text())
    assert written == {"enable-multi-network": True, "enable-network-segmentation": True,
                       "enable-dynamic-udn-allocation": True,
                       "udn-deletion-grace-period": "30s",
                       "gateway-v4-masquerade-subnet": "169.254.0.0/17", "mtu": 1300,
                       "nb-address": f"unix:{cluster.nb_socket}",
                       "sb-address": f"unix:{cluster.sb_socket}",
                       "k8s-kubeconfig": str(cluster.kubeconfig)}
    assert str(user.resolve()) in cluster.config_file.read_text().splitlines()[1]
    # what a component started with --config DIR/ovnk.toml and the flags loads
    component = load_config(given_options(build_parser().parse_args(
        ["controller", *settings.flags])), env={}, config_file=cluster.config_file)
    assert component == settings.check(cluster.owned_settings(), env={})
    assert (component.udn_deletion_grace_period, component.mtu) == (5.0, 1300)


def test_config_file_from_the_environment_and_what_it_may_not_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user.toml"
    user.write_text("enable-persistent-ips = true\n")
    monkeypatch.setenv("OVNK_CONFIG", str(user))
    assert ComponentSettings.from_args(up_args()).source == str(user.resolve())
    user.write_text('nb-address = "tcp:10.0.0.1:6641"\nnode-name = "x"\n')
    with pytest.raises(ConfigError, match=r"nb-address, node-name cannot be set for a local "
                                          r"cluster: ovnk local sets them itself"):
        ComponentSettings.from_args(up_args())


@pytest.mark.parametrize(("words", "message"), [
    (["--udn-deletion-grace-period=soon"],
     "ovnk local: invalid configuration: cli --udn-deletion-grace-period: invalid value for "
     "--udn-deletion-grace-period: expected a duration such as 120s, 2m or 1h30m, got 'soon'"),
    (["--enable-network-segmentation=false", "--enable-dynamic-udn-allocation"],
     "ovnk local: inconsistent configuration: the Dynamic UDN Allocation feature cannot be "
     "enabled without also enabling Network Segmentation (--enable-dynamic-udn-allocation "
     "requires --enable-network-segmentation)"),
    (["--config", "/nonexistent/ovnk.toml"],
     "ovnk local: config file /nonexistent/ovnk.toml does not exist"),
], ids=["invalid-value", "inconsistent", "missing-file"])
def test_an_invalid_component_option_starts_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], nothing_starts: None,
        words: list[str], message: str) -> None:
    directory = tmp_path / ".ovnk"
    assert main(["local", "up", "--dir", str(directory), *words]) == 2
    assert capsys.readouterr().err.strip() == message
    assert not directory.exists()


# -- what the components get, and what status shows ------------------------------------------
def test_components_and_node_agents_get_the_flags_and_status_shows_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = LocalCluster(tmp_path / ".ovnk")
    settings = ComponentSettings.from_args(up_args(*FLAGS))
    with cluster.states.update() as state:
        state.nodes = ["ovn-worker"]
        state.component_flags, state.config_source = settings.flags, "/etc/ovnk/user.toml"
    cluster.write_config()
    for name in ("cluster-manager", "controller"):
        record = cluster._component_record(name)
        assert record.args[record.args.index(name) - 1] == "ovnk_core.cli.main"
        assert record.args[-len(PASSED_ON):] == PASSED_ON, record.args
        # the component parses them: its own `ovnk config` view of the same command line
        own = record.args[record.args.index(name) + 1:]
        cut = own.index("--ready-file")
        assert main(["config", *own[:cut], *own[cut + 2:]]) == 0
        shown = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
        assert "5.0" in shown["udn-deletion-grace-period"].split()
        assert shown["udn-deletion-grace-period"].endswith("(cli)")
        assert shown["enable-dynamic-udn-allocation"].split()[1:] == ["True", "(cli)"]
        assert "dynamic" in shown["features"]
    agent = cluster._agent_record(cluster.dataplane.node("ovn-worker", 0))
    assert agent.args[agent.args.index("ovnk_core.cli.main") + 1] == "node"
    assert agent.args[-len(PASSED_ON):] == PASSED_ON
    assert cluster._component_record("scheduler").args[-2:] == ["--dir", str(cluster.dir)]

    # kept in cluster.json (restarts and the supervisor start them the same way) ...
    raw = json.loads(cluster.state_file.read_text())
    assert raw["component_flags"] == PASSED_ON
    with cluster.states.update() as state:
        state.processes["controller"] = ProcessRecord("controller", "component", ["true"],
                                                      str(tmp_path / "c.log"))
    # ... and shown by status
    main(["local", "status", "--dir", str(cluster.dir)])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"ovnk components' config: {cluster.config_file} (ovnk local's "
                      "settings + /etc/ovnk/user.toml)")
    assert out[1] == "ovnk components' flags:  " + " ".join(PASSED_ON)
    assert out[2].startswith("NAME")


def test_every_owned_option_is_set_by_the_cluster() -> None:
    owned = LocalCluster("/tmp/x").owned_settings()
    per_process = {"kubeconfig", "node_name", "metrics_bind_address"}  # flags, or left unset
    assert set(OWNED) - set(owned) <= per_process
    assert all(field in OPTIONS_BY_FIELD for field in OWNED)
