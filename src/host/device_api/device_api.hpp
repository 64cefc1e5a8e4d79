// The device API of the host backend: what kernel objects' calls to sk_block_idx & co. bind to.
#pragma once
#include <string_view>

namespace sk::host {

// Address of the host implementation of device-API function `name`, or nullptr.
void *resolve_device_api(std::string_view name);

}  // namespace sk::host
