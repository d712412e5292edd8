// The matrix-product families of data/skills' "ir_ops": matmul (mm, bmm), permute, diag and
// triangle (tril, triu). A product becomes a Gemm node with its operands' transposes and batches
// folded in; a product with a vector side (N or M of 1) becomes an elementwise multiply and a sum,
// which the row kernels fuse; a diagonal-matrix operand becomes a row or column scale; a triangle
// of a product becomes that product with the triangle kept. permute and diag stay views that only
// a product reads (the planner names any other reader).
#include <fmt/format.h>

#include <algorithm>

#include "generate/lowerer.hpp"

namespace ok::generate::lowering {

namespace {

using nlohmann::json;

const Node* producer(const Lowerer& l, const Operand& o) {
  if (o.is_scalar()) return nullptr;
  int p = l.graph().values[o.value].producer;
  return p < 0 ? nullptr : &l.graph().nodes[p];
}

// An operand of a product: the value it reads (under a transpose, the transposed value) and the
// shape the product sees.
struct Side {
  Operand src;
  bool trans = false;
  Shape shape;
};

Side side_of(const Lowerer& l, Operand o) {
  Side s{o, false, l.shape_of(o)};
  const Node* p = producer(l, o);
  if (!p || p->kind != NodeKind::kView || p->op != "permute") return s;
  const auto dims = p->params["dims"].get<std::vector<int>>();
  const int r = static_cast<int>(dims.size());
  for (int d = 0; d < r - 2; ++d)
    if (dims[d] != d) return s;
  if (r >= 2 && dims[r - 2] == r - 1 && dims[r - 1] == r - 2) {
    s.src = p->args[0];
    s.trans = true;
  }
  return s;
}

Shape strip_leading_ones(Shape s) {
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  return s;
}

Shape with(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

// The IR's output shape from `v` (same element count, else the IR is malformed): a reshape view
// when they differ.
int shaped(Lowerer& l, int v, const IrNode& n) {
  const Shape have = l.shape_of(Operand::tensor(v));
  if (have == n.shape) return v;
  if (numel(have) != numel(n.shape))
    throw Malformed{fmt::format("node {}: its {} elements do not fill its shape {}", n.name,
                                numel(have), shape_str(n.shape))};
  l.rename(v, n.name + "_flat");
  return l.view(Operand::tensor(v), n.shape, n.name, n.op);
}

// diag(d) @ B as d[:, None] * B, and A @ diag(d) as A * d; nullopt when neither side is a diag.
std::optional<int> diagonal_scale(Lowerer& l, const IrNode& n, Operand a, Operand b) {
  const Node* pa = producer(l, a);
  const Node* pb = producer(l, b);
  auto is_diag = [](const Node* p) { return p && p->kind == NodeKind::kView && p->op == "diag"; };
  if (is_diag(pa)) {
    Operand d = pa->args[0];
    const Shape ds = l.shape_of(d);
    if (l.shape_of(b).size() == 1) return l.ew("mul", {d, b}, n.name, "diag");
    Operand col = Operand::tensor(l.view(d, Shape{ds[0], 1}, n.name + "_rows", "diag"));
    return shaped(l, l.ew("mul", {col, b}, n.name, "diag"), n);
  }
  if (is_diag(pb)) return shaped(l, l.ew("mul", {a, pb->args[0]}, n.name, "diag"), n);
  return std::nullopt;
}

// A product with a vector side as a multiply broadcast over the matrix and a sum over K: the
// matrix is read as stored (a transpose changes which dim is summed), the vector as K contiguous
// values per batch.
int vector_product(Lowerer& l, const IrNode& n, const Side& A, const Side& B, const Shape& ba,
                   const Shape& bb, int64_t k) {
  auto t = Operand::tensor;
  const bool column = B.shape.size() == 1 || B.shape.back() == 1;  // C = A @ x
  const Side& mat = column ? A : B;
  const Side& vec = column ? B : A;
  const Shape& vb = column ? bb : ba;
  const Shape ms = l.shape_of(mat.src);
  // The summed dim of the stored matrix: K is its last dim unless transposed (column case) or
  // unless it is B untransposed (row case).
  const bool k_last = column ? !mat.trans : mat.trans;
  if (ms.size() == 1) {  // a vector times vectors (a [K] x [..., K, 1] column too): dot products
    const Shape vs = with(vb, {k});
    Operand x = l.shape_of(vec.src) == vs ? vec.src : t(l.view(vec.src, vs, n.name + "_vec", n.op));
    int p = l.ew("mul", {mat.src, x}, n.name + "_prod", n.op);
    const int rank = static_cast<int>(l.shape_of(t(p)).size());
    return shaped(l, l.reduce(ReduceKind::kSum, t(p), {rank - 1}, false, n.name + "_sum", n.op), n);
  }
  Shape vs = k_last ? with(vb, {1, k}) : with(vb, {k, 1});
  Operand x = l.shape_of(vec.src) == vs ? vec.src : t(l.view(vec.src, vs, n.name + "_vec", n.op));
  int p = l.ew("mul", {mat.src, x}, n.name + "_prod", n.op);
  const int rank = static_cast<int>(l.shape_of(t(p)).size());
  int s = l.reduce(ReduceKind::kSum, t(p), {k_last ? rank - 1 : rank - 2}, false, n.name + "_sum",
                   n.op);
  return shaped(l, s, n);
}

}  // namespace

int lower_permute(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Shape& s = l.shape_of(x);
  auto p = l.param(n, "dims", 1);
  if (!p || !p->is_array() || p->size() != s.size())
    throw Malformed{
        fmt::format("node {}: permute without dims for shape {}", n.name, shape_str(s))};
  std::vector<int> dims;
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (const auto& d : *p) {
    int v = d.get<int>();
    if (v < 0) v += static_cast<int>(s.size());
    if (v < 0 || v >= static_cast<int>(s.size()) || seen[v])
      throw Malformed{fmt::format("node {}: dims {} are not a permutation", n.name, p->dump())};
    seen[v] = true;
    dims.push_back(v);
    out.push_back(s[v]);
  }
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i) identity &= dims[i] == static_cast<int>(i);
  if (identity) return l.view(x, out, n.name, n.op);
  Node v;
  v.kind = NodeKind::kView;
  v.op = "permute";
  v.args = {x};
  v.params = {{"dims", dims}};
  v.origin = n.op;
  return l.add_node(std::move(v), n.name, out);
}

int lower_diag(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Shape& s = l.shape_of(x);
  if (s.size() != 1)
    throw Unsupported{
        fmt::format("node {}: diag of a {}-d tensor (only a vector's diagonal "
                    "matrix is generated)",
                    n.name, s.size())};
  if (l.scalar_param(n, "diagonal", 1, 0) != 0)
    throw Unsupported{fmt::format("node {}: diag off the main diagonal", n.name)};
  Node v;
  v.kind = NodeKind::kView;
  v.op = "diag";
  v.args = {x};
  v.origin = n.op;
  return l.add_node(std::move(v), n.name, Shape{s[0], s[0]});
}

int lower_matmul(Lowerer& l, const IrNode& n) {
  Operand a = l.tensor_arg(n, 0), b = l.tensor_arg(n, 1);
  if (auto scaled = diagonal_scale(l, n, a, b)) return *scaled;
  Side A = side_of(l, a), B = side_of(l, b);
  if (A.shape.empty() || B.shape.empty())
    throw Unsupported{fmt::format("node {}: {} of a 0-d tensor", n.name, n.op)};
  Shape ma = A.shape.size() == 1 ? Shape{1, A.shape[0]} : A.shape;
  Shape mb = B.shape.size() == 1 ? Shape{B.shape[0], 1} : B.shape;
  const int64_t m = ma[ma.size() - 2], k = ma.back(), nn = mb.back();
  if (mb[mb.size() - 2] != k)
    throw Malformed{fmt::format("node {}: {} of {} and {}", n.name, n.op, shape_str(A.shape),
                                shape_str(B.shape))};
  const Shape ba(ma.begin(), ma.end() - 2), bb(mb.begin(), mb.end() - 2);
  const int64_t nba = numel(ba), nbb = numel(bb);
  if (nba > 1 && nbb > 1 && strip_leading_ones(ba) != strip_leading_ones(bb))
    throw Unsupported{fmt::format("node {}: batch dims {} and {} broadcast partially", n.name,
                                  shape_str(ba), shape_str(bb))};
  if (m == 1 || nn == 1) return vector_product(l, n, A, B, ba, bb, k);
  Gemm gm;
  gm.batch = std::max(nba, nbb);
  gm.m = m;
  gm.n = nn;
  gm.k = k;
  gm.trans_a = A.trans;
  gm.trans_b = B.trans;
  gm.batch_a = nba > 1;
  gm.batch_b = nbb > 1;
  if (gm.batch_a && !gm.batch_b && !gm.trans_a) {  // rows of every batch of A: one tall A
    gm.m *= gm.batch;
    gm.batch = 1;
    gm.batch_a = false;
  }
  Node node;
  node.kind = NodeKind::kGemm;
  node.op = "gemm";
  node.args = {A.src, B.src};
  node.origin = n.op;
  node.gemm = gm;
  return l.add_node(std::move(node), n.name, n.shape);
}

int lower_linear(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  std::optional<Operand> w, b;
  if (n.op == "module") {
    const std::string target = n.json["kwargs"].value("target", "");
    w = l.attr(target + ".weight");
    b = l.attr(target + ".bias");
    if (!w)
      throw Unsupported{
          fmt::format("node {}: the Linear module {} has no weight attr", n.name, target)};
  } else {
    w = l.tensor_arg(n, 1);
    const auto& args = n.json["args"];
    if (args.size() > 2 && !(args[2].is_object() && args[2].contains("value")))
      b = l.tensor_arg(n, 2);
  }
  l.check_dtype(*w, n.name);
  const Shape xs = l.shape_of(x), ws = l.shape_of(*w);
  if (xs.empty() || ws.size() != 2 || ws[1] != xs.back())
    throw Unsupported{
        fmt::format("node {}: linear of {} by a weight {}", n.name, shape_str(xs), shape_str(ws))};
  if (b) {
    l.check_dtype(*b, n.name);
    if (l.shape_of(*b) != Shape{ws[0]})
      throw Unsupported{fmt::format("node {}: linear bias of shape {} for {} outputs", n.name,
                                    shape_str(l.shape_of(*b)), ws[0])};
  }
  const int64_t k = xs.back(), rows = numel(xs) / std::max<int64_t>(k, 1);
  Operand a =
      xs.size() == 2 ? x : Operand::tensor(l.view(x, Shape{rows, k}, n.name + "_rows", n.op));
  Gemm gm;
  gm.m = rows;
  gm.n = ws[0];
  gm.k = k;
  gm.trans_b = true;
  Node node;
  node.kind = NodeKind::kGemm;
  node.op = "gemm";
  node.args = {a, *w};
  node.origin = "linear";
  node.gemm = gm;
  int y = l.add_node(std::move(node), b ? n.name + "_mm" : n.name, Shape{rows, ws[0]});
  if (b) y = l.ew("add", {Operand::tensor(y), *b}, n.name, "linear");
  return shaped(l, y, n);
}

int lower_triangle(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Node* p = producer(l, x);
  if (!p || p->kind != NodeKind::kGemm || p->gemm.triangle != Triangle::kNone)
    throw Unsupported{fmt::format("node {}: {} is generated only on the output of a matrix product",
                                  n.name, n.op)};
  if (l.shape_of(x).size() != 2)
    throw Unsupported{fmt::format("node {}: {} of a batched product", n.name, n.op)};
  Node kept = *p;
  kept.gemm.triangle = n.op == "tril" ? Triangle::kLower : Triangle::kUpper;
  kept.gemm.diagonal = static_cast<int64_t>(l.scalar_param(n, "diagonal", 1, 0));
  kept.origin = n.op;
  return l.add_node(std::move(kept), n.name, n.shape);
}

}  // namespace ok::generate::lowering
