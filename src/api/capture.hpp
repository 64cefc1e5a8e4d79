// Stream capture (api/capture.cpp): between sk_stream_begin_capture and sk_stream_end_capture the
// launches on a stream, and on the streams joined to it by events, are recorded into a scope
// that end-capture finalizes. The launch, stream, event and device calls ask here first when a
// stream of theirs captures; every function takes DeviceLife::capture_mutex itself.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/handles.hpp"

namespace sk::api {

struct Capture {
  uint64_t id = 0;                  // unique in the process: events name their capture by it
  std::unique_ptr<sk_scope> scope;  // the recording, built as the same sk_add_kernel calls would
  // Per scope stream: the sk_stream on it (index 0: the origin; nullptr: a stream private to an
  // inlined super kernel, or a joined stream destroyed since), its operations so far (a join
  // and each launch count one), and how far it is ordered after every stream (a vector clock:
  // clock[s][t] operations of stream t come before stream s's next one).
  std::vector<sk_stream *> streams;
  std::vector<uint64_t> ops;
  std::vector<std::vector<uint64_t>> clock;
  uint32_t next_event = 0;                       // the next scope event id
  std::string invalidated_by;                    // the call that invalidated it; empty while valid
  std::vector<const sk_superkernel *> recorded;  // super kernels whose launches it recorded
};

// Ends the capture begun on `stream` (sk_stream_end_capture's checks, naming `call`) and hands
// it over, valid, complete and non-empty; fails otherwise, the capture ended all the same.
sk_status take_capture(sk_stream *stream, const char *call, std::unique_ptr<Capture> *out);

// sk_launch_kernel(_grid) / sk_launch on a stream whose capture pointer was set: records the
// launch (arguments checked and copied as sk_add_kernel does) or fails as the capture says.
sk_status capture_kernel(const char *call, sk_stream *stream, sk_kernel *kernel, uint32_t block_dim,
                         const sk::GridShape &grid, void *const *args);
sk_status capture_superkernel(sk_stream *stream, sk_superkernel *sk);
// SK_ERR_STATE for `call`, which cannot be captured, on a capturing stream: invalidates its
// capture. SK_OK if the stream's capture ended meanwhile.
sk_status refuse_on_stream(sk_stream *stream, const char *call);
// The same for a call on the whole device (sk_device_synchronize, sk_memcpy): invalidates every
// open capture of it. SK_OK when it has none.
sk_status refuse_on_device(DeviceLife &life, const char *call);
// sk_superkernel_set_arg of a super kernel an open capture recorded: fails and invalidates it.
sk_status refuse_set_arg(sk_superkernel *sk);
// sk_superkernel_destroy: forgets it in the captures that recorded it.
void forget_superkernel(sk_superkernel *sk);
// sk_stream_destroy of a capturing stream: the origin's capture is dropped; a joined stream's
// is invalidated.
void drop_stream(sk_stream *stream);
// sk_event_record / sk_stream_wait_event on a capturing stream (or, for a wait, of an event
// recorded in a capture): SK_OK with *handled false when neither is in a capture.
sk_status capture_record(sk_event *event, sk_stream *stream, bool *handled);
sk_status capture_wait(sk_stream *stream, sk_event *event, bool *handled);

}  // namespace sk::api
