// Core types and hard cross-core sync on the host device (sk_kernel.h's sections of the same
// names), bound by host/device_api/device_api.cpp.
#pragma once
#include <cstdint>

namespace sk::host {

uint32_t api_core_type();
uint32_t api_sub_block_idx();
uint32_t api_sub_block_num();
void api_cross_core_set_flag(uint32_t flag);
void api_cross_core_wait_flag(uint32_t flag);
void api_cross_core_set_flag_all(uint32_t flag);
void api_cross_core_wait_flag_all(uint32_t flag);

}  // namespace sk::host
