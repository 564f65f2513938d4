"""`python -m cmlm pcr`: fit each language's principal component (5.2).

  python -m cmlm pcr --model_dir=RUN --input=en=sample.en,de=sample.de \
      [--sample_size=1000]

Each input file holds sentences of one language, one a line (the first
`--sample_size` non-empty lines are used). The trained encoder embeds them, and
each language's first principal component is written to
`RUN/pcr_components.json`, where `python -m cmlm export` finds it and adds the
`serving_pcr` signature (sentences + language codes) to the serving model.
"""
from typing import Dict, List

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import unk_rate
from cmlm.inference import embedders
from cmlm.inference import text_inputs
from cmlm.modeling import principal_component_removal as pcr
from cmlm.training import run_dir


def read_samples(spec: str, sample_size: int) -> Dict[str, List[str]]:
  """{language: up to sample_size non-empty lines} of 'lang=file,...'."""
  samples = {}
  for lang, path in corpus.parse_language_files(spec).items():
    lines = [s for s in text_inputs.read_input(path, "txt") if s.strip()]
    if len(lines) < 2:
      raise ValueError(f"{path} has {len(lines)} non-empty line(s); fitting "
                       f"the component of {lang!r} needs 2 or more.")
    samples[lang] = lines[:sample_size]
  return samples


def fit_for_model(model_dir: str, spec: str, sample_size: int = 1000,
                  checkpoint: str = None) -> pcr.LanguageComponents:
  """Fits and saves the components of the model trained in `model_dir`."""
  if not spec:
    raise ValueError("pcr needs --input=LANG=FILE,LANG=FILE (sentences of "
                     "each language, one a line).")
  if sample_size < 2:
    raise ValueError(f"--sample_size must be 2 or more (a principal "
                     f"component is fitted on them), got {sample_size}.")
  samples = read_samples(spec, sample_size)
  # The run's own tokenization (vocabulary, casing, text normalization,
  # length): the components are fitted on what the exported model serves.
  run_dir.check_run_dir(model_dir)  # the components are saved beside it
  embedder = embedders.load_embedder(model_dir, checkpoint)
  embeddings = {}
  for lang, sentences in samples.items():
    unk_rate.check(embedder.tokenization, sentences,
                   f"the {lang} sample", refuse=False,
                   owner=f"{model_dir}'s task.tokenization")
    print(f"{lang}: embedding {len(sentences)} sentences", flush=True)
    embeddings[lang] = embedder.embed(sentences, batch_size=256)
  components = pcr.LanguageComponents.fit(embeddings)
  path = components.save(model_dir)
  print(f"Wrote the principal components of {', '.join(components.languages)}"
        f" to {path}", flush=True)
  return components
