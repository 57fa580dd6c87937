"""Type stubs of the extension module (see relay_vm/__init__.py)."""

import os
from typing import Any, Iterable, Optional, Union

import numpy as np

class RelayError(Exception):
    """Base class of relay_vm's errors."""

class CompileError(RelayError):
    """The program does not parse, resolve or type-check; the message is the rustc-style diagnostic."""

class Trap(RelayError):
    """A run-time fault of the VM."""

    message: str
    """What went wrong."""
    stack: list[tuple[str, str, int, str]]
    """The Relay call stack, innermost first: each active call's function, where it is
    defined (`file:line:col`, empty if unknown), the instruction it was running, and where
    that instruction's expression is (`file:line:col` of the fault or of the pending call,
    empty if unknown). ``stack[0]`` is the faulting function and instruction; the stack is
    empty for a fault before any function ran."""

class Module:
    """A parsed Relay module (the user's file with the prelude)."""

    def astext(self) -> str:
        """The file's definitions in canonical Relay text."""

class Program:
    """A compiled Relay program."""

    @property
    def inputs(self) -> list[str]:
        """The names of the inputs a call takes (parameters no weight binds), in order."""
    @property
    def entry(self) -> str:
        """The entry function's name."""
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the entry function (GIL released) on its inputs (NumPy arrays, DLPack producers
        such as PyTorch tensors, anything ``numpy.asarray`` takes) and returns its result: NumPy
        arrays (0-d for scalars; ``torch.from_dlpack`` takes them), tuples, lists for ``List``, ``relay_vm.Adt`` values. Raises ``Trap`` on a
        run-time fault, ``ValueError``/``TypeError`` for inputs that do not fit. A C-contiguous,
        aligned array of the parameter's dtype (not ``bool``) is borrowed, not copied; results
        own their memory, so changing an input afterwards changes no result."""
    def _input_addresses(self, *args: Any, **kwargs: Any) -> list[int | None]:
        """Test helper: the address of each input's elements as a call hands them to the VM
        (``None`` for inputs that are not n-d tensors); a borrowed array gives its own
        ``array.ctypes.data``."""
    def bench(self, inputs: Iterable[Any], reps: int = 3, warmup: int = 1) -> dict[str, Any]:
        """Times the program over ``inputs`` as ``relay-vm bench`` does; returns ``inputs``,
        ``reps``, ``warmup``, ``mean_ms``, ``p50_ms``, ``p90_ms``, ``max_ms``, ``throughput``
        (inputs/s) and ``memory``."""
    def disasm(self) -> str:
        """The bytecode of every function."""
    def kernels(self) -> list[str]:
        """Each kernel: a fused kernel's kir loop nest, or ``reference <op>``."""
    def save(self) -> bytes:
        """The executable file's bytes."""

def compile(
    path: Optional[Union[str, os.PathLike[str]]] = None,
    params: Optional[Union[str, os.PathLike[str]]] = None,
    *,
    text: Optional[str] = None,
    opt_level: int = 2,
    device: str = "cpu",
    entry: str = "main",
    memory_plan: bool = True,
) -> Program:
    """Compiles a ``.relay`` file or executable at ``path`` (or Relay ``text``), binding the
    safetensors weights of ``params`` to the entry's parameters by name. Raises
    ``CompileError``."""

def parse(text: str, name: str = "<string>") -> Module:
    """Parses Relay text with the prelude in scope. Raises ``CompileError``."""
