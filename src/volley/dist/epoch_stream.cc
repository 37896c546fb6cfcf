// A server-client epoch stream as a callback reactor. See internal/epoch_stream.h.
#include "volley/dist/internal/epoch_stream.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>
#include <utility>

#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist::internal {

namespace rpc = ::volley::rpc;

TaskQueue::TaskQueue(int threads) {
  for (int t = 0; t < threads; ++t) {
    threads_.emplace_back([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
          if (tasks_.empty()) return;  // stopping, and nothing left to run
          task = std::move(tasks_.front());
          tasks_.pop_front();
        }
        task();
      }
    });
  }
}

void TaskQueue::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  changed_.notify_one();
}

void TaskQueue::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

namespace {

class EpochStream final : public grpc::ServerWriteReactor<rpc::BatchMessage> {
 public:
  EpochStream(EpochStreamHost& host, grpc::CallbackServerContext& context,
              const rpc::EpochRequest& request)
      : host_(host), context_(context), request_(request) {
    host_.stream_opened();
    self_ = std::shared_ptr<EpochStream>(this);
    host_.pump().submit([keep = self_] { keep->open(); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away (or cancelled): nothing more can be written
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the epoch"));
      return;
    }
    host_.pump().submit([keep = self_] { keep->next(); });
  }

  void OnCancel() override {
    cancelled_.store(true);
    std::lock_guard lock(mutex_);
    if (epoch_) epoch_->request_stop();  // a pump task waiting for a batch returns at once
  }

  // Never deletes the stream here: deleting it joins the epoch's workers, and a worker may be
  // waiting for a peer's reply that this very gRPC thread would deliver (the server's transport
  // then stalls until keepalive closes it). The pump drops the last reference instead.
  void OnDone() override {
    host_.stream_closed();
    host_.pump().submit([last = std::move(self_)] {});
  }

 private:
  // First task: checks the call and starts the epoch, then sends the first batch.
  void open() {
    std::unique_ptr<NeighborLoader> loader;
    const grpc::Status status = host_.open_epoch(context_, request_, loader);
    if (!status.ok()) {
      Finish(status);  // counted as failed by the host
      return;
    }
    try {
      std::lock_guard lock(mutex_);
      epoch_ = loader->start_epoch(request_.epoch());
      loader_ = std::move(loader);
      if (cancelled_.load()) epoch_->request_stop();
    } catch (const Error& e) {
      fail(grpc::Status(status_code_for(e.kind()),
                        fmt::format("part {}: {}", host_.part(), e.what())));
      return;
    }
    next();
  }

  // Waits for the next batch (while it is produced; never while the client pauses) and starts
  // its write, or finishes the stream.
  void next() {
    if (cancelled_.load()) {
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the epoch"));
      return;
    }
    std::optional<Batch> batch;
    try {
      batch = epoch_->next();
    } catch (const Error& e) {
      // A peer's failure while the batch was sampled: this server is healthy, say whose it is.
      fail(grpc::Status(status_code_for(e.kind()),
                        fmt::format("part {} {} {}", host_.part(), kPeerFailure, e.what())));
      return;
    }
    if (!batch) {
      finish(cancelled_.load()
                 ? grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the epoch")
                 : grpc::Status::OK);
      return;
    }
    fill_batch_message(*batch, epoch_->num_batches(), message_);
    if (const auto size = static_cast<int64_t>(message_.ByteSizeLong());
        size > host_.max_message_bytes()) {
      fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: batch {} is {} bytes, more than the {} one message "
                                    "may (max_reply_bytes); use a smaller batch_size",
                                    host_.part(), batch->index, size, host_.max_message_bytes())));
      return;
    }
    StartWrite(&message_);  // OnWriteDone queues the next batch once the client has room
  }

  void fail(const grpc::Status& status) {
    host_.count_failure();
    finish(status);
  }

  void finish(const grpc::Status& status) {
    {
      std::lock_guard lock(mutex_);
      if (epoch_) epoch_->request_stop();  // joined when the stream is deleted
    }
    Finish(status);
  }

  EpochStreamHost& host_;
  grpc::CallbackServerContext& context_;
  const rpc::EpochRequest& request_;
  std::shared_ptr<EpochStream> self_;  // released when gRPC reports the stream done
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // guards epoch_ against OnCancel
  std::unique_ptr<NeighborLoader> loader_;
  std::unique_ptr<Epoch> epoch_;
  rpc::BatchMessage message_;
};

}  // namespace

grpc::ServerWriteReactor<rpc::BatchMessage>* start_epoch_stream(
    EpochStreamHost& host, grpc::CallbackServerContext& context, const rpc::EpochRequest& request) {
  return new EpochStream(host, context, request);
}

}  // namespace volley::dist::internal
