#!/usr/bin/env python3
"""Does the built-in toy model draw what the prompt says? Renders prompts covering every
colour and shape through the ggdiff CLI and scores each image with classify.py.

    bench/toy_quality/run.py [--ggdiff build/ggdiff] [--model FILE] [--count 100]
                             [--min-accuracy 0.9] [--json out.json] [-- extra ggdiff flags]

Prints the share of images with the right colour, the right shape and both, and the
confusion tables; exits 1 when the share with both right is below --min-accuracy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from classify import NAMES, SHAPES, classify  # noqa: E402


def prompts(count):
    """(prompt, colour, shape, seed): every colour x shape combination once per 50 prompts,
    in an order where any 10 in a row have every colour and every shape twice, each time on
    another background colour."""
    out = []
    for i in range(count):
        k = (i * 11) % (len(NAMES) * len(SHAPES))
        colour, shape = NAMES[k % len(NAMES)], SHAPES[k // len(NAMES)]
        others = [c for c in NAMES if c != colour]
        bg = others[(k + 3 * (i // 50) + 1) % len(others)]
        out.append((f"a {colour} {shape} on a {bg} background", colour, shape, 1000 + i))
    return out


def table(title, labels, pairs):
    idx = {n: i for i, n in enumerate(labels + ["none"])}
    m = np.zeros((len(labels), len(labels) + 1), int)
    for want, got in pairs:
        m[idx[want], idx.get(got, len(labels))] += 1
    w = max(len(n) for n in labels + ["none"]) + 1
    lines = [title, " " * w + "".join(f"{n[:6]:>7}" for n in labels + ["none"])]
    for i, n in enumerate(labels):
        lines.append(f"{n:<{w}}" + "".join(f"{v:>7}" for v in m[i]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ggdiff", default="build/ggdiff")
    ap.add_argument("--model", help="checkpoint (default: ggdiff's built-in model)")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--min-accuracy", type=float, default=0.0)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", help="keep the images in this folder")
    ap.add_argument("extra", nargs="*", help="more ggdiff flags (after --)")
    args = ap.parse_args()

    out_dir = args.keep or tempfile.mkdtemp(prefix="toy_quality_")
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for i, (prompt, colour, shape, seed) in enumerate(prompts(args.count)):
        path = os.path.join(out_dir, f"{i:03d}.png")
        cmd = [args.ggdiff, "-p", prompt, "-s", str(seed), "-o", path] + args.extra
        if args.model:
            cmd[1:1] = ["-m", args.model]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"ggdiff failed on '{prompt}':\n{r.stderr}", file=sys.stderr)
            return 2
        got_c, got_s = classify(np.asarray(Image.open(path).convert("RGB")))
        results.append({"prompt": prompt, "colour": colour, "shape": shape, "seed": seed,
                        "got_colour": got_c, "got_shape": got_s})
    n = len(results)
    colour_ok = sum(r["colour"] == r["got_colour"] for r in results) / n
    shape_ok = sum(r["shape"] == r["got_shape"] for r in results) / n
    both_ok = sum(r["colour"] == r["got_colour"] and r["shape"] == r["got_shape"]
                  for r in results) / n
    print(f"images: {n}  colour right: {colour_ok:.0%}  shape right: {shape_ok:.0%}  "
          f"both right: {both_ok:.0%}")
    print(table("colour (rows: asked, columns: seen)", NAMES,
                [(r["colour"], r["got_colour"]) for r in results]))
    print(table("shape (rows: asked, columns: seen)", SHAPES,
                [(r["shape"], r["got_shape"]) for r in results]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"images": n, "colour": colour_ok, "shape": shape_ok, "both": both_ok,
                       "results": results}, f, indent=1)
    if not args.keep:
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))
        os.rmdir(out_dir)
    return 0 if both_ok >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
