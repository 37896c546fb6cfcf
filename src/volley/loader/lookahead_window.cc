#include "volley/loader/internal/lookahead_window.h"

#include <algorithm>
#include <utility>

namespace volley::loader_internal {

LookaheadWindow::LookaheadWindow(FeatureStore store, int64_t tag, int64_t num_batches,
                                 int64_t depth, SampleBatch sample)
    : store_(std::move(store)),
      tag_(tag),
      num_batches_(num_batches),
      depth_(std::max<int64_t>(depth, 0)),
      sample_(std::move(sample)) {}

LookaheadWindow::~LookaheadWindow() {
  for (const auto& [index, slot] : slots_) {
    if (slot.done && !slot.error) store_.begin_batch(tag_ + index);
  }
}

void LookaheadWindow::sample_and_announce(int64_t index) {
  SampledSubgraph subgraph;
  std::exception_ptr error;
  try {
    sample_(index, subgraph);
    const Array& nodes = subgraph.nodes;
    store_.announce_batch(
        tag_ + index,
        std::span<const int64_t>(nodes.data<int64_t>(), static_cast<size_t>(nodes.numel())));
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slots_[index];
    slot.done = true;
    slot.subgraph = std::move(subgraph);
    slot.error = error;
  }
  done_changed_.notify_all();
}

void LookaheadWindow::take(int64_t index, SampledSubgraph& out) {
  int64_t first = 0;
  int64_t last = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = next_to_claim_;
    last = std::min(num_batches_ - 1, index + depth_);
    for (; next_to_claim_ <= last; ++next_to_claim_) slots_[next_to_claim_];
  }
  // This worker's own batch first (when it claimed it), then the rest of its claim.
  if (index >= first && index <= last) sample_and_announce(index);
  for (int64_t b = first; b <= last; ++b) {
    if (b != index) sample_and_announce(b);
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_changed_.wait(lock, [&] { return slots_[index].done; });
    auto entry = slots_.find(index);
    slot = std::move(entry->second);
    slots_.erase(entry);
  }
  store_.begin_batch(tag_ + index);
  if (slot.error) std::rethrow_exception(slot.error);
  out = std::move(slot.subgraph);
}

int64_t LookaheadWindow::kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t count = 0;
  for (const auto& entry : slots_) count += entry.second.done ? 1 : 0;
  return count;
}

}  // namespace volley::loader_internal
