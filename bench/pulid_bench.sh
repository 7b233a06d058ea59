#!/usr/bin/env bash
# PuLID-FLUX's cost at the real width, ggdiff against the reference engine (REF_CLI, default
# /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same synthetic
# files: the real-width FLUX.1-dev DiT of bench/flux_wide_fixture.sh with 1 double and 1 single
# block, which takes 2 PuLID modules (after double block 0 and single block 0), a real-width
# PuLID file with those 2 modules (hidden 3072, 16 heads of 128, 2048-wide identity tokens:
# 21M parameters each, f16) and a (32, 2048) identity (tests/fixtures/pulid_tiny_id.tensors).
# Each engine runs the DiT without and with PuLID; one module's time is half the difference of
# their step times, and PuLID's cost in a whole FLUX.1 step is 20 modules.
#  - a SIZE x SIZE output (default 512: 1024 image tokens; a short prompt, one T5 chunk), cfg 1,
#    euler, STEPS steps (default 2); step time: the minimum over the steps after the first
#    (ggdiff-bench's min_step_seconds; the reference's progress-bar rate per step).
# Prints one JSON object. Environment: BUILD_DIR (default build), SIZE, STEPS, REF (0: skip the
# reference engine), REF_CLI, THREADS (-t for both, default: all cores). Extra flags go to
# ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
source "$(dirname "${BASH_SOURCE[0]}")/flux_wide_fixture.sh"
size=${SIZE:-512}
steps=${STEPS:-2}
threads=${THREADS:-$(nproc)}
ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "pulid_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi

t5=$(flux_wide_t5_heads)
clip=$(make_fixture flux_clip_l 12)
vae=$(make_fixture flux_ae 14)
dit=$(wide_fixture flux_wide_1d1s 1 1)

# The PuLID list at the real width: the tiny one's 2 modules with hidden 256 -> 3072.
pulid_list="$build_dir/fixtures/pulid_wide.tensors"
pulid="$build_dir/fixtures/pulid_wide.safetensors"
if [ ! -f "$pulid" ]; then
  sed -e 's/^\(pulid_ca\.[0-9]*\.norm2\.[a-z]*\) 256$/\1 3072/' \
    -e 's/^\(pulid_ca\.[0-9]*\.to_q\.weight\) 2048,256$/\1 2048,3072/' \
    -e 's/^\(pulid_ca\.[0-9]*\.to_out\.weight\) 256,2048$/\1 3072,2048/' \
    "$bench_root/tests/fixtures/pulid_tiny.tensors" >"$pulid_list"
  echo "pulid_bench: generating $pulid" >&2
  "$shared/tools/make_fixture.py" "$pulid_list" "$pulid" --seed 81 >&2
fi
identity="$build_dir/fixtures/pulid_tiny_id.gguf"
if [ ! -f "$identity" ]; then
  python3 "$bench_root/tests/tools/make_gguf_fixture.py" \
    "$bench_root/tests/fixtures/pulid_tiny_id.tensors" "$identity" --seed 82 >&2
fi
with_pulid=(--pulid-weights "$pulid" --pulid-id-embedding "$identity")
prompt="a photograph of an astronaut riding a horse"

ggdiff_run() {  # ggdiff_run [flags...]
  "$build_dir/ggdiff-bench" --diffusion-model "$dit" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" \
    --tokenizer "$shared/data/clip/merges.txt" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run [flags...] -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  ref_timed pulid_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$dit" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" -p "$prompt" \
    -W "$size" -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 \
    -t "$threads" -o "$(mktemp -u).png" "$@"
}

results="{\"size\": $size, \"steps\": $steps, \"threads\": $threads"
echo "pulid_bench: ggdiff without PuLID" >&2
results+=", \"ggdiff_plain\": $(ggdiff_run "$@")"
echo "pulid_bench: ggdiff with PuLID" >&2
results+=", \"ggdiff_pulid\": $(ggdiff_run "${with_pulid[@]}" "$@")"
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  echo "pulid_bench: reference without PuLID" >&2
  results+=", \"reference_plain\": $(ref_run)"
  echo "pulid_bench: reference with PuLID" >&2
  results+=", \"reference_pulid\": $(ref_run "${with_pulid[@]}")"
fi
results+="}"

python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
def step(run):
    if "min_step_seconds" in run:
        return run["min_step_seconds"]
    s = run.get("step_seconds")
    if isinstance(s, list):
        return min(s) if s else None
    return s
out = dict(r)
for engine in ("ggdiff", "reference"):
    a, b = r.get(engine + "_plain"), r.get(engine + "_pulid")
    if not a or not b or step(a) is None or step(b) is None:
        continue
    module = (step(b) - step(a)) / 2
    out[engine] = {"step_seconds_plain": step(a), "step_seconds_pulid": step(b),
                   "module_seconds": round(module, 3),
                   "pulid_seconds_per_flux1_step_20_modules": round(20 * module, 2)}
print(json.dumps(out, indent=1))
PY
