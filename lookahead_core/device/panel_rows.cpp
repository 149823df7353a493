// y[M x N] = x[M x K] @ W[N x K]^T (+ bias), float32, for the few rows (M up to a few dozen) a decoding step feeds.
//
// The weight is packed once into panels of 16 output columns, Wp[panel][k][16], so a panel streams from memory in
// one sequential run. A block of up to MR rows of x is held in registers (MR x NV vectors of accumulators) while
// NV neighbouring panels stream past: each weight is read from memory once and used for every row, where a BLAS's
// small-M kernels re-read it per few rows. Software prefetch runs PREFETCH rows of k ahead: on random weights in
// SmolLM2's body shapes, a 16-row product took about 1.4x a 1-row one with it on a 2-core Xeon, 2.2x without. More rows than one block
// holds are taken KC values of k at a time, every block of rows over each chunk of a panel while it is in L1.
// Each output is summed over k in order, in one accumulator: the result rounds like a dot product, not like a BLAS.
//
// Built by lookahead_core/panel_kernel.py with the machine's own compiler for its own CPU (-march=native) and with
// the OpenMP runtime torch runs on, so its threads are torch's (torch.set_num_threads holds here too).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

constexpr int NR = 16;          // output columns per panel
constexpr int KC = 64;          // values of k per chunk when the rows take more than one block
constexpr int PREFETCH = 128;   // rows of k prefetched ahead in a panel (a row of a panel: 64 bytes)

extern "C" int panel_columns() { return NR; }

extern "C" void pack_panels(const float* W, int N, int K, float* Wp) {
  const int panels = (N + NR - 1) / NR;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < panels; ++p)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < NR; ++j) {
        const int n = p * NR + j;
        Wp[((size_t)p * K + k) * NR + j] = n < N ? W[(size_t)n * K + k] : 0.f;
      }
}

#if defined(__AVX512F__)
// A vector of 16 floats: one panel row.
constexpr int LANES = 16;
typedef __m512 Vec;
static inline Vec vzero() { return _mm512_setzero_ps(); }
static inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
static inline Vec vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
static inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
static inline __mmask16 lanes_mask(int c) {
  return c >= 16 ? (__mmask16)0xFFFF : c <= 0 ? (__mmask16)0 : (__mmask16)((1u << c) - 1);
}
static inline Vec vload_part(const float* p, int c) { return _mm512_maskz_loadu_ps(lanes_mask(c), p); }
static inline void vstore_part(float* p, Vec v, int c) { _mm512_mask_storeu_ps(p, lanes_mask(c), v); }
constexpr int MR1 = 30, MR2 = 14;  // rows a block holds with 1 and 2 panels: 32 registers of 16 floats
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
// A vector of 8 floats: half a panel row.
constexpr int LANES = 8;
typedef __m256 Vec;
static inline Vec vzero() { return _mm256_setzero_ps(); }
static inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
static inline Vec vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
static inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
static inline Vec vload_part(const float* p, int c) {
  alignas(32) float part[8] = {};
  for (int j = 0; j < std::min(c, 8); ++j) part[j] = p[j];
  return _mm256_load_ps(part);
}
static inline void vstore_part(float* p, Vec v, int c) {
  alignas(32) float part[8];
  _mm256_store_ps(part, v);
  for (int j = 0; j < std::min(c, 8); ++j) p[j] = part[j];
}
constexpr int MR1 = 6, MR2 = 2;  // 16 registers of 8 floats
#else
// Elsewhere (NEON, ...) the compiler's vector extension, 4 floats a vector.
constexpr int LANES = 4;
typedef float Vec __attribute__((vector_size(16)));
static inline Vec vzero() { return Vec{}; }
static inline Vec vload(const float* p) { Vec v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline Vec vbroadcast(const float* p) { return Vec{} + *p; }
static inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
static inline Vec vadd(Vec a, Vec b) { return a + b; }
static inline Vec vload_part(const float* p, int c) {
  Vec v = Vec{};
  for (int j = 0; j < std::min(c, LANES); ++j) v[j] = p[j];
  return v;
}
static inline void vstore_part(float* p, Vec v, int c) {
  for (int j = 0; j < std::min(c, LANES); ++j) p[j] = v[j];
}
constexpr int MR1 = 6, MR2 = 3;  // 32 registers of 4 floats
#endif
constexpr int PV = NR / LANES;  // vectors in one panel row

static inline void prefetch(const float* p) { __builtin_prefetch(p); }

// Rows [0, R) of a block, columns of NV panels starting at `wp` (panel stride `pstride`), k in [k0, k1).
template <int NV, int R>
static void block(const float* __restrict xt, int M, const float* __restrict wp, size_t pstride, int k0, int k1,
                  float* __restrict y, int N, int ncols, bool first, const float* __restrict bias) {
  constexpr int CV = NV * PV;  // vectors of columns
  Vec acc[R][CV];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < CV; ++c)
      acc[r][c] = first ? vzero() : vload_part(y + (size_t)r * N + LANES * c, ncols - LANES * c);
  for (int k = k0; k < k1; ++k) {
    Vec w[CV];
#pragma GCC unroll 8
    for (int c = 0; c < CV; ++c) {
      const float* row = wp + (c / PV) * pstride + (size_t)k * NR + LANES * (c % PV);
      if (c % PV == 0) prefetch(row + (size_t)PREFETCH * NR);
      w[c] = vload(row);
    }
    const float* xk = xt + (size_t)k * M;
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const Vec s = vbroadcast(xk + r);
#pragma GCC unroll 8
      for (int c = 0; c < CV; ++c) acc[r][c] = vfma(s, w[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < CV; ++c) {
    const Vec b = bias ? vload_part(bias + LANES * c, ncols - LANES * c) : vzero();
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) vstore_part(y + (size_t)r * N + LANES * c, vadd(acc[r][c], b), ncols - LANES * c);
  }
}

typedef void (*Block)(const float*, int, const float*, size_t, int, int, float*, int, int, bool, const float*);

template <int NV, int MR>
struct Blocks {
  Block of[MR + 1];
  template <int R>
  void fill() {
    of[R] = block<NV, R>;
    if constexpr (R > 1) fill<R - 1>();
  }
  Blocks() { fill<MR>(); }
};
static const Blocks<1, MR1> blocks1;
static const Blocks<2, MR2> blocks2;

template <int NV, int MR>
static void rows(const Blocks<NV, MR>& blocks, const float* x, int M, int K, const float* Wp, int N,
                 const float* bias, float* y) {
  thread_local std::vector<float> transposed;  // x as K x M: the rows' values at one k side by side
  transposed.resize((size_t)M * K);
  float* xt = transposed.data();
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) xt[(size_t)k * M + m] = x[(size_t)m * K + k];
  const int panels = (N + NR - 1) / NR, groups = (panels + NV - 1) / NV, row_blocks = (M + MR - 1) / MR;
  const size_t pstride = (size_t)K * NR;
#pragma omp parallel for schedule(static)
  for (int g = 0; g < groups; ++g) {
    const int p = g * NV, n0 = p * NR, ncols = std::min(NR * NV, N - n0);
    const float* wp = Wp + (size_t)p * pstride;
    const float* b = bias ? bias + n0 : nullptr;
    if (ncols <= NR * (NV - 1)) {  // the last group holds fewer panels than NV: one panel's kernel
      for (int k0 = 0; k0 < K; k0 += (row_blocks == 1 ? K : KC)) {
        const int k1 = row_blocks == 1 ? K : std::min(K, k0 + KC);
        for (int i = 0; i < row_blocks; ++i) {
          const int m0 = (int)((long)M * i / row_blocks), m1 = (int)((long)M * (i + 1) / row_blocks);
          for (int m = m0; m < m1; m += MR1) {
            const int r = std::min(MR1, m1 - m);
            blocks1.of[r](xt + m, M, wp, pstride, k0, k1, y + (size_t)m * N + n0, N, ncols, k0 == 0,
                          k1 == K ? b : nullptr);
          }
        }
      }
      continue;
    }
    for (int k0 = 0; k0 < K; k0 += (row_blocks == 1 ? K : KC)) {
      const int k1 = row_blocks == 1 ? K : std::min(K, k0 + KC);
      for (int i = 0; i < row_blocks; ++i) {
        const int m0 = (int)((long)M * i / row_blocks), m1 = (int)((long)M * (i + 1) / row_blocks);
        blocks.of[m1 - m0](xt + m0, M, wp, pstride, k0, k1, y + (size_t)m0 * N + n0, N, ncols, k0 == 0,
                           k1 == K ? b : nullptr);
      }
    }
  }
}

// The entry points: y (M x N, written whole) from x (M x K) and panels packed by pack_panels.
extern "C" void panel_rows_1(const float* x, int M, int K, const float* Wp, int N, const float* bias, float* y) {
  rows(blocks1, x, M, K, Wp, N, bias, y);
}
extern "C" void panel_rows_2(const float* x, int M, int K, const float* Wp, int N, const float* bias, float* y) {
  rows(blocks2, x, M, K, Wp, N, bias, y);
}
