"""experiments/mine_multi30k.py: the shuffled side's gold alignment is the
true one, the measures read planted pairs as found, and a results file's
command names no local folder."""
import os

import numpy as np
import pytest

from cmlm.experiments import mine_multi30k
from cmlm.experiments import unit_provenance
from tests import helpers

MULTI30K = os.path.join(helpers.SHARED_DATA, "bitext", "multi30k")


@pytest.mark.skipif(not os.path.isdir(MULTI30K), reason="needs the shared "
                    "Multi30k files")
def test_the_gold_pairs_undo_the_shuffle():
  english, german, gold = mine_multi30k.shuffled_multi30k(
      helpers.SHARED_DATA, 200, seed=3)
  from cmlm.data_pipelines import bitext  # pylint: disable=g-import-not-at-top
  pairs = bitext.read_bitext(f"{MULTI30K}/train.en.gz|{MULTI30K}/train.de.gz")
  assert [(english[i], german[j]) for i, j in sorted(gold)] == pairs[:200]
  assert german != [t for _, t in pairs[:200]]  # shuffled


def test_planted_pairs_are_mined_with_full_f1_and_exact_agreement():
  rng = np.random.default_rng(0)
  english = rng.normal(size=(400, 32)).astype(np.float32)
  order = rng.permutation(400)
  german = (english[order] + 0.05 * rng.normal(size=(400, 32))).astype(
      np.float32)
  gold = [(int(i), row) for row, i in enumerate(order)]
  results, approximate = mine_multi30k.measure(english, german, gold, 4)
  assert results["max/ratio"]["f1"] == 100.0
  assert results["intersection/distance"]["precision"] == 100.0
  for name in ("ivf", "hnsw"):
    assert approximate[name]["pairs_agreement"] >= 0.9


def test_a_results_command_names_no_local_folder():
  command = ("python experiments/mine_multi30k.py --data_dir=/data/x "
             "--work_dir /scratch/y --steps=400")
  assert unit_provenance.without_local_paths(
      command, ("data_dir", "work_dir")) == (
          "python experiments/mine_multi30k.py --data_dir=DATA_DIR "
          "--work_dir WORK_DIR --steps=400")
