"""Values cross the boundary intact: tensors of every dtype and rank, tuples, lists, ADTs;
executables round-trip through save(); Python threads run at once."""

import threading

import numpy as np
import pytest

import relay_vm

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 2)])
def test_tensors_of_every_dtype_round_trip(dtype, shape):
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    prog = relay_vm.compile(text=f"def @main(%x: Tensor[({dims}), {dtype}]) {{ (%x, %x) }}")
    x = (np.arange(np.prod(shape, dtype=int)) % 2 == 1 if dtype == "bool" else np.arange(np.prod(shape, dtype=int)) * 3)
    x = np.asarray(x).astype(dtype).reshape(shape)
    a, b = prog(x)
    for got in (a, b):
        assert got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_array_equal(got, x)


def test_float16_arrays_compute_in_float32_and_round_once():
    prog = relay_vm.compile(text="def @main(%x: Tensor[(3), float16]) { add(%x, 1f16) }")
    got = prog(np.array([2048, 0.5, -3], dtype=np.float16))
    # 2049 is exact in float32 and ties to even, 2048, in float16.
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array([2048, 1.5, -2], dtype=np.float16))


def test_bfloat16_arrays_are_ml_dtypes_arrays():
    import ml_dtypes  # pinned in .ci/requirements.txt (onnx needs it too)
    prog = relay_vm.compile(text="def @main(%x: Tensor[(3), bfloat16]) { (add(%x, 1bf16), %x) }")
    x = np.array([256, 0.5, 70000], dtype=ml_dtypes.bfloat16)
    summed, same = prog(x)
    # 257 ties to even, 256, in bfloat16's 8-bit significand; 70000 is bfloat16's 70144.
    assert summed.dtype == ml_dtypes.bfloat16 and same.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(summed.astype(np.float32), [256, 1.5, 70144])
    np.testing.assert_array_equal(same, x)
    # float32 values convert to bfloat16 (a same-kind cast), rounding to nearest even.
    np.testing.assert_array_equal(prog(np.float32([1, 2, 3]))[1].astype(np.float32), [1, 2, 3])


def test_bfloat16_without_ml_dtypes_is_a_type_error(monkeypatch):
    prog = relay_vm.compile(text="def @main(%x: Tensor[(2), bfloat16]) { %x }")
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    with pytest.raises(TypeError, match="ml_dtypes"):
        prog(np.float32([1, 2]))


def test_strided_and_foreign_arrays_are_read_by_value():
    prog = relay_vm.compile(text="def @main(%x: Tensor[(2, 2), float32]) { %x }")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)[::2, 1::2]
    np.testing.assert_array_equal(prog(x), x)
    np.testing.assert_array_equal(prog([[1, 2], [3, 4]]), [[1, 2], [3, 4]])

    class Foreign:  # what a PyTorch tensor offers NumPy
        def __array__(self, dtype=None, copy=None):
            return np.ones((2, 2), dtype=np.float32)

    np.testing.assert_array_equal(prog(Foreign()), np.ones((2, 2)))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_contiguous_arrays_are_borrowed_not_copied(dtype):
    prog = relay_vm.compile(text=f"def @main(%x: Tensor[(2, 3), {dtype}], %y: Tensor[(3, 2), {dtype}]) {{ %x }}")
    x = np.arange(6).astype(dtype).reshape(2, 3)
    y = np.arange(12).astype(dtype).reshape(3, 4)[:, ::2]  # strided: copied
    borrowed, copied = prog._input_addresses(x, y)
    assert borrowed == x.ctypes.data and copied != y.ctypes.data
    bools = relay_vm.compile(text="def @main(%x: Tensor[(2), bool]) { %x }")
    b = np.array([True, False])
    assert bools._input_addresses(b)[0] != b.ctypes.data  # bool elements are always copied


def test_a_borrowed_array_changed_after_the_call_leaves_results_alone():
    prog = relay_vm.compile(text="""
def @main(%x: Tensor[(1000), float32]) {
  (%x, add(%x, 1f), nn.relu(%x))
}""")
    x = np.arange(1000, dtype=np.float32)
    assert prog._input_addresses(x) == [x.ctypes.data]
    same, plus, relu = prog(x)
    assert same.ctypes.data != x.ctypes.data
    x[:] = -5
    np.testing.assert_array_equal(same, np.arange(1000))
    np.testing.assert_array_equal(plus, np.arange(1000) + 1)
    np.testing.assert_array_equal(relu, np.arange(1000))
    # The program never writes into the array it borrows, even where a kernel could work in
    # place on a dead input.
    y = np.full(1000, -1, dtype=np.float32)
    np.testing.assert_array_equal(relay_vm.compile(text="""
def @main(%x: Tensor[(1000), float32]) { nn.relu(negative(add(%x, 1f))) }""")(y), np.zeros(1000))
    np.testing.assert_array_equal(y, -1)


def test_python_numbers_become_scalars_as_numpy_would_convert_them():
    ints = relay_vm.compile(text="def @main(%x: int32, %u: uint8, %f: float32, %b: bool) { (%x, %u, %f, %b) }")
    x, u, f, b = ints(-7, 200, 3, True)
    assert (x.dtype, u.dtype, f.dtype, b.dtype) == (np.int32, np.uint8, np.float32, np.bool_)
    assert (x, u, f, b) == (-7, 200, 3.0, True)
    assert ints(np.int64(5), True, 0.5, False)[:3] == (5, 1, 0.5)
    with pytest.raises(TypeError, match="expected int32 elements"):
        ints(1.5, 0, 0.0, True)
    with pytest.raises(TypeError, match="expected bool elements"):
        ints(1, 0, 0.0, 2)


class DLPackOnly:
    """What a PyTorch, JAX or CuPy tensor in host memory offers: the DLPack protocol, and no
    ``__array__`` (so ``numpy.asarray`` would make an object array of it)."""

    def __init__(self, array):
        self._array = array
        self.exported = 0

    def __dlpack__(self, **kwargs):
        self.exported += 1
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "float64"])
def test_dlpack_tensors_go_in_and_results_go_out_through_dlpack(dtype):
    prog = relay_vm.compile(text=f"def @main(%x: Tensor[(2, 3), {dtype}]) {{ add(%x, %x) }}")
    x = np.arange(6).astype(dtype).reshape(2, 3)
    source = DLPackOnly(x)
    out = prog(source)
    assert source.exported == 1, "read through __dlpack__"
    np.testing.assert_array_equal(out, x + x)
    # Results are NumPy arrays, themselves DLPack producers: `torch.from_dlpack(out)` takes them.
    np.testing.assert_array_equal(np.from_dlpack(out), x + x)
    strided = DLPackOnly(np.arange(12).astype(dtype).reshape(2, 6)[:, ::2])
    np.testing.assert_array_equal(prog(strided), 2 * np.arange(12).astype(dtype).reshape(2, 6)[:, ::2])


def test_a_dlpack_tensor_of_the_wrong_kind_is_rejected():
    prog = relay_vm.compile(text="def @main(%x: Tensor[(2, 3), int32]) { %x }")
    with pytest.raises(TypeError, match="expected int32 elements"):
        prog(DLPackOnly(np.full((2, 3), 0.5)))


def test_lists_trees_and_options():
    prog = relay_vm.compile(text="""
def @main(%xs: List[int32], %t: Tree[int32]) {
  (@map(fn (%a: int32) { %a + 1 }, %xs), @size(%t), Some(%t))
}""")
    tree = relay_vm.Rose(1, [relay_vm.Rose(2), relay_vm.Rose(3)])
    xs, size, some = prog([1, 2, 3], tree)
    assert [int(x) for x in xs] == [2, 3, 4] and size == 3
    assert some == relay_vm.Some(relay_vm.Rose(1, [relay_vm.Rose(2), relay_vm.Rose(3)]))
    assert prog(relay_vm.Cons(5, relay_vm.Nil), relay_vm.Rose(0))[0] == [6]


def test_a_long_list_converts_without_recursion():
    prog = relay_vm.compile(text="def @main(%xs: List[int32]) { %xs }")
    assert len(prog(list(range(200_000)))) == 200_000


def test_a_saved_executable_loads_back(tmp_path):
    prog = relay_vm.compile(text="def @main(%x: float32) { %x * 2f }")
    path = tmp_path / "double.rvm"
    path.write_bytes(prog.save())
    loaded = relay_vm.compile(path)
    assert loaded(1.5) == 3.0 and loaded.disasm() == prog.disasm()
    assert relay_vm.parse("def @f(%x: int32) { %x }").astext().strip().endswith("}")


def test_two_threads_share_a_program():
    prog = relay_vm.compile(text="""
def @main(%n: int32, %x: Tensor[(64), float32]) -> Tensor[(64), float32] {
  if (%n == 0) { %x } else { @main(%n - 1, tanh(add(%x, 1f))) }
}""")
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    expected = prog(200, x)
    results, errors = [], []

    def work():
        try:
            results.extend(prog(200, x) for _ in range(20))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 40
    for r in results:
        np.testing.assert_array_equal(r, expected)
