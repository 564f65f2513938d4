"""The names `--strategy` and `runtime.mixed_precision_dtype` take (no
TensorFlow import: the command line defines its flags with them)."""

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "float16", "bfloat16")
