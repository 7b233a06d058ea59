// Includes a src/ header. It compiles against ggdiff::internal (the layers_internal_sees_src
// test) and must not compile against libggdiff alone (layers_public_hides_src): the C API
// library shows its users include/ only.
#include "core/status.h"

ggdiff::Status layers_probe_status() {
    return ggdiff::Status::Error("probe");
}
