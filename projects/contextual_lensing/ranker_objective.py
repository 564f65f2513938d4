"""The Ranker training module of contextual lensing (Kiros et al. 2020, 3.1).

Related pairs (translations: Multi30k, gettext, any bitext the bitext
pipeline reads) are embedded by the shared encoder, usually a frozen core
with a lens (`task.model.pooling_head`, `task.model.trainable_core=false`), and
ranked with VSE++'s max-violation hinge
(`ranking_loss.cross_replica_max_violation_loss`): cosine on
normalised vectors, in-batch negatives, both directions, margin alpha
(table 3: 0.1, 0.2 or 0.3). No head of its own: the lens is part of the
encoder, so it is exported with it.

The Classifier training module is the `nli` objective with a hidden layer
(`hidden_size`, table 3: 256, 512 or 1024; see `objectives/nli.py`).
"""
import dataclasses

from cmlm.data_pipelines import bitext_dataloader
from cmlm.projects.contextual_lensing import ranking_loss
from cmlm.objectives import base
from cmlm.objectives import bitext_retrieval


@dataclasses.dataclass
class RankerObjectiveConfig(base.with_data(bitext_dataloader.BitextDataConfig)):
  """Attributes: margin alpha of the hinge; `mask_duplicates`: pairs of the
  batch that repeat a pair's source or target are no negatives of it
  (`ranking_loss.duplicate_pairs`; false: VSE++ as published)."""
  type: str = "ranker"
  margin: float = 0.2
  mask_duplicates: bool = True


@base.register_objective("ranker")
class RankerObjective(bitext_retrieval.BitextRetrievalObjective):
  """Bitext pairs and their in-batch top-1 accuracy as `bitext_retrieval`;
  VSE++'s loss instead of the additive-margin softmax."""
  config_cls = RankerObjectiveConfig

  def check_data(self, data_config):
    if self.config.margin <= 0:
      raise ValueError("The ranker's margin must be above 0, got "
                       f"{self.config.margin}.")
    super().check_data(data_config)

  def compute_loss(self, features, outputs):
    ids = ((features["source_input_word_ids"],
            features["target_input_word_ids"])
           if self.config.mask_duplicates else (None, None))
    return ranking_loss.cross_replica_max_violation_loss(
        outputs["source_embedding"], outputs["target_embedding"],
        margin=self.config.margin, source_ids=ids[0], target_ids=ids[1])
