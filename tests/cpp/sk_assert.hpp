// ASSERT_SK(call): the call must return SK_OK; on failure the message names the call and
// carries sk_last_error().
#pragma once
#include <gtest/gtest.h>
#include <sk.h>

#define ASSERT_SK(call) ASSERT_EQ((call), SK_OK) << #call << ": " << sk_last_error()
