# Sourced by the bench scripts: make_fixture NAME SEED -> path of build/fixtures/NAME.safetensors
# (generated once from ../shared/fixtures/NAME.tensors).
bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$bench_root/build}"
shared="${GGDIFF_SHARED:-$bench_root/../shared}"
make_fixture() {
  local name=$1 seed=$2 out="$build_dir/fixtures/$1.safetensors"
  if [ ! -f "$out" ]; then
    mkdir -p "$build_dir/fixtures"
    echo "bench: generating $out" >&2
    "$shared/tools/make_fixture.py" "$shared/fixtures/$name.tensors" "$out" --seed "$seed" >&2
  fi
  echo "$out"
}

# bench_settings NAME SIZE STEPS: the settings of an engine-vs-reference bench from the environment
# (SIZE and STEPS with these defaults, THREADS: all cores, REF_CLI, FIXTURES: build/fixtures,
# FIXTURE_PYTHON) into size, steps, threads, ref_cli, fixtures and python; stops with an error
# named NAME when ggdiff-bench is not built.
bench_settings() {
  size=${SIZE:-$2}
  steps=${STEPS:-$3}
  threads=${THREADS:-$(nproc)}
  ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
  fixtures=${FIXTURES:-$build_dir/fixtures}
  python=${FIXTURE_PYTHON:-/usr/bin/python3}
  if [ ! -x "$build_dir/ggdiff-bench" ]; then
    echo "$1: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
    exit 1
  fi
}

# ref_timed TAG STEPS PER_STEP CMD...: runs a reference-engine command line CMD with its output
# in a temporary log and prints its timing as JSON (bench/ref_log.py: PER_STEP=1 gives the
# progress bar's per-step times after the first instead of the mean).
ref_timed() {
  local tag=$1 steps=$2 per_step=$3 log start end
  shift 3
  log=$(mktemp)
  start=$(date +%s.%N)
  "$@" >"$log" 2>&1 || { tail -20 "$log" >&2; echo "$tag: the reference failed" >&2; }
  end=$(date +%s.%N)
  python3 "$bench_root/bench/ref_log.py" "$log" "$start" "$end" "$steps" "$per_step"
  rm -f "$log"
}

# block_pair_bench TAG NOTE BLOCKS DIT1 DIT2 [flags...]: the one- and two-block runs of a DiT
# bench and the whole step estimated from them (bench/block_estimate.py over BLOCKS blocks). The
# caller defines ggdiff_run DIT [flags...] (ggdiff-bench's JSON) and ref_run DIT (ref_timed's),
# and sets size, steps, threads and ref_cli; the reference runs unless REF=0 or ref_cli is not
# executable. Extra flags go to ggdiff_run. Prints one JSON object.
block_pair_bench() {
  local tag=$1 note=$2 blocks=$3 dit1=$4 dit2=$5 results n dit pair
  shift 5
  echo "${tag}_bench: $note" >&2
  results="{\"family\": \"$tag\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
  for pair in "1:$dit1" "2:$dit2"; do
    n=${pair%%:*}
    dit=${pair#*:}
    echo "${tag}_bench: $n block(s), ggdiff" >&2
    results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
    if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
      echo "${tag}_bench: $n block(s), reference $ref_cli" >&2
      results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
    fi
  done
  results+="}"
  python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "blocks"
}
