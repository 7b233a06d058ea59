#!/usr/bin/env python3
"""Splits a single-file safetensors checkpoint into component files, as users have them.

    split_checkpoint.py CHECKPOINT OUT_DIR PREFIX=NAME ...

Every tensor whose name starts with PREFIX goes, without the prefix, into OUT_DIR/NAME.safetensors
(e.g. model.diffusion_model.=unet conditioner.embedders.0.transformer.=clip_l). Pure Python, no
numpy: tensor bytes are copied as they are.
"""
import json
import struct
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src, out_dir, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(src, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for spec in specs:
            prefix, name = spec.split("=", 1)
            picked = [(k, v) for k, v in header.items()
                      if k != "__metadata__" and k.startswith(prefix)]
            if not picked:
                sys.exit("no tensor starts with " + prefix)
            out_header, offset = {}, 0
            for k, v in picked:
                size = v["data_offsets"][1] - v["data_offsets"][0]
                out_header[k[len(prefix):]] = {"dtype": v["dtype"], "shape": v["shape"],
                                              "data_offsets": [offset, offset + size]}
                offset += size
            blob = json.dumps(out_header).encode()
            blob += b" " * ((8 - len(blob) % 8) % 8)
            with open(out_dir + "/" + name + ".safetensors", "wb") as out:
                out.write(struct.pack("<Q", len(blob)))
                out.write(blob)
                for _, v in picked:
                    begin, end = v["data_offsets"]
                    f.seek(base + begin)
                    left = end - begin
                    while left:
                        chunk = f.read(min(left, 1 << 24))
                        out.write(chunk)
                        left -= len(chunk)


if __name__ == "__main__":
    main()
