// Everything sampling offers, for callers that want one include.
#pragma once

#include "sampling/guidance.h"
#include "sampling/parameterization.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
