#!/usr/bin/env bash
# PhotoMaker's ID encoder at the real size on this machine's CPU, ggdiff against the reference
# engine (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), on
# the golden set's files: sdxl_mc32 with the PhotoMaker v1 and v2 fixtures, whose widths are the
# real ones (CLIP ViT-L/14 at 224, the 2048-wide fuse module, v2's perceiver). Their all-zero
# layers cost what random ones do, so the time is the real encoder's. Both engines time the
# same span: the identity prompt through SDXL's two CLIP encoders plus the ID encoder on the
# images of tests/golden/photomaker_tiny/ids (2), the reference as "Photomaker ID Stacking,
# taking N ms", ggdiff as "PhotoMaker: ID stacking of N image(s) took S s". One step at 64x64 so
# the rest of the run is short. Prints one JSON object. Environment: BUILD_DIR (default build),
# REF (0: skip the reference), REF_CLI, THREADS (-t for both, default: all cores).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
threads=${THREADS:-$(nproc)}
ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
sdxl=$(make_fixture sdxl_mc32 31)
suite="$bench_root/tests/golden/photomaker_tiny"
pm_file() {  # pm_file v1|v2 SEED -> path (the reference reads v2 from "v2" in the name)
  local out="$build_dir/fixtures/photomaker_$1_tiny.gguf"
  if [ ! -f "$out" ]; then
    python3 "$bench_root/tests/tools/make_gguf_fixture.py" \
      "$bench_root/tests/fixtures/photomaker_$1_tiny.tensors" "$out" --seed "$2" >&2
  fi
  echo "$out"
}
v1=$(pm_file v1 51)
v2=$(pm_file v2 52)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(-m "$sdxl" --pm-id-images-dir "$suite/ids" -p "a photo of a woman img, in a garden"
        -W 64 -H 64 --steps 1 --sampling-method euler -t "$threads")
ggdiff_secs() {  # ggdiff_secs PM [extra...]
  local pm=$1
  shift
  "$build_dir/ggdiff" "${common[@]}" --photo-maker "$pm" "$@" -o "$out/g.png" 2>&1 |
    sed -n 's/.*ID stacking of [0-9]* image(s) took \([0-9.]*\) s.*/\1/p'
}
ref_secs() {
  local pm=$1
  shift
  "$ref_cli" "${common[@]}" --photo-maker "$pm" "$@" -o "$out/r.png" 2>&1 |
    sed -n 's/.*Photomaker ID Stacking, taking \([0-9]*\) ms.*/\1/p' |
    awk '{printf "%.2f", $1 / 1000}'
}
g1=$(ggdiff_secs "$v1")
g2=$(ggdiff_secs "$v2" --pm-id-embed-path "$suite/id_embeds.bin")
r1=null
r2=null
if [ "${REF:-1}" != 0 ]; then
  r1=$(ref_secs "$v1")
  r2=$(ref_secs "$v2" --pm-id-embed-path "$suite/id_embeds.bin")
fi
printf '{"bench": "photomaker", "images": 2, "threads": %s, "ggdiff_v1_s": %s, "ggdiff_v2_s": %s, "ref_v1_s": %s, "ref_v2_s": %s}\n' \
  "$threads" "${g1:-null}" "${g2:-null}" "${r1:-null}" "${r2:-null}"
