#!/usr/bin/env bash
# FLUX.1 on the flux_tiny fixture (2 double + 2 single blocks, hidden 256; T5 of width 64;
# full CLIP-L and FLUX VAE): 256x256, 4 steps, euler, on this machine's CPU, on one
# ggdiff-rpc worker (diffusion=RPC0) and with the DiT split over two (diffusion=RPC0&RPC1).
# Prints one JSON object with the three ggdiff-bench results (per-step time, VAE decode,
# peak RSS of the ggdiff process; the workers' own memory is not in it).
# Environment: BUILD_DIR (default build), WORKER_THREADS (default: all cores).
# Extra flags go to ggdiff-bench (e.g. -t 2, --type q8_0).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
source "$(dirname "${BASH_SOURCE[0]}")/workers.sh"
dit=$(make_fixture flux_tiny_dit 11)
clip=$(make_fixture flux_clip_l 12)
t5=$(make_fixture flux_tiny_t5 13)
vae=$(make_fixture flux_ae 14)

run() {
  "$build_dir/ggdiff-bench" --diffusion-model "$dit" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" \
    --tokenizer "$shared/data/clip/merges.txt" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" \
    -p "a photograph of an astronaut riding a horse" -W 256 -H 256 --steps 4 \
    --sampling-method euler -s 42 "$@"
}

echo "flux_bench: CPU" >&2
cpu=$(run "$@")
start_workers 2
echo "flux_bench: one worker (diffusion=RPC0)" >&2
single=$(run --rpc-servers "$endpoints" --backend "RPC0" "$@")
echo "flux_bench: DiT split over two workers (diffusion=RPC0&RPC1)" >&2
split=$(run --rpc-servers "$endpoints" --backend "all=RPC0,diffusion=RPC0&RPC1" "$@")

python3 - "$cpu" "$single" "$split" <<'PY'
import json, sys
cpu, single, split = (json.loads(a) for a in sys.argv[1:4])
print(json.dumps({
    "cpu_mean_step_seconds": cpu["mean_step_seconds"],
    "rpc0_mean_step_seconds": single["mean_step_seconds"],
    "split_mean_step_seconds": split["mean_step_seconds"],
    "cpu": cpu, "rpc0": single, "split": split,
}, indent=1))
PY
