"""An analytic classifier for the toy model's pictures: which named colour and which shape
a 64x64 image shows (numpy only, no learning).

Colour: every pixel is snapped to the nearest named colour; the colours that cover the
image border are the background; the largest 4-connected blob of other colours is the
shape, and its majority colour is the answer.
Shape: from the blob's mask. A hole (background enclosed by the blob) makes a ring;
otherwise the filled area over the area of the circle through the farthest point
(circle ~1.0, square ~0.64, triangle ~0.41, star ~0.39) and the solidity (area over convex
hull area: a star is far from convex) tell the rest.
"""
import numpy as np

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
NAMES = list(COLOURS)
SHAPES = ["circle", "square", "triangle", "star", "ring"]
_PALETTE = np.array([COLOURS[n] for n in NAMES], np.float32)


def colour_labels(img):
    """HxWx3 uint8 -> HxW indices into NAMES."""
    d = ((img[:, :, None, :].astype(np.float32) - _PALETTE[None, None]) ** 2).sum(-1)
    return d.argmin(-1)


def components(mask):
    """4-connected components of a boolean mask: (labels array, sizes list)."""
    h, w = mask.shape
    lab = np.full((h, w), -1, np.int32)
    sizes = []
    for y0 in range(h):
        for x0 in range(w):
            if not mask[y0, x0] or lab[y0, x0] >= 0:
                continue
            k = len(sizes)
            stack = [(y0, x0)]
            lab[y0, x0] = k
            n = 0
            while stack:
                y, x = stack.pop()
                n += 1
                for yy, xx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                    if 0 <= yy < h and 0 <= xx < w and mask[yy, xx] and lab[yy, xx] < 0:
                        lab[yy, xx] = k
                        stack.append((yy, xx))
            sizes.append(n)
    return lab, sizes


def fill_holes(mask):
    """The mask plus every background region that does not touch the border."""
    lab, sizes = components(~mask)
    border = set(lab[0, :]) | set(lab[-1, :]) | set(lab[:, 0]) | set(lab[:, -1])
    filled = mask.copy()
    for k in range(len(sizes)):
        if k not in border:
            filled |= lab == k
    return filled


def convex_hull_area(points):
    """Area of the convex hull of (x, y) points (monotone chain)."""
    pts = sorted(set(map(tuple, points)))
    if len(pts) < 3:
        return float(len(pts))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    hull = lower[:-1] + upper[:-1]
    area = 0.0
    for i in range(len(hull)):
        x1, y1 = hull[i]
        x2, y2 = hull[(i + 1) % len(hull)]
        area += x1 * y2 - x2 * y1
    return abs(area) / 2


def shape_of(mask):
    filled = fill_holes(mask)
    area = float(filled.sum())
    if area < 12:
        return "none"
    if (area - mask.sum()) / area > 0.12:
        return "ring"
    ys, xs = np.nonzero(filled)
    # Pixel corners, so that hull and radius measure the same region the area counts.
    corners = np.concatenate([np.stack([xs + dx, ys + dy], 1) for dx in (0, 1) for dy in (0, 1)])
    cx, cy = xs.mean() + 0.5, ys.mean() + 0.5
    r = np.sqrt(((corners - [cx, cy]) ** 2).sum(1)).max()
    fill = area / (np.pi * r * r)
    solidity = area / max(1.0, convex_hull_area(corners))
    if solidity < 0.8:
        return "star"
    if fill > 0.8:
        return "circle"
    if fill > 0.52:
        return "square"
    return "triangle"


def classify(img):
    """HxWx3 uint8 -> (colour name, shape name); ("none", "none") when no shape is found."""
    lab = colour_labels(img)
    border = np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]])
    counts = np.bincount(border, minlength=len(NAMES))
    background = {k for k in range(len(NAMES)) if counts[k] >= 0.1 * len(border)}
    fg = ~np.isin(lab, list(background))
    comp, sizes = components(fg)
    if not sizes:
        return "none", "none"
    big = int(np.argmax(sizes))
    blob = comp == big
    colour = NAMES[int(np.bincount(lab[blob], minlength=len(NAMES)).argmax())]
    # The shape's own colour region (anti-aliased edge pixels snap to other colours).
    body = blob & (lab == NAMES.index(colour))
    return colour, shape_of(body)
