#!/usr/bin/env bash
# Per-step time of the full-size SD1.5-layout fixture (2.1 GB f16, UNet 1719 MB; seed 2) over
# two local ggdiff-rpc workers, in the placements issue 15 adds next to the plain ones:
#   single     --backend diffusion=RPC0
#   cut        --backend diffusion=RPC0 --max-vram RPC0=$BUDGET    (segments uploaded per step)
#   streamed   the same with --stream-layers (leading blocks kept, next segment sent ahead)
#   split      --backend "diffusion=RPC0&RPC1"                    (layer split)
#   batch 4    -b 4 on one device, and -b 4 with --backend "all=RPC0|RPC1" (data parallel)
# Text encoder and VAE stay on the CPU in all but the batch runs. For the cut and streamed
# runs it also prints the weight bytes moved per step (the sampling phase's uploads / steps).
# Usage: bench/stream_bench.sh [--size 256] [--steps 2] [--budget GiB] [ggdiff-bench flags]
# Environment: BUILD_DIR (default build), WORKER_THREADS (default: all cores).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=fixture.sh
source "$here/fixture.sh"
# shellcheck source-path=SCRIPTDIR source=workers.sh
source "$here/workers.sh"
size=256
steps=2
budget=0.75
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=${2:?--size needs pixels}; shift 2 ;;
    --steps) steps=${2:?--steps needs a count}; shift 2 ;;
    --budget) budget=${2:?--budget needs GiB}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ -x "$build_dir/ggdiff-bench" ] || { echo "stream_bench: $build_dir/ggdiff-bench is missing" >&2; exit 1; }
model=$(make_fixture sd1_mc320 2)
start_workers 2

run() {
  echo "stream_bench: $1" >&2
  "$build_dir/ggdiff-bench" -m "$model" --tokenizer "$shared/data/clip/merges.txt" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler -s 2 --rpc-servers "$endpoints" --no-sgemm "${@:2}"
}
results=()
results+=("$(run single --backend diffusion=RPC0 "$@")")
results+=("$(run cut --backend diffusion=RPC0 --max-vram "RPC0=$budget" "$@")")
results+=("$(run streamed --backend diffusion=RPC0 --max-vram "RPC0=$budget" --stream-layers "$@")")
results+=("$(run split --backend "diffusion=RPC0&RPC1" "$@")")
results+=("$(run "batch 4, one device" --backend RPC0 -b 4 "$@")")
if dp=$(run "batch 4, data parallel" --backend "all=RPC0|RPC1" -b 4 "$@"); then
  results+=("$dp")
else
  results+=("null")
fi

python3 - "$size" "$steps" "$budget" "${results[@]}" <<'PY'
import json, sys
size, steps, budget = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = ["single device", "cut (--max-vram %s)" % budget, "streamed (+ --stream-layers)",
         "layer split RPC0&RPC1", "batch 4, one device", "batch 4, data parallel RPC0|RPC1"]
runs = [json.loads(r) for r in sys.argv[4:]]
print(f"SD1 full-size fixture, {size}x{size}, {steps} steps, euler, 2 local workers")
print(f"{'placement':36} | {'s/step':>7} | {'s/image':>8} | {'MiB moved/step':>14} | {'peak RSS':>9}")
for name, r in zip(names, runs):
    if r is None:
        print(f"{name:36} | (not available: this build has no data-parallel placement)")
        continue
    sampling = next((p for p in r.get("phases", []) if p["name"] == "sampling"), {})
    moved = sampling.get("uploaded_mib", 0.0) / max(1, len(r["step_seconds"]))
    per_image = r["generate_seconds"] / max(1, r["images"])
    print(f"{name:36} | {r['mean_step_seconds']:7.2f} | {per_image:8.2f} | {moved:14.1f} | "
          f"{r['peak_rss_mib']:6.0f} MiB")
PY
