#!/usr/bin/env bash
# Per-step time of a layer split over two ggdiff-rpc workers versus one device, on the
# full-size SD1.5-layout fixture (2.1 GB, seed 2): 256x256, 4 steps, euler.
#   single: --backend diffusion=RPC0         split: --backend "diffusion=RPC0&RPC1"
# Both workers run on this machine (loopback), so the split's extra cost should be the
# copies at the range boundaries. Prints one JSON object: both ggdiff-bench results, their
# mean_step_seconds and the ratio split/single. The workers are stopped on any exit.
# Environment: BUILD_DIR (default build), WORKER_THREADS (default: all cores).
# Extra flags go to ggdiff-bench (e.g. -t 2, --type q8_0).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
model=$(make_fixture sd1_mc320 2)
threads=${WORKER_THREADS:-$(nproc)}
for exe in ggdiff-bench ggdiff-rpc; do
  if [ ! -x "$build_dir/$exe" ]; then
    echo "split_bench: $build_dir/$exe is missing (cmake --build $build_dir --target $exe)" >&2
    exit 1
  fi
done

pids=()
logs=()
stop_workers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for log in "${logs[@]}"; do rm -f "$log"; done
  pids=()
}
trap stop_workers EXIT
trap 'exit 130' INT TERM

# A loopback port nothing listens on (the kernel's pick for port 0).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts a worker and sets $endpoint once it accepts connections (retrying on a new port
# if the chosen one was taken meanwhile). Not in a subshell: pids must reach the trap.
start_worker() {
  local attempt port log pid
  for attempt in 1 2 3 4; do
    port=$(free_port)
    log=$(mktemp)
    "$build_dir/ggdiff-rpc" --host 127.0.0.1 --port "$port" --threads "$threads" >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
    logs+=("$log")
    for _ in $(seq 200); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        endpoint="127.0.0.1:$port"
        return 0
      fi
      sleep 0.1
    done
    echo "split_bench: worker on port $port did not start: $(cat "$log")" >&2
  done
  return 1
}

start_worker
ep0=$endpoint
start_worker
ep1=$endpoint
echo "split_bench: workers $ep0 $ep1 ($threads threads each)" >&2

run() {
  "$build_dir/ggdiff-bench" -m "$model" --tokenizer "$shared/data/clip/merges.txt" \
    -p "a photograph of an astronaut riding a horse" -W 256 -H 256 --steps 4 \
    --sampling-method euler -s 2 --rpc-servers "$ep0,$ep1" --backend "$1" "${@:2}"
}

echo "split_bench: single device (diffusion=RPC0)" >&2
single=$(run "diffusion=RPC0" "$@")
echo "split_bench: layer split (diffusion=RPC0&RPC1)" >&2
split=$(run "diffusion=RPC0&RPC1" "$@")

python3 - "$single" "$split" <<'EOF'
import json, sys
single, split = json.loads(sys.argv[1]), json.loads(sys.argv[2])
a, b = single["mean_step_seconds"], split["mean_step_seconds"]
print(json.dumps({
    "single_mean_step_seconds": a,
    "split_mean_step_seconds": b,
    "split_over_single": round(b / a, 3) if a > 0 else None,
    "single": single,
    "split": split,
}, indent=1))
EOF
