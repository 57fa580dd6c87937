"""Every failure is a Python exception that says what went wrong."""

import numpy as np
import pytest

import relay_vm

TRAP = """
def @first_some(%x: Option[int32]) -> int32 {
  match? (%x) {
    Some(%y) => %y,
  }
}
"""


def test_a_compile_error_is_the_rustc_style_diagnostic():
    with pytest.raises(relay_vm.CompileError) as e:
        relay_vm.compile(text="def @main(%x: float32) { %y }")
    message = str(e.value)
    assert "error: undeclared variable `%y`" in message
    assert "--> <string>:1:26" in message and "did you mean `%x`?" in message
    with pytest.raises(relay_vm.CompileError):
        relay_vm.parse("def @main( {")


def test_a_trap_names_the_function_and_instruction():
    prog = relay_vm.compile(text=TRAP, entry="first_some")
    assert prog(relay_vm.Some(4)) == 4
    with pytest.raises(relay_vm.Trap) as e:
        prog(relay_vm.Nothing)
    assert "match" in e.value.message
    assert not hasattr(e.value, "function") and not hasattr(e.value, "pc"), "stack[0] says it"
    (function, defined_at, pc, at), *callers = e.value.stack
    assert function == "first_some" and isinstance(pc, int) and defined_at.startswith("<string>:")
    assert str(e.value).startswith(f"trap in `first_some` at instruction {pc}: ")
    assert at == "<string>:3:3", "the `match?`, not the definition"
    assert isinstance(e.value, relay_vm.RelayError)


def test_inputs_that_do_not_fit_are_rejected():
    prog = relay_vm.compile(text="def @main(%x: Tensor[(2), int32], %n: int32) { add(%x, %n) }")
    ok = prog(np.array([1, 2], dtype=np.int32), 3)
    np.testing.assert_array_equal(ok, [4, 5])
    np.testing.assert_array_equal(prog(n=1, x=[1, 2]), [2, 3])
    with pytest.raises(ValueError, match="takes 2 input"):
        prog(np.array([1, 2], dtype=np.int32))
    with pytest.raises(ValueError, match="argument 1"):
        prog(np.array([1, 2, 3], dtype=np.int32), 3)
    with pytest.raises(TypeError, match="expected int32 elements"):
        prog(np.array([1.5, 2.0]), 3)
    with pytest.raises(ValueError, match="no input `%y`"):
        prog(y=1)
    with pytest.raises(ValueError, match="given twice"):
        prog([1, 2], 3, x=[1, 2])


def test_files_that_cannot_be_used_raise_relay_error(tmp_path):
    with pytest.raises(relay_vm.RelayError, match="cannot read"):
        relay_vm.compile(tmp_path / "missing.relay")
    with pytest.raises(ValueError, match="either a path or text"):
        relay_vm.compile()
    with pytest.raises(ValueError, match="device"):
        relay_vm.compile(text="def @main() { 1 }", device="tpu")
