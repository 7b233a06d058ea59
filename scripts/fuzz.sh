#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for MINUTES minutes each, one after the other,
# and prints executions and coverage per target. Exits non-zero when any target found a crash,
# a hang, a leak or a sanitizer report (the input is saved under $BUILD_DIR/fuzz-artifacts/).
#
#   scripts/fuzz.sh MINUTES [TARGET ...]      e.g. scripts/fuzz.sh 10, scripts/fuzz.sh 1 gguf
#   nice -n 19 scripts/fuzz.sh 10             on a shared machine
#
# Needs clang (libFuzzer, ASan, UBSan): Debian's `clang` and `libclang-rt-dev` packages
# (scripts/setup.sh installs them; this script does with apt-get when a fuzzer does not link
# and it may: root or sudo). The normal build does not need clang. It builds into $BUILD_DIR
# (default build-fuzz) with -DGGDIFF_FUZZ=ON.
# New inputs go to $BUILD_DIR/fuzz-corpus/<target>/; copy a crash input that was fixed to
# tests/fuzz/crashes/<target>/ so that every build replays it (ctest fuzz_replay_<target>).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build-fuzz}"
minutes="${1:-}"
if ! [[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "usage: scripts/fuzz.sh MINUTES [TARGET ...]" >&2
  exit 2
fi
shift
seconds=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60); print (s < 1 ? 1 : s) }')

# libFuzzer ships in Debian's libclang-rt-dev, which clang only recommends: check that a
# fuzzer links, not just that clang++ exists.
have_libfuzzer() {
  command -v clang++ >/dev/null &&
    printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' |
    clang++ -fsanitize=fuzzer -x c++ - -o /dev/null >/dev/null 2>&1
}
if ! have_libfuzzer; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  if command -v apt-get >/dev/null && { [ -z "$SUDO" ] || command -v sudo >/dev/null; }; then
    echo "fuzz: installing clang and libclang-rt-dev (Debian packages) for libFuzzer"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      clang libclang-rt-dev
  fi
  if ! have_libfuzzer; then
    echo "fuzz: clang++ with libFuzzer not found; install Debian's clang and libclang-rt-dev" >&2
    exit 1
  fi
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGGDIFF_FUZZ=ON "${launcher[@]}" \
  >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target fuzz_all

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/tests/fuzz/fuzz_*.cpp; do
    t="$(basename "$f" .cpp)"
    targets+=("${t#fuzz_}")
  done
fi

# A small quarantine: with the default one, ASan's freed-memory quarantine grows past the RSS
# limit over millions of inputs (seen: 2.2 GB quarantined, 24 MB live) and ends the run as an OOM.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:quarantine_size_mb=64}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
logs="$build_dir/fuzz-logs"
mkdir -p "$logs"
summary=()
failed=0
for t in "${targets[@]}"; do
  bin="$build_dir/tests/fuzz/fuzz_$t"
  if [ ! -x "$bin" ]; then
    echo "fuzz: no target $t" >&2
    failed=1
    continue
  fi
  work="$build_dir/fuzz-corpus/$t"
  artifacts="$build_dir/fuzz-artifacts/$t"
  mkdir -p "$work" "$artifacts"
  dict=()
  if [ -f "$here/tests/fuzz/dict/$t.dict" ]; then dict=(-dict="$here/tests/fuzz/dict/$t.dict"); fi
  seeds=("$here/tests/fuzz/corpus/$t")
  if [ -d "$here/tests/fuzz/crashes/$t" ]; then seeds+=("$here/tests/fuzz/crashes/$t"); fi
  echo "fuzz: $t for ${seconds}s (log: $logs/$t.log)"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" "$work" "${seeds[@]}" >"$logs/$t.log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$logs/$t.log")
  rate=$(awk '/stat::average_exec_per_sec/ { print $2 }' "$logs/$t.log")
  last=$(grep -E '^#[0-9]+' "$logs/$t.log" | tail -n 1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[^ ]+).*/\1/p' <<<"$last")
  status="ok"
  if [ "$rc" != 0 ] || ls "$artifacts" | grep -q .; then
    status="FAILED (exit $rc; see $logs/$t.log and $artifacts/)"
    failed=1
  fi
  summary+=("$(printf '%-16s execs %-10s exec/s %-7s cov %-6s ft %-7s corpus %-12s %s' \
    "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$status")")
done
echo
printf '%s\n' "${summary[@]}"
exit "$failed"
