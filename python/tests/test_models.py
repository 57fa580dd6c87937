"""The example models give, through the package, exactly what `relay-vm run --params` prints."""

import json

import pytest

import relay_vm
from conftest import EXAMPLES, assert_same, cli_run, from_json

MODELS = [
    ("treelstm/treelstm.relay", "treelstm/weights.safetensors", "treelstm/sst-test.jsonl", 20),
    ("charrnn/charrnn.relay", "charrnn/weights.safetensors", "charrnn/names.jsonl", 20),
    ("rnn/gru.relay", "rnn/gru.safetensors", "rnn/inputs.jsonl", 5),
]


@pytest.mark.parametrize("source, weights, inputs, n", MODELS, ids=[m[0] for m in MODELS])
def test_model_gives_the_cli_numbers(tmp_path, source, weights, inputs, n):
    lines = (EXAMPLES / inputs).read_text().splitlines()[:n]
    few = tmp_path / "inputs.jsonl"
    few.write_text("\n".join(lines) + "\n")
    expected = cli_run(EXAMPLES / source, "--params", EXAMPLES / weights, "--input", few)
    prog = relay_vm.compile(EXAMPLES / source, params=EXAMPLES / weights)
    assert len(expected) == n
    for line, want in zip(lines, expected):
        args = [from_json(a) for a in json.loads(line)["args"]]
        got = prog(*args)
        # Labelled inputs print the prediction and the output; others print the output.
        assert_same(got, from_json(want["output"] if "output" in want else want))


def test_treelstm_bench_reports_the_cli_figures():
    prog = relay_vm.compile(EXAMPLES / "treelstm/treelstm.relay", params=EXAMPLES / "treelstm/weights.safetensors")
    line = json.loads((EXAMPLES / "treelstm/sst-test.jsonl").read_text().splitlines()[0])
    stats = prog.bench([from_json(line["args"][0])], reps=2)
    assert stats["inputs"] == 1 and stats["reps"] == 2
    assert 0 < stats["p50_ms"] <= stats["max_ms"] and stats["throughput"] > 0
    assert "tensor allocations" in stats["memory"]


def test_weights_specialise_the_program_as_run_params_does():
    plain = relay_vm.compile(EXAMPLES / "treelstm/treelstm.relay")
    bound = relay_vm.compile(EXAMPLES / "treelstm/treelstm.relay", params=EXAMPLES / "treelstm/weights.safetensors")
    assert bound.inputs == ["tree"]
    assert len(bound.kernels()) < len(plain.kernels())
    assert "tree" in plain.inputs and "embedding" in plain.inputs
