# Sourced by bench scripts: start_workers N starts N ggdiff-rpc workers on free loopback
# ports and sets $endpoints ("host:port,host:port"); they are stopped on any exit.
# Environment: WORKER_THREADS (default: all cores).
worker_pids=()
worker_logs=()
stop_workers() {
  for pid in "${worker_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${worker_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for log in "${worker_logs[@]}"; do rm -f "$log"; done
  worker_pids=()
}
trap stop_workers EXIT
trap 'exit 130' INT TERM

start_workers() {
  local n=$1 threads=${WORKER_THREADS:-$(nproc)} i attempt port log pid up
  if [ ! -x "$build_dir/ggdiff-rpc" ]; then
    echo "bench: $build_dir/ggdiff-rpc is missing (cmake --build $build_dir --target ggdiff-rpc)" >&2
    exit 1
  fi
  endpoints=""
  for i in $(seq "$n"); do
    up=""
    for attempt in 1 2 3 4; do
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      log=$(mktemp)
      "$build_dir/ggdiff-rpc" --host 127.0.0.1 --port "$port" --threads "$threads" >"$log" 2>&1 &
      pid=$!
      worker_pids+=("$pid")
      worker_logs+=("$log")
      for _ in $(seq 200); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
        sleep 0.1
      done
      [ -n "$up" ] && break
      echo "bench: worker on port $port did not start: $(cat "$log")" >&2
    done
    [ -n "$up" ] || exit 1
    endpoints="${endpoints:+$endpoints,}127.0.0.1:$port"
  done
  echo "bench: workers $endpoints ($threads threads each)" >&2
}
