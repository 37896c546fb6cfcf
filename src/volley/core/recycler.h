// volley/core/recycler.h — a bounded stock of reusable objects.
//
// Per-batch objects that own large arrays (a sampler's scratch, a sampled subgraph's vectors)
// are expensive to make anew: their memory is fresh mappings that fault and zero every page.
// A Recycler hands out objects as shared_ptrs whose last owner, instead of deleting the object,
// puts it back in the stock, capacity intact, for the next acquire():
//
//   Recycler<SampledSubgraph> outputs({.max_idle = 4, .keep = fits_budget});
//   std::shared_ptr<SampledSubgraph> out = outputs.acquire();  // recycled or new
//   // ... fill *out, hand it on; when the last copy goes, it returns to the stock ...
//
// Bound: at most `max_idle` objects wait in the stock; an object coming back to a full stock,
// or one `keep` rejects (e.g. grown past a size budget; `keep` may also shrink it), is deleted.
// Objects come back as their last user left them: the user of acquire() resets them.
//
// Thread safety: acquire() and the return of objects may happen on any thread concurrently. The
// stock outlives the Recycler while objects it handed out are alive.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace volley {

template <typename T>
class Recycler {
 public:
  struct Options {
    size_t max_idle = 4;
    // Called on each object coming back (must not throw); false deletes it instead of keeping
    // it. It may trim the object.
    std::function<bool(T&)> keep;
  };

  explicit Recycler(Options options) : stock_(std::make_shared<Stock>(std::move(options))) {}

  // An object from the stock (the most recently returned), or a new T{}.
  std::shared_ptr<T> acquire() {
    std::unique_ptr<T> object;
    {
      std::lock_guard lock(stock_->mutex);
      if (!stock_->idle.empty()) {
        object = std::move(stock_->idle.back());
        stock_->idle.pop_back();
      }
    }
    if (!object) object = std::make_unique<T>();
    std::weak_ptr<Stock> stock = stock_;
    return std::shared_ptr<T>(object.release(), [stock](T* returned) {
      std::unique_ptr<T> owned(returned);
      if (auto alive = stock.lock()) alive->give_back(std::move(owned));
    });
  }

  size_t idle() const {
    std::lock_guard lock(stock_->mutex);
    return stock_->idle.size();
  }

 private:
  struct Stock {
    explicit Stock(Options given) : options(std::move(given)) { idle.reserve(options.max_idle); }
    // An object not kept is deleted on return, after the lock is released.
    void give_back(std::unique_ptr<T> object) noexcept {
      if (options.keep && !options.keep(*object)) return;
      std::lock_guard lock(mutex);
      if (idle.size() < options.max_idle) idle.push_back(std::move(object));  // never reallocates
    }
    Options options;
    mutable std::mutex mutex;
    std::vector<std::unique_ptr<T>> idle;
  };

  std::shared_ptr<Stock> stock_;
};

}  // namespace volley
