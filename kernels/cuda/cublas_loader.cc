#include "kernels/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <string>
#include <vector>

namespace murmur::kernels::cuda {
namespace {

StatusOr<Blas> Open() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  // The loader's search path first (LD_LIBRARY_PATH, ld.so.cache: a CUDA image), then the
  // toolkit this binary was built against.
  const std::vector<std::string> candidates = {soname,
                                               std::string(MURMUR_CUDA_LIBRARY_DIR) + "/" + soname};
  std::string tried;
  void* handle = nullptr;
  for (const std::string& name : candidates) {
    handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* why = ::dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why != nullptr ? why : "not found");
  }
  if (handle == nullptr) return UnavailableError("cannot load cuBLAS (" + tried + ")");
  Blas blas;
  std::string missing;
  auto find = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, symbol));
    if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  find(blas.create, "cublasCreate_v2");
  find(blas.gemm_ex, "cublasGemmEx");
  find(blas.status_name, "cublasGetStatusName");
  find(blas.status_string, "cublasGetStatusString");
  if (!missing.empty()) return UnavailableError(soname + " lacks " + missing);
  return blas;  // the handle stays open for the life of the process
}

}  // namespace

StatusOr<const Blas*> LoadBlas() {
  static const StatusOr<Blas> blas = Open();
  if (!blas.ok()) return blas.status();
  return &*blas;
}

}  // namespace murmur::kernels::cuda
