#include <nanobind/nanobind.h>
NB_MODULE(_volley, m) {}
