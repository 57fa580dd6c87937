"""relay_vm: compile and run Relay programs (TVM's functional IR) from Python.

>>> import numpy as np, relay_vm
>>> prog = relay_vm.compile(text="def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
>>> prog(np.array([1, 2], dtype=np.float32))
array([2., 4.], dtype=float32)

Tensors are NumPy arrays (anything ``numpy.asarray`` accepts goes in, PyTorch tensors
included; a DLPack producer, such as a PyTorch, JAX or CuPy tensor in host memory, is read
through ``numpy.from_dlpack`` without a copy to NumPy). Results are NumPy arrays, which are
DLPack producers too: ``torch.from_dlpack(out)`` shares their memory. Tuples are tuples;
the prelude's ``List`` is a Python list; any other ADT value is an :class:`Adt`, built by
:func:`Cons`, :data:`Nil`, :func:`Rose`, :func:`Some`, :data:`Nothing` or
``Adt(con, *fields)``.
"""

from ._relay_vm import CompileError, Module, Program, RelayError, Trap, compile, parse

__all__ = [
    "Adt",
    "CompileError",
    "Cons",
    "Module",
    "Nil",
    "Nothing",
    "Program",
    "RelayError",
    "Rose",
    "Some",
    "Trap",
    "compile",
    "parse",
]


class Adt:
    """A constructor value: constructor ``con`` (``"Cons"``, ``"Rose"``, a program's own) applied
    to ``fields``. Compares equal to an ``Adt`` of the same constructor and equal fields."""

    __slots__ = ("con", "fields")
    __match_args__ = ("con", "fields")

    def __init__(self, con, *fields):
        self.con = con
        self.fields = tuple(fields)

    def __eq__(self, other):
        if not isinstance(other, Adt):
            return NotImplemented
        if self.con != other.con or len(self.fields) != len(other.fields):
            return False
        import numpy as np

        return all(np.array_equal(a, b) if hasattr(a, "shape") or hasattr(b, "shape") else a == b
                   for a, b in zip(self.fields, other.fields))

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (self.con, ", ".join(map(repr, self.fields)))


def Cons(head, tail):
    """The prelude's ``Cons(head, tail)`` (a plain Python list also passes for a ``List``)."""
    return Adt("Cons", head, tail)


Nil = Adt("Nil")
"""The prelude's empty list."""


def Rose(value, children=()):
    """The prelude's tree node ``Rose(value, children)``; ``children`` is a list of trees."""
    return Adt("Rose", value, list(children))


def Some(value):
    """The prelude's ``Some(value)``."""
    return Adt("Some", value)


Nothing = Adt("None")
"""The prelude's ``None`` (an ``Option`` without a value)."""
