// Layering probe (must not compile): the CLI reaches into feature's private cpu/ folder.
#include "volley/feature/cpu/gather_kernel.h"
