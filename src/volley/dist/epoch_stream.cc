// A server-client batch stream as a callback reactor. See internal/epoch_stream.h.
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

class Stream final : public grpc::ServerWriteReactor<rpc::BatchMessage> {
 public:
  Stream(StreamHost& host, OpenStream open) : host_(host), open_(std::move(open)) {
    host_.stream_opened();
    self_ = std::shared_ptr<Stream>(this);
    host_.pump().submit([keep = self_] { keep->start(); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away (or cancelled): nothing more can be written
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the stream"));
      return;
    }
    host_.pump().submit([keep = self_] { keep->next(); });
  }

  void OnCancel() override {
    cancelled_.store(true);
    std::lock_guard lock(mutex_);
    if (producer_) producer_->stop();  // a pump task waiting for a batch returns at once
  }

  // Never deletes the stream here: deleting it joins the epoch's workers, and a worker may be
  // waiting for a peer's reply that this very gRPC thread would deliver (the server's transport
  // then stalls until keepalive closes it). The pump drops the last reference instead.
  void OnDone() override {
    host_.stream_closed();
    host_.pump().submit([last = std::move(self_)] {});
  }

 private:
  // First task: checks the call and builds the producer, then sends the first batch.
  void start() {
    std::unique_ptr<StreamProducer> producer;
    const grpc::Status status = open_(producer);
    if (!status.ok()) {
      this->Finish(status);  // counted as failed by the host
      return;
    }
    {
      std::lock_guard lock(mutex_);
      producer_ = std::move(producer);
      if (cancelled_.load()) producer_->stop();
    }
    next();
  }

  // Makes the next batch (never while the client pauses) and starts its write, or finishes.
  void next() {
    if (cancelled_.load()) {
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the stream"));
      return;
    }
    bool more = false;
    try {
      message_.Clear();
      more = producer_->next(message_);
    } catch (const Error& e) {
      // A peer's failure while the batch was made: this server is healthy, say whose it is.
      fail(grpc::Status(status_code_for(e.kind()),
                        fmt::format("part {} {} {}", host_.part(), kPeerFailure, e.what())));
      return;
    }
    if (!more) {
      finish(cancelled_.load()
                 ? grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the stream")
                 : grpc::Status::OK);
      return;
    }
    if (const auto size = static_cast<int64_t>(message_.ByteSizeLong());
        size > host_.max_message_bytes()) {
      fail(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          fmt::format("part {}: batch {} is {} bytes, more than the {} one message "
                      "may (max_reply_bytes); use a smaller batch_size",
                      host_.part(), message_.index(), size, host_.max_message_bytes())));
      return;
    }
    this->StartWrite(&message_);  // OnWriteDone queues the next batch once the client has room
  }

  void fail(const grpc::Status& status) {
    host_.count_failure();
    finish(status);
  }

  void finish(const grpc::Status& status) {
    {
      std::lock_guard lock(mutex_);
      if (producer_) producer_->stop();  // its workers are joined when the stream is deleted
    }
    this->Finish(status);
  }

  StreamHost& host_;
  OpenStream open_;
  std::shared_ptr<Stream> self_;  // released when gRPC reports the stream done
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // guards producer_ against OnCancel
  std::unique_ptr<StreamProducer> producer_;
  rpc::BatchMessage message_;
};

// A SampleEpoch stream's batches: the native loader's epoch (its workers sample ahead).
class EpochProducer final : public StreamProducer {
 public:
  EpochProducer(std::unique_ptr<NeighborLoader> loader, int64_t epoch, int64_t first_batch)
      : loader_(std::move(loader)), epoch_(loader_->start_epoch(epoch, first_batch)) {}

  bool next(rpc::BatchMessage& message) override {
    std::optional<Batch> batch = epoch_->next();
    if (!batch) return false;
    fill_batch_message(*batch, epoch_->num_batches(), message);
    return true;
  }
  void stop() override { epoch_->request_stop(); }

 private:
  std::unique_ptr<NeighborLoader> loader_;
  std::unique_ptr<Epoch> epoch_;
};

}  // namespace

grpc::ServerWriteReactor<rpc::BatchMessage>* start_stream(StreamHost& host, OpenStream open) {
  return new Stream(host, std::move(open));
}

std::unique_ptr<StreamProducer> epoch_producer(std::unique_ptr<NeighborLoader> loader,
                                               int64_t epoch, int64_t first_batch) {
  return std::make_unique<EpochProducer>(std::move(loader), epoch, first_batch);
}

}  // namespace volley::dist::internal
