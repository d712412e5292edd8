// The primitive graph the generator plans on: the IR (docs/graph-ir.md) with every compound op
// (softmax, log_softmax, layer_norm, mean, var, std, norm, clamp, pow with integer exponents...)
// rewritten into four node kinds: elementwise ops named after the op table, reductions (sum, max,
// min, prod, argmax, argmin over contiguous dims), vendor ops kept as PyTorch calls, and views.
// Plain values; built by lower(), read-only afterwards.
#pragma once

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

enum class NodeKind { kElementwise, kReduce, kVendor, kView };
enum class ReduceKind { kSum, kMax, kMin, kProd, kArgmax, kArgmin };
const char* reduce_name(ReduceKind k);

struct Node {
  NodeKind kind = NodeKind::kElementwise;
  std::string op;  // elementwise: op table key; vendor: module|linear|matmul|mm|bmm; view: reshape
  std::vector<Operand> args;
  nlohmann::json params = nlohmann::json::object();  // elementwise scalars; vendor: target
  ReduceKind reduce = ReduceKind::kSum;
  std::vector<int> dims;  // reduce: sorted, contiguous, non-negative dims of args[0]'s shape
  int out = -1;
  std::string origin;  // the IR op this came from (softmax, layer_norm, relu...)
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;  // forward's tensor arguments, in order
  int output = -1;
};

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
