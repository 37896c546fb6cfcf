// SIGBUS turned into a return value for guarded reads of mapped files (fault_guard.h).
#include "volley/core/internal/fault_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include <mutex>

namespace volley::internal {
namespace {

thread_local sigjmp_buf* recovery_point = nullptr;  // set while this thread runs a guarded read
struct sigaction replaced {};                       // the handler ours replaced
std::mutex install_mutex;

void on_bus_error(int signal_number, siginfo_t* info, void* context) {
  if (recovery_point != nullptr) siglongjmp(*recovery_point, 1);
  // Not a guarded read: what would have happened without us.
  if ((replaced.sa_flags & SA_SIGINFO) != 0 && replaced.sa_sigaction != nullptr) {
    replaced.sa_sigaction(signal_number, info, context);
    return;
  }
  if ((replaced.sa_flags & SA_SIGINFO) == 0 && replaced.sa_handler != SIG_DFL &&
      replaced.sa_handler != SIG_IGN) {
    replaced.sa_handler(signal_number);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(SIGBUS, &fallback, nullptr);
  // A fault re-executes its instruction under the default action; a sent signal is sent again.
  if (info == nullptr || info->si_code <= 0) raise(SIGBUS);
}

bool handler_is_ours() {
  struct sigaction current {};
  sigaction(SIGBUS, nullptr, &current);
  return (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_bus_error;
}

void ensure_handler() {
  if (handler_is_ours()) return;
  std::lock_guard lock(install_mutex);
  struct sigaction current {};
  sigaction(SIGBUS, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_bus_error) return;
  replaced = current;
  struct sigaction ours {};
  ours.sa_sigaction = on_bus_error;
  ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGBUS, &ours, nullptr);
}

}  // namespace

bool run_guarding_bus_errors(void (*body)(void*), void* context) {
  ensure_handler();
  sigjmp_buf point;
  if (sigsetjmp(point, 0) != 0) {
    recovery_point = nullptr;
    // SA_NODEFER left SIGBUS unblocked; unblock it anyway, in case another handler's mask
    // blocked it (a blocked fault signal would end the process at the next fault).
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, nullptr);
    return false;
  }
  recovery_point = &point;
  body(context);
  recovery_point = nullptr;
  return true;
}

}  // namespace volley::internal
