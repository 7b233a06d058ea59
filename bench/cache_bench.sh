#!/usr/bin/env bash
# Step caching (--cache-mode, docs/caching.md): the speed it buys next to the image difference
# it costs. One request on the full-width SD1.5-layout fixture (sd1_mc320, 2.1 GB, seed 2):
# SIZE x SIZE (default 512), STEPS steps (default 20), euler_a, CFG 7, seed 42; run without a
# cache, then with each mode that acts on a UNet (ucache, spectrum) at its defaults and with
# the stronger options of the reference's golden cases. For each run: wall seconds of the
# whole command and of the sampling phase (-v's "sampling" timing when the log has it), the
# steps skipped (the cache's log line) and the mean/max absolute difference (0-255) against
# the uncached image.
# Prints one JSON object. Environment: BUILD_DIR (default build), SIZE, STEPS, THREADS (-t,
# default: all cores), PYTHON (with numpy and PIL, default /usr/bin/python3), MODES
# (space-separated "name=cache-mode[:cache-option]" runs, default below). Extra flags go to
# every ggdiff run. Wall times on a shared machine are noisy; the skipped-step counts are not.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
size=${SIZE:-512}
steps=${STEPS:-20}
threads=${THREADS:-$(nproc)}
py=${PYTHON:-/usr/bin/python3}  # with numpy and PIL
modes=${MODES:-"ucache=ucache ucache_strong=ucache:threshold=30,start=0,end=1,reset=0 \
spectrum=spectrum spectrum_strong=spectrum:warmup=2,window=4,stop=1"}
if [ ! -x "$build_dir/ggdiff" ]; then
  echo "cache_bench: $build_dir/ggdiff is missing (cmake --build $build_dir --target ggdiff)" >&2
  exit 1
fi
model=$(make_fixture sd1_mc320 2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME [flags...]: one generation; leaves NAME.png, NAME.log and NAME.secs in $work.
run() {
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  GGML_NO_BACKTRACE=1 "$build_dir/ggdiff" -m "$model" --tokenizer "$shared/data/clip/merges.txt" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler_a --cfg-scale 7 -s 42 -t "$threads" -v -o "$work/$name.png" \
    "$@" "${extra[@]}" >"$work/$name.log" 2>&1 || {
    echo "cache_bench: run $name failed:" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  "$py" -c "print(round($t1 - $t0, 2))" >"$work/$name.secs"
}

extra=("$@")
echo "cache_bench: ${size}x${size}, $steps steps, $threads threads; uncached run" >&2
run none
entries=()
for spec in $modes; do
  name=${spec%%=*}
  rest=${spec#*=}
  mode=${rest%%:*}
  opt=""
  [ "$rest" != "$mode" ] && opt=${rest#*:}
  echo "cache_bench: $name (--cache-mode $mode ${opt:+--cache-option $opt})" >&2
  if [ -n "$opt" ]; then
    run "$name" --cache-mode "$mode" --cache-option "$opt"
  else
    run "$name" --cache-mode "$mode"
  fi
  entries+=("$name|$mode|$opt")
done

"$py" - "$work" "$size" "$steps" "$threads" "${entries[@]}" <<'PY'
import json, re, sys
import numpy as np
from PIL import Image
work, size, steps, threads = sys.argv[1:5]
def img(name):
    return np.asarray(Image.open(f"{work}/{name}.png").convert("RGB"), dtype=np.float64)
def secs(name):
    return float(open(f"{work}/{name}.secs").read())
def sampling(name):
    text = open(f"{work}/{name}.log", errors="replace").read()
    m = re.findall(r"sampling\s+\d+/\d+[^\n\r]*\(([0-9.]+)s\)", text)
    return float(m[-1]) if m else None
def skipped(name):
    text = open(f"{work}/{name}.log", errors="replace").read()
    m = re.findall(r"((?:UCache|EasyCache|CacheDIT|Spectrum) (?:skipped [^\n]*|completed without skipping steps))", text)
    return m[-1] if m else None
base = img("none")
out = {"model": "sd1_mc320 (full-width SD1.5 layout, random weights)",
       "size": int(size), "steps": int(steps), "threads": int(threads),
       "sampler": "euler_a", "cfg_scale": 7,
       "none": {"seconds": secs("none"), "sampling_seconds": sampling("none")},
       "modes": {}}
for e in sys.argv[5:]:
    name, mode, opt = e.split("|")
    d = np.abs(img(name) - base)
    entry = {"cache_mode": mode, "cache_option": opt, "seconds": secs(name),
             "sampling_seconds": sampling(name), "log": skipped(name),
             "mean_abs_diff": round(float(d.mean()), 3), "max_abs_diff": int(d.max())}
    if entry["sampling_seconds"] and out["none"]["sampling_seconds"]:
        entry["sampling_speedup"] = round(out["none"]["sampling_seconds"] / entry["sampling_seconds"], 2)
    entry["speedup"] = round(out["none"]["seconds"] / entry["seconds"], 2)
    out["modes"][name] = entry
print(json.dumps(out, indent=1))
PY
