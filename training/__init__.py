"""training package of the CMLM garden: a run, from config to checkpoints.

  task             SentenceEncoderTask: the shared encoder, its tokenization
                   and the weighted objectives of `task.objectives` (one
                   Model Garden train step; checkpoint items by name)
  trainer          SentenceEncoderTrainer: Model Garden's trainer + examples/s, XLA on
                   any device, the non-finite guard, input position saved
  train            run: a config of run_config.build_config (experiment +
                   YAML + overrides, and what building it read), trained
  stages           multistage schedules as configs (section 4.2)
  run_dir          a run directory read back: params.yaml, tokenizer,
                   encoder; task.init_checkpoint resolved once
  import_run       pretrained BERT weights as a run at step 0
  fault_tolerance  SIGTERM checkpoints, interrupted-save repair, guards
  atomic           directories written whole or not at all
"""
