// Whole-file reads with clear errors (core/read_file.h, where every layer can use them);
// atomic whole-file writes (temp file, fsync, rename) are core/output_file.h's
// write_file_atomic.
#pragma once

#include "core/output_file.h"
#include "core/read_file.h"
