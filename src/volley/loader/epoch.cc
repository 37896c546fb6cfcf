// The one epoch: producers build batches, a bounded reorder queue hands them over in order.
#include <algorithm>

#include "volley/core/error.h"
#include "volley/loader/batch.h"
#include "volley/loader/internal/device_memory.h"

namespace volley {

std::optional<Batch> BatchStream::next_on(void* /*consumer_stream*/) { return next(); }

void Batch::hand_over(void* consumer_stream) {
  if (ready) ready->make_wait(consumer_stream);
  if (memory) memory->set_release_stream(consumer_stream);
}

void Batch::synchronize() const {
  if (ready) ready->synchronize();
}

Epoch::Epoch(int64_t num_batches, Producers producers, int64_t first_batch)
    : context_(std::move(producers.context)),
      num_batches_(num_batches),
      prefetch_(std::max<int64_t>(producers.prefetch, 1)),
      make_builder_(std::move(producers.make_builder)) {
  VOLLEY_REQUIRE(first_batch >= 0 && first_batch <= num_batches, ValueError,
                 "an epoch of {} batches cannot resume at batch {}", num_batches, first_batch);
  next_to_claim_ = next_to_deliver_ = first_batch;
  const int64_t threads = std::min<int64_t>(std::max(producers.threads, 1),
                                            std::max<int64_t>(num_batches_ - first_batch, 1));
  producers_.reserve(static_cast<size_t>(threads));
  for (int64_t t = 0; t < threads; ++t) producers_.emplace_back([this] { producer_loop(); });
}

Epoch::~Epoch() {
  stop();
  // Batches never handed out go before the context they may need (a device batch's memory is
  // released on the producer's stream).
  std::lock_guard lock(mutex_);
  ready_.clear();
}

void Epoch::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  space_changed_.notify_all();
  ready_changed_.notify_all();
}

void Epoch::stop() {
  request_stop();
  for (auto& producer : producers_) {
    if (producer.joinable()) producer.join();
  }
}

void Epoch::producer_loop() {
  BuildBatch build;
  std::exception_ptr setup_error;
  try {
    build = make_builder_();
  } catch (...) {
    setup_error = std::current_exception();
  }
  while (true) {
    int64_t index;
    {
      std::unique_lock lock(mutex_);
      space_changed_.wait(lock, [&] {
        return stopping_ || next_to_claim_ >= num_batches_ ||
               next_to_claim_ < next_to_deliver_ + prefetch_;
      });
      if (stopping_ || next_to_claim_ >= num_batches_) return;
      index = next_to_claim_++;
    }
    std::optional<Batch> batch;
    std::exception_ptr error = setup_error;
    if (!error) {
      try {
        batch = build(index);
      } catch (...) {
        error = std::current_exception();
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (error) {
        failed_[index] = error;
      } else {
        ready_.emplace(index, std::move(*batch));
      }
    }
    ready_changed_.notify_all();
    if (error) return;  // this producer is done; the epoch ends at its failed batch
  }
}

std::optional<Batch> Epoch::next_on(void* consumer_stream) {
  std::unique_lock lock(mutex_);
  if (next_to_deliver_ >= num_batches_) return std::nullopt;
  ready_changed_.wait(lock, [&] {
    return stopping_ || ready_.count(next_to_deliver_) || failed_.count(next_to_deliver_);
  });
  if (stopping_) return std::nullopt;
  if (auto failed = failed_.find(next_to_deliver_); failed != failed_.end()) {
    const std::exception_ptr error = failed->second;
    next_to_deliver_ = num_batches_;  // the epoch is over
    lock.unlock();
    stop();
    std::rethrow_exception(error);
  }
  auto node = ready_.extract(next_to_deliver_);
  ++next_to_deliver_;
  lock.unlock();
  space_changed_.notify_all();
  Batch batch = std::move(node.mapped());
  batch.hand_over(consumer_stream);
  return batch;
}

}  // namespace volley
