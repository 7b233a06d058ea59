#!/usr/bin/env bash
# Time and memory of the full-size SD1.5-layout fixture (2.1 GB f16, seed 2) at 256, 512 and
# 768 pixels: per step, VAE decode, each phase's peak resident set, the GFLOP/s of the
# sampling and decode phases next to the machine's f32 product rate, and how the attention
# and the VAE decode grow with the image (from GGDIFF_PROFILE's per-op times of one UNet
# evaluation and of the decode). Then the whole process as a user runs it (/usr/bin/time,
# the CLI at 256x256, 4 steps euler, CFG 7) for the reference comparison.
#
# Usage: bench/memory_bench.sh [-t THREADS] [--type TYPE] [--sizes "256 512 768"]
#   --type f32 measures the widened f32 copies (the old default), q8_0 a converted file.
# Env: BUILD_DIR (default ./build), GGDIFF_SHARED (default ../shared).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=fixture.sh
source "$here/fixture.sh"

threads=2
type_args=()
sizes="256 512 768"
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --threads) threads=${2:?"-t needs a thread count"}; shift 2 ;;
    --type) type_args=(--type "${2:?--type needs a type}"); shift 2 ;;
    --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "memory_bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for b in ggdiff ggdiff-bench; do
  [ -x "$build_dir/$b" ] || { echo "memory_bench: $build_dir/$b not found (build it or set BUILD_DIR)" >&2; exit 1; }
done

model=$(make_fixture sd1_mc320 2)
merges="$shared/data/clip/merges.txt"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for size in $sizes; do
  # Two steps are enough for the per-step figure at the larger sizes.
  steps=2
  [ "$size" -le 256 ] && steps=4
  echo "memory_bench: ${size}x${size}, $steps steps, -t $threads ${type_args[*]:-}" >&2
  GGDIFF_PROFILE=1 "$build_dir/ggdiff-bench" -m "$model" --tokenizer "$merges" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler -s 2 -t "$threads" "${type_args[@]}" \
    >"$out/$size.json" 2>"$out/$size.log"
done

echo "memory_bench: the whole process, CLI, 256x256 4 steps" >&2
/usr/bin/time -f "%e %M" -o "$out/time.txt" "$build_dir/ggdiff" -m "$model" --tokenizer "$merges" \
  -p "a photograph of an astronaut riding a horse" -W 256 -H 256 --steps 4 \
  --sampling-method euler --cfg-scale 7 -s 2 -t "$threads" "${type_args[@]}" -o "$out/cli.png" \
  >/dev/null 2>&1

python3 - "$out" $sizes <<'EOF'
import json, re, sys
out, sizes = sys.argv[1], sys.argv[2:]

def profile_ops(log, label):
    """Per-op seconds of the last profiled graph of `label` (one UNet evaluation, the decode)."""
    blocks = re.split(r"^profile ", open(log).read(), flags=re.M)
    ops = {}
    for b in blocks:
        if b.startswith(label + ":"):
            ops = {}
            for line in b.splitlines()[1:]:
                m = re.match(r"\s+(\S+)\s+([\d.]+) s", line)
                if m:
                    ops[m.group(1)] = float(m.group(2))
    return ops

rows = []
for s in sizes:
    d = json.load(open(f"{out}/{s}.json"))
    ph = {p["name"]: p for p in d["phases"]}
    unet = profile_ops(f"{out}/{s}.log", "UNet")
    vae = profile_ops(f"{out}/{s}.log", "VAE")
    rows.append((int(s), d, ph, unet.get("cpu_attention", 0.0), sum(unet.values()),
                 vae.get("cpu_attention", 0.0)))

sgemm = rows[0][1]["sgemm_gflop_per_second"]
print(f"machine f32 product rate (CPU kernels, {rows[0][1]['threads']} threads): "
      f"{sgemm:.0f} GFLOP/s" if sgemm else "machine f32 product rate: not measured")
print("size | s/step | VAE s | peak text | peak sampling | peak decode | sampling GFLOP/s "
      "| decode GFLOP/s | UNet attention s/eval (share)")
print("---|---|---|---|---|---|---|---|---")
for s, d, ph, att, total, _ in rows:
    share = att / total if total else 0.0
    print(f"{s} | {d['mean_step_seconds']:.2f} | {d['vae_decode_seconds']:.2f} "
          f"| {ph['text']['peak_rss_mib']:.0f} MiB | {ph['sampling']['peak_rss_mib']:.0f} MiB "
          f"| {ph['decode']['peak_rss_mib']:.0f} MiB | {ph['sampling']['gflop_per_second']:.0f} "
          f"| {ph['decode']['gflop_per_second']:.0f} | {att:.2f} ({share:.0%})")
base = rows[0]
for s, d, ph, att, total, _ in rows[1:]:
    px = (s / base[0]) ** 2
    print(f"{base[0]} -> {s} ({px:.0f}x the pixels): step x{d['mean_step_seconds'] / base[1]['mean_step_seconds']:.1f}, "
          f"UNet attention x{att / base[3]:.1f} (tokens^2 would be x{px * px:.0f}), "
          f"VAE decode x{d['vae_decode_seconds'] / base[1]['vae_decode_seconds']:.1f}")
wall, kib = open(f"{out}/time.txt").read().split()
print(f"whole process, CLI 256x256 4 steps: wall {float(wall):.1f} s, peak RSS {int(kib) / 1024:.0f} MiB")
EOF
