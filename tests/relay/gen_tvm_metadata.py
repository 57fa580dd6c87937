#!/usr/bin/env python3
"""Writes the `#[metadata]` section of tests/relay/run/tvm_metadata.relay in TVM's form.

TVM's `mod.astext(show_meta_data=True)` ends with the JSON of `tvm.ir.save_json(metadata)`:
a node graph (`root`, `nodes`) whose `relay.Constant` nodes index `b64ndarrays`, each an
NDArray in `SaveDLTensor`'s layout, base64-encoded. This builds the same bytes without TVM
(standard library only): `python3 tests/relay/gen_tvm_metadata.py` prints the section.
"""
import base64
import json
import struct

MAGIC = 0xDD5E40F096B4A13F
# DLDataType codes.
INT, UINT, FLOAT = 0, 1, 2


def ndarray(code, bits, fmt, shape, values):
    """An NDArray blob: magic, reserved, device (cpu, 0), ndim, dtype, shape, size, data."""
    data = struct.pack("<" + fmt * len(values), *values)
    head = struct.pack("<QQiii", MAGIC, 0, 1, 0, len(shape))
    head += struct.pack("<BBH", code, bits, 1)
    head += struct.pack("<" + "q" * len(shape), *shape)
    head += struct.pack("<q", len(data))
    return base64.b64encode(head + data).decode()


def constant(index):
    return {
        "type_key": "relay.Constant",
        "attrs": {"_checked_type_": "0", "data": str(index), "span": "0", "virtual_device_": "6"},
    }


metadata = {
    "root": 1,
    "nodes": [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
        {"type_key": "Array", "data": [3, 4, 5]},
        constant(0),
        constant(1),
        constant(2),
        {
            "type_key": "VirtualDevice",
            "attrs": {"device_type_int": "-1", "memory_scope": "7", "target": "0", "virtual_device_id": "-1"},
        },
        {"type_key": "runtime.String"},
    ],
    "b64ndarrays": [
        ndarray(FLOAT, 32, "f", [2, 2], [0.5, -1.0, 2.0, 0.25]),
        ndarray(INT, 64, "q", [3], [-3, 0, 1 << 40]),
        ndarray(UINT, 1, "?", [2], [True, False]),  # TVM's bool is a 1-bit uint, a byte each
    ],
    "attrs": {"tvm_version": "0.16.0"},
}

print("#[metadata]")
print(json.dumps(metadata, indent=2))
