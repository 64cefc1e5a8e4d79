// An in-order queue's bookkeeping on the host executor: the last task it submitted and its first
// unreported failure, which a failed launch or a hang stores and a wait takes.
#pragma once
#include <sk.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace sk::host {

struct StreamState {
  std::atomic<uint64_t> last_seq{0};

  // Stores `status` and message() unless a failure is already waiting to be reported: the
  // first one is what the next wait returns. message() runs only when it is kept.
  template <class Message>
  void keep_first_error(sk_status status, Message message) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_ != SK_OK) return;
    error_ = status;
    error_message_ = message();
    has_error_.store(true, std::memory_order_release);
  }
  // The failure waiting to be reported, if any (SK_OK: none), cleared; its message in *message.
  sk_status take_error(std::string *message) {
    if (!has_error_.load(std::memory_order_acquire)) return SK_OK;
    std::lock_guard<std::mutex> lock(error_mutex_);
    const sk_status status = error_;
    *message = std::move(error_message_);
    error_ = SK_OK;
    error_message_.clear();
    has_error_.store(false, std::memory_order_relaxed);
    return status;
  }

 private:
  std::mutex error_mutex_;
  std::atomic<bool> has_error_{false};  // lets a wait skip the mutex when all went well
  sk_status error_ = SK_OK;
  std::string error_message_;
};

}  // namespace sk::host
