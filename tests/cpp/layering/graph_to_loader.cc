// Layering probe (must not compile): graph includes a concept above it (loader).
#include "volley/loader/neighbor_loader.h"
