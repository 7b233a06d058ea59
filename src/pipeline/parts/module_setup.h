// Building a family part's ModuleRunner: one call that creates the runner on its
// placement, declares the weights with a representative graph and loads them.
#pragma once

#include <memory>
#include <string>

#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

Result<std::unique_ptr<ModuleRunner>> make_module(const FamilyContext& ctx,
                                                  const ModuleDevices& where, const char* label,
                                                  const BuildFn& declare);

}  // namespace ggdiff
