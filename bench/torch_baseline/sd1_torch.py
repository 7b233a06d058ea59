#!/usr/bin/env python3
"""PyTorch baseline for ggdiff's SD1 figures: times the UNet and the VAE decoder of an
SD1.x checkpoint (original CompVis/LDM layout) and prints one JSON line.

What is timed matches one ggdiff sampling step with CFG (a UNet evaluation at batch 2:
cond + uncond) and ggdiff's VAE decode, at 256x256 (32x32 latents) and 512x512 (64x64):
  - UNet: random latents, a random 77x768 context, timestep 999; one warm-up evaluation
    at the first size (not counted), then the median of --runs evaluations per size.
  - VAE decode of one latent per size, after a warm-up decode at the first size.
Weights are widened to f32 for compute, as PyTorch's CPU f16 convolutions are far slower
than f32; ggdiff computes from the f16 weights, so the two peak RSS figures differ for
that reason too.

--check instead runs a cheap sanity check (tiny latents) and prints what it checked.

Usage: sd1_torch.py --model FILE [--threads 2] [--latents 32,64] [--runs 3,2] [--check]
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import layers  # noqa: E402
from safetensors_reader import SafetensorsFile  # noqa: E402
from sd1_unet import UNet  # noqa: E402
from sd1_vae import VaeDecoder  # noqa: E402
from weights import WeightError, load_strict  # noqa: E402

UNET_PREFIX = "model.diffusion_model."
VAE_PREFIX = "first_stage_model."
# The decoder needs none of the encoder's tensors; everything else under the prefix is used.
VAE_UNUSED = ("encoder.", "quant_conv.")
TIMESTEP = 999
CONTEXT_TOKENS, CONTEXT_DIM = 77, 768


def log(msg):
    print(f"sd1_torch: {msg}", file=sys.stderr, flush=True)


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="SD1.x checkpoint (.safetensors, LDM names)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--latents", type=int_list, default=[32, 64],
                   help="latent sizes to time, comma separated (default 32,64)")
    p.add_argument("--runs", type=int_list, default=[3, 2],
                   help="timed UNet evaluations per latent size (default 3,2)")
    p.add_argument("--check", action="store_true",
                   help="run the cheap sanity check instead of the timings")
    args = p.parse_args()
    if len(args.runs) != len(args.latents) or min(args.runs) < 1:
        p.error("--runs needs one count (>= 1) per --latents size")
    return args


def load_models(path):
    """UNet and VAE decoder in f32, strictly loaded, and the seconds each took."""
    with SafetensorsFile(path) as ckpt:
        t0 = time.perf_counter()
        unet = UNet().eval()
        n_unet = load_strict(unet, ckpt, UNET_PREFIX)
        t1 = time.perf_counter()
        vae = VaeDecoder().eval()
        n_vae = load_strict(vae, ckpt, VAE_PREFIX, ignore=VAE_UNUSED)
        t2 = time.perf_counter()
    log(f"loaded {n_unet} UNet and {n_vae} VAE-decoder tensors as f32 "
        f"({t1 - t0:.1f} s + {t2 - t1:.1f} s)")
    return unet, vae, {"unet_load_seconds": t1 - t0, "vae_load_seconds": t2 - t1,
                       "unet_tensors": n_unet, "vae_tensors": n_vae}


def unet_inputs(batch, size, seed=0):
    gen = torch.Generator().manual_seed(seed)
    latents = torch.randn(batch, 4, size, size, generator=gen)
    context = torch.randn(batch, CONTEXT_TOKENS, CONTEXT_DIM, generator=gen)
    timesteps = torch.full((batch,), TIMESTEP, dtype=torch.long)
    return latents, timesteps, context


def vae_input(size, seed=1):
    return torch.randn(1, 4, size, size, generator=torch.Generator().manual_seed(seed))


def seconds(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def run_timings(unet, vae, sizes, runs):
    out = {}
    log(f"UNet warm-up, batch 2 at {sizes[0]}x{sizes[0]}")
    seconds(unet, *unet_inputs(2, sizes[0]))
    for size, count in zip(sizes, runs):
        times = [seconds(unet, *unet_inputs(2, size)) for _ in range(count)]
        log(f"UNet batch 2 at {size}x{size}: {', '.join(f'{t:.2f}' for t in times)} s")
        out[f"unet_b2_{size}_seconds"] = statistics.median(times)
        out[f"unet_b2_{size}_runs"] = times
    seconds(vae, vae_input(sizes[0]))  # warm-up
    for size in sizes:
        out[f"vae_decode_{size}_seconds"] = seconds(vae, vae_input(size))
        log(f"VAE decode {size}x{size} -> {8 * size}px: "
            f"{out[f'vae_decode_{size}_seconds']:.2f} s")
    return out


def expect(ok, what, failures):
    log(("ok:     " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def run_check(unet, vae):
    """Cheap checks that need no second implementation; returns the failed ones."""
    failures = []
    x, t, ctx = unet_inputs(1, 8)
    eps = unet(x, t, ctx)
    expect(eps.shape == x.shape, f"UNet output shape {tuple(eps.shape)} == input shape", failures)
    expect(bool(torch.isfinite(eps).all()) and eps.std() > 0,
           "UNet output finite and not constant", failures)
    # The context and the timestep must reach the output, or cross-attention / the time
    # embedding is not wired in.
    eps_ctx = unet(x, t, torch.randn_like(ctx))
    expect(not torch.allclose(eps, eps_ctx), "UNet output depends on the context", failures)
    eps_t = unet(x, torch.full_like(t, 10), ctx)
    expect(not torch.allclose(eps, eps_t), "UNet output depends on the timestep", failures)
    # Batch rows are independent: batch 2 of (x, x) gives eps twice.
    eps2 = unet(x.repeat(2, 1, 1, 1), t.repeat(2), ctx.repeat(2, 1, 1))
    expect(torch.allclose(eps2, eps.repeat(2, 1, 1, 1), atol=1e-4),
           "UNet batch 2 rows equal the batch 1 result", failures)
    image = vae(vae_input(8))
    expect(image.shape == (1, 3, 64, 64), f"VAE output shape {tuple(image.shape)} == "
           "(1, 3, 64, 64)", failures)
    expect(bool(torch.isfinite(image).all()) and image.std() > 0,
           "VAE output finite and not constant", failures)
    # Chunked attention (used at large latents) must equal the one-block computation.
    q, k, v = (torch.randn(2, 300, 64) for _ in range(3))
    full = layers.attention(q, k, v, heads=4)
    # 37 query rows per chunk: scores are (2 x 4 heads) x rows x 300 keys x 4 bytes.
    chunked = layers.attention(q, k, v, heads=4, budget=8 * 37 * 300 * 4)
    expect(torch.allclose(full, chunked, atol=1e-6), "chunked attention == one block",
           failures)
    return failures


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    try:
        unet, vae, figures = load_models(args.model)
    except (WeightError, ValueError, OSError) as e:
        sys.exit(f"sd1_torch: error: {e}")
    with torch.inference_mode():
        if args.check:
            failures = run_check(unet, vae)
            log("check passed" if not failures else f"check FAILED ({len(failures)})")
            sys.exit(1 if failures else 0)
        figures.update(run_timings(unet, vae, args.latents, args.runs))
    figures.update(threads=args.threads, compute_dtype="float32",
                   load_seconds=figures["unet_load_seconds"] + figures["vae_load_seconds"],
                   peak_rss_mib=peak_rss_mib(), torch_version=torch.__version__)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
