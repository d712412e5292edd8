// The primitive graph the generator plans on: the IR (docs/graph-ir.md) with every compound op
// (softmax, log_softmax, layer_norm, mean, var, std, norm, clamp, pow with integer exponents...)
// rewritten into five node kinds: elementwise ops named after the op table, reductions (sum, max,
// min, prod, argmax, argmin over contiguous dims), matrix products (Gemm: transposes, batches and
// a kept triangle folded in; matrix-vector products and diagonal matrices become elementwise ops
// and reductions), vendor ops kept as PyTorch calls, and views (reshape; permute and diag only as
// a product's operand); convolutions (Conv: 1-3d, standard or transposed, strided, padded, dilated,
// grouped, with an optional bias) are a sixth. Plain values; built by lower(), read-only
// afterwards.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/skills.hpp"
#include "util/error.hpp"

namespace ok::generate {

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);

// A node's argument: a tensor (an index into Graph::values), a number, or None (an absent optional
// argument of a vendor op, such as linear's bias). Build one with the named constructors.
struct Operand {
  static constexpr int kNumber = -1;  // `value` of a number; `scalar` holds it
  static constexpr int kNone = -2;    // `value` of None

  int value = kNumber;  // index into Graph::values, or kNumber, or kNone
  double scalar = 0;

  static Operand tensor(int value_index) { return {value_index, 0}; }
  static Operand number(double v) { return {kNumber, v}; }
  static Operand none() { return {kNone, 0}; }

  // Not a tensor: a number or None.
  bool is_scalar() const { return value < 0; }
  bool is_none() const { return value == kNone; }
};

enum class ValueKind { kInput, kAttr, kNode };

struct Value {
  ValueKind kind = ValueKind::kNode;
  std::string name;  // input name, attr path, or IR node name
  Shape shape;
  std::string dtype = "float32";
  int producer = -1;  // node index for kNode
};

enum class NodeKind { kElementwise, kReduce, kVendor, kView, kGemm, kConv, kWindow };

// Which entries of a product a tril/triu keeps: j - i <= diagonal (lower) or >= diagonal (upper);
// the others are zero.
enum class Triangle { kNone, kLower, kUpper };

// C[b] = op(A[b]) @ op(B[b]) with row-major, contiguous operands: A is stored [M, K] or, when
// trans_a, [K, M]; B is stored [K, N] or, when trans_b, [N, K]; C is [M, N]. An operand without
// batch dims is shared by every batch (stride 0). Batches of a non-transposed A times a shared B
// are folded into M.
struct Gemm {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  bool batch_a = false, batch_b = false;
  Triangle triangle = Triangle::kNone;
  int64_t diagonal = 0;
  // Element strides of the logical [M, K] / [K, N] views and of one batch.
  int64_t stride_am() const { return trans_a ? 1 : k; }
  int64_t stride_ak() const { return trans_a ? m : 1; }
  int64_t stride_bk() const { return trans_b ? 1 : n; }
  int64_t stride_bn() const { return trans_b ? k : 1; }
  int64_t batch_stride_a() const { return batch_a ? m * k : 0; }
  int64_t batch_stride_b() const { return batch_b ? k * n : 0; }
};
// A 1-3d convolution, standard or transposed, over contiguous NC(D)(H)W tensors. Spatial dims are
// aligned right in 3-element arrays (a 2d conv has d extents of 1, stride and dilation 1, padding
// 0), so one kernel serves every rank. pad is the leading padding of each dim; the trailing side
// follows from the output extent. Standard: out[o] = sum over k of x[o * stride - pad + k * dil]
// with weight [cout, cin / groups, k...]. Transposed, as a gather: out[o] = sum over (i, k) with
// o = i * stride - pad + k * dil of x[i], with weight [cin, cout / groups, k...].
struct Conv {
  int dims = 2;  // 1, 2 or 3 as the reference wrote it
  int64_t batch = 1, cin = 1, cout = 1, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  bool transposed = false;
  bool bias = false;  // args[2] is the bias [cout]
  int64_t cin_g() const { return cin / groups; }
  int64_t cout_g() const { return cout / groups; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
  int64_t in_pixels() const { return in[0] * in[1] * in[2]; }
  int64_t out_pixels() const { return out[0] * out[1] * out[2]; }
  bool depthwise() const { return cin_g() == 1 && cout_g() == 1 && groups > 1; }
  bool pointwise() const {
    return taps() == 1 && !transposed && stride == std::array<int64_t, 3>{1, 1, 1} &&
           pad == std::array<int64_t, 3>{0, 0, 0};
  }
  // Multiply-adds of the whole convolution (transposed: every (input, tap) pair).
  int64_t macs() const {
    return transposed ? batch * cin * cout_g() * taps() * in_pixels()
                      : batch * cout * cin_g() * taps() * out_pixels();
  }
};

enum class ReduceKind { kSum, kMax, kMin, kProd, kArgmax, kArgmin };
const char* reduce_name(ReduceKind k);

// A kWindow node (lower_window.cpp, emitted one kernel each by emit_window.cpp): pooling, a scan,
// or an index op (flip, narrow, select, zeros_like, cat) that is generated only where a scan
// absorbs it (a flip pair around a scan is a reverse scan; cat(zeros, scan(prefix)) an exclusive
// one). Node::op names the kind: max_pool, avg_pool, scan, or the index op.
struct Window {
  // Pooling over the last `rank` dims of args[0], seen as [outer, D, H, W] with unit leading
  // spatial dims when rank < 3 (kernel 1, stride 1, no padding, dilation 1 there).
  int rank = 0;
  int64_t outer = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0},
          dilation[3] = {1, 1, 1};
  bool count_include_pad = true;
  int64_t divisor = 0;  // avg_pool's divisor_override; 0: none
  // Scans: args[0] (times args[1] elementwise when masked, a float or bool tensor of the same
  // shape) seen as [outer, len, inner], scanned along len.
  int64_t len = 1, inner = 1;
  ReduceKind combine = ReduceKind::kSum;  // kSum or kProd
  bool reverse = false;                   // from the last element to the first
  bool exclusive = false;                 // element i combines the ones before it only
  bool masked = false;
};

struct Node {
  NodeKind kind = NodeKind::kElementwise;
  std::string op;  // elementwise: op table key; vendor: module|linear; view: reshape|permute|diag;
                   // gemm: gemm
  std::vector<Operand> args;
  nlohmann::json params = nlohmann::json::object();  // elementwise scalars; vendor: target
  ReduceKind reduce = ReduceKind::kSum;
  std::vector<int> dims;  // reduce: sorted, contiguous, non-negative dims of args[0]'s shape
  int out = -1;
  std::string origin;  // the IR op this came from (softmax, layer_norm, relu...)
  Gemm gemm;           // kGemm: args = {A, B}
  Conv conv;           // kConv: args = {x, weight, bias | None}
  Window window;       // kWindow
};

// A forward argument that get_inputs() gives as a Python number: the graph uses its value.
struct Constant {
  std::string name;
  int index = 0;  // position among forward's arguments
  double value = 0;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;  // forward's tensor arguments, in order
  std::vector<Constant> constants;
  int output = -1;
  // forward's parameter names in order: the tensor inputs and the constants by their index.
  std::vector<std::string> forward_args() const;
};

// Why a live node the window emitter handles (a kWindow node, an argmax/argmin reduction) cannot
// be generated, or empty: index ops that no scan absorbed are not generated.
std::string window_unsupported(const Graph& g, const Node& n);
// A window step's pattern name: pool:max, pool:avg, scan:sum, scan:prod (reverse, exclusive and
// masked appended), argmax, argmin.
std::string window_pattern(const Node& n);
// Handled by the window emitter: kWindow nodes and arg reductions.
bool is_window_step(const Node& n);
// A window step's work: its kind (pool, scan, argreduce) and [outer, len, inner] view (pooling:
// outer = the output's element count; an arg reduction: its input around the reduced dims).
struct WindowShape {
  std::string kind;
  int64_t outer = 1, len = 1, inner = 1;
};
WindowShape window_shape(const Graph& g, const Node& n);

// Either a graph or the reason it cannot be lowered (an unknown op, a dtype, a shape).
struct Lowered {
  Graph graph;
  std::string unsupported;  // empty when supported
};

// Malformed IR is an error; an unsupported but well-formed graph is a Lowered with a reason.
// Each IR op is lowered by the function of its family in skills.ir_family (data/skills' "ir_ops").
util::Result<Lowered> lower(const nlohmann::json& ir, const Skills& skills);

// The "ir_ops" families lower() has a lowering function for (every family but `unlowered`).
std::vector<std::string> lowered_families();

}  // namespace ok::generate
