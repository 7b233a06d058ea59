#!/usr/bin/env bash
# FLUX.1 block cost at the real width (hidden 3072, 24 heads of 128, MLP 12288, T5 context
# 4096), timed at 512x512 (1024 image tokens) with 512 text tokens (a prompt of two T5
# chunks), so that a real FLUX.1-dev step (19 double + 38 single blocks) can be
# extrapolated. Three synthetic DiTs (deterministic random weights, made once under
# build/fixtures/): 1 double + 1 single, 2 double + 1 single, 1 double + 2 single blocks;
# per-block time = the difference of their step times. The T5 is a 1-block stand-in of
# width 4096 (its cost is not part of a step); CLIP-L and the VAE are flux_tiny's.
# Runs --type f16 (weights kept in f16, widened block by block in the products) and
# --type q8_0.
# Prints one JSON object: per run the step times, and per type the double-block,
# single-block and rest-of-step seconds and the extrapolated 19+38 block step.
# Environment: BUILD_DIR (default build), STEPS (default 2). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
source "$(dirname "${BASH_SOURCE[0]}")/flux_wide_fixture.sh"
steps=${STEPS:-2}

t5=$(flux_wide_t5)
clip=$(make_fixture flux_clip_l 12)
vae=$(make_fixture flux_ae 14)
d1s1=$(wide_fixture flux_wide_1d1s 1 1)
d2s1=$(wide_fixture flux_wide_2d1s 2 1)
d1s2=$(wide_fixture flux_wide_1d2s 1 2)

# 40 x 9 words: 360 T5 tokens + EOS -> two 256-token chunks = 512 text tokens.
prompt=$(python3 -c 'print(" ".join(["a photograph of an astronaut riding a horse"] * 40))')

run() {
  "$build_dir/ggdiff-bench" --diffusion-model "$1" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" \
    --tokenizer "$shared/data/clip/merges.txt" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" \
    -p "$prompt" -W 512 -H 512 --steps "$steps" --sampling-method euler -s 1 "${@:2}"
}

results="{}"
for type in f16 q8_0; do
  extra=(--type "$type")
  for dit in "$d1s1" "$d2s1" "$d1s2"; do
    echo "flux_wide_bench: $(basename "$dit") $type" >&2
    r=$(run "$dit" "${extra[@]}" "$@")
    results=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=json.loads(sys.argv[3]); print(json.dumps(d))' \
      "$results" "$(basename "$dit" .safetensors)_$type" "$r")
  done
done

python3 - "$results" <<'PY'
import json, sys
runs = json.loads(sys.argv[1])
out = {"runs": runs}
for t in ("f16", "q8_0"):
    a = runs["flux_wide_1d1s_" + t]["min_step_seconds"]
    b = runs["flux_wide_2d1s_" + t]["min_step_seconds"]
    c = runs["flux_wide_1d2s_" + t]["min_step_seconds"]
    double, single = b - a, c - a
    rest = a - double - single
    out[t] = {
        "double_block_seconds": round(double, 3),
        "single_block_seconds": round(single, 3),
        "rest_of_step_seconds": round(rest, 3),
        "flux1_step_seconds_19d_38s": round(rest + 19 * double + 38 * single, 1),
        "peak_rss_mib_1d1s": runs["flux_wide_1d1s_" + t]["peak_rss_mib"],
    }
print(json.dumps(out, indent=1))
PY
