// volley/dist/internal/epoch_stream.h — a server-client batch stream without a held thread.
//
// SampleEpoch (server-client mode, either graph kind) streams batches to a
// trainer that reads at its own pace. With gRPC's synchronous API the handler's thread waited
// inside Write() while the reader paused, so trainers that paused could exhaust the server's
// threads. Here the stream is a callback reactor: a batch is fetched and its write started by a
// task of a small pump pool; the next task is queued only when gRPC reports the write done (the
// client's flow-control window had room). A paused reader therefore holds no thread at all — only
// its stream's prefetched batches and the epoch's (idle) workers.
//
// Exactly one piece of work owns a stream at a time — the opening task, a pump task, or a write
// in flight — and whichever owns it when the epoch ends, fails or is cancelled calls Finish,
// once. The reactor deletes itself when gRPC reports it done and no task holds it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "volley/core/error.h"
#include "volley/dist/volley.pb.h"
#include "volley/loader/neighbor_loader.h"

namespace volley::dist::internal {

// A fixed pool of threads running queued tasks in order of arrival. stop() (or the destructor)
// runs the tasks already queued, then joins.
class TaskQueue {
 public:
  explicit TaskQueue(int threads);
  ~TaskQueue() { stop(); }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  void submit(std::function<void()> task);
  void stop();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One stream's batches, made on the pump: next() fills `message` with the next batch (false:
// the stream's batches are done) and throws Error when a batch cannot be made (the request was
// checked when the stream opened, so such an Error is a peer's failure: this server is healthy);
// stop() makes a next() that waits return soon (called from another thread when the client
// cancels).
class StreamProducer {
 public:
  virtual ~StreamProducer() = default;
  virtual bool next(rpc::BatchMessage& message) = 0;
  virtual void stop() {}
};

// What a stream needs from its server (the servers' State implements it).
class StreamHost {
 public:
  virtual ~StreamHost() = default;
  // Counts a stream as open (before it is checked) and returns how many were open before it;
  // stream_closed() undoes it when the stream is done.
  virtual int64_t stream_opened() = 0;
  virtual void stream_closed() = 0;
  // A stream that failed after it was opened (a peer's error, an oversized batch).
  virtual void count_failure() = 0;
  virtual int64_t part() const = 0;
  virtual int64_t max_message_bytes() const = 0;  // a batch message above this ends the stream
  virtual TaskQueue& pump() = 0;
};

// Checks a stream's call and builds its producer (run as the stream's first pump task). A
// refusal is the returned status, counted as a failed request by the host.
using OpenStream = std::function<grpc::Status(std::unique_ptr<StreamProducer>&)>;

// The reactor of one SampleEpoch call; its work starts on host.pump() at once. The host, its pump
// and what `open` refers to (the call's request) must outlive the stream (gRPC keeps the request
// until the stream is done; the servers join their pump after gRPC's shutdown).
grpc::ServerWriteReactor<rpc::BatchMessage>* start_stream(StreamHost& host, OpenStream open);

// The producer of a SampleEpoch stream: `loader`'s epoch `epoch` from batch `first_batch`
// (ValueError outside [0, batches]), each batch as a BatchMessage.
std::unique_ptr<StreamProducer> epoch_producer(std::unique_ptr<NeighborLoader> loader,
                                               int64_t epoch, int64_t first_batch);

}  // namespace volley::dist::internal
