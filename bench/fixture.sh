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
