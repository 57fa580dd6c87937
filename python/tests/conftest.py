"""Shared helpers: the repository's paths, the relay-vm CLI, and JSON values (the CLI's
input and output forms) turned into the package's Python forms."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import relay_vm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def cli():
    """The relay-vm binary: $RELAY_VM, else the debug build `cargo test` leaves in target/."""
    path = Path(os.environ.get("RELAY_VM", ROOT / "target" / "debug" / "relay-vm"))
    if not path.exists():
        pytest.skip(f"{path} is not built (cargo build, or set RELAY_VM)")
    return path


def cli_run(*args):
    """The JSON lines `relay-vm run ARGS` prints on stdout."""
    out = subprocess.run([cli(), "run", *map(str, args)], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith(("{", "["))]


def from_json(j):
    """A JSON input or output value in the form the package takes and returns: tensors as
    NumPy arrays, `List` values as Python lists, other constructor values as relay_vm.Adt."""
    if isinstance(j, dict) and "dtype" in j:
        return np.array(j["data"], dtype=j["dtype"]).reshape(j["shape"])
    if isinstance(j, dict) and "con" in j:
        fields = [from_json(f) for f in j.get("fields", [])]
        if j["con"] == "Nil":
            return []
        if j["con"] == "Cons":
            return [fields[0], *fields[1]]
        return relay_vm.Adt(j["con"], *fields)
    if isinstance(j, list):
        return [from_json(x) for x in j]
    return j


def assert_same(got, expected):
    """Exact equality of two package values (arrays bit for bit)."""
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), f"{got!r} is not an array"
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), f"{got!r} != {expected!r}"
        for g, e in zip(got, expected):
            assert_same(g, e)
    else:
        assert got == expected
