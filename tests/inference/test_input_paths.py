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
