"""A minimal reader for .safetensors files.

The `safetensors` package is not a dependency here, and the format is simple: an 8-byte
little-endian header length, a JSON header mapping each tensor name to its dtype, shape
and byte range (data_offsets, relative to the end of the header), then the raw data.
"""
import json
import struct

import numpy as np
import torch

# Bytes per element of the dtypes we can widen to float32.
_ITEM_SIZE = {"F16": 2, "BF16": 2, "F32": 4}


class SafetensorsFile:
    """An open checkpoint: names and shapes from the header, tensors read on demand."""

    def __init__(self, path):
        self.path = path
        self._file = open(path, "rb")
        (header_len,) = struct.unpack("<Q", self._file.read(8))
        header = json.loads(self._file.read(header_len))
        header.pop("__metadata__", None)
        self._entries = header
        self._data_start = 8 + header_len

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def names(self):
        return list(self._entries)

    def shape(self, name):
        return tuple(self._entries[name]["shape"])

    def read_f32(self, name):
        """The tensor `name` as a float32 torch tensor (a fresh copy, not a file view).

        Reading each tensor into a transient buffer (rather than memory-mapping the whole
        file) keeps the f16 file pages out of the process's peak RSS, so that figure
        counts only what the model needs to compute.
        """
        entry = self._entries[name]
        dtype, shape = entry["dtype"], entry["shape"]
        if dtype not in _ITEM_SIZE:
            raise ValueError(f"{self.path}: tensor {name} has dtype {dtype}; "
                             f"only {', '.join(_ITEM_SIZE)} are supported")
        begin, end = entry["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * _ITEM_SIZE[dtype]:
            raise ValueError(f"{self.path}: tensor {name} holds {end - begin} bytes, "
                             f"but {dtype} {shape} needs {count * _ITEM_SIZE[dtype]}")
        self._file.seek(self._data_start + begin)
        raw = self._file.read(end - begin)
        if len(raw) != end - begin:
            raise ValueError(f"{self.path}: file ends inside tensor {name}")
        return torch.from_numpy(_to_f32(raw, dtype).reshape(shape))


def _to_f32(raw, dtype):
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").copy()
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    # BF16 is the top half of an f32: widen the bits and shift them into place.
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32)
