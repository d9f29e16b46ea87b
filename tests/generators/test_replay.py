"""Generator `replay`: predictions JSONL matched to cases, with the file's hash as provenance."""

from __future__ import annotations

from ragtrack.core.hashing import sha1_file
from ragtrack.generators import build_generator
from ragtrack.inputs.eval_sets import load_eval_set


def test_replay_matches_and_counts(demo_files):
    es, _ = load_eval_set([demo_files["questions"], demo_files["qaset"]])
    gen = build_generator("replay", {"path": str(demo_files["bad"])}).generate(es.cases, "")
    assert (gen.n_missing, gen.n_unmatched, gen.unmatched_keys) == (1, 1, ["zz"])


def test_replay_records_the_file_sha1(demo_files):
    es, _ = load_eval_set([demo_files["questions"]])
    gen = build_generator("replay", {"path": str(demo_files["good"])}).generate(es.cases, "")
    assert gen.provenance == {"predictions_sha1": sha1_file(demo_files["good"])}
