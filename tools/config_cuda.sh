# tools/config_cuda.sh -- CUDA detection for askotch's configure (POSIX sh).
#
# Sourced, not executed:   . tools/config_cuda.sh    (from the package root)
#
# Inputs (environment)
#   ASKOTCH_CUDA        auto (default) | yes | no
#                       auto: build CUDA when a working toolkit is found;
#                       yes : a missing / broken toolkit is an error (exit 1);
#                       no  : never build CUDA.
#   CUDA_HOME           toolkit root (else: nvcc on PATH, else /usr/local/cuda)
#   ASKOTCH_CUDA_ARCHS  space-separated SM list to build SASS for
#                       (default "75 80 90"); PTX is added for the highest.
#   ASKOTCH_NVCC_CCBIN  host compiler for nvcc (-ccbin), optional
#   CC                  C compiler used for the test link (default: cc)
#
# Outputs (shell variables, always set)
#   CUDA_BUILT     yes | no
#   NVCC           path to nvcc                        ("" when not built)
#   NVCC_FLAGS     flags for every .cu compile         ("" when not built)
#   CUDA_CPPFLAGS  -I<toolkit>/include                 ("" when not built)
#   CUDA_LIBS      link flags for the package .so      ("" when not built)
#   CUDA_OBJS      objects relative to src/: "cuda/ops_cuda.o cuda/kernels_mv.o"
#                  or "cuda/stub.o"
#   CUDA_RULES     make rules (tab-indented recipes) for the .cu objects,
#                  using $(NVCC) and $(NVCC_FLAGS); "" when not built
#   CUDA_VERSION   nvcc release, e.g. 13.0             ("" when not built)
#   CUDA_ARCHS     e.g. "sm_75 sm_80 sm_90 compute_90" ("" when not built)
#   CUDA_REASON    why CUDA is not built               ("" when built)
# and prints one line: "askotch: CUDA: built (...)" or "askotch: CUDA: not built (...)".
# Internal helpers use the prefix _acu_ and are unset at the end.
#
# Notes
#   * CUDA 13 dropped sm_50..sm_72 (incl. sm_70): the default list is
#     sm_75 (Turing), sm_80 (Ampere; also runs on sm_86/89), sm_90 (Hopper)
#     plus compute_90 PTX (JIT on newer GPUs, e.g. Blackwell).  Archs this
#     nvcc does not accept are dropped with a note.
#   * cudart is linked statically (no libcudart.so needed at run time);
#     cuBLAS / cuSOLVER are shared libraries found through an rpath to the
#     toolkit's library directory.

CUDA_BUILT=no
NVCC=
NVCC_FLAGS=
CUDA_CPPFLAGS=
CUDA_LIBS=
CUDA_OBJS="cuda/stub.o"
CUDA_RULES=
CUDA_VERSION=
CUDA_ARCHS=
CUDA_REASON=

_acu_mode=${ASKOTCH_CUDA:-auto}
case "$_acu_mode" in
  auto|yes|no) ;;
  *)
    echo "askotch: ERROR: ASKOTCH_CUDA must be 'auto', 'yes' or 'no' (found '$_acu_mode')" >&2
    exit 1 ;;
esac

_acu_nvcc=
_acu_home=
_acu_tmp=

# --- locate nvcc ---------------------------------------------------------------
if test "$_acu_mode" = no; then
  CUDA_REASON="ASKOTCH_CUDA=no"
else
  if test -n "$CUDA_HOME"; then
    if test -x "$CUDA_HOME/bin/nvcc"; then
      _acu_nvcc="$CUDA_HOME/bin/nvcc"
      _acu_home=$CUDA_HOME
    else
      CUDA_REASON="CUDA_HOME=$CUDA_HOME has no bin/nvcc"
    fi
  fi
  if test -z "$_acu_nvcc" && test -z "$CUDA_REASON"; then
    _acu_nvcc=`command -v nvcc 2>/dev/null`
    if test -n "$_acu_nvcc"; then
      _acu_home=`dirname "$_acu_nvcc"`
      _acu_home=`dirname "$_acu_home"`
    elif test -x /usr/local/cuda/bin/nvcc; then
      _acu_nvcc=/usr/local/cuda/bin/nvcc
      _acu_home=/usr/local/cuda
    else
      CUDA_REASON="no nvcc found (set CUDA_HOME or put nvcc on PATH)"
    fi
  fi
fi

# --- version, library dir, archs -------------------------------------------------
if test -n "$_acu_nvcc"; then
  CUDA_VERSION=`"$_acu_nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1`
  if test -z "$CUDA_VERSION"; then
    CUDA_REASON="$_acu_nvcc --version failed"
    _acu_nvcc=
  fi
fi

_acu_libdir=
if test -n "$_acu_nvcc"; then
  for _acu_d in "$_acu_home/lib64" "$_acu_home/lib" "$_acu_home/targets/x86_64-linux/lib" \
                "$_acu_home/targets/sbsa-linux/lib" "$_acu_home/lib/x86_64-linux-gnu" \
                /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu; do
    if test -f "$_acu_d/libcudart_static.a" && test -f "$_acu_d/libcublas.so" \
       && test -f "$_acu_d/libcusolver.so"; then
      _acu_libdir=$_acu_d
      break
    fi
  done
  if test -z "$_acu_libdir"; then
    CUDA_REASON="CUDA $CUDA_VERSION at $_acu_home lacks libcudart_static.a / libcublas.so / libcusolver.so"
    _acu_nvcc=
  fi
fi

_acu_incdir=
if test -n "$_acu_nvcc"; then
  if test -f "$_acu_home/include/cublas_v2.h" && test -f "$_acu_home/include/cusolverDn.h"; then
    _acu_incdir="$_acu_home/include"
  elif test -f "$_acu_home/targets/x86_64-linux/include/cusolverDn.h"; then
    _acu_incdir="$_acu_home/targets/x86_64-linux/include"
  elif test -f /usr/include/cusolverDn.h; then
    _acu_incdir=/usr/include
  else
    CUDA_REASON="CUDA $CUDA_VERSION at $_acu_home lacks cublas_v2.h / cusolverDn.h"
    _acu_nvcc=
  fi
fi

if test -n "$_acu_nvcc"; then
  _acu_tmp=`mktemp -d 2>/dev/null || echo "${TMPDIR:-/tmp}/askotch_cuda_$$"`
  mkdir -p "$_acu_tmp"
  cat > "$_acu_tmp/t.cu" <<'_ACU_EOF'
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusolverDn.h>
__global__ void acu_k(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = exp2f(x[i]);
}
extern "C" int acu_probe(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return -1;
  cublasHandle_t h;
  cusolverDnHandle_t s;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -2;
  if (cusolverDnCreate(&s) != CUSOLVER_STATUS_SUCCESS) return -3;
  acu_k<<<1, 32>>>((float *)0, 0);
  cusolverDnDestroy(s);
  cublasDestroy(h);
  return n;
}
_ACU_EOF

  _acu_ccbin=
  if test -n "$ASKOTCH_NVCC_CCBIN"; then _acu_ccbin="-ccbin $ASKOTCH_NVCC_CCBIN"; fi

  # which archs does this nvcc accept?
  _acu_want=${ASKOTCH_CUDA_ARCHS:-"75 80 90"}
  _acu_list=`"$_acu_nvcc" --list-gpu-arch 2>/dev/null`
  _acu_ok=
  _acu_drop=
  for _acu_a in $_acu_want; do
    if test -n "$_acu_list"; then
      if echo "$_acu_list" | grep "^compute_$_acu_a\$" >/dev/null 2>&1; then
        _acu_ok="$_acu_ok $_acu_a"
      else
        _acu_drop="$_acu_drop sm_$_acu_a"
      fi
    else
      # older nvcc without --list-gpu-arch: trial compile
      if "$_acu_nvcc" $_acu_ccbin -gencode arch=compute_$_acu_a,code=sm_$_acu_a -c "$_acu_tmp/t.cu" \
           -o "$_acu_tmp/a.o" >/dev/null 2>&1; then
        _acu_ok="$_acu_ok $_acu_a"
      else
        _acu_drop="$_acu_drop sm_$_acu_a"
      fi
    fi
  done
  if test -z "$_acu_ok"; then
    CUDA_REASON="nvcc $CUDA_VERSION accepts none of the requested archs ($_acu_want)"
    _acu_nvcc=
  fi
fi

if test -n "$_acu_nvcc"; then
  _acu_gencode=
  _acu_last=
  CUDA_ARCHS=
  for _acu_a in $_acu_ok; do
    _acu_gencode="$_acu_gencode -gencode arch=compute_$_acu_a,code=sm_$_acu_a"
    CUDA_ARCHS="$CUDA_ARCHS sm_$_acu_a"
    _acu_last=$_acu_a
  done
  _acu_gencode="$_acu_gencode -gencode arch=compute_$_acu_last,code=compute_$_acu_last"
  CUDA_ARCHS="${CUDA_ARCHS# } compute_$_acu_last"

  _acu_flags="-O3 -std=c++17 $_acu_ccbin -Xcompiler -fPIC -Xcompiler -fvisibility=hidden$_acu_gencode"
  _acu_libs="-L$_acu_libdir -Wl,-rpath,$_acu_libdir -lcublas -lcusolver -lcudart_static -ldl -lrt -lpthread -lstdc++"

  # real test: compile for every arch, then link a shared object and an executable
  _acu_cc=${CC:-cc}
  printf 'int acu_probe(void);\nint main(void) { return acu_probe() < -100; }\n' > "$_acu_tmp/m.c"
  if ! "$_acu_nvcc" $_acu_flags -c "$_acu_tmp/t.cu" -o "$_acu_tmp/t.o" > "$_acu_tmp/log" 2>&1; then
    CUDA_REASON="test compile with nvcc $CUDA_VERSION failed: `head -n 3 "$_acu_tmp/log" | tr '\n' ' '`"
    _acu_nvcc=
  elif ! $_acu_cc -shared -o "$_acu_tmp/t.so" "$_acu_tmp/t.o" $_acu_libs > "$_acu_tmp/log" 2>&1; then
    CUDA_REASON="test link of a shared object against cuBLAS/cuSOLVER failed: `head -n 3 "$_acu_tmp/log" | tr '\n' ' '`"
    _acu_nvcc=
  elif ! $_acu_cc -o "$_acu_tmp/t.exe" "$_acu_tmp/m.c" "$_acu_tmp/t.o" $_acu_libs > "$_acu_tmp/log" 2>&1; then
    CUDA_REASON="test link of an executable against cuBLAS/cuSOLVER failed: `head -n 3 "$_acu_tmp/log" | tr '\n' ' '`"
    _acu_nvcc=
  fi
fi

if test -n "$_acu_tmp"; then rm -rf "$_acu_tmp"; fi

if test -n "$_acu_nvcc"; then
  CUDA_BUILT=yes
  NVCC=$_acu_nvcc
  NVCC_FLAGS=$_acu_flags
  CUDA_CPPFLAGS="-I$_acu_incdir"
  CUDA_LIBS=$_acu_libs
  CUDA_OBJS="cuda/ops_cuda.o cuda/kernels_mv.o"
  _acu_deps="cuda/cuda_internal.cuh core/ops.h core/krr.h core/kernel_math.h core/kcomp_math.h core/rng.h"
  _acu_tab=`printf '\t'`
  CUDA_RULES="cuda/ops_cuda.o: cuda/ops_cuda.cu $_acu_deps
${_acu_tab}\$(NVCC) \$(NVCC_FLAGS) -I. -c cuda/ops_cuda.cu -o cuda/ops_cuda.o

cuda/kernels_mv.o: cuda/kernels_mv.cu $_acu_deps
${_acu_tab}\$(NVCC) \$(NVCC_FLAGS) -I. -c cuda/kernels_mv.cu -o cuda/kernels_mv.o
"
  CUDA_REASON=
  if test -n "$_acu_drop"; then
    echo "askotch: note: nvcc $CUDA_VERSION does not support${_acu_drop}; dropped"
  fi
  echo "askotch: CUDA: built (nvcc $CUDA_VERSION, archs $CUDA_ARCHS)"
else
  if test "$_acu_mode" = yes; then
    echo "askotch: ERROR: ASKOTCH_CUDA=yes but CUDA cannot be built: $CUDA_REASON" >&2
    exit 1
  fi
  echo "askotch: CUDA: not built ($CUDA_REASON)"
fi

unset _acu_mode _acu_nvcc _acu_home _acu_tmp _acu_libdir _acu_incdir _acu_d _acu_ccbin \
      _acu_want _acu_list _acu_ok _acu_drop _acu_a _acu_gencode _acu_last _acu_flags \
      _acu_libs _acu_cc _acu_deps _acu_tab
