// A main for a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput on files (a corpus or
// seed folder, or single inputs) and on pseudo-random inputs. Builds that cannot link libFuzzer,
// or whose sanitizer conflicts with its coverage counters (ThreadSanitizer reports the
// counters' own unsynchronised increments), still run the target's inputs this way: the test
// suite runs sk_fuzz_api's seeds, its corpus and variations of them under TSan, where a race
// between the API's threads shows.
//
//   sk_fuzz_api_replay [FILE or FOLDER | --hex FILE]... [--random COUNT SEED]
//
// --hex FILE reads inputs from a text file, one per line in hex (tests/fuzz/api_corpus.hex).
//
// --random runs COUNT inputs from the pseudo-random SEED: one in four random bytes, the others
// inputs read from the files before it, slightly changed.
#include <dirent.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "file_bytes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

std::vector<std::vector<uint8_t>> g_file_inputs;  // what --random mutates

bool run_file(const std::string &path) {
  std::vector<uint8_t> bytes;
  if (!read_file_bytes(path, &bytes)) return false;
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  g_file_inputs.push_back(std::move(bytes));
  return true;
}

// Runs every input of a text file of hex lines ('#' starts a comment line); returns how many.
int run_hex_lines(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "r");
  if (!f) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  int count = 0;
  char line[1 << 16];
  while (std::fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    std::vector<uint8_t> bytes;
    for (const char *p = line;
         std::isxdigit(static_cast<unsigned char>(p[0])) && std::isxdigit(static_cast<unsigned char>(p[1])); p += 2)
      bytes.push_back(static_cast<uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
    if (bytes.empty()) continue;
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    g_file_inputs.push_back(std::move(bytes));
    ++count;
  }
  std::fclose(f);
  return count;
}

// Runs every regular file in `path` (a folder) or `path` itself; returns the inputs run.
int run_path(const std::string &path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) return run_file(path) ? 1 : 0;
  int count = 0;
  DIR *dir = opendir(path.c_str());
  while (dirent *e = dir ? readdir(dir) : nullptr) {
    if (e->d_name[0] == '.') continue;
    count += run_file(path + "/" + e->d_name) ? 1 : 0;
  }
  if (dir) closedir(dir);
  return count;
}

// xorshift64*: the same inputs on every machine and every run.
uint64_t next_random(uint64_t &state) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

}  // namespace

int main(int argc, char **argv) {
  int files = 0, randoms = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--random") == 0 && i + 2 < argc) {
      const long count = std::strtol(argv[i + 1], nullptr, 10);
      uint64_t state = std::strtoull(argv[i + 2], nullptr, 10) | 1;
      i += 2;
      for (long n = 0; n < count; ++n) {
        std::vector<uint8_t> bytes;
        if (n % 4 != 0 && !g_file_inputs.empty()) {
          // Three in four: an input read before, with 1 to 8 bytes changed, inserted or dropped
          // (valid call sequences gone slightly wrong reach further than random bytes).
          bytes = g_file_inputs[next_random(state) % g_file_inputs.size()];
          for (int edits = 1 + next_random(state) % 8; edits > 0; --edits) {
            const uint64_t r = next_random(state);
            const size_t at = bytes.empty() ? 0 : (r >> 8) % bytes.size();
            const uint8_t value = static_cast<uint8_t>(r >> 56);
            if (r % 3 == 0 || bytes.empty())
              bytes.insert(bytes.begin() + at, value);
            else if (r % 3 == 1)
              bytes[at] = value;
            else
              bytes.erase(bytes.begin() + at);
          }
        } else {
          bytes.resize(16 + next_random(state) % 113);
          for (uint8_t &b : bytes) b = static_cast<uint8_t>(next_random(state) >> 56);
        }
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
        ++randoms;
      }
      continue;
    }
    if (std::strcmp(argv[i], "--hex") == 0 && i + 1 < argc) {
      files += run_hex_lines(argv[++i]);
      continue;
    }
    files += run_path(argv[i]);
  }
  std::printf("replay: %d inputs from files, %d random\n", files, randoms);
  return files + randoms > 0 ? 0 : 1;
}
