// The conv family of data/skills' "ir_ops": a 1-3d convolution, standard or transposed, becomes
// one Conv node (graph.hpp) with its spatial dims aligned right in three, checked against the
// weight's layout and the output shape the IR states. A depthwise-separable pair is two conv nodes
// (a depthwise one, then a pointwise one) and so two Conv steps; nothing here is special-cased.
#include <fmt/format.h>

#include "generate/lowerer.hpp"

namespace ok::generate::lowering {

namespace {

using nlohmann::json;

// A per-dim kwarg: an int for every dim or a list of `dims` ints, aligned right in three with
// `fill` before; `dflt` when absent.
std::array<int64_t, 3> per_dim(Lowerer& l, const IrNode& n, const char* name, int dims,
                               int64_t dflt, int64_t fill) {
  std::array<int64_t, 3> out{fill, fill, fill};
  auto p = l.param(n, name, kKeywordOnly);
  std::vector<int64_t> v(static_cast<size_t>(dims), dflt);
  if (p && p->is_object() && p->contains("scalar")) p = (*p)["scalar"];
  if (p && p->is_number_integer()) {
    v.assign(static_cast<size_t>(dims), p->get<int64_t>());
  } else if (p && p->is_array() && static_cast<int>(p->size()) == dims) {
    for (int i = 0; i < dims; ++i) {
      if (!(*p)[i].is_number_integer())
        throw Malformed{
            fmt::format("node {}: conv {} {} is not a list of ints", n.name, name, p->dump())};
      v[i] = (*p)[i].get<int64_t>();
    }
  } else if (p) {
    throw Unsupported{
        fmt::format("node {}: conv {} {} is not {} ints", n.name, name, p->dump(), dims)};
  }
  for (int i = 0; i < dims; ++i) out[3 - dims + i] = v[i];
  return out;
}

// The IR's optional bias argument (args[2]): a tensor, or None when absent or {"value": null}.
Operand bias_arg(Lowerer& l, const IrNode& n) {
  auto b = l.param(n, "bias", 2);
  if (!b) return Operand::none();
  return l.tensor_arg(n, 2);
}

int64_t expected_extent(const Conv& c, int d, int64_t output_padding) {
  const int64_t span = c.dil[d] * (c.k[d] - 1);
  if (c.transposed) return (c.in[d] - 1) * c.stride[d] - 2 * c.pad[d] + span + output_padding + 1;
  return (c.in[d] + 2 * c.pad[d] - span - 1) / c.stride[d] + 1;
}

// The shapes of x, weight and the output against the conv's parameters.
void read_shapes(Conv& c, const IrNode& n, const Shape& xs, const Shape& ws,
                 const std::array<int64_t, 3>& output_padding) {
  const int dims = c.dims;
  const bool batched = static_cast<int>(xs.size()) == dims + 2;
  if (!batched && static_cast<int>(xs.size()) != dims + 1)
    throw Unsupported{fmt::format("node {}: a {}d conv of a {}-d input {}", n.name, dims, xs.size(),
                                  shape_str(xs))};
  if (static_cast<int>(ws.size()) != dims + 2 || n.shape.size() != xs.size())
    throw Malformed{fmt::format("node {}: conv weight {} or output {} does not match input {}",
                                n.name, shape_str(ws), shape_str(n.shape), shape_str(xs))};
  const size_t ch = batched ? 1 : 0;
  c.batch = batched ? xs[0] : 1;
  c.cin = xs[ch];
  c.cout = n.shape[ch];
  if (c.groups < 1 || c.cin % c.groups != 0 || c.cout % c.groups != 0)
    throw Malformed{fmt::format("node {}: {} groups do not divide {} input and {} output channels",
                                n.name, c.groups, c.cin, c.cout)};
  const int64_t w0 = c.transposed ? c.cin : c.cout, w1 = c.transposed ? c.cout_g() : c.cin_g();
  if (ws[0] != w0 || ws[1] != w1)
    throw Malformed{
        fmt::format("node {}: conv weight {} is not [{}, {}, ...]", n.name, shape_str(ws), w0, w1)};
  if (batched && n.shape[0] != c.batch)
    throw Malformed{fmt::format("node {}: conv output {} has another batch than input {}", n.name,
                                shape_str(n.shape), shape_str(xs))};
  for (int i = 0; i < dims; ++i) {
    const int d = 3 - dims + i;
    c.in[d] = xs[ch + 1 + i];
    c.k[d] = ws[2 + i];
    c.out[d] = n.shape[ch + 1 + i];
    if (c.stride[d] < 1 || c.dil[d] < 1 || c.pad[d] < 0 || c.k[d] < 1)
      throw Malformed{
          fmt::format("node {}: conv stride, dilation, padding or kernel out of range", n.name)};
    const int64_t want = expected_extent(c, d, output_padding[d]);
    if (c.out[d] != want)
      throw Unsupported{fmt::format(
          "node {}: conv output extent {} along spatial dim {} is not the {} the parameters give "
          "(asymmetric padding?)",
          n.name, c.out[d], i, want)};
  }
}

}  // namespace

int lower_conv(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0), w = l.tensor_arg(n, 1);
  Operand b = bias_arg(l, n);
  Conv c;
  const double dims = l.scalar_param(n, "dims", kKeywordOnly, 0);
  if (dims != 1 && dims != 2 && dims != 3)
    throw Malformed{fmt::format("node {}: conv dims {} is not 1, 2 or 3", n.name, dims)};
  c.dims = static_cast<int>(dims);
  c.transposed = l.scalar_param(n, "transposed", kKeywordOnly, 0) != 0;
  c.groups = static_cast<int64_t>(l.scalar_param(n, "groups", kKeywordOnly, 1));
  c.stride = per_dim(l, n, "stride", c.dims, 1, 1);
  c.pad = per_dim(l, n, "padding", c.dims, 0, 0);
  c.dil = per_dim(l, n, "dilation", c.dims, 1, 1);
  const auto output_padding = per_dim(l, n, "output_padding", c.dims, 0, 0);
  if (!c.transposed && output_padding != std::array<int64_t, 3>{0, 0, 0})
    throw Malformed{fmt::format("node {}: output_padding on a standard conv", n.name)};
  read_shapes(c, n, l.shape_of(x), l.shape_of(w), output_padding);
  c.bias = !b.is_none();
  if (c.bias && l.shape_of(b) != Shape{c.cout})
    throw Malformed{
        fmt::format("node {}: conv bias {} is not [{}]", n.name, shape_str(l.shape_of(b)), c.cout)};
  Node node;
  node.kind = NodeKind::kConv;
  node.op = "conv";
  node.args = {x, w, b};
  node.origin = n.op;
  node.conv = c;
  return l.add_node(std::move(node), n.name, n.shape);
}

}  // namespace ok::generate::lowering
