// Helpers of the CUDA link tests: kernel modules loaded from the nvcc-built test kernels, and
// scopes of their kernels planned and turned into build requests, without a GPU; the SASS of
// a linked cubin (nvdisasm, where it is found).
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/plan.hpp"
#include "common/scope_options.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/superkernel_build.hpp"
#include "cuda_test_support.hpp"

namespace sk::cuda_test {

using cuda::BuildRequest;
using cuda::CudaKernel;
using cuda::CudaModule;

inline std::shared_ptr<const CudaModule> load(const std::string &file) {
  std::vector<uint8_t> bytes = kernel_bytes(file);
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(cuda::load_cuda_module(bytes.data(), bytes.size(), file, &m), SK_OK) << sk::last_error();
  return m;
}

inline std::shared_ptr<CudaKernel> kernel(const std::shared_ptr<const CudaModule> &m, const char *name,
                                          const char *signature = nullptr) {
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(cuda::make_cuda_kernel(m, name, signature, "test", &k), SK_OK) << sk::last_error();
  return k;
}

// A scope of sub-kernels planned for `device_cores` co-resident blocks.
struct Scope {
  std::string name = "test_scope";
  std::string options;
  std::vector<std::shared_ptr<CudaKernel>> kernels;
  std::vector<uint32_t> block_dims;
  std::deque<std::string> texts;  // signature texts the plan's string_views point into
  sk::Plan plan;

  std::vector<uint32_t> streams;
  std::vector<std::vector<uint32_t>> afters;
  std::vector<uint64_t> arg_refs;  // sk_kernel_options.arg_refs per sub-kernel
  void add(const std::shared_ptr<CudaKernel> &k, uint32_t block_dim, uint32_t stream = 0,
           std::vector<uint32_t> after = {}, uint64_t refs = 0) {
    kernels.push_back(k);
    block_dims.push_back(block_dim);
    streams.push_back(stream);
    afters.push_back(std::move(after));
    arg_refs.push_back(refs);
  }
  sk_status make_plan(uint32_t device_cores) {
    sk::ScopeOptions opts;
    if (sk_status st = sk::parse_scope_options(options.c_str(), &opts); st != SK_OK) return st;
    std::vector<sk::PlanInput> inputs;
    for (size_t i = 0; i < kernels.size(); ++i) {
      sk::PlanInput in;
      in.name = kernels[i]->symbol;
      in.symbol = kernels[i]->symbol;
      in.module = kernels[i]->module->label;
      texts.push_back(sk::signature_to_string(kernels[i]->signature));
      in.signature = texts.back();
      in.core_type = "vector";
      in.block_dim = block_dims[i];
      in.usage = kernels[i]->usage;
      in.usage_paths = kernels[i]->usage_paths;
      in.stream = streams[i];
      in.after = afters[i];
      in.arg_refs = arg_refs[i];
      inputs.push_back(std::move(in));
    }
    return sk::build_plan(name, opts, std::move(inputs), device_cores, &plan);
  }
  BuildRequest request(const std::string &arch = "sm_90") const {
    BuildRequest r;
    r.name = name;
    r.arch = arch;
    r.id = 7;
    r.plan = &plan;
    r.kernels = kernels;
    return r;
  }
};

#ifdef SK_PTXAS
// Runs ptxas on the PTX, a relocatable module (-c), or `whole_program` as the driver's JIT
// compiles a module (and -v: "Used N registers"); returns its exit status and output.
inline int ptxas(const std::string &ptx, const std::string &arch, std::string *output, bool whole_program = false,
                 std::vector<uint8_t> *cubin = nullptr) {
  char dir[] = "/tmp/sk-ptxas-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  const std::string in = std::string(dir) + "/entry.ptx", out = std::string(dir) + "/entry.o",
                    log = std::string(dir) + "/log";
  FILE *f = std::fopen(in.c_str(), "w");
  std::fwrite(ptx.data(), 1, ptx.size(), f);
  std::fclose(f);
  const std::string cmd = ptxas_path() + (whole_program ? " -v" : " -c") + " -arch=" + arch + " " + in + " -o " +
                          out + " > " + log + " 2>&1";
  int rc = std::system(cmd.c_str());
  const std::vector<uint8_t> bytes = read_file(log);
  output->assign(bytes.begin(), bytes.end());
  if (cubin) *cubin = read_file(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  return rc;
}

#endif

#ifdef SK_NVDISASM
// nvdisasm: $SK_NVDISASM, else the one CMake found (the CUDA toolkit's, or the PyPI wheel
// nvidia-cuda-nvdisasm's), else "".
inline std::string nvdisasm_path() {
  const char *p = std::getenv("SK_NVDISASM");
  if (p && *p) return p;
  return SK_NVDISASM;
}

// The linked cubin's SASS (nvdisasm -c), or nvdisasm's output after *rc != 0.
inline std::string disassemble(const cuda::BuiltImage &img, int *rc) {
  char dir[] = "/tmp/sk-nvdisasm-XXXXXX";
  if (!mkdtemp(dir)) {
    *rc = -1;
    return "mkdtemp failed";
  }
  const std::string cubin = std::string(dir) + "/entry.cubin", out = std::string(dir) + "/sass";
  FILE *f = std::fopen(cubin.c_str(), "wb");
  if (f) {
    std::fwrite(img.cubin->data(), 1, img.cubin->size(), f);
    std::fclose(f);
  }
  *rc = std::system((nvdisasm_path() + " -c " + cubin + " > " + out + " 2>&1").c_str());
  const std::vector<uint8_t> bytes = read_file(out);
  std::remove(cubin.c_str());
  std::remove(out.c_str());
  rmdir(dir);
  return std::string(bytes.begin(), bytes.end());
}

constexpr const char *kNoNvdisasm = "no nvdisasm (set SK_NVDISASM, or pip install nvidia-cuda-nvdisasm)";

// The SASS of function `name`: from its .text section's label to the next section.
inline std::string sass_function(const std::string &sass, const std::string &name) {
  const size_t at = sass.find(".section\t.text." + name + ",");
  if (at == std::string::npos) return "";
  const size_t end = sass.find(".section", at + 1);
  return sass.substr(at, end == std::string::npos ? std::string::npos : end - at);
}
#endif

}  // namespace sk::cuda_test
