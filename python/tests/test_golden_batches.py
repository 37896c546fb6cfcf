"""The loader's batches are bit-identical to the recorded golden checksums for every documented
option set (golden_batches.py; data/golden_batches.json).

The checksums were recorded before the loader's policy moved into C++. One change was
allowed and made: the rank split of shuffled multi-rank epochs moved from numpy's generator to
Philox, so the option sets with ``world_size > 1`` and ``shuffle=True`` were regenerated once
(see docs/guide/processes.md, "The data-parallel split"); every other option set, unshuffled multi-rank splits
included, still matches the checksums recorded from the old code. The heterogeneous option sets
were recorded from the Python assembly of typed batches and are matched by the C++ pipeline.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import golden_batches  # noqa: E402

GOLDEN = json.loads(golden_batches.GOLDEN_PATH.read_text())
OPTION_SETS = golden_batches.option_sets()


def test_every_option_set_has_a_golden_checksum():
    names = [name for name, _, _ in OPTION_SETS]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(GOLDEN), "regenerate with golden_batches.py --write"
    # Both kinds of option set are covered: unchanged ones and the regenerated rank splits.
    changed = [name for name, _, kwargs in OPTION_SETS
               if golden_batches.changed_by_rank_split(name, kwargs)]
    assert 0 < len(changed) < len(names)


@pytest.mark.parametrize("name, dataset, kwargs", OPTION_SETS, ids=[s[0] for s in OPTION_SETS])
def test_batches_match_golden_checksums(name, dataset, kwargs):
    result = golden_batches.run_option_set(dataset, kwargs)
    assert result == GOLDEN[name]


def test_checksum_sees_a_changed_batch():
    """The digest covers every field: a different seed gives different checksums."""
    name, dataset, kwargs = OPTION_SETS[0]
    other = golden_batches.run_option_set(dataset, {**kwargs, "seed": kwargs["seed"] + 1})
    assert other["num_batches"] == GOLDEN[name]["num_batches"]
    assert other["epochs"] != GOLDEN[name]["epochs"]
