"""Every flag of flags.py sets exactly one config field (or one named Configs field), and sets it."""

import logging

import pytest
from absl import flags as absl_flags
from absl.testing import flagsaver

import flags


def test_every_flag_lands_in_exactly_one_place():
    destinations = flags.flag_destinations()
    assert len(destinations) > 40  # the module's own flags, not absl's
    assert {name: places for name, places in destinations.items() if len(places) != 1} == {
        "seed": ["pipeline.seed", "train.seed"]
    }


@pytest.fixture(autouse=True)
def absl_logger_level_kept():
    """Parsing flags sets absl's logger level from --verbosity: put it back, for later tests that capture logs."""
    level = logging.getLogger("absl").level
    yield
    logging.getLogger("absl").setLevel(level)


def _parsed(*argv):
    absl_flags.FLAGS.unparse_flags()
    absl_flags.FLAGS(["train.py", *argv])
    return flags.configs_from_flags()


@pytest.mark.parametrize("name", [n for n, places in flags.flag_destinations().items() if "." in places[0]])
def test_a_flag_changes_its_config_field(name):
    """Setting a flag to a value other than its default changes the field it names: no flag parses and is lost."""
    with flagsaver.flagsaver():
        default = _parsed()
        flag = absl_flags.FLAGS[name]
        kind, field = flags.flag_destinations()[name][0].split(".")
        if hasattr(flag.parser, "enum_values"):
            candidates = [v for v in flag.parser.enum_values if v != flag.default]
        else:
            candidates = {
                "bool": lambda: [not flag.default],
                "int": lambda: [(flag.default or 0) + 1, 1],
                "float": lambda: [(flag.default or 0.0) + 0.125, 0.5],
                "string": lambda: ["val_loss", "/tmp/flag-test-value", "grpc://127.0.0.1:5050"],
            }.get(flag.flag_type(), lambda: [["2", "4"]])()
        changed = None
        for value in candidates:
            try:
                absl_flags.FLAGS[name].value = value
                changed = flags.configs_from_flags()
                break
            except (ValueError, absl_flags.Error):
                continue
        assert changed is not None, f"--{name}: no other value was accepted"
        assert getattr(getattr(changed, kind), field) != getattr(getattr(default, kind), field), name


def test_the_help_names_every_mode_in_its_first_line():
    import subprocess
    import sys

    from conftest import REPO

    result = subprocess.run([sys.executable, "train.py", "--help"], capture_output=True, text=True, timeout=300,
                            cwd=REPO)
    first = result.stdout.strip().splitlines()[0]
    modes = flags.FLAGS["mode"].parser.enum_values
    assert modes == ["keras", "estimator", "tune", "predict"]
    assert all(mode in first for mode in modes), first
