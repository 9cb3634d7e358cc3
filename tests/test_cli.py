"""The `hrl` CLI: a bad config fails before training, naming the key; usage errors; the
subcommands."""

from __future__ import annotations

import pytest
from tiny_runs import write

from hrl import cli


def test_cli_rejects_bad_config_before_training(tmp_path, capsys):
    path = write(tmp_path, "algo: dqn\ntrain: {batch_size: big}\n")
    rc = cli.main(["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "train.batch_size" in err and "expected int" in err
    assert not (tmp_path / "run").exists()  # failed before anything was created


def test_cli_usage_errors(tmp_path, capsys):
    assert cli.main(["train"]) == 2
    assert "missing CONFIG" in capsys.readouterr().err
    assert cli.main(["train", "--resume", str(tmp_path)]) == 2
    assert "config.yaml" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["nonsense"])


def test_cli_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    assert "train" in capsys.readouterr().out
