// Internal to src/generate: the state of one lower() call and the op-family lowering functions.
//
// graph.cpp reads the IR (inputs, attrs, argument forms) and builds the primitive graph through a
// Lowerer; for each IR node it looks the op's family up in Skills::ir_family (data/skills'
// "ir_ops", the one vocabulary of the IR) and calls that family's Lowering (lower_*.cpp). A
// Lowering reads the node's arguments through the Lowerer and emits primitive nodes with ew(),
// reduce() and add_node(); it returns the value that is the IR node's result. Problems travel as
// the exceptions Unsupported (a well-formed graph the generator cannot handle) and Malformed (bad
// IR), which lower() turns into its result. A Lowerer lives for one lower() call; single-threaded.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "generate/graph.hpp"
#include "generate/skills.hpp"

namespace ok::generate::lowering {

// Unsupported but well-formed: carried up to lower() as a reason.
struct Unsupported {
  std::string reason;
};

// Malformed IR.
struct Malformed {
  std::string message;
};

// The `pos` of param() for an argument the IR gives only by keyword (keepdim, dtype, correction).
inline constexpr size_t kKeywordOnly = std::numeric_limits<size_t>::max();

// The IR op for a call the worker could not normalise (its kwargs.target names the call).
inline constexpr const char* kUnknownOp = "unknown";

// One IR node as lower_node read it: its JSON and what every lowering needs.
struct IrNode {
  const nlohmann::json& json;
  std::string name;
  std::string op;
  std::string where;  // "node NAME", for messages
  Shape shape;        // the output shape the IR states
};

class Lowerer {
 public:
  Lowerer(const nlohmann::json& ir, const Skills& skills) : ir_(ir), skills_(skills) {}

  // The whole graph; throws Unsupported or Malformed.
  Graph run();

  const Skills& skills() const { return skills_; }

  // -- reading the IR ---------------------------------------------------------------------------
  Operand operand(const nlohmann::json& a, const std::string& where);
  // The attr (parameter or buffer) of that dotted path, or nullopt when the IR lists none.
  std::optional<Operand> attr(const std::string& path) const;
  // Argument i as a float32 tensor; a scalar there is Unsupported.
  Operand tensor_arg(const IrNode& n, size_t i);
  // A kwarg, else the positional arg at `pos` (kKeywordOnly: none); nullopt when absent or None.
  std::optional<nlohmann::json> param(const IrNode& n, const std::string& name, size_t pos);
  double scalar_param(const IrNode& n, const std::string& name, size_t pos, double dflt);
  // The `dim` param (positional at `pos`) over x: sorted, unique, non-negative, adjacent.
  std::vector<int> dims_of(const IrNode& n, const Operand& x, size_t pos);
  bool keepdim_of(const IrNode& n);
  const Shape& shape_of(const Operand& o) const;
  // Elements reduced over `dims` of x (every element when dims is empty).
  int64_t reduced_size(const Operand& x, const std::vector<int>& dims) const;
  void check_dtype(const Operand& o, const std::string& node) const;

  // -- building the primitive graph: each returns the new value's index -------------------------
  // An elementwise node; the output shape broadcasts the tensor operands.
  int ew(const std::string& op, std::vector<Operand> args, const std::string& name,
         const std::string& origin, nlohmann::json params = nlohmann::json::object());
  // A reduction over `dims` (sorted, contiguous; empty = all).
  int reduce(ReduceKind k, Operand x, std::vector<int> dims, bool keepdim, const std::string& name,
             const std::string& origin);
  int add_node(Node n, const std::string& name, Shape shape, std::string dtype = "float32");
  // A reshape view of x to `shape` (same element count).
  int view(Operand x, Shape shape, const std::string& name, const std::string& origin);
  // The graph built so far (a lowering looks at the producers of its operands).
  const Graph& graph() const { return g_; }
  void rename(int value, const std::string& name) { g_.values[value].name = name; }

 private:
  int add_value(Value v);
  void read_inputs_and_attrs();
  void lower_node(const nlohmann::json& n);

  const nlohmann::json& ir_;
  const Skills& skills_;
  Graph g_;
  std::map<std::string, int> inputs_, attrs_, nodes_;
};

// Lowers one IR node of a family to primitive nodes; returns the result's value index.
using Lowering = int (*)(Lowerer&, const IrNode&);

// The lowering of an op family of "ir_ops", or nullptr (the family is not lowered).
Lowering find_lowering(const std::string& family);

// Families lowered by lower_matmul.cpp: matmul, permute, diag, triangle.
int lower_matmul(Lowerer& l, const IrNode& n);
// nn.Linear (a `module` node of type Linear) and F.linear: x @ W^T as a Gemm with B transposed,
// then the bias added (a pointwise node, which the planner fuses into the product's epilogue).
int lower_linear(Lowerer& l, const IrNode& n);
int lower_permute(Lowerer& l, const IrNode& n);
int lower_diag(Lowerer& l, const IrNode& n);
int lower_triangle(Lowerer& l, const IrNode& n);

// Families lowered by lower_reduce.cpp.
int lower_reduction(Lowerer& l, const IrNode& n);
// a ** b: exponents 1, +-0.5, -1 and integers up to 16 as cheaper ops, a number base via exp2.
int lower_pow(Lowerer& l, Operand a, Operand b, const std::string& name);

// Families lowered by lower_norm.cpp: norm (batch_norm, instance_norm, group_norm) and loss.
int lower_norm_family(Lowerer& l, const IrNode& n);
int lower_loss_family(Lowerer& l, const IrNode& n);
// The family lowered by lower_conv.cpp: conv (1-3d, standard or transposed) as a Conv node.
int lower_conv(Lowerer& l, const IrNode& n);
// Families lowered by lower_window.cpp: pool, scan, index.
int lower_pool_family(Lowerer& l, const IrNode& n);
int lower_scan_family(Lowerer& l, const IrNode& n);
int lower_index(Lowerer& l, const IrNode& n);

}  // namespace ok::generate::lowering
