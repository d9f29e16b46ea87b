"""`ragtrack.run.trust`: someone else's config chooses no server, key variable, cache, path or model."""

from __future__ import annotations

import pytest

from ragtrack.core.errors import InputError
from ragtrack.run.trust import Caller, Refused, apply_overrides, reach_keys, settle

EVIL = "http://127.0.0.1:9/v1"


def _judge(**params):
    return {"scorers": {"rubric_judge": {"base_url": EVIL, "model": "m", **params}}}


def _refused(config, section="scorers", caller=None):
    with pytest.raises(Refused) as ei:
        settle(config, section, caller or Caller(), where="config.yaml")
    return {s.key for s in ei.value.settings}, str(ei.value)


def test_a_server_the_config_names_is_refused_with_the_option_that_settles_it():
    keys, message = _refused(_judge())
    assert keys == {"scorers.rubric_judge.base_url"}
    assert f"scorers.rubric_judge.base_url = '{EVIL}' (a server to call): give --llm-base-url URL" in message


def test_the_callers_server_replaces_the_configs_with_a_note():
    out = settle(_judge(), "scorers", Caller(llm_base_url="http://mine/v1"), where="c")
    assert out.config["scorers"]["rubric_judge"]["base_url"] == "http://mine/v1"
    assert out.notes == [
        f"scorers.rubric_judge.base_url: the run's '{EVIL}' replaced by yours (--llm-base-url)"
    ]


def test_the_configs_key_variable_is_never_read():
    out = settle(
        _judge(api_key_env="AWS_SECRET_ACCESS_KEY"),
        "scorers",
        Caller(llm_base_url="http://mine/v1"),
        where="c",
    )
    assert out.config["scorers"]["rubric_judge"]["api_key_env"] is None
    assert "scorers.rubric_judge.api_key_env: the run's 'AWS_SECRET_ACCESS_KEY' not used; no key" in out.notes


def test_a_default_key_variable_is_not_read_either():
    out = settle(_judge(), "scorers", Caller(llm_base_url="http://mine/v1"), where="c")
    assert out.config["scorers"]["rubric_judge"]["api_key_env"] is None


def test_the_callers_key_variable_is_used():
    caller = Caller(llm_base_url="http://mine/v1", llm_api_key_env="MY_KEY")
    assert (
        settle(_judge(), "scorers", caller, where="c").config["scorers"]["rubric_judge"]["api_key_env"]
        == "MY_KEY"
    )


def test_the_configs_cache_folder_is_replaced_by_the_callers_default():
    out = settle(_judge(cache_dir="/elsewhere"), "scorers", Caller(llm_base_url="http://mine/v1"), where="c")
    assert out.config["scorers"]["rubric_judge"]["cache_dir"] is None
    assert (
        "scorers.rubric_judge.cache_dir: the run's '/elsewhere' not used; your own default cache folder"
        in out.notes
    )


def test_a_file_the_config_names_is_refused():
    keys, _ = _refused(_judge(prompt_path="/etc/passwd"), caller=Caller(llm_base_url="http://mine/v1"))
    assert keys == {"scorers.rubric_judge.prompt_path"}


def test_a_file_the_caller_sets_is_used():
    caller = Caller(llm_base_url="http://mine/v1", overrides=["scorers.rubric_judge.prompt_path=/mine.md"])
    config = apply_overrides(_judge(prompt_path="/etc/passwd"), caller.overrides)
    assert (
        settle(config, "scorers", caller, where="c").config["scorers"]["rubric_judge"]["prompt_path"]
        == "/mine.md"
    )


def test_a_nested_llm_block_is_walked():
    config = {
        "scorers": {"rag": {"backend": "llm", "llm": {"base_url": EVIL, "model": "m", "prompt_dir": "/p"}}}
    }
    keys, _ = _refused(config)
    assert keys == {"scorers.rag.llm.base_url", "scorers.rag.llm.prompt_dir"}


def test_a_model_other_than_the_default_is_refused():
    keys, _ = _refused({"scorers": {"rag": {"model": "/home/someone/model"}}})
    assert keys == {"scorers.rag.model"}


def test_defaults_and_offline_scorers_pass_untouched():
    config = {"scorers": {"rag": {"model": "all-MiniLM-L6-v2"}, "eval_json_v2": None}, "gates": {}}
    assert settle(config, "scorers", Caller(), where="c").config == config


def test_an_index_corpus_folder_is_refused_unless_the_caller_names_one():
    index = {"index": {"name": "i", "corpus": {"dir": "/x"}, "chunker": {"size": 10}, "embedder": {}}}
    keys, _ = _refused(index, "index")
    assert keys == {"index.corpus.dir"}
    caller = Caller(overrides=["index.corpus.dir=/mine"])
    config = apply_overrides(index, caller.overrides, sections=("index",))
    assert settle(config, "index", caller, where="c").config["index"]["corpus"]["dir"] == "/mine"


def test_reach_keys_lists_the_settable_keys_of_the_configs_scorers():
    keys = reach_keys({"scorers": {"rag": None}}, "scorers")
    assert {"scorers.rag.model", "scorers.rag.llm.base_url", "scorers.rag.llm.api_key_env"} <= keys
    assert "scorers.rag.relevance_cosine_weight" not in keys


def test_overrides_outside_only_are_refused_naming_them():
    with pytest.raises(InputError, match="scorers.rag.relevance_cosine_weight"):
        apply_overrides(
            {"scorers": {"rag": None}},
            ["scorers.rag.relevance_cosine_weight=0.1"],
            only={"scorers.rag.model"},
        )


def _rag(**params):
    llm = {"base_url": EVIL, "model": "m", "api_key_env": "AWS_SECRET_ACCESS_KEY"}
    return {"scorers": {"rag": {"llm": llm, **params}}}


def test_the_llm_block_of_an_offline_scorer_is_not_settled_and_not_carried():
    out = settle(_rag(), "scorers", Caller(), where="c")
    assert "llm" not in out.config["scorers"]["rag"] and out.notes == []


def test_the_llm_block_of_an_llm_backend_is_refused_as_before():
    keys, _ = _refused(_rag(backend="llm"))
    assert keys == {"scorers.rag.llm.base_url"}
