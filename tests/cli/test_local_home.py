"""The home ``local`` prepares (:mod:`k8s_workloads.cli._local_home`): its settings, the
example DAG, the pods' run files, kept across starts."""

from __future__ import annotations

import ast
import configparser
import json
import stat
from importlib import resources
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from k8s_workloads.airflow.provider import EXECUTOR
from k8s_workloads.cli._local_home import (
    EXAMPLE_DAG_ID,
    EXAMPLE_FILES,
    default_home,
    prepare,
    run_settings,
    write_run_files,
)
from k8s_workloads.testing.local import kubeconfig

ROOT = Path(__file__).resolve().parents[2]


def read_config(path: Path) -> configparser.ConfigParser:
    """``airflow.cfg`` as Airflow reads it (configparser, with its interpolation)."""
    parser = configparser.ConfigParser()
    assert parser.read(path) == [str(path)]
    return parser


def test_the_home_holds_the_settings_the_example_and_the_folders(tmp_path: Path) -> None:
    home = prepare(tmp_path / "home")
    assert home.root == tmp_path / "home"
    assert home.dags == home.root / "dags"
    for folder in (home.dags, home.example_dags, home.logs, home.pod_logs):
        assert folder.is_dir()
    config = read_config(home.config)
    assert config["core"]["executor"] == EXECUTOR
    assert config["database"]["sql_alchemy_conn"] == f"sqlite:///{home.root / 'airflow.db'}"
    assert config["core"]["dags_are_paused_at_creation"] == "False"
    assert config["kubernetes_executor"]["pod_template_file"] == str(home.pod_template)
    assert config["kubernetes_executor"]["config_file"] == str(home.kubeconfig)
    bundles = json.loads(config["dag_processor"]["dag_bundle_config_list"])
    assert [bundle["name"] for bundle in bundles] == ["dags-folder", "k8s-workloads-example"]
    assert bundles[1]["kwargs"]["path"] == str(home.example_dags)
    # The secrets in it are the owner's alone.
    assert stat.S_IMODE(home.config.stat().st_mode) == 0o600
    assert len(config["api_auth"]["jwt_secret"]) == 64
    bundled = resources.files("k8s_workloads") / "examples" / "_local_dags"
    for name in EXAMPLE_FILES:
        text = (home.example_dags / name).read_text()
        assert text == (bundled / name).read_text()
        ast.parse(text)


def test_a_second_start_keeps_the_settings_the_secrets_and_the_users_edits(tmp_path: Path) -> None:
    first = prepare(tmp_path / "home")
    config = first.config.read_text()
    edited = first.example_dags / EXAMPLE_FILES[0]
    edited.write_text("# mine\n")
    second = prepare(tmp_path / "home")
    assert second == first
    assert second.config.read_text() == config
    assert edited.read_text() == "# mine\n"
    # A file removed comes back.
    (first.example_dags / EXAMPLE_FILES[1]).unlink()
    prepare(tmp_path / "home")
    assert (first.example_dags / EXAMPLE_FILES[1]).exists()


def test_the_users_dags_folder_is_used_as_it_is(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    home = prepare(tmp_path / "home", mine)
    assert home.dags == mine
    assert list(mine.iterdir()) == []  # the example stays in its own folder
    assert not (home.root / "dags").exists()
    assert run_settings(home, 8080)["AIRFLOW__CORE__DAGS_FOLDER"] == str(mine)


@settings(max_examples=25, deadline=None)
@given(
    st.text(
        st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"], exclude_characters="/"),
        min_size=1,
        max_size=12,
    )
)
def test_any_home_name_reads_back_as_written(name: str) -> None:
    # A % in a path is written %% (configparser's interpolation) and read back as %.
    if name in {".", ".."}:
        name = f"{name}x"
    import tempfile  # noqa: PLC0415 - one folder per example

    with tempfile.TemporaryDirectory() as folder:
        try:
            home = prepare(Path(folder) / name)
        except OSError:  # a name the file system refuses (too long in bytes)
            return
        config = read_config(home.config)
        assert config["database"]["sql_alchemy_conn"] == f"sqlite:///{home.database}"
        assert config["core"]["dags_folder"] == str(home.root / "dags")


def test_the_run_files_give_each_pod_the_home_the_dags_and_the_execution_api(
    tmp_path: Path,
) -> None:
    home = prepare(tmp_path / "home")
    settings_ = run_settings(home, 41234)
    assert settings_["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == (
        "http://127.0.0.1:41234/execution/"
    )
    assert settings_["AIRFLOW__API__HOST"] == "127.0.0.1"
    environ = {"HOME": "/home/me", "PYTHONPATH": "/src", "SECRET": "no"}
    write_run_files(
        home, settings_, kubeconfig("http://127.0.0.1:1", "default", "a-token"), environ
    )
    template = yaml.safe_load(home.pod_template.read_text())
    (base,) = template["spec"]["containers"]
    assert base["name"] == "base"
    env = {each["name"]: each["value"] for each in base["env"]}
    assert env == {
        "AIRFLOW_HOME": str(home.root),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home.dags),
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": (
            read_config(home.config)["dag_processor"]["dag_bundle_config_list"]
        ),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": "http://127.0.0.1:41234/execution/",
        "HOME": "/home/me",
        "PYTHONPATH": "/src",
    }
    written = json.loads(home.kubeconfig.read_text())
    assert written["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:1"


def test_what_makes_the_stack_is_set_over_an_existing_airflow_cfg(tmp_path: Path) -> None:
    # A home that was an Airflow home before: its airflow.cfg is kept, and overridden where
    # the stack needs it (the environment wins over the file in Airflow).
    root = tmp_path / "airflow"
    root.mkdir()
    (root / "airflow.cfg").write_text("[core]\nexecutor = LocalExecutor\n")
    home = prepare(root)
    assert (root / "airflow.cfg").read_text() == "[core]\nexecutor = LocalExecutor\n"
    environment = run_settings(home, 8080)
    assert environment["AIRFLOW__CORE__EXECUTOR"] == EXECUTOR
    assert environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{root}/airflow.db"
    assert environment["AIRFLOW__KUBERNETES_EXECUTOR__POD_TEMPLATE_FILE"] == str(home.pod_template)
    assert "k8s-workloads-example" in environment["AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST"]
    # Everything the environment sets is in a fresh airflow.cfg too, with the same value.
    fresh = prepare(tmp_path / "fresh")
    config = read_config(fresh.config)
    for name, value in run_settings(fresh, 8080).items():
        section, _, key = name.removeprefix("AIRFLOW__").partition("__")
        if section.lower() in config and key.lower() in config[section.lower()]:
            assert config[section.lower()][key.lower()] == value, name
    assert "Set by the command at each start" in fresh.config.read_text()


def test_the_default_home_is_in_the_users_cache() -> None:
    assert default_home({"XDG_CACHE_HOME": "/c"}) == Path("/c/k8s-workloads/local")
    assert default_home({"XDG_CACHE_HOME": "relative"}) == (
        Path.home() / ".cache/k8s-workloads/local"
    )
    assert default_home({}) == Path.home() / ".cache/k8s-workloads/local"


def test_the_example_names_its_callback_next_to_it_and_stays_out_of_parsing() -> None:
    bundled = resources.files("k8s_workloads") / "examples" / "_local_dags"
    dag, alerts = ((bundled / name).read_text() for name in EXAMPLE_FILES)
    assert f'dag_id="{EXAMPLE_DAG_ID}"' in dag
    assert "from deadline_example_alerts import notify_missed_deadline" in dag
    assert "def notify_missed_deadline(team: str, context: dict | None = None)" in alerts
    # Airflow's dag processor parses a file only if it names "airflow" (and "dag"): the
    # callback's module is imported by the DAG, never parsed as one.
    assert "airflow" not in alerts.lower()
    assert Path(EXAMPLE_FILES[1]).stem in dag


def test_the_deadline_callbacks_page_shows_the_example_as_it_is_shipped() -> None:
    # The example's page shows it; the run-locally page, whose --trigger runs it, links it.
    assert "(deadline-callbacks.md)" in (ROOT / "docs" / "run-locally.md").read_text()
    page = (ROOT / "docs" / "deadline-callbacks.md").read_text()
    bundled = resources.files("k8s_workloads") / "examples" / "_local_dags"
    for name in EXAMPLE_FILES:
        marker = f"```python\n# example_dags/{name}\n"
        assert marker in page, name
        shown = page.split(marker, 1)[1].split("```", 1)[0]
        source = (bundled / name).read_text()
        # The file as shown: without its module docstring.
        docstring = ast.get_docstring(ast.parse(source), clean=False)
        assert docstring is not None
        body = source.split(f'"""{docstring}"""', 1)[1].lstrip("\n")
        assert shown == body, name
