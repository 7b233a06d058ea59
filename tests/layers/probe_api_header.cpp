// The positive twin of probe_src_header.cpp: the same kind of unit, using only the public
// header, compiles against libggdiff (layers_public_sees_api).
#include "ggdiff.h"

const char* layers_probe_version() {
    return ggdiff_version();
}
