"""The Dagster identity resource is the identity file's rules, wherever a run starts from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profile_store.identity.settings import IDENTITY_CONFIG_ENV, identity_rules_from_env
from resources import resources_from_env
from resources.identity import IdentityResource

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def identity_file(tmp_path) -> Path:
    path = tmp_path / "identity.yaml"
    path.write_text("alt_id_weights:\n  phone: 0.92\nmax_profiles_per_key: 7\nblocklist: ['0']\n")
    return path


def test_the_resource_from_the_environment_holds_the_files_rules(identity_file):
    env = {IDENTITY_CONFIG_ENV: str(identity_file)}
    assert IdentityResource.from_env(env).rules() == identity_rules_from_env(env)
    assert resources_from_env(env)["identity"].rules().alt_id_weights == {"phone": 0.92}


def test_without_a_file_the_resource_holds_the_default_rules():
    assert IdentityResource.from_env({}).rules() == identity_rules_from_env({})


def test_a_bad_value_given_to_the_resource_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="max_profiles_per_key: must be at least 2, got 1"):
        IdentityResource(max_profiles_per_key=1).rules()


SEEN_BY_EACH_PATH = """
import json
from dagster import build_resources
from profile_assets.definitions import defs
from profile_assets.schedules import daily_schedule

def seen(job):
    with build_resources({"identity": job.resource_defs["identity"]}) as built:
        rules = built.identity.rules()
    return [rules.alt_id_weights, rules.max_profiles_per_key]

repo = defs.get_repository_def()
run = defs.resolve_job_def("daily_pipeline")  # what `profiles run` executes (run_days.py)
scheduled = repo.get_job(repo.get_schedule_def(daily_schedule.name).job_name)
resources = run.run_config_schema.config_type.fields["resources"].config_type
launchpad = resources.fields["identity"].config_type.fields["config"].default_value
print(json.dumps({
    "profiles run": seen(run),
    "schedule": seen(scheduled),
    "launchpad": [launchpad["alt_id_weights"], launchpad["max_profiles_per_key"]],
}))
"""


def test_profiles_run_the_schedule_and_the_launchpad_see_the_files_configuration(
    identity_file,
):
    env = {**os.environ, IDENTITY_CONFIG_ENV: str(identity_file), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SEEN_BY_EACH_PATH],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    from_file = [{"phone": 0.92}, 7]
    assert seen == {"profiles run": from_file, "schedule": from_file, "launchpad": from_file}


def test_the_code_location_refuses_to_load_with_a_bad_identity_file(tmp_path):
    bad = tmp_path / "identity.yaml"
    bad.write_text("alt_id_weights:\n  phone: 2\n")
    env = {**os.environ, IDENTITY_CONFIG_ENV: str(bad), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", "import profile_assets.definitions"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert f"{bad}: alt_id_weights.phone: must be in (0, 1], got 2.0" in done.stderr
