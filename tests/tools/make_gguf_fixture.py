#!/usr/bin/python3
"""Write a deterministic random-weight GGUF with q4_0 matrices from a tensor list.

Usage: make_gguf_fixture.py TENSORS_FILE OUT.gguf [--seed N]

For models the reference engine only accepts at their real size (HiDream-O1: an 8B language
model), where an F16 safetensors fixture (make_fixture.py) would be 16 GB. The list has
make_fixture.py's format ("<name> <torch shape>", "#! gains: hint=g;..." lines) and the same
distributions, drawn directly in the stored types:
  1-D tensors            f32: norm scales 1 + 0.05 N, others (biases) 0.02 N, both times the
                         gain of a matching "#! gains:" hint
  matrices               q4_0 when the row length is a multiple of 32 and the matrix has at least
                         64k elements: per 32-value block a scale of random sign and 4-bit values
                         uniform in -8..7, scaled to a standard deviation of gain / sqrt(fan_in)
                         (the embedding table: 0.02), unless a "#! f16: hint;..." line names
                         it; else f16 normal with that deviation
  kernels (> 2 dims)     f16 normal, gain / sqrt(fan_in); more than 4 dims are merged into the
                         last GGUF dimension as ggml expects of a Conv3d weight
  "#! f32: hint;..."      matrices and tables whose name holds a hint are stored as f32 normal
                         with the deviation above (for tensors the reference concatenates or adds
                         to f32 activations as they are: LTX-2's learnable_registers, its
                         scale_shift_table modulation tables)
  "#! zero: REGEX"        tensors whose name matches the regular expression are all zeros and are
                         left as holes in the file (a sparse file: they take no disk space and no
                         draws from the generator). A transformer layer whose weights are all
                         zero passes its input through unchanged, so a model the reference only
                         takes at its real depth can have a few random layers and cost little
                         disk.
  "#! rows: REGEX=K"      matrices whose name matches keep only their first K rows (the first K
                         output features) random; the rest is a zero hole. For hard-coded wide
                         projections (LTX-2's 188160 -> 4096 text projection) whose output must
                         still depend on the input. Several "#! rows:" lines may be given.
Same list, seed and numpy version: same bytes (the manifests keep the sha256).
"""
import re
import struct
import sys

import numpy as np

ALIGN = 32
F32, F16, Q4_0 = 0, 1, 2
RESIDUAL_OUT = ("o_proj", "down_proj", "linear_fc2", "attn.proj")
NORM_HINTS = ("norm",)
Q4_STD = np.sqrt((16 * 16 - 1) / 12.0)  # deviation of integers uniform in -8..7
ROWS = []  # ("#! rows:" regex, rows kept random)
F32_HINTS = []  # "#! f32:" hints


def read_list(path):
    items, gains, keep, zero = [], [], [], None
    global ROWS
    for line in open(path):
        if line.startswith("#! rows:"):
            pattern, count = line.split(":", 1)[1].strip().rsplit("=", 1)
            ROWS.append((re.compile(pattern.strip()), int(count)))
        if line.startswith("#! zero:"):
            zero = re.compile(line.split(":", 1)[1].strip())
        if line.startswith("#! f32:"):
            F32_HINTS.extend(h.strip() for h in line.split(":", 1)[1].split(";") if h.strip())
        if line.startswith("#! f16:"):
            keep = [h.strip() for h in line.split(":", 1)[1].split(";") if h.strip()]
        if line.startswith("#! gains:"):
            pairs = [kv.split("=") for kv in line.split(":", 1)[1].split(";") if "=" in kv]
            gains = [(k.strip(), float(v)) for k, v in pairs]
        line = line.split("#", 1)[0].strip()
        if line:
            name, shape = line.split()
            items.append((name, tuple(int(s) for s in shape.split(","))))
    return items, gains, keep, zero


def deviation(name, shape, gains):
    if "embed_tokens" in name:
        return 0.02
    if "pos_embed" in name:
        return 0.01
    gain = 0.5 if any(h in name for h in RESIDUAL_OUT) else 1.0
    for hint, g in gains:
        if hint in name:
            gain = g
            break
    return gain / np.sqrt(int(np.prod(shape[1:])))


def stored_type(name, shape, keep):
    if len(shape) == 1 or any(h in name for h in F32_HINTS):
        return F32
    if any(h in name for h in keep):
        return F16
    if len(shape) == 2 and shape[1] % 32 == 0 and shape[0] * shape[1] >= 65536:
        return Q4_0
    return F16


def ggml_dims(shape):
    ne = list(reversed(shape))  # ggml order: the row length first
    while len(ne) > 4:
        ne[-2] *= ne[-1]
        ne.pop()
    return ne


def draw(rng, name, shape, kind, gains):
    n = int(np.prod(shape))
    if kind == F32 and len(shape) > 1:
        return (rng.standard_normal(n, dtype=np.float32) * deviation(name, shape, gains)).astype("<f4").tobytes()
    if kind == F32:
        z = rng.standard_normal(n, dtype=np.float32)
        gain = next((g for hint, g in gains if hint in name), 1.0)
        if name.endswith("weight") and any(h in name for h in NORM_HINTS):
            return (gain * (1.0 + 0.05 * z)).astype("<f4").tobytes()
        return (gain * 0.02 * z).astype("<f4").tobytes()
    std = deviation(name, shape, gains)
    if kind == F16:
        return (rng.standard_normal(n, dtype=np.float32) * std).astype("<f2").tobytes()
    blocks = n // 32
    scale = np.float32(std / Q4_STD)
    sign = rng.integers(0, 2, size=blocks, dtype=np.uint8).astype(np.float32) * 2 - 1
    out = np.empty((blocks, 18), dtype=np.uint8)
    out[:, :2] = (sign * scale).astype("<f2").view(np.uint8).reshape(blocks, 2)
    out[:, 2:] = np.frombuffer(rng.bytes(blocks * 16), dtype=np.uint8).reshape(blocks, 16)
    return out.tobytes()


def nbytes(shape, kind):
    n = int(np.prod(shape))
    return n * 4 if kind == F32 else n * 2 if kind == F16 else n // 32 * 18


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def main():
    args = sys.argv[1:]
    seed = 0
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    items, gains, keep, zero = read_list(args[0])
    kv = [("general.architecture", "ggdiff-fixture"), ("general.name", "make_gguf_fixture.py seed %d" % seed)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(items), len(kv))
    for k, v in kv:
        head += gguf_string(k) + struct.pack("<I", 8) + gguf_string(v)  # 8: string
    offset = 0
    layout = []
    for name, shape in items:
        kind = stored_type(name, shape, keep)
        ne = ggml_dims(shape)
        head += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        head += struct.pack("<IQ", kind, offset)
        layout.append((name, shape, kind))
        offset += nbytes(shape, kind)
        offset += -offset % ALIGN
    head += b"\0" * (-len(head) % ALIGN)
    rng = np.random.default_rng(seed)
    with open(args[1], "wb") as f:
        f.write(head)
        for name, shape, kind in layout:
            size = nbytes(shape, kind)
            if zero is not None and zero.search(name):
                f.seek(size + (-size % ALIGN), 1)
                continue
            kept = next((k for r, k in ROWS if r.search(name)), None)
            if kept is not None and len(shape) >= 2 and kept < shape[0]:
                data = draw(rng, name, (kept,) + tuple(shape[1:]), kind, gains)
                f.write(data)
                f.seek(size - len(data) + (-size % ALIGN), 1)
                continue
            data = draw(rng, name, shape, kind, gains)
            f.write(data)
            f.write(b"\0" * (-len(data) % ALIGN))
        f.truncate()  # a hole at the end still has to count in the file's length


if __name__ == "__main__":
    main()
