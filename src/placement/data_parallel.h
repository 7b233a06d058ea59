// Data-parallel batches: `--backend "all=RPC0|RPC1"` (or "diffusion=A|B,..." per module)
// keeps one replica of the model per device of the '|' lists and runs the batch items on
// them at once. Replica k resolves every '|' list to its k-th device; a module without '|'
// runs on its own device(s) in every replica (each replica builds its own copy of it).
// Batch item i runs on replica i % n, each replica computing its items in order.
#pragma once

#include <string>
#include <vector>

#include "placement/backend_spec.h"

namespace ggdiff::placement {

// The number of replicas the spec asks for: the length of its '|' lists, 1 without.
size_t replica_count(const BackendSpec& spec);

// The distinct devices replica k's '|' entries resolve to: all= first, then the modules in
// canonical order. Empty without '|'.
std::vector<std::string> replica_devices(const BackendSpec& spec, size_t k);
// Replica k's name for logs and errors: its replica_devices joined with '+' ("RPC1", or
// "CUDA1+RPC1" when modules take different '|' lists).
std::string replica_name(const BackendSpec& spec, size_t k);

// The batch items replica k of n computes: k, k + n, k + 2n, ... below `batch`.
std::vector<int> replica_items(int batch, size_t replicas, size_t k);

// The log line for a batch over named replicas:
//   "data parallel: 2 replicas (RPC0, RPC1); items 0,2 on RPC0, 1,3 on RPC1"
// with the replicas that get no item listed as idle ("...; item 0 on RPC0; RPC1 idle (-b 1)").
std::string data_parallel_summary(const std::vector<std::string>& names, int batch);

}  // namespace ggdiff::placement
