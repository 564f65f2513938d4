"""inference/input_paths.py: a path that is not there is one line naming its
flag; remote paths are left to the readers that take them."""
import pytest

from cmlm.inference import input_paths


def test_a_file_must_be_a_file_remote_only_where_the_reader_takes_it(
    tmp_path):
  text = tmp_path / "s.txt"
  text.write_text("A sentence.\n")
  input_paths.check_file(str(text), "--input")
  for path in (str(tmp_path / "none.txt"), str(tmp_path), ""):
    with pytest.raises(FileNotFoundError) as raised:
      input_paths.check_file(path, "--input")
    assert str(raised.value) == f"--input={path} is not a file."
  with pytest.raises(FileNotFoundError, match="gs://b/s.txt is not a file"):
    input_paths.check_file("gs://b/s.txt", "--source")  # read with open()
  input_paths.check_file("gs://b/s.txt", "--input", remote=True)


def test_each_local_part_of_a_model_must_exist(tmp_path):
  (tmp_path / "encoder").mkdir()
  encoder, missing = str(tmp_path / "encoder"), str(tmp_path / "none")
  input_paths.check_model(encoder)
  input_paths.check_model(f"{encoder},gs://b/preprocessor")
  with pytest.raises(FileNotFoundError) as raised:
    input_paths.check_model(missing, "--model_dir")
  assert str(raised.value) == f"--model_dir={missing} does not exist."
  with pytest.raises(FileNotFoundError) as raised:
    input_paths.check_model(f"{encoder},{missing}")
  assert str(raised.value) == (
      f"--model={encoder},{missing}: {missing} does not exist.")


def test_a_model_is_given_and_each_part_a_directory_or_a_checkpoint(tmp_path):
  """Every kind of model is a directory; `import --source` also takes a
  checkpoint's prefix (its .index beside it). No model: the flag is
  required."""
  notes = tmp_path / "notes.txt"
  notes.write_text("mine\n")
  (tmp_path / "ckpt-20.index").write_bytes(b"")
  for given, line in [
      ("", f"--model is required: {input_paths.MODEL_KINDS}."),
      (str(notes), f"--model={notes} is not a directory."),
      (f"{tmp_path},{notes}", f"--model={tmp_path},{notes}: {notes} is not a "
       "directory."),
      (str(tmp_path / "ckpt-20"), f"--model={tmp_path / 'ckpt-20'} does not "
       "exist.")]:
    with pytest.raises((FileNotFoundError, ValueError)) as raised:
      input_paths.check_model(given)
    assert str(raised.value) == line
  input_paths.check_model(str(tmp_path / "ckpt-20"), "--source",
                          checkpoint_prefix=True)
  with pytest.raises(FileNotFoundError, match="is not a directory"):
    input_paths.check_model(str(notes), "--source", checkpoint_prefix=True)
