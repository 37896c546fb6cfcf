#include "volley/loader/internal/lookahead_window.h"

#include <algorithm>
#include <utility>

namespace volley::loader_internal {

template <class Subgraph>
LookaheadWindowOf<Subgraph>::LookaheadWindowOf(std::vector<Target> targets, int64_t tag,
                                               int64_t num_batches, int64_t depth,
                                               SampleBatch sample)
    : targets_(std::move(targets)),
      tag_(tag),
      num_batches_(num_batches),
      depth_(std::max<int64_t>(depth, 0)),
      sample_(std::move(sample)) {}

template <class Subgraph>
LookaheadWindowOf<Subgraph>::~LookaheadWindowOf() {
  for (const auto& [index, slot] : slots_) {
    if (slot.done && !slot.error) begin(index);
  }
}

template <class Subgraph>
void LookaheadWindowOf<Subgraph>::begin(int64_t index) const {
  for (const Target& target : targets_) target.store.begin_batch(tag_ + index);
}

template <class Subgraph>
void LookaheadWindowOf<Subgraph>::sample_and_announce(int64_t index) {
  Subgraph subgraph;
  std::exception_ptr error;
  try {
    sample_(index, subgraph);
    for (const Target& target : targets_) {
      target.store.announce_batch(tag_ + index, target.rows(subgraph));
    }
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

template <class Subgraph>
void LookaheadWindowOf<Subgraph>::take(int64_t index, Subgraph& out) {
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
  begin(index);
  if (slot.error) std::rethrow_exception(slot.error);
  out = std::move(slot.subgraph);
}

template <class Subgraph>
int64_t LookaheadWindowOf<Subgraph>::kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t count = 0;
  for (const auto& entry : slots_) count += entry.second.done ? 1 : 0;
  return count;
}

LookaheadWindow::Target batch_nodes_target(FeatureStore store) {
  return {std::move(store), [](const SampledSubgraph& subgraph) {
            const Array& nodes = subgraph.nodes;
            return std::span<const int64_t>(nodes.data<int64_t>(),
                                            static_cast<size_t>(nodes.numel()));
          }};
}

template class LookaheadWindowOf<SampledSubgraph>;
template class LookaheadWindowOf<HeteroSampledSubgraph>;

}  // namespace volley::loader_internal
