// The lowering of the "pool", "scan" and "index" families of data/skills' "ir_ops" to kWindow
// nodes (docs/graph-ir.md, "Pooling, scans and index views"). Pooling checks its output shape with
// PyTorch's formula; adaptive pooling is a mean or max over the pooled dims (output 1) or a plain
// pooling (even windows); a scan absorbs what surrounds it where that makes it another scan: a scan
// of a flip along its dim is a reverse scan (flipped back, and a flip of a flip cancels), a scan of
// x * m (same shapes) reads both, cat(zeros_like(..), scan(narrow(x, dim, 0, L - 1))) along dim
// is the exclusive scan of x. Index ops nothing absorbed stay kWindow nodes the planner refuses.
#include <fmt/format.h>

#include <algorithm>

#include "generate/lowerer.hpp"

namespace ok::generate {

namespace lowering {

namespace {

using nlohmann::json;

// A list param of `rank` ints (a single int repeated).
std::vector<int64_t> ints_param(Lowerer& l, const IrNode& n, const std::string& name, size_t rank,
                                int64_t dflt) {
  auto p = l.param(n, name, kKeywordOnly);
  if (!p) return std::vector<int64_t>(rank, dflt);
  std::vector<int64_t> out;
  if (p->is_number_integer()) out.assign(rank, p->get<int64_t>());
  if (p->is_array())
    for (const auto& v : *p) {
      if (!v.is_number_integer()) throw Malformed{fmt::format("{}: {} is not ints", n.where, name)};
      out.push_back(v.get<int64_t>());
    }
  if (out.size() == 1) out.assign(rank, out[0]);
  if (out.size() != rank)
    throw Malformed{
        fmt::format("{}: {} has {} values for {} pooled dims", n.where, name, out.size(), rank)};
  return out;
}

bool bool_param(Lowerer& l, const IrNode& n, const std::string& name, bool dflt) {
  auto p = l.param(n, name, kKeywordOnly);
  if (!p) return dflt;
  if (p->is_boolean()) return p->get<bool>();
  if (p->is_object() && p->contains("scalar")) return (*p)["scalar"].get<double>() != 0;
  throw Malformed{fmt::format("{}: {} is not a bool", n.where, name)};
}

int64_t int_param(Lowerer& l, const IrNode& n, const std::string& name) {
  auto p = l.param(n, name, kKeywordOnly);
  if (p && p->is_object() && p->contains("scalar")) p = (*p)["scalar"];
  if (!p || !p->is_number_integer())
    throw Malformed{fmt::format("{}: {} is not an int", n.where, name)};
  return p->get<int64_t>();
}

// PyTorch's pooling output length (pooling_output_shape).
int64_t pooled_length(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

const Node* producer(Lowerer& l, const Operand& o) {
  if (o.is_scalar()) return nullptr;
  int p = l.graph().values[o.value].producer;
  return p < 0 ? nullptr : &l.graph().nodes[p];
}

int window_node(Lowerer& l, Window w, const std::string& op, std::vector<Operand> args,
                const std::string& name, const std::string& origin, Shape shape,
                json params = json::object()) {
  Node n;
  n.kind = NodeKind::kWindow;
  n.op = op;
  n.args = std::move(args);
  n.window = w;
  n.origin = origin;
  n.params = std::move(params);
  return l.add_node(std::move(n), name, std::move(shape));
}

// The window of a pooling over the last kernel.size() dims of x (shape xs); appends the pooled
// extents to `out` (the leading dims).
Window pool_window(const IrNode& n, const Shape& xs, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, bool ceil_mode, Shape& out) {
  const size_t rank = kernel.size();
  Window w;
  w.rank = static_cast<int>(rank);
  w.outer = numel(out);
  for (size_t i = 0; i < rank; ++i) {
    const size_t slot = 3 - rank + i;
    const int64_t in = xs[xs.size() - rank + i];
    if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 ||
        2 * padding[i] > dilation[i] * (kernel[i] - 1) + 1)
      throw Unsupported{fmt::format("{}: kernel {}, stride {}, padding {}, dilation {}", n.where,
                                    kernel[i], stride[i], padding[i], dilation[i])};
    w.in[slot] = in;
    w.kernel[slot] = kernel[i];
    w.stride[slot] = stride[i];
    w.padding[slot] = padding[i];
    w.dilation[slot] = dilation[i];
    w.out[slot] = pooled_length(in, kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
    if (w.out[slot] < 1)
      throw Unsupported{fmt::format("{}: the pooled length of {} is {}", n.where, in, w.out[slot])};
    out.push_back(w.out[slot]);
  }
  return w;
}

// The number of pooled dims `name` gives (a list's length), checked against x's rank.
size_t pooled_rank(Lowerer& l, const IrNode& n, const std::string& name, const Shape& xs) {
  auto k = l.param(n, name, kKeywordOnly);
  const size_t rank = k && k->is_array() ? k->size() : 0;
  if (rank < 1 || rank > 3 || xs.size() < rank + 1)
    throw Unsupported{
        fmt::format("{}: {} over {} dims of shape {}", n.where, n.op, rank, shape_str(xs))};
  return rank;
}

// max_pool {kernel_size, stride, padding, dilation, ceil_mode} and avg_pool {kernel_size, stride,
// padding, ceil_mode, count_include_pad, divisor_override} over the last len(kernel_size) dims.
int lower_pool(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Shape& xs = l.shape_of(x);
  const size_t rank = pooled_rank(l, n, "kernel_size", xs);
  const bool is_max = n.op == "max_pool";
  auto kernel = ints_param(l, n, "kernel_size", rank, 1);
  auto stride = ints_param(l, n, "stride", rank, 0);
  if (std::all_of(stride.begin(), stride.end(), [](int64_t s) { return s == 0; })) stride = kernel;
  auto padding = ints_param(l, n, "padding", rank, 0);
  auto dilation = is_max ? ints_param(l, n, "dilation", rank, 1) : std::vector<int64_t>(rank, 1);
  Shape out(xs.begin(), xs.end() - static_cast<std::ptrdiff_t>(rank));
  Window w = pool_window(n, xs, kernel, stride, padding, dilation,
                         bool_param(l, n, "ceil_mode", false), out);
  w.count_include_pad = bool_param(l, n, "count_include_pad", true);
  if (l.param(n, "divisor_override", kKeywordOnly)) w.divisor = int_param(l, n, "divisor_override");
  return window_node(l, w, n.op, {x}, n.name, n.op, out);
}

// adaptive_avg_pool and adaptive_max_pool {output_size} over the last len(output_size) dims: to
// 1 in every dim, the mean (max) over those dims, a row reduction; where each output extent
// divides its input extent, the plain pooling with kernel = stride = input / output; windows of
// uneven sizes (PyTorch's floor/ceil bounds) are unsupported.
int lower_adaptive_pool(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Shape& xs = l.shape_of(x);
  const size_t rank = pooled_rank(l, n, "output_size", xs);
  auto size = ints_param(l, n, "output_size", rank, 1);
  const bool is_max = n.op == "adaptive_max_pool";
  const auto lead = static_cast<int>(xs.size() - rank);
  if (std::all_of(size.begin(), size.end(), [](int64_t s) { return s == 1; })) {
    std::vector<int> dims;
    for (int d = lead; d < static_cast<int>(xs.size()); ++d) dims.push_back(d);
    if (is_max) return l.reduce(ReduceKind::kMax, x, dims, true, n.name, n.op);
    int s = l.reduce(ReduceKind::kSum, x, dims, true, n.name + "_sum", n.op);
    Operand inv = Operand::number(1.0 / static_cast<double>(l.reduced_size(x, dims)));
    return l.ew("mul", {Operand::tensor(s), inv}, n.name, n.op);
  }
  std::vector<int64_t> kernel(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t in = xs[lead + i];
    if (size[i] < 1 || in % size[i] != 0)
      throw Unsupported{fmt::format("{}: {} of extent {} to {}: windows of uneven sizes", n.where,
                                    n.op, in, size[i])};
    kernel[i] = in / size[i];
  }
  Shape out(xs.begin(), xs.begin() + lead);
  Window w = pool_window(n, xs, kernel, kernel, std::vector<int64_t>(rank, 0),
                         std::vector<int64_t>(rank, 1), false, out);
  const std::string op = is_max ? "max_pool" : "avg_pool";
  return window_node(l, w, op, {x}, n.name, n.op, out);
}

// scan {combine: sum|prod, dim}.
int lower_scan(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Shape xs = l.shape_of(x);
  auto c = l.param(n, "combine", kKeywordOnly);
  std::string combine = c && c->is_string() ? c->get<std::string>() : "";
  if (combine != "sum" && combine != "prod")
    throw Unsupported{fmt::format("{}: scan with combine {}", n.where, c ? c->dump() : "none")};
  std::vector<int> dims = l.dims_of(n, x, 1);
  if (dims.size() != 1 && !xs.empty())
    throw Malformed{fmt::format("{}: a scan needs one dim", n.where)};
  Window w;
  w.combine = combine == "sum" ? ReduceKind::kSum : ReduceKind::kProd;
  const int d = xs.empty() ? 0 : dims[0];
  for (int i = 0; i < static_cast<int>(xs.size()); ++i)
    (i < d ? w.outer : i == d ? w.len : w.inner) *= xs[i];
  std::vector<Operand> args = {x};
  const Node* p = producer(l, x);
  if (p && p->kind == NodeKind::kWindow && p->op == "flip" &&
      p->params.value("dims", json::array()) == json::array({d})) {
    // scan(flip(x)) = flip(reverse scan(x)); the flip back cancels a flip that follows.
    w.reverse = true;
    args = {p->args[0]};
    int r = window_node(l, w, "scan", args, n.name + "_reverse", n.op, xs);
    return window_node(l, Window{}, "flip", {Operand::tensor(r)}, n.name, n.op, xs,
                       {{"dims", json::array({d})}});
  }
  if (p && p->kind == NodeKind::kElementwise && p->op == "mul" && p->args.size() == 2 &&
      !p->args[0].is_scalar() && !p->args[1].is_scalar() && l.shape_of(p->args[0]) == xs &&
      l.shape_of(p->args[1]) == xs) {
    w.masked = true;  // the product read in the scan (a bool mask is read as 0/1)
    args = p->args;
    if (l.graph().values[args[0].value].dtype == "bool") std::swap(args[0], args[1]);
  }
  return window_node(l, w, "scan", args, n.name, n.op, xs);
}

// flip {dims}: a flip of a flip over the same dims is its input.
int lower_flip(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  json dims = json::array();
  const int rank = static_cast<int>(l.shape_of(x).size());
  auto given = l.param(n, "dims", kKeywordOnly);
  if (!given || !given->is_array()) throw Malformed{fmt::format("{}: flip without dims", n.where)};
  for (const auto& d : *given) {
    if (!d.is_number_integer() || d.get<int>() < -rank || d.get<int>() >= rank)
      throw Malformed{fmt::format("{}: flip dims {}", n.where, given->dump())};
    dims.push_back((d.get<int>() + rank) % rank);
  }
  const Node* p = producer(l, x);
  if (p && p->kind == NodeKind::kWindow && p->op == "flip" && p->params["dims"] == dims) {
    l.rename(p->args[0].value, n.name);
    return p->args[0].value;
  }
  return window_node(l, Window{}, "flip", {x}, n.name, n.op, l.shape_of(x), {{"dims", dims}});
}

// narrow {dim, start, length}, select {dim, index}, zeros_like: only their shapes matter here.
int lower_slice(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  json params = json::object();
  for (const char* k : {"dim", "start", "length", "index"})
    if (l.param(n, k, kKeywordOnly)) params[k] = int_param(l, n, k);
  return window_node(l, Window{}, n.op, {x}, n.name, n.op, n.shape, params);
}

// cat {dim}; cat(zeros_like(..) of extent 1, scan(narrow(x, dim, 0, L - 1))) along the scan's
// dim, L being x's extent, is the exclusive scan of x.
int lower_cat(Lowerer& l, const IrNode& n) {
  if (!n.json.contains("args") || !n.json["args"].is_array() || n.json["args"].empty())
    throw Malformed{fmt::format("{}: cat without tensors", n.where)};
  std::vector<Operand> args;
  for (size_t i = 0; i < n.json["args"].size(); ++i) args.push_back(l.tensor_arg(n, i));
  const int64_t dim = int_param(l, n, "dim");
  if (args.size() == 2) {
    const Node* zeros = producer(l, args[0]);
    const Node* scan = producer(l, args[1]);
    const Node* narrow = scan && scan->op == "scan" ? producer(l, scan->args[0]) : nullptr;
    const Shape& zs = l.shape_of(args[0]);
    if (zeros && zeros->op == "zeros_like" && narrow && narrow->op == "narrow" &&
        !scan->window.masked && !scan->window.reverse && !scan->window.exclusive &&
        scan->window.combine == ReduceKind::kSum && dim < static_cast<int64_t>(zs.size()) &&
        zs[dim] == 1 && narrow->params.value("dim", -1) == dim &&
        narrow->params.value("start", -1) == 0) {
      const Shape& src = l.shape_of(narrow->args[0]);
      if (src == n.shape && narrow->params.value("length", -1) == src[dim] - 1 &&
          scan->window.len == src[dim] - 1) {
        Window w = scan->window;
        w.len = src[dim];
        w.exclusive = true;
        return window_node(l, w, "scan", {narrow->args[0]}, n.name, "scan", src);
      }
    }
  }
  return window_node(l, Window{}, "cat", args, n.name, n.op, n.shape, {{"dim", dim}});
}

}  // namespace

int lower_pool_family(Lowerer& l, const IrNode& n) {
  if (n.op == "adaptive_avg_pool" || n.op == "adaptive_max_pool") return lower_adaptive_pool(l, n);
  return lower_pool(l, n);
}

int lower_scan_family(Lowerer& l, const IrNode& n) {
  return lower_scan(l, n);
}

int lower_index(Lowerer& l, const IrNode& n) {
  if (n.op == "flip") return lower_flip(l, n);
  if (n.op == "cat") return lower_cat(l, n);
  return lower_slice(l, n);
}

}  // namespace lowering

bool is_window_step(const Node& n) {
  return n.kind == NodeKind::kWindow ||
         (n.kind == NodeKind::kReduce &&
          (n.reduce == ReduceKind::kArgmax || n.reduce == ReduceKind::kArgmin));
}

std::string window_unsupported(const Graph& g, const Node& n) {
  if (n.kind == NodeKind::kReduce || n.op == "max_pool" || n.op == "avg_pool" || n.op == "scan")
    return "";
  return fmt::format(
      "node {}: {} is generated only where a scan absorbs it (a flip on both sides of a scan "
      "along its dim, cat(zeros_like(..), cumsum(narrow(x, dim, 0, L - 1))) along dim)",
      g.values[n.out].name, n.op);
}

WindowShape window_shape(const Graph& g, const Node& n) {
  WindowShape w;
  if (n.kind == NodeKind::kReduce) {
    const Shape& s = g.values[n.args[0].value].shape;
    w.kind = "argreduce";
    for (int d = 0; d < static_cast<int>(s.size()); ++d)
      (d < n.dims.front() ? w.outer : d <= n.dims.back() ? w.len : w.inner) *= s[d];
  } else if (n.op == "scan") {
    w = {"scan", n.window.outer, n.window.len, n.window.inner};
  } else {
    w = {"pool", numel(g.values[n.out].shape), 1, 1};
  }
  return w;
}

std::string window_pattern(const Node& n) {
  if (n.kind == NodeKind::kReduce) return reduce_name(n.reduce);
  if (n.op == "max_pool") return "pool:max";
  if (n.op == "avg_pool") return "pool:avg";
  std::string p = n.window.combine == ReduceKind::kSum ? "scan:sum" : "scan:prod";
  if (n.window.reverse) p += ",reverse";
  if (n.window.exclusive) p += ",exclusive";
  if (n.window.masked) p += ",masked";
  return p;
}

}  // namespace ok::generate
