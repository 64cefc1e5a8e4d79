// common/content_cache.hpp, the module cache of both backends: the same bytes give the live
// value built from them, bytes whose keys collide never share one, and unloaded values are
// swept only as the cache doubles.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/content_cache.hpp"

namespace sk {
namespace {

struct Built {
  std::string bytes;
};

const std::string &bytes_of(const Built &b) { return b.bytes; }

ContentKey key_of(const std::string &bytes) {
  const auto h = content_hash(bytes.data(), bytes.size());
  return {h.first, h.second};
}

std::shared_ptr<Built> find(const ContentCache<Built> &cache, const ContentKey &key, const std::string &bytes) {
  return cache.find(key, bytes.data(), bytes.size(), bytes_of);
}

TEST(ContentCache, TheSameBytesGiveTheLiveValue) {
  ContentCache<Built> cache;
  auto a = std::make_shared<Built>(Built{"object a"});
  cache.insert(key_of(a->bytes), a);
  EXPECT_EQ(find(cache, key_of("object a"), "object a"), a);
  EXPECT_EQ(find(cache, key_of("object b"), "object b"), nullptr);
  a.reset();  // unloaded: its entry no longer answers
  EXPECT_EQ(find(cache, key_of("object a"), "object a"), nullptr);
}

TEST(ContentCache, KeysOfOtherBytesOrAnotherExtraDoNotMatch) {
  ContentCache<Built> cache;
  const ContentKey collide{42, 42, 0};
  auto a = std::make_shared<Built>(Built{"first"});
  auto b = std::make_shared<Built>(Built{"second"});
  cache.insert(collide, a);
  EXPECT_EQ(find(cache, collide, "second"), nullptr) << "different bytes with the same key share one value";
  cache.insert(collide, b);
  EXPECT_EQ(find(cache, collide, "first"), a);
  EXPECT_EQ(find(cache, collide, "second"), b);
  EXPECT_EQ(find(cache, ContentKey{42, 42, 1}, "first"), nullptr) << "another extra key part builds apart";
}

TEST(ContentCache, UnloadedValuesAreSweptAsTheCacheDoubles) {
  ContentCache<Built> cache;
  std::vector<std::shared_ptr<Built>> live;
  for (int i = 0; i < 5000; ++i) {
    live.push_back(std::make_shared<Built>(Built{"live " + std::to_string(i)}));
    cache.insert(key_of(live.back()->bytes), live.back());
  }
  EXPECT_EQ(cache.size(), 5000u);
  // Doubling from 64: about log2(5000 / 64) sweeps, not one per insert.
  EXPECT_GE(cache.sweeps(), 1u);
  EXPECT_LE(cache.sweeps(), 8u);
  live.clear();
  for (int i = 0; i < 20000; ++i) {
    auto dropped = std::make_shared<Built>(Built{"dropped " + std::to_string(i)});
    cache.insert(key_of(dropped->bytes), dropped);
  }
  EXPECT_LE(cache.size(), 2 * 5000u) << "entries of unloaded values accumulate";
}

}  // namespace
}  // namespace sk
