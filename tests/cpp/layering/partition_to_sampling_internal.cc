// Layering probe (must not compile): partition reaches into sampling's private internal/ folder.
#include "volley/sampling/internal/pick.h"
