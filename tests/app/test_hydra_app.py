"""The Hydra app: every config composes; `ragtrack run` and `run -m` as real subprocesses."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import CONF_DIR, check_overrides
from ragtrack.core.errors import InputError
from ragtrack.inputs.config import RunConfig
from tests.conftest import sweep_overrides

ROOT = Path(CONF_DIR).parent
RAGTRACK = [sys.executable, "-m", "ragtrack.app.cli"]
GROUPS = sorted(p.name for p in Path(CONF_DIR).iterdir() if p.is_dir() and p.name != "hydra")
REQUIRED = {
    "generator=callable": "generator.params.target=m:f",
    "prompt=registry": "prompt.uri=prompts:/p/1",
}  # `???` keys


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


@pytest.mark.parametrize(
    "override",
    [f"{g}={o}" for g in GROUPS for o in _options(g) if f"{g}={o}" not in REQUIRED]
    + [f"{choice} {rest}" for choice, rest in REQUIRED.items()],
)
def test_every_config_option_composes_and_validates(override):
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=override.split())
    RunConfig.from_container(OmegaConf.to_container(cfg, resolve=True))


def _keys_without_comment(path: Path) -> list[str]:
    bad, prev = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        is_key = re.match(r"^\s*(- )?[\w./@-]+:(\s|$)", line) and not line.lstrip().startswith("#")
        if is_key and "#" not in line and not prev.lstrip().startswith("#"):
            bad.append(line.strip())
        prev = line
    return bad


@pytest.mark.parametrize(
    "path", sorted(Path(CONF_DIR).rglob("*.yaml")), ids=lambda p: str(p.relative_to(CONF_DIR))
)
def test_every_yaml_key_has_a_comment(path):
    assert _keys_without_comment(path) == []


def _ragtrack(args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAGTRACK_PARENT_RUN_ID", None)
    return subprocess.run([*RAGTRACK, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _runs(demo_files, experiment="sweep-test"):
    client = MlflowClient(f"sqlite:///{demo_files['questions'].parent / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id])


def test_multirun_groups_jobs_under_one_parent(demo_files):
    proc = _ragtrack(
        ["run", "-m", "adapter=base,lora_a", *sweep_overrides(demo_files)], demo_files["questions"].parent
    )
    assert proc.returncode == 0, proc.stderr
    runs = _runs(demo_files)
    (parent,) = [r for r in runs if r.data.tags["ragtrack.stage"] == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.data.params["adapter"] for r in children) == ["base", "lora_a"]
    assert {r.info.status for r in runs} == {"FINISHED"}


def test_failing_sweep_job_fails_the_parent(demo_files):
    args = sweep_overrides(demo_files, adapters=("base",))  # lora_a has no predictions file
    proc = _ragtrack(["run", "-m", "adapter=base,lora_a", *args], demo_files["questions"].parent)
    assert proc.returncode != 0
    statuses = {
        r.data.tags["ragtrack.stage"] + ":" + r.data.params.get("adapter", ""): r.info.status
        for r in _runs(demo_files)
    }
    assert statuses == {
        "sweep:": "FAILED",
        "full:base": "FINISHED",
    }  # bad input: the lora_a job creates no run


def test_failing_sweep_job_is_counted_on_the_parent(demo_files):
    args = sweep_overrides(demo_files, adapters=("base",))
    _ragtrack(["run", "-m", "adapter=base,lora_a", *args], demo_files["questions"].parent)
    (parent,) = [r for r in _runs(demo_files) if r.data.tags["ragtrack.stage"] == "sweep"]
    assert parent.data.tags["ragtrack.failed_jobs"] == "1"


def test_failing_sweep_job_is_one_line_without_traceback(demo_files):
    args = sweep_overrides(demo_files, adapters=("base",))
    proc = _ragtrack(["run", "-m", "adapter=base,lora_a", *args], demo_files["questions"].parent)
    failed = [line for line in proc.stderr.splitlines() if "failed:" in line]
    assert len(failed) == 1 and "adapter=lora_a" in failed[0] and "Traceback" not in proc.stderr


def test_bad_input_exits_2_naming_the_file(demo_files):
    args = sweep_overrides(demo_files, adapters=())
    proc = _ragtrack(["run", *args], demo_files["questions"].parent)
    assert proc.returncode == 2 and "base__v1.jsonl: file not found" in proc.stderr


def test_typo_in_a_group_name_suggests_the_group(demo_files):
    proc = _ragtrack(["run", "adaptr=lora_b"], demo_files["questions"].parent)
    assert (
        proc.returncode == 2
        and "unknown config group or key 'adaptr'; did you mean 'adapter'?" in proc.stderr
    )


def test_unknown_group_option_lists_the_choices(demo_files):
    proc = _ragtrack(["run", "adapter=lora_c"], demo_files["questions"].parent)
    assert (
        proc.returncode == 2 and "unknown adapter 'lora_c'; choose from base, lora_a, lora_b" in proc.stderr
    )


def test_bad_input_leaves_no_files_in_the_working_directory(tmp_path):
    proc = _ragtrack(["run", "generator.params.path=nope.jsonl"], tmp_path)
    assert proc.returncode == 2 and list(tmp_path.iterdir()) == []


def test_skipped_full_stage_says_which_condition_failed(demo_files):
    args = sweep_overrides(demo_files, adapters=("base",))
    shutil.copyfile(demo_files["bad"], demo_files["questions"].parent / "base__v1.jsonl")
    proc = _ragtrack(["run", "stages=staged", "stages.dev_n=2", *args], demo_files["questions"].parent)
    assert proc.returncode == 0, proc.stderr
    assert (
        "full stage skipped: gate dev100 failed (eval_json_v2/eval_score_avg 0 < 95; "
        "eval_json_v2/schema_pass_rate 0 < 0.98)" in proc.stderr
    )


def test_skipped_full_stage_says_the_exit_code_and_where_ci_reads_the_verdict(demo_files):
    args = sweep_overrides(demo_files, adapters=("base",))
    shutil.copyfile(demo_files["bad"], demo_files["questions"].parent / "base__v1.jsonl")
    proc = _ragtrack(["run", "stages=staged", "stages.dev_n=2", *args], demo_files["questions"].parent)
    assert (
        proc.returncode == 0
        and "exit 0: a gate's verdict is a result" in proc.stderr
        and "ragtrack.gates_passed=false" in proc.stderr
    )


def test_broken_interpolation_is_one_line_naming_the_key(demo_files):
    proc = _ragtrack(
        ["run", "tracking.run_name=${oc.env:RAGTRACK_TEST_UNSET_VARIABLE}"], demo_files["questions"].parent
    )
    assert proc.returncode == 2 and "tracking.run_name" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ nested keys


def _override_error(*overrides: str) -> InputError:
    with pytest.raises(InputError) as e:
        check_overrides(list(overrides))
    return e.value


def test_a_misspelled_nested_key_gets_the_key_it_likely_meant() -> None:
    e = _override_error("scorers.eval_json_v2.jaccard_treshold=0.8")
    assert e.problem == (
        "unknown key 'jaccard_treshold' in scorers.eval_json_v2; "
        "did you mean 'scorers.eval_json_v2.jaccard_threshold'?"
    )


def test_a_nested_key_is_checked_under_the_group_option_chosen() -> None:
    e = _override_error("scorers=rag", "scorers.rag.relevance_cosine_wieght=0.8")
    assert "did you mean 'scorers.rag.relevance_cosine_weight'?" in e.problem


def test_a_nested_key_that_exists_passes() -> None:
    check_overrides(["scorers.eval_json_v2.jaccard_threshold=0.8", "tracking.experiment=x"])


def test_a_nested_key_added_with_plus_is_left_to_hydra() -> None:
    check_overrides(["+scorers.eval_json_v2.extra=1"])
