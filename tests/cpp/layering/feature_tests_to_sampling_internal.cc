// Layering probe (must not compile): a test of feature reaches into sampling's private headers.
#include "volley/sampling/internal/pick.h"
