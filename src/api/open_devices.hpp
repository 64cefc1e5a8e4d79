// The devices open in the process: sk_stream_synchronize(NULL) waits on all their default
// streams (the call has no device argument).
#pragma once
#include <sk.h>

#include <vector>

namespace sk::api {
void register_device(sk_device *dev);
void unregister_device(sk_device *dev);
// Synchronises the default stream of every open device, but those opened before this process
// forked (their cores are not here); the first failure wins.
sk_status synchronize_default_streams();
}  // namespace sk::api
