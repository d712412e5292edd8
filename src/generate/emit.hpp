// Shared code emission for the backends: literals, op expressions from the op table, broadcast
// index arithmetic over static shapes, and Region, which turns a kernel group's values into
// statements for one loop body. Backends (emit_cpu.cpp, emit_triton.cpp, emit_cuda.cpp) supply
// the loads, references and declarations through Region::Hooks. Internal to ok_generate.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/plan.hpp"
#include "generate/skills.hpp"

namespace ok::generate {

// Thrown inside the emitters for impossible combinations; propose() reports it as an error.
struct EmitError {
  std::string message;
};

// lang: "cpp" (CPU and CUDA device code share the C++ spelling of literals), "cuda", "triton".
std::string literal(double v, const std::string& lang);
// `coord`: what {{i}} stands for (the element's coordinate along the node's params.index_dim).
std::string render_op(const Skills& skills, const std::string& lang, const Node& n,
                      const std::vector<std::string>& operands, const std::string& coord = "");

// A coordinate covering dims [begin, end) of the context shape: the flat index of those dims.
struct Coord {
  std::string expr;
  int begin = 0, end = 0;
};
// The flat index into a contiguous `leaf` broadcast against `ctx`, from the coordinates.
// Integer division is `//` for Python (Triton), `/` otherwise.
std::string leaf_index(const Shape& ctx, const Shape& leaf, const std::vector<Coord>& coords,
                       bool python);
// True when leaf, broadcast against ctx, is ctx itself (one element per element).
bool is_full(const Shape& ctx, const Shape& leaf);

class Region {
 public:
  struct Hooks {
    // A leaf value read by a node whose output has shape ctx and class cls.
    std::function<std::string(int value, const Shape& ctx, Cls cls)> load;
    // A known per-row value, referenced from a value of class `use`.
    std::function<std::string(int value, Cls use)> perrow_ref;
    // Emits a declaration; returns how to refer to it from its own class.
    std::function<void(int value, const std::string& expr, Cls cls)> decl;
    // Optional: emits a reduction in place (single-tile kernels); marks it known.
    std::function<void(int value)> reduce;
    // The coordinate along `dim` of an element of a value of shape ctx and class cls (the
    // column index an index_eq node compares with); needed only by such nodes.
    std::function<std::string(const Shape& ctx, int dim, Cls cls)> coord;
  };
  Region(const Graph& g, const KernelGroup& G, const Skills& skills, std::string lang,
         std::map<int, bool>* perrow_known, Hooks hooks)
      : g_(g),
        G_(G),
        skills_(skills),
        lang_(std::move(lang)),
        perrow_known_(perrow_known),
        hooks_(std::move(hooks)) {}

  // The expression of a group value as used from class `use`.
  std::string get(int value, Cls use);
  // Name of a value's variable (v<N> for kRow, p<N> for kPerRow).
  static std::string var(int value, Cls c);

 private:
  std::string compute(int value);
  const Graph& g_;
  const KernelGroup& G_;
  const Skills& skills_;
  std::string lang_;
  std::map<int, bool>* perrow_known_;
  Hooks hooks_;
  std::map<int, std::string> row_known_;
};

// A pointwise group's loop body: a Region over the backend's `hooks` (load and decl; perrow_ref is
// set here to throw, since a pointwise group has no per-row values) evaluates each output in turn,
// and `store` writes it.
void pointwise_outputs(const Graph& g, const KernelGroup& G, const Skills& skills,
                       const std::string& lang, Region::Hooks hooks,
                       const std::function<void(int value, const std::string& expr)>& store);

// How the backends address a group's tensors: the flat index of kRow and kPerRow values, and
// optional coordinates over G.base (row groups: o | r | j; CPU pointwise: o | c).
struct IndexSpace {
  std::string lin_row = "i";
  std::string lin_perrow = "o";
  std::vector<Coord> row_coords;
  std::vector<Coord> perrow_coords;
};
std::string index_of(const Graph& g, const KernelGroup& G, int leaf, const Shape& ctx, Cls cls,
                     const IndexSpace& sp, bool python);
// The same for a contiguous tensor of shape `leaf` broadcast against ctx.
std::string shape_index(const KernelGroup& G, const Shape& leaf, const Shape& ctx, Cls cls,
                        const IndexSpace& sp, bool python);
// The coordinate along `dim` of ctx of the element index_of addresses (Region::Hooks::coord).
std::string coord_of(const KernelGroup& G, const Shape& ctx, int dim, Cls cls, const IndexSpace& sp,
                     bool python);
// The C++ element type of a tensor of `dtype` in the C++ and CUDA kernels' signatures.
std::string c_type(const std::string& dtype);
// The standard row-group coordinates.
IndexSpace row_space(const KernelGroup& G, const std::string& o, const std::string& r,
                     const std::string& j, const std::string& lin_row,
                     const std::string& lin_perrow);

// What one backend emits for one kernel group.
struct KernelCode {
  std::string device;               // C++/CUDA functions, or Python (Triton) definitions
  std::vector<std::string> launch;  // Python statements in forward, unindented
};

// Python variable holding a value in forward.
std::string py_name(const Graph& g, int value);

// The reduction identity and combine, by backend language.
std::string reduce_identity(ReduceKind k, const std::string& lang);

// The online sums (KernelGroup::online) taken against the max whose value is `max`, in order.
std::vector<int> online_sums(const KernelGroup& G, int max);

// One backend's spelling of one operation on the plain reductions (sum, prod, max, min): an fmt
// pattern per kind in which {0} and {1} stand for the operands given to spell(). Arg reductions
// (argmax, argmin) have no spelling: spell() throws EmitError{no_arg} for them.
struct ReduceSpelling {
  const char* sum;
  const char* prod;
  const char* max;
  const char* min;
  const char* no_arg;  // why an arg reduction cannot be spelled in this backend
};
std::string spell(const ReduceSpelling& s, ReduceKind k, const std::string& a = "",
                  const std::string& b = "");
// Triton's reduction of {0} along axis {1}.
inline constexpr ReduceSpelling kTritonReduce{
    "tl.sum({0}, axis={1})", "tl.reduce({0}, {1}, _ok_mul)", "tl.max({0}, axis={1})",
    "tl.min({0}, axis={1})", "arg reductions are not generated for Triton"};

// A group's own section of the kernel parameters (propose() fills both): "row" for a row group,
// else "pointwise"; an empty object when absent.
nlohmann::json group_params(const KernelGroup& G, const nlohmann::json& params);

KernelCode emit_cpu(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                    const nlohmann::json& params);
KernelCode emit_triton(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                       const nlohmann::json& params);
KernelCode emit_cuda(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                     const nlohmann::json& params);

// Where a product template's epilogue runs: the accumulated value's variable (assigned the value
// to store), the flat index of its element in the product's output, and (Triton) the store mask.
struct EpilogueSite {
  std::string acc, index, mask;
};
// A fused pointwise group as epilogue statements (emit_epilogue.cpp). Without a group: no
// statements, and the product's own value is stored.
struct Epilogue {
  std::vector<int> inputs;          // extra kernel inputs (the group's other leaves), in order
  std::vector<int> outputs;         // extra kernel outputs (the group's outputs after the first)
  std::vector<std::string> params;  // their kernel parameters
  std::vector<std::string> names;   // the parameters' names
  std::vector<std::string> lines;   // statements on the site's accumulated value
  int stored = -1;                  // the value the template's own output pointer receives
  // ", param..." for the kernel's signature; ", arg..." for its launch (pointers: _ok_ptr(...)).
  std::string signature() const;
  std::string arguments(const Graph& g, bool pointers) const;
  // forward's allocations of the extra outputs, after that of `stored` when `with_stored`.
  std::vector<std::string> allocations(const Graph& g, const std::string& device,
                                       bool with_stored) const;
};
// The epilogue's kernel parameters alone (no statements): `names` gets each leaf's and extra
// output's parameter name.
Epilogue epilogue_params(const KernelGroup* G, int product, const std::string& lang,
                         std::map<int, std::string>& names);
// lang: "cpp", "cuda" or "triton"; G may be null (no epilogue).
Epilogue make_epilogue(const Graph& g, const KernelGroup* G, int product, const Skills& skills,
                       const std::string& lang, const EpilogueSite& site);

// A row group fused into a Triton GEMM of BLOCK_N = block_n (a row epilogue): statements on the
// program's [BLOCK_M, BLOCK_N] accumulator `acc` (rows offs_cm of batch bid), viewed as
// [BLOCK_M, N / R, R] segments, that compute the group with its reductions along the segments and
// store every output (the first through c_ptr); `e` gets the extra parameters.
std::vector<std::string> triton_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                                             const Skills& skills, const Gemm& gm, int64_t block_n,
                                             Epilogue& e);
// A row group fused into the C++ GEMM (a row epilogue): the row kernel's passes over the rows o in
// [ep_o0, ep_o1) that a task computed into its buffer `ep_row` (element i at ep_row[i - ep_i0]),
// outputs stored through `names` (emit_cpu.cpp).
std::string cpu_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                             const Skills& skills, const std::map<int, std::string>& names);

// The same for the CUDA GEMM (emit_cuda.cpp): the row kernel's passes, a block of `threads` per
// row, over the rows o in [ep_o0, ep_o1) whose product values the block stored in `ep_scratch`.
std::string cuda_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                              const Skills& skills, const std::map<int, std::string>& names,
                              int threads);

// One matrix product (a kGemm node) on `backend`, from its gemm skill with `params` (that skill's
// point); the launch lines allocate the output and run the kernel. `epilogue`: the pointwise group
// fused into it, or null.
KernelCode emit_gemm(const Graph& g, const Node& n, int index, const std::string& backend,
                     const Skills& skills, const nlohmann::json& params,
                     const KernelGroup* epilogue = nullptr);

// The gemm skills' admissible points and their prior (lower `score` = better), by the largest
// product of the plan: tiles no larger than the matrix rounded up, what fits shared memory and
// registers, split-K only for long K over few tiles and never under a fused tail (`epilogue`);
// `row_n` > 0: some product of N = row_n has a row epilogue (Triton: BLOCK_N covers it).
bool gemm_admissible(const Skill& s, const nlohmann::json& p, const Gemm& gm, bool epilogue,
                     int64_t row_n, double& score);

// One convolution (a kConv node) on `backend`, from its conv skill with `params` (that skill's
// point); the launch lines allocate the output and run the kernel. `epilogue` as for emit_gemm.
KernelCode emit_conv(const Graph& g, const Node& n, int index, const std::string& backend,
                     const Skills& skills, const nlohmann::json& params,
                     const KernelGroup* epilogue = nullptr);
// The conv skills' admissible points and their prior (lower `score` = better), by the largest
// convolution of the plan; and a one-line description of a convolution for humans.
bool conv_admissible(const Skill& s, nlohmann::json& p, const Conv& c, double& score);
std::string describe_conv(const Conv& c);
// One window step (a kWindow pooling or scan node, or an argmax/argmin reduction) on `backend`,
// from its window skill with `params` (that skill's point); the launch lines allocate the output
// and run the kernel.
KernelCode emit_window(const Graph& g, const Node& n, int index, const std::string& backend,
                       const Skills& skills, const nlohmann::json& params);
// The window skills' admissible points and their prior (lower `score` = better), by the largest
// window step of the plan; and a one-line description of a window step for humans.
bool window_admissible(const Skill& s, const nlohmann::json& p, const WindowShape& f,
                       double& score);
std::string describe_window(const Graph& g, const Node& n);

// Renders a kernel skill's template, throwing EmitError on failure.
std::string render_skill(const Skills& skills, const std::string& backend,
                         const std::string& pattern, const std::string& name,
                         const nlohmann::json& context);

// Small helpers for the emitters.
std::string indent(const std::string& text, int spaces);
// `lines`, each indented by `spaces`, joined by newlines (none after the last): a template slot.
std::string lines_at(const std::vector<std::string>& lines, int spaces);
// A group's kernel parameters in order: its leaves named in0, in1, ..., then its outputs named
// out0, out1, ...; `each` gets the value, its parameter name and whether it is an output.
void for_each_param(
    const KernelGroup& G,
    const std::function<void(int value, const std::string& name, bool output)>& each);
int64_t next_pow2(int64_t v);
// |log2 a - log2 b|: how many doublings apart two sizes are (the priors' distance).
double log2_distance(double a, double b);
// The non-empty lines of `text` (a rendered launch template), without their newlines.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace ok::generate
