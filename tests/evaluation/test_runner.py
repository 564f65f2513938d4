"""The eval runner: task registry, data read before the model, the report."""
import json
import os
import re

import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.commands import eval as eval_command
from cmlm.evaluation import encoders
from cmlm.evaluation import runner
from cmlm.evaluation import tasks as tasks_lib
from cmlm.evaluation.task_data import EvalOptions


def bag_of_words_encoder(sentences, batch_size=256):
  del batch_size
  vectors = np.zeros([len(sentences), 32], np.float32)
  for row, sentence in enumerate(sentences):
    for word in sentence.lower().split():
      vectors[row, sum(map(ord, word)) % 32] += 1
  return vectors


def _senteval_layout(root):
  """A tiny --data_dir in SentEval's layout: STS-B test, CR and SICK."""
  rng = np.random.default_rng(0)
  words = ["cat", "dog", "sun", "car", "tree", "milk", "song", "rain"]
  lines = []
  for i in range(60):
    first = list(rng.choice(words, 4))
    overlap = int(rng.integers(0, 5))
    second = first[:overlap] + list(rng.choice(["x", "y", "z"], 4 - overlap))
    lines.append(f"main\tnews\t2016\t{i:04d}\t{overlap * 1.25}\t"
                 f"{' '.join(first)}\t{' '.join(second)}")
  os.makedirs(root / "sts" / "STSBenchmark")
  (root / "sts" / "STSBenchmark" / "sts-test.csv").write_text(
      "\n".join(lines) + "\n")
  os.makedirs(root / "transfer" / "CR")
  (root / "transfer" / "CR" / "custrev.pos").write_text(
      "".join(f"great {w} love it\n" for w in words * 4))
  (root / "transfer" / "CR" / "custrev.neg").write_text(
      "".join(f"awful {w} hate it\n" for w in words * 4))
  return str(root)


def test_report_holds_every_task_in_json_and_markdown(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  options = EvalOptions(model="toy", report_dir=str(tmp_path / "report"),
                        show_progress=False)
  encoder = encoders.CachedEncoder(bag_of_words_encoder, show_progress=False)
  report = runner.run_evaluation("toy", ["sts-b", "cr"], options, data_dir,
                                 encoder=encoder)
  with open(tmp_path / "report" / "report.json") as f:
    saved = json.load(f)
  assert saved == report
  assert list(saved["tasks"]) == ["sts-b", "cr"]
  assert saved["tasks"]["sts-b"]["spearman"] > 80  # word overlap is the gold
  assert saved["tasks"]["sts-b"]["paper"] == "table 2"
  assert saved["tasks"]["cr"]["accuracy"] == 100.0
  assert saved["tasks"]["cr"]["data"][0].endswith("custrev.pos")
  # How a model card files each result: the task's own entry, recorded.
  assert saved["tasks"]["sts-b"]["card"] == {
      "task_type": "sentence-similarity",
      "task_name": "Semantic textual similarity", "dataset": "STS Benchmark"}
  assert saved["tasks"]["cr"]["card"]["task_type"] == "text-classification"
  markdown = (tmp_path / "report" / "report.md").read_text()
  assert "| sts-b | table 2 | spearman |" in markdown
  assert ("| cr | table 1 | accuracy | 100.00 | 64 | 10-fold "
          "cross-validation |") in markdown


def test_a_report_dir_that_is_a_file_is_refused_before_any_task(tmp_path):
  """Said before the data is read and the model evaluated, not when the
  report is written at the end."""
  (tmp_path / "taken").write_text("a file\n")
  encoded = []

  def encoder(sentences):
    encoded.append(len(sentences))
    return bag_of_words_encoder(sentences)
  data_dir = _senteval_layout(tmp_path / "data")
  for report_dir, what in (
      (tmp_path / "taken", "is a file; name a directory."),
      (tmp_path / "taken" / "report", f"is under {tmp_path / 'taken'}, "
       "which is a file; name a path in a directory.")):
    options = EvalOptions(report_dir=str(report_dir), show_progress=False)
    with pytest.raises(ValueError) as raised:
      runner.run_evaluation("toy", ["sts-b"], options, data_dir,
                            encoder=encoder)
    assert str(raised.value) == f"--report_dir={report_dir} {what}"
  assert not encoded
  assert (tmp_path / "taken").read_text() == "a file\n"


def test_groups_skip_missing_data_but_named_tasks_need_it(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  chosen, skipped = runner.resolve_tasks(["sts"], data_dir, {})
  assert [task.name for task, _ in chosen] == ["sts-b"]
  assert "sts12" in skipped and "no data at" in skipped["sts12"]
  options = EvalOptions(report_dir=str(tmp_path / "report"))
  with pytest.raises(FileNotFoundError, match=r"STS12-en-test is not a "
                     "directory"):
    runner.run_evaluation("toy", ["sts12"], options, data_dir,
                          encoder=bag_of_words_encoder)
  with pytest.raises(ValueError, match="Unknown task 'sts17' in --tasks"):
    runner.run_evaluation("toy", ["sts17"], options, data_dir,
                          encoder=bag_of_words_encoder)
  assert not os.path.exists(tmp_path / "report")


def test_file_tasks_need_a_data_dir_said_in_one_line(tmp_path):
  """No default points outside the repository: a task read from --data_dir
  without one is one line naming the layout and the page on the data."""
  options = EvalOptions(report_dir=str(tmp_path / "report"))
  (tmp_path / "not_a_model").mkdir()  # said before the model would load
  for names in (["sts-b"], ["transfer"]):
    with pytest.raises(ValueError) as error:
      eval_command.main([f"--model={tmp_path / 'not_a_model'}",
                         f"--tasks={','.join(names)}",
                         f"--report_dir={tmp_path / 'report'}"])
    message = str(error.value)
    assert "\n" not in message and "--data_dir" in message
    assert "docs/benchmark_data.md" in message
  assert "files under DIR/sts/STSBenchmark)" in str(
      pytest.raises(ValueError, runner.resolve_tasks, ["sts-b"], None,
                    {}).value)
  # --task_data alone is enough for the task it names.
  data_dir = _senteval_layout(tmp_path / "data")
  sts_b = os.path.join(data_dir, "sts", "STSBenchmark")
  chosen, _ = runner.resolve_tasks(["sts-b"], None, {"sts-b": sts_b})
  assert chosen[0][1] == sts_b
  # mining and langdist need their files, or Multi30k under --bitext_dir;
  # in a group they are skipped without them.
  with pytest.raises(ValueError, match="mining needs --mining_source, "
                     "--mining_target and --mining_gold .* or --bitext_dir"):
    runner.run_evaluation("toy", ["mining"], options, data_dir,
                          encoder=bag_of_words_encoder)
  _, skipped = runner.resolve_tasks(["multilingual"], data_dir, {}, options)
  assert skipped["langdist"].startswith("no data: it needs --langdist_pool")
  assert "mining" in skipped and not os.path.exists(tmp_path / "report")
  options.bitext_dir = str(tmp_path / "bitext")
  _, skipped = runner.resolve_tasks(["multilingual"], data_dir, {}, options)
  assert "mining" not in skipped and "langdist" not in skipped


def test_a_malformed_line_stops_the_run_before_the_model_loads(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  with open(os.path.join(data_dir, "sts", "STSBenchmark", "sts-test.csv"),
            "a") as f:
    f.write("main\tnews\t2016\t9999\tnot-a-score\ta\tb\n")
  options = EvalOptions(report_dir=str(tmp_path / "report"))
  with pytest.raises(ValueError, match=r"sts-test.csv, line 61: the score "
                     "'not-a-score' is not a number"):
    # The model does not exist: the data error must come first.
    runner.run_evaluation(str(tmp_path / "no_model"), ["cr", "sts-b"],
                          options, data_dir)


def test_task_data_points_one_task_elsewhere(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  other = tmp_path / "my_cr"
  os.rename(os.path.join(data_dir, "transfer", "CR"), other)
  chosen, _ = runner.resolve_tasks(["cr"], data_dir, runner.parse_assignments(
      f"cr={other}", "task_data"))
  assert chosen[0][1] == str(other)
  with pytest.raises(ValueError, match="--task_data takes NAME=PATH items"):
    runner.parse_assignments("cr", "task_data")
  with pytest.raises(ValueError, match="unknown tasks: cx"):
    runner.resolve_tasks(["cr"], data_dir, {"cx": str(other)})
  # A path for a task --tasks does not run: said, not ignored; one of a
  # group --tasks names is taken.
  with pytest.raises(ValueError, match=r"--task_data names mr, which --tasks "
                     r"does not run \(--tasks=cr\)"):
    runner.resolve_tasks(["cr"], data_dir, {"mr": str(other)})
  chosen, _ = runner.resolve_tasks(["transfer"], data_dir, {"cr": str(other)})
  assert (tasks_lib.TASKS["cr"], str(other)) in chosen


def test_max_examples_draws_a_fixed_subset_of_each_split(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  options = EvalOptions(report_dir=str(tmp_path / "r"), max_examples=20,
                        show_progress=False)
  first = runner.run_evaluation("toy", ["sts-b", "cr"], options, data_dir,
                                encoder=bag_of_words_encoder)
  again = runner.run_evaluation("toy", ["sts-b"], options, data_dir,
                                encoder=bag_of_words_encoder)
  assert first["tasks"]["sts-b"]["num_pairs"] == 20
  assert first["tasks"]["cr"]["num_examples"] == 20
  assert (first["tasks"]["sts-b"]["spearman"] ==
          again["tasks"]["sts-b"]["spearman"])


def test_cached_encoder_encodes_each_sentence_once():
  calls = []
  def embed(batch):
    calls.append(list(batch))
    return np.array([[len(s), 1.0] for s in batch])
  encoder = encoders.CachedEncoder(embed, show_progress=False)
  first = encoder(["a", "bb", "a", "ccc"], batch_size=2)
  second = encoder(["ccc", "dddd"], batch_size=2)
  # Each new sentence once, in batches ordered longest first.
  assert calls == [["ccc", "bb"], ["a"], ["dddd"]]
  np.testing.assert_array_equal(first[:, 0], [1, 2, 1, 3])
  np.testing.assert_array_equal(second[:, 0], [3, 4])
  assert encoder.num_encoded == 4


def test_the_eval_command_reads_its_flags_and_fails_on_the_data_first(
    tmp_path):
  bad = tmp_path / "sts-test.csv"
  bad.write_text("g\tf\t2012\t0001\t4.0\ta\tb\ng\tf\t2012\t0002\t3.0\tonly\n")
  argv = ["--tasks=sts-b", f"--task_data=sts-b={bad}",
          f"--report_dir={tmp_path / 'report'}"]
  (tmp_path / "not_a_model").mkdir()  # the data is read before it loads
  with pytest.raises(ValueError) as error:
    eval_command.main([f"--model={tmp_path / 'not_a_model'}"] + argv)
  assert str(error.value) == (
      f"{bad}, line 2: expected 7 tab-separated fields (genre, filename, "
      "year, id, score, sentence1, sentence2), found 6.")
  assert not (tmp_path / "report").exists()
  with pytest.raises(ValueError, match="--model is required"):
    eval_command.main(argv)


def test_a_language_pool_too_small_to_fit_is_refused_before_the_model_loads(
    tmp_path):
  (tmp_path / "not_a_model").mkdir()  # its loading would fail: never tried
  one = tmp_path / "one.en"
  one.write_text("just one\n")
  argv = [f"--model={tmp_path / 'not_a_model'}", "--tasks=langdist",
          f"--langdist_pool=en={one}", f"--report_dir={tmp_path / 'report'}"]
  with pytest.raises(ValueError, match=r"^--langdist_size must be 2 or more "
                     r"\(each language's principal component is fitted on "
                     r"its sentences\), got 0\.$"):
    eval_command.main(argv + ["--langdist_size=0"])
  with pytest.raises(ValueError, match=re.escape(
      f"The pool files ({one}) hold 1 line(s) each; fitting each language's "
      "principal component needs 2 or more.")):
    eval_command.main(argv)
  assert not (tmp_path / "report").exists()


class _Preprocessor(tf.Module):
  """A TF-Hub style preprocessor: strings -> input_word_ids [batch, 2]."""

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def __call__(self, sentences):
    length = tf.strings.length(sentences)
    ids = tf.stack([length, 2 * length], axis=1)
    return {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids)}


class _Encoder(tf.Module):
  """A TF-Hub style encoder whose "default" is the ids as floats."""

  @tf.function
  def __call__(self, inputs, training=False):
    del training
    return {"default": tf.cast(inputs["input_word_ids"], tf.float32)}


def test_tf_hub_pair_in_one_directory_or_two(tmp_path):
  preprocessor, encoder = _Preprocessor(), _Encoder()
  ids = tf.TensorSpec([None, None], tf.int32)
  encoder.__call__.get_concrete_function(  # traces the one call TF-Hub makes
      {"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids},
      training=False)
  tf.saved_model.save(preprocessor, str(tmp_path / "pair" / "preprocessor"))
  tf.saved_model.save(encoder, str(tmp_path / "pair" / "encoder"))
  sentences = ["abc", "", "a longer one"]
  expected = [[3, 6], [0, 0], [12, 24]]
  for model in (str(tmp_path / "pair"), f"{tmp_path}/pair/encoder,"
                f"{tmp_path}/pair/preprocessor"):
    encode = encoders.load_encoder(model, show_progress=False)
    np.testing.assert_array_equal(encode(sentences), expected)
  with pytest.raises(FileNotFoundError, match="nothing does not exist"):
    encoders.load_encoder(f"{tmp_path}/pair/encoder,{tmp_path}/nothing")
  (tmp_path / "nothing").mkdir()
  with pytest.raises(FileNotFoundError, match="nothing is not a SavedModel"):
    encoders.load_encoder(f"{tmp_path}/pair/encoder,{tmp_path}/nothing")
  pair = f"{tmp_path}/pair/encoder,{tmp_path}/pair/encoder"
  with pytest.raises(ValueError, match=(
      f"^--model={re.escape(pair)}: the second directory is not a "
      "preprocessor \\(it does not take text\\); [^\n]*$")):
    encoders.load_encoder(pair)


def test_mining_and_language_distribution_from_the_users_files(tmp_path):
  words = ["cat", "dog", "sun", "car", "tree", "milk", "song", "rain", "sky"]
  (tmp_path / "source.txt").write_text(
      "".join(f"s{i}\t{w} {w}\n" for i, w in enumerate(words)))
  (tmp_path / "target.txt").write_text("".join(f"{w}\n" for w in words[::-1]))
  (tmp_path / "gold.txt").write_text(
      "".join(f"s{i}\t{len(words) - i}\n" for i in range(len(words))))
  (tmp_path / "pool.en").write_text("".join(f"{w}\n" for w in words))
  (tmp_path / "pool.xx").write_text("".join(f"{w} xx\n" for w in words))
  options = EvalOptions(
      report_dir=str(tmp_path / "report"), show_progress=False,
      mining_source=str(tmp_path / "source.txt"),
      mining_target=str(tmp_path / "target.txt"),
      mining_gold=str(tmp_path / "gold.txt"),
      langdist_pool={"en": str(tmp_path / "pool.en"),
                     "xx": str(tmp_path / "pool.xx")}, langdist_k=3)
  vocabulary = {w: i for i, w in enumerate(words + ["xx"])}
  def one_hot_words(sentences, batch_size=256):
    del batch_size
    vectors = np.zeros([len(sentences), len(vocabulary)])
    for row, sentence in enumerate(sentences):
      for word in sentence.split():
        vectors[row, vocabulary[word]] += 1
    return vectors
  report = runner.run_evaluation("toy", ["mining", "langdist"], options,
                                 encoder=one_hot_words)
  mining = report["tasks"]["mining"]
  assert mining["f1"] == 100.0 and mining["num_gold"] == len(words)
  langdist = report["tasks"]["langdist"]
  assert langdist["uniform_share"] == 50.0
  with open(tmp_path / "report" / "language_distribution.png", "rb") as f:
    assert f.read(4) == b"\x89PNG"
  markdown = (tmp_path / "report" / "report.md").read_text()
  assert "| ratio margin | 100.00 |" in markdown
  assert "![langdist](language_distribution.png)" in markdown
  options.mining_gold = None
  with pytest.raises(ValueError, match="mining needs all of --mining_source"):
    runner.run_evaluation("toy", ["mining"], options,
                          encoder=bag_of_words_encoder)


@pytest.mark.parametrize("line, found", [("s0\tt0\tx", 3), ("s0 t0 x", 3),
                                         ("s0", 1)])
def test_a_gold_line_is_read_and_refused_as_the_help_says(tmp_path, line,
                                                           found):
  (tmp_path / "source.txt").write_text("s0\tcat\ns1\tdog\n")
  (tmp_path / "target.txt").write_text("t0\tcat\nt1\tdog\n")
  gold = tmp_path / "gold.txt"
  gold.write_text(f"s1 t1\n{line}\n")  # a space, or a TAB, between the ids
  options = EvalOptions(report_dir=str(tmp_path / "report"),
                        show_progress=False,
                        mining_source=str(tmp_path / "source.txt"),
                        mining_target=str(tmp_path / "target.txt"),
                        mining_gold=str(gold))
  with pytest.raises(ValueError) as raised:
    runner.run_evaluation("toy", ["mining"], options,
                          encoder=bag_of_words_encoder)
  assert str(raised.value) == (
      f"{gold}, line 2: expected 2 fields (source_id, target_id) separated "
      f"by a TAB, or by one space on a line without a TAB; found {found}.")
  help_text = " ".join(eval_command.FLAGS["mining_gold"].help.split())
  assert ("'SOURCE_ID TAB TARGET_ID' a line (or one space in place of the "
          "TAB)") in help_text
