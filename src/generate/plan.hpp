// Partitioning a primitive graph into steps: vendor calls, views, matrix products (one GEMM
// kernel each), and fused kernel groups. Nodes whose value nothing reads are dropped first (a
// product a tril/triu replaced, a transpose folded into a product); a permute or diag view that is
// still read is reported unsupported, since only a product reads those. A convolution is a step of
// its own (one conv kernel each).
//
// A kernel group is either pointwise (elementwise ops over one element count) or a row group: a
// tensor viewed as [outer, R, inner] with reductions over R, values of two classes (kRow: one per
// element of the view; kPerRow: one per (outer, inner) pair), and one pass per reduction level
// plus a final write pass. Nodes are taken in order and added to the open group while they fit;
// otherwise the group is closed (its values used later are materialised) and a new one opens.
// A pointwise group that directly follows a GEMM or convolution step and reads its output
// element for element, where nothing else reads that output, is fused into that step's epilogue.
// A pointwise group also takes elementwise nodes of fewer elements whose tensor operands come
// from outside (or are such nodes) and whose every reader is in the group at full size: they are
// recomputed per element (KernelGroup::broadcast) instead of being a small kernel of their own.
// Plain values; built by plan(), read-only afterwards.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "generate/graph.hpp"

namespace ok::generate {

enum class Cls { kRow, kPerRow };

struct KernelGroup {
  std::vector<int> nodes;  // elementwise, reduce and view nodes, in execution order
  bool row = false;        // has reductions
  Shape base;              // the reduced tensor's shape (row) or the first node's shape (pointwise)
  int64_t full = 0;        // element count of kRow values
  int64_t outer = 1, red = 1, inner = 1;
  int red_begin = 0, red_end = 0;  // reduced dims of base: [red_begin, red_end)
  std::map<int, Cls> cls;          // class of each value produced in the group
  std::vector<int> leaves;         // tensor values read from outside, in first-use order
  std::vector<int> outputs;        // values stored (used after the group, or the graph output)
  std::map<int, int> level;        // value of a reduce node -> its pass
  std::map<int, int> plevel;       // kPerRow value -> pass after which it is known (-1: before)
  int passes = 0;
  // Online pairs (row groups): a sum whose input is exp(Y - T), T the row max M of the same Y
  // (softmax, log_softmax, cross_entropy) or logsumexp's select(|M| < inf, M, c), keyed by the
  // sum's value. The kernels that loop over a row per pass (Triton's loop mode, CUDA's rows)
  // compute the sum in M's pass against a running max, one read of the row fewer (plan.cpp,
  // online_pairs).
  struct Online {
    int max = -1;    // M's value
    int y = -1;      // the value both reduce
    int shift = -1;  // T's value (M itself for softmax)
  };
  std::map<int, Online> online;
  std::string pattern;  // pointwise | row:<ops> | reduce:<ops>
  bool has_transcendental = false;
  // A pointwise group computed in the epilogue of this GEMM or convolution node, or a row group
  // in the epilogue of this GEMM node (no kernel of its own; see fuse_epilogues in plan.cpp), or
  // -1.
  int fused_into = -1;
  // Pointwise groups only: values of fewer elements than `full` (an eval-mode BatchNorm's
  // rsqrt(running_var + eps) from its [C] buffers) computed inline per element, each with the
  // shape of its full-size readers, which it broadcasts to (the leaves are indexed against it).
  std::map<int, Shape> broadcast;
  bool produces(int v) const { return cls.contains(v); }
};

enum class StepKind { kVendor, kView, kKernel, kGemm, kConv, kWindow };

struct Step {
  StepKind kind = StepKind::kKernel;
  int node = -1;   // vendor/view/gemm/conv/window
  int group = -1;  // kernel
  // gemm/conv: the pointwise group its kernel's epilogue computes on each accumulated value
  // before the store (the product's own output is then never stored), or -1. gemm: or the row
  // group its epilogue computes over the whole output rows a program holds (a row epilogue).
  int epilogue = -1;
};

struct Plan {
  std::vector<Step> steps;
  std::vector<KernelGroup> groups;
  std::string pattern;  // e.g. "vendor+pointwise"
};

struct Planned {
  Plan plan;
  std::string unsupported;  // empty when supported
};

// `backend` ("cpu", "triton", "cuda"; empty: none) decides which row groups a GEMM's epilogue
// may take (row_epilogue_fits); pointwise epilogues are the same on every backend.
Planned make_plan(const Graph& g, const Skills& skills, const std::string& backend = "");

// Whether `backend`'s GEMM template computes a row epilogue over output rows of n columns whose
// reduced rows are segments of red columns: the CPU and CUDA templates loop the row in column
// tiles into a buffer (CPU: BM rows per task; CUDA: a scratch copy of the product the block reads
// back) with n up to kLoopedRowEpilogueMax; Triton holds the row in one BLOCK_N tile (n up to
// kTritonRowEpilogueMax rounded up to a power of two; segments of a row only where n and red are
// powers of two).
inline constexpr int64_t kLoopedRowEpilogueMax = 65536;
inline constexpr int64_t kTritonRowEpilogueMax = 1024;
bool row_epilogue_fits(const std::string& backend, int64_t n, int64_t red);
// Whether a GPU would sit mostly idle under plan's row epilogues: some GEMM with one has rows wider
// than a Triton tile and fewer than kIdleRows rows (at 64 rows a block, fewer blocks than an H100
// has SMs), where the GEMM alone had a tile per BN columns as well.
inline constexpr int64_t kIdleRows = 64 * 132;
bool row_epilogue_idles(const Graph& g, const Plan& plan);

// Split reductions (split.cpp): a sum/max/min/prod whose rows are few and long (fewer than 128
// programs, rows of at least 8192) is rewritten as a view [outer, S, R / S, inner],
// S partial reductions per row (a row group of outer * S rows) and a finishing reduction over
// the S partials, so make_plan() gives it two kernels instead of one program per row.
// split_options(): the split counts worth trying for g, best prior first (the last, 1, is no
// split), each a divisor some reduction is split into, no two splitting alike; empty when no
// reduction qualifies or none has a divisor that leaves its partials 4096 elements.
// split_reductions(): g with every qualifying reduction split into the largest divisor of its R not
// above `split` (1: g unchanged).
std::vector<int64_t> split_options(const Graph& g);
Graph split_reductions(const Graph& g, int64_t split);

}  // namespace ok::generate
