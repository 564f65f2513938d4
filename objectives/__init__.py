"""Training objectives over the shared sentence encoder, one module each.

  base              the seam: `Objective`, `ObjectiveConfig`, the registry and
                    `ObjectivesConfig` (the `task.objectives` mapping)
  cmlm              conditional MLM (sections 2-3)
  bitext_retrieval  additive-margin bitext retrieval (section 4.2)
  nli               cross-lingual NLI fine-tuning (section 4.3)
  misad             MiSAD + MLM on PMI n-grams (Li et al. 2020, 3.2-3.3)
  simcse            unsupervised SimCSE (cmlm_cse_2023.txt, eq. 4)
  cmlm_cse          SimCSE + conditional MLM auxiliary network (eq. 6)
  masked_lm         InfoXLM's MMLM and TLM (Chi et al. 2021, 3.1-3.2)
  xlco              InfoXLM's cross-lingual contrast with momentum (3.3)
  ranker            contextual lensing's VSE++ Ranker (Kiros et al. 2020, 3.1)

Adding an objective: a new module here registering itself with
`@base.register_objective("kind")`, imported in the list below (see BUILD.md,
"Adding an objective").
"""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)

from objectives import base  # noqa: F401
# The one list of objective modules; each registers its kind on import.
from objectives import bitext_retrieval  # noqa: F401
from objectives import cmlm  # noqa: F401
from objectives import nli  # noqa: F401
from objectives import misad  # noqa: F401
from objectives import simcse  # noqa: F401
from objectives import cmlm_cse  # noqa: F401
from objectives import masked_lm  # noqa: F401
from objectives import xlco  # noqa: F401
from objectives import ranker  # noqa: F401
