// Printing an auto-fit plan: the table --auto-fit logs and the JSON --fit-dry-run prints.
#pragma once

#include <string>

#include "placement/auto_fit.h"

namespace ggdiff::placement {

// Compact JSON object:
// {"mode":"time-share","time_share":true,
//  "devices":[{"name":"CUDA0","free_bytes":N,"budget_bytes":N}, ...],
//  "components":[{"module":"diffusion","params_bytes":N,"reserve_bytes":N,"splittable":true,
//                 "targets":["CUDA0","CUDA1"],"split":true,"split_mode":"layer",
//                 "on_cpu":false,"params":"disk"}, ...],
//  "backend":"diffusion=CUDA0&CUDA1,...","params_backend":"...","split_mode":"",
//  "args":"--backend ... --params-backend ...","warnings":[...]}
// "split_mode" of a component is null unless split; "params" is "disk" or "compute".
std::string plan_to_json(const AutoFitPlan& plan);

// Human-readable lines (newline-terminated): mode, device table, component table and the
// derived flags.
std::string plan_to_table(const AutoFitPlan& plan);

// The derived flags as one command-line fragment ("--backend ... --params-backend ...").
std::string plan_args(const AutoFitPlan& plan);

}  // namespace ggdiff::placement
