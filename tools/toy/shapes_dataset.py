#!/usr/bin/env python3
"""Synthetic captioned shapes: the training data of ggdiff's built-in toy model.

Each sample is a 64x64 RGB image of one shape (circle, square, triangle, star, ring) in a
named colour on a plain or two-tone background of other named colours, at a random size
and position, with a caption such as "a red circle on a blue background" or one of a few
paraphrases ("red circle, blue backdrop"). Everything is deterministic from the seed.

    shapes_dataset.py OUT_DIR --count 1000 --seed 1     # PNGs + captions.jsonl, to look at

The training script imports make_sample() / Palette directly.
"""
import argparse
import json
import math
import os

import numpy as np
from PIL import Image, ImageDraw

SIZE = 64
SUPERSAMPLE = 4  # drawn at 256x256 and box-filtered down: smooth edges

# Named colours, chosen to be far apart in RGB so a classifier can tell them apart.
COLOURS = {
    "red": (220, 30, 30),
    "orange": (245, 140, 20),
    "yellow": (240, 225, 30),
    "green": (40, 170, 50),
    "cyan": (40, 210, 220),
    "blue": (30, 60, 210),
    "purple": (130, 40, 180),
    "pink": (245, 130, 190),
    "white": (245, 245, 245),
    "black": (20, 20, 20),
}
SHAPES = ["circle", "square", "triangle", "star", "ring"]

# Caption templates: {c} shape colour, {s} shape, {b} background phrase.
TEMPLATES = [
    "a {c} {s} on a {b} background",
    "a {c} {s} on a {b} background",
    "a {c} {s} on a {b} background",
    "{c} {s}, {b} backdrop",
    "a {c} {s} against a {b} background",
    "{b} background with a {c} {s}",
    "a picture of a {c} {s} on {b}",
]


def background_phrase(bg):
    return bg[0] if len(bg) == 1 else f"{bg[0]} and {bg[1]}"


def caption(colour, shape, bg, rng):
    t = TEMPLATES[rng.integers(len(TEMPLATES))]
    return t.format(c=colour, s=shape, b=background_phrase(bg))


def jitter(rgb, rng, amount=12):
    return tuple(int(np.clip(v + rng.integers(-amount, amount + 1), 0, 255)) for v in rgb)


def star_points(cx, cy, r_out, r_in, rotation, points=5):
    pts = []
    for i in range(2 * points):
        r = r_out if i % 2 == 0 else r_in
        a = rotation + math.pi * i / points - math.pi / 2
        pts.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    return pts


def draw_shape(draw, shape, cx, cy, r, rotation, fill, hole):
    """r: half the shape's extent, in supersampled pixels."""
    if shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
    elif shape == "ring":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
        ri = r * 0.55
        draw.ellipse([cx - ri, cy - ri, cx + ri, cy + ri], fill=hole)
    elif shape == "square":
        s = r * 0.9
        pts = [(-s, -s), (s, -s), (s, s), (-s, s)]
        a = rotation * 0.25  # squares tilt a little, never to a diamond
        draw.polygon([(cx + x * math.cos(a) - y * math.sin(a),
                       cy + x * math.sin(a) + y * math.cos(a)) for x, y in pts], fill=fill)
    elif shape == "triangle":
        pts = []
        for i in range(3):
            a = rotation * 0.2 + 2 * math.pi * i / 3 - math.pi / 2
            pts.append((cx + r * math.cos(a), cy + r * 1.05 * math.sin(a) + r * 0.15))
        draw.polygon(pts, fill=fill)
    elif shape == "star":
        draw.polygon(star_points(cx, cy, r, r * 0.42, rotation * 0.2), fill=fill)
    else:
        raise ValueError(shape)


def render(colour, shape, bg, rng):
    """bg: one or two background colour names. Returns an HxWx3 uint8 array."""
    S = SIZE * SUPERSAMPLE
    img = Image.new("RGB", (S, S), jitter(COLOURS[bg[0]], rng))
    draw = ImageDraw.Draw(img)
    second = None
    if len(bg) == 2:
        second = jitter(COLOURS[bg[1]], rng)
        split = rng.integers(4)  # left/right, top/bottom halves, or a diagonal
        h = S // 2 + int(rng.integers(-S // 8, S // 8 + 1))
        if split == 0:
            draw.rectangle([h, 0, S, S], fill=second)
        elif split == 1:
            draw.rectangle([0, h, S, S], fill=second)
        elif split == 2:
            draw.polygon([(0, S), (S, 0), (S, S)], fill=second)
        else:
            draw.polygon([(0, 0), (S, 0), (0, S)], fill=second)
    r = rng.uniform(0.22, 0.38) * S  # shape extent 28..48 px of 64
    margin = r * 1.05
    cx = rng.uniform(margin, S - margin)
    cy = rng.uniform(margin, S - margin)
    fill = jitter(COLOURS[colour], rng)
    # The ring's hole shows the background under its centre.
    hole = img.getpixel((int(cx), int(cy)))
    draw_shape(draw, shape, cx, cy, r, rng.uniform(-1, 1), fill, hole)
    img = img.resize((SIZE, SIZE), Image.BOX)
    return np.asarray(img, dtype=np.uint8)


def make_sample(rng):
    """One (image HxWx3 uint8, caption, labels dict) drawn from `rng` (numpy Generator)."""
    names = list(COLOURS)
    colour = names[rng.integers(len(names))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    others = [c for c in names if c != colour]
    if rng.random() < 0.3:
        pick = rng.choice(len(others), size=2, replace=False)
        bg = (others[pick[0]], others[pick[1]])
    else:
        bg = (others[rng.integers(len(others))],)
    img = render(colour, shape, bg, rng)
    return img, caption(colour, shape, bg, rng), {"colour": colour, "shape": shape, "bg": list(bg)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    with open(os.path.join(args.out_dir, "captions.jsonl"), "w") as f:
        for i in range(args.count):
            img, cap, labels = make_sample(rng)
            name = f"{i:06d}.png"
            Image.fromarray(img).save(os.path.join(args.out_dir, name))
            f.write(json.dumps({"file": name, "caption": cap, **labels}) + "\n")


if __name__ == "__main__":
    main()
