"""Training objectives over the shared sentence encoder, one module each.

  base              the seam: `Objective`, `ObjectiveConfig`, the registry and
                    `ObjectivesConfig` (the `task.objectives` mapping)
  cmlm              conditional MLM (sections 2-3)
  bitext_retrieval  additive-margin bitext retrieval (section 4.2)
  nli               cross-lingual NLI fine-tuning (section 4.3)

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
