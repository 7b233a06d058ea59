#!/usr/bin/env bash
# Installs every build, test and run dependency of ggdiff from Debian's packages,
# then builds Release into build/. Safe to run again.
#
# ggml (>= 0.27) is only packaged in Debian unstable: this script adds the `sid`
# suite with the same mirror URI as the system's existing Debian entry, pins it at
# priority 100 so nothing else moves, and installs the ggml packages with `-t sid`.
#
# clang and libclang-rt-dev (libFuzzer, ASan, UBSan) are for scripts/fuzz.sh only: the build
# itself uses the default compiler.
#
# GPU backends (ggml loads them at run time; ggdiff then lists their devices with
# --list-devices and uses them with --backend, see docs/gpu.md):
#   --vulkan  Debian's ggml Vulkan backend (libggml0-backend-vulkan) and Mesa's Vulkan drivers
#             (AMD and Intel GPUs, and lavapipe, a Vulkan device on the CPU); NVIDIA GPUs need
#             the vendor driver's Vulkan ICD as well.
#   --hip     Debian's ggml HIP backend (libggml0-backend-hip) for AMD GPUs with ROCm.
# CUDA is not packaged: build ggml from source (docs/gpu.md, scripts/device_check.sh).
#
# Environment: GGDIFF_SKIP_APT=1 skips the package steps (build only);
#              BUILD_DIR (default build), BUILD_TYPE (default Release).
set -euo pipefail

gpu_packages=()
sid_gpu_packages=()
for arg in "$@"; do
  case $arg in
    --vulkan)
      sid_gpu_packages+=(libggml0-backend-vulkan)
      gpu_packages+=(mesa-vulkan-drivers)
      ;;
    --hip) sid_gpu_packages+=(libggml0-backend-hip) ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup: unknown option $arg (options: --vulkan, --hip, --help)" >&2
      exit 2
      ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
build_type="${BUILD_TYPE:-Release}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

debian_mirror() {
  # First URI of a Debian (not security) entry, deb822 files first, then one-line lists.
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f" |
      grep -E '/debian/?$' | grep -v security | head -n 1 || true)
    if [ -n "$uri" ]; then echo "$uri"; return; fi
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" |
      grep -E '/debian/?$' | grep -v security | head -n 1 || true)
    if [ -n "$uri" ]; then echo "$uri"; return; fi
  done
}

install_packages() {
  local sid_list=/etc/apt/sources.list.d/ggdiff-sid.sources
  local pin=/etc/apt/preferences.d/ggdiff-sid
  if [ ! -f "$sid_list" ]; then
    local mirror
    mirror="$(debian_mirror)"
    if [ -z "$mirror" ]; then
      echo "setup: no Debian mirror found in the apt configuration" >&2
      exit 1
    fi
    echo "setup: adding Debian sid from $mirror (pinned at priority 100)"
    $SUDO tee "$sid_list" >/dev/null <<SRC
Types: deb
URIs: $mirror
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $SUDO tee "$pin" >/dev/null <<PIN
Package: *
Pin: release n=sid
Pin-Priority: 100
PIN
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends \
    build-essential cmake pkg-config git ca-certificates \
    libgtest-dev libgmock-dev nlohmann-json3-dev libcpp-httplib-dev libcli11-dev \
    libpng-dev libjpeg-dev libwebp-dev libstb-dev zlib1g-dev \
    libopenblas0-pthread python3 python3-numpy python3-pil \
    chromium chromium-driver python3-selenium clang libclang-rt-dev
  $SUDO apt-get install -y -q --no-install-recommends -t sid \
    libggml-dev libggml0-backend-rpc libggml0-backend-blas "${sid_gpu_packages[@]}"
  if [ ${#gpu_packages[@]} -gt 0 ]; then
    $SUDO apt-get install -y -q --no-install-recommends "${gpu_packages[@]}"
  fi
}

if [ "${GGDIFF_SKIP_APT:-0}" != 1 ]; then
  install_packages
fi

cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type"
cmake --build "$build_dir" -j "$(nproc)"
