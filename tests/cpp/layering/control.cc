// Layering probe (must compile): a partition source includes its own private header and the
// public headers of concepts below it.
#include "volley/feature/gather.h"
#include "volley/graph/json_checker.h"
#include "volley/partition/internal/partitioners.h"
#include "volley/sampling/neighbor_sampler.h"
