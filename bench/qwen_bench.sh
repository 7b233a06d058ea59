#!/usr/bin/env bash
# Qwen Image on the qwen_tiny fixture (one 3072-wide DiT block, one 3584-wide Qwen2.5-VL
# layer, the full Wan 2.1 VAE; ../shared/golden/qwen_tiny): euler, 4 steps, cfg 2.5, at
# 64x64 and 256x256, on this machine's default device and split over two ggdiff-rpc
# workers (single: --backend RPC0; split: diffusion=RPC0&RPC1,te=RPC0&RPC1,vae=RPC0).
# Prints one JSON object: per-step seconds and peak RSS of each run (the workers' peak RSS
# too for the RPC runs). Environment: BUILD_DIR (default build), WORKER_THREADS (default:
# all cores), SIZES (default "64 256"). Extra flags go to ggdiff-bench (e.g. -t 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
dit=$(make_fixture qwen_tiny_dit 21)
llm=$(make_fixture qwen_tiny_llm 22)
vae=$(make_fixture qwen_vae 23)
threads=${WORKER_THREADS:-$(nproc)}
sizes=${SIZES:-"64 256"}
for exe in ggdiff-bench ggdiff-rpc; do
  if [ ! -x "$build_dir/$exe" ]; then
    echo "qwen_bench: $build_dir/$exe is missing (cmake --build $build_dir --target $exe)" >&2
    exit 1
  fi
done

pids=()
stop_workers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_workers EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
start_worker() {
  local port pid
  port=$(free_port)
  "$build_dir/ggdiff-rpc" --host 127.0.0.1 --port "$port" --threads "$threads" >/dev/null 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      endpoint="127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  echo "qwen_bench: worker on port $port did not start" >&2
  return 1
}
worker_peak_mib() {  # VmHWM of each worker, MiB
  local out="" pid
  for pid in "${pids[@]}"; do
    out+="$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status"),"
  done
  echo "[${out%,}]"
}

run() {  # run SIZE [flags...]
  local size=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$dit" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$shared/data/qwen2_synthetic" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps 4 \
    --cfg-scale 2.5 --sampling-method euler -s 42 "$@"
}

results="{"
for size in $sizes; do
  echo "qwen_bench: ${size}x${size}, default device" >&2
  local_run=$(run "$size" "$@")
  start_worker; ep0=$endpoint
  start_worker; ep1=$endpoint
  echo "qwen_bench: ${size}x${size}, one RPC worker" >&2
  single=$(run "$size" --rpc-servers "$ep0,$ep1" --backend RPC0 "$@")
  single_workers=$(worker_peak_mib)
  stop_workers
  start_worker; ep0=$endpoint
  start_worker; ep1=$endpoint
  echo "qwen_bench: ${size}x${size}, split over two RPC workers" >&2
  split=$(run "$size" --rpc-servers "$ep0,$ep1" \
    --backend "diffusion=RPC0&RPC1,te=RPC0&RPC1,vae=RPC0" "$@")
  split_workers=$(worker_peak_mib)
  stop_workers
  results+="\"$size\": {\"local\": $local_run, \"rpc_single\": $single, "
  results+="\"rpc_single_worker_peak_rss_mib\": $single_workers, \"rpc_split\": $split, "
  results+="\"rpc_split_worker_peak_rss_mib\": $split_workers},"
done
results="${results%,}}"
python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]), indent=1))' "$results"
