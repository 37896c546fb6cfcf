// volley/core/internal/fault_guard.h — reads of mapped files that survive the file's truncation
// (internal to Volley).
//
// A page of a file mapping whose file was truncated (or replaced in place) under the map is no
// longer backed: touching it raises SIGBUS, whose default action ends the process. Readers of
// mapped files run their reads under guard_bus_errors: a SIGBUS on the guarding thread returns
// there (false) instead, and the reader reports the file as changed on disk.
//
//   const bool complete = guard_bus_errors([&] { copy_rows(...); });
//   if (!complete) throw IoError("'{}' changed on disk since it was opened ...");
//
// The guard installs one process-wide SIGBUS handler (again at each guarded call when someone,
// e.g. Python's faulthandler, has replaced it since); a SIGBUS outside a guarded call goes to the
// handler it replaced, or ends the process as before. Contract for the guarded code: it leaves
// through a jump when a read faults, so it must own nothing that needs a destructor or an
// unlock (plain loops over memory: a row gather), and what it wrote before the fault is partial.
// Thread-safe: each thread has its own recovery point. POSIX (Linux).
#pragma once

namespace volley::internal {

// Runs body(context): true when it returned, false when a SIGBUS cut it short.
bool run_guarding_bus_errors(void (*body)(void*), void* context);

template <class Body>
bool guard_bus_errors(Body&& body) {
  return run_guarding_bus_errors([](void* context) { (*static_cast<Body*>(context))(); }, &body);
}

}  // namespace volley::internal
