"""Training objectives over the shared sentence encoder, one module each.

  base              the seam: `Objective`, `ObjectiveConfig`, the registry and
                    `ObjectivesConfig` (the `task.objectives` mapping)
  cmlm              conditional MLM (sections 2-3)
  bitext_retrieval  additive-margin bitext retrieval (section 4.2)
  nli               cross-lingual NLI fine-tuning (section 4.3)

These are the CMLM paper's. Other papers' objectives live in their projects
(`projects/<name>/`) and register there, on the same seam. Adding an
objective: a module registering itself with `@base.register_objective("kind")`
(see docs/architecture.md, "Adding an objective").
"""

from cmlm.objectives import base  # noqa: F401
# The one list of objective modules; each registers its kind on import.
from cmlm.objectives import bitext_retrieval  # noqa: F401
from cmlm.objectives import cmlm  # noqa: F401
from cmlm.objectives import nli  # noqa: F401
