#include "support/onnx_builder.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "runtime/graph_runner.h"

namespace ts::test {

OnnxBuilder::OnnxBuilder(int opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("tensorsched-tests");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

static void set_type(onnx::ValueInfoProto* v, DType t, const std::vector<int64_t>& shape, bool dynamic) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t));
  auto* s = tt->mutable_shape();
  for (size_t k = 0; k < shape.size(); k++) {
    auto* d = s->add_dim();
    if (dynamic && shape[k] < 0) d->set_dim_param("dyn" + std::to_string(k));
    else d->set_dim_value(shape[k]);
  }
}

OnnxBuilder& OnnxBuilder::input(const std::string& name, DType t, const std::vector<int64_t>& shape) {
  auto* v = model_.mutable_graph()->add_input();
  v->set_name(name);
  set_type(v, t, shape, false);
  return *this;
}

OnnxBuilder& OnnxBuilder::dynamic_input(const std::string& name, DType t, const std::vector<int64_t>& shape) {
  auto* v = model_.mutable_graph()->add_input();
  v->set_name(name);
  set_type(v, t, shape, true);
  return *this;
}

OnnxBuilder& OnnxBuilder::initializer(const std::string& name, const Tensor& value) {
  auto* t = model_.mutable_graph()->add_initializer();
  tensor_to_proto(value, t);
  t->set_name(name);
  return *this;
}

OnnxBuilder& OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs, const std::map<std::string, AttrValue>& attrs,
                               const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& [k, v] : attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    if (auto* i = std::get_if<int64_t>(&v)) { a->set_type(onnx::AttributeProto::INT); a->set_i(*i); }
    else if (auto* f = std::get_if<double>(&v)) { a->set_type(onnx::AttributeProto::FLOAT); a->set_f(static_cast<float>(*f)); }
    else if (auto* s = std::get_if<std::string>(&v)) { a->set_type(onnx::AttributeProto::STRING); a->set_s(*s); }
    else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
      a->set_type(onnx::AttributeProto::INTS);
      for (auto x : *is) a->add_ints(x);
    } else if (auto* fs = std::get_if<std::vector<double>>(&v)) {
      a->set_type(onnx::AttributeProto::FLOATS);
      for (auto x : *fs) a->add_floats(static_cast<float>(x));
    } else if (auto* t = std::get_if<Tensor>(&v)) {
      a->set_type(onnx::AttributeProto::TENSOR);
      tensor_to_proto(*t, a->mutable_t());
    }
  }
  return *this;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name, DType t) {
  auto* v = model_.mutable_graph()->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(dtype_to_onnx(t));
  return *this;
}

OnnxBuilder& OnnxBuilder::metadata(const std::string& key, const std::string& value) {
  auto* p = model_.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
  return *this;
}

std::string OnnxBuilder::save(const std::string& file_name) const {
  auto path = temp_dir() / file_name;
  std::ofstream f(path, std::ios::binary);
  model_.SerializeToOstream(&f);
  return path.string();
}

namespace {

// This process's scratch root. PIDs wrap (pid_max is often 32768), so a root left by an earlier
// run with the same PID is wiped before first use, and the root is removed when the process that
// made it exits (a forked child's exit leaves it alone).
const std::filesystem::path& process_scratch_root() {
  static const pid_t owner = getpid();
  // Never destroyed, so the exit handler below still sees it.
  static const std::filesystem::path* root = [] {
    auto* dir = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                          ("tensorsched_tests_" + std::to_string(owner)));
    std::filesystem::remove_all(*dir);
    std::filesystem::create_directories(*dir);
    std::atexit([] {
      std::error_code ec;
      if (getpid() == owner) std::filesystem::remove_all(*root, ec);
    });
    return dir;
  }();
  return *root;
}

}  // namespace

std::filesystem::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "no_test";
  auto dir = process_scratch_root() / name;
  std::filesystem::create_directories(dir);
  return dir;
}

const Node& node_writing(const Graph& g, const std::string& t) {
  const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return std::find(n.outputs.begin(), n.outputs.end(), t) != n.outputs.end();
  });
  if (it == g.nodes.end()) throw Error("test: no node writes " + t);
  return *it;
}

Graph import_model(const std::string& path, bool passes) {
  ImportOptions opts;
  opts.op_supported = op_supported;
  opts.quiet = true;
  opts.generate_weights = false;
  Graph g = import_onnx(path, opts);
  if (passes) run_default_passes(g);
  return g;
}

std::vector<Tensor> run_model(const std::string& path, const std::map<std::string, Tensor>& inputs) {
  GraphRunner runner(import_model(path));
  return runner.run(inputs);
}

Tensor make_f32(const Shape& shape, const std::vector<float>& values) {
  Tensor t(DType::Float32, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.size());
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.size(); i++) t.data<float>()[i] = values[i];
  return t;
}

Tensor rand_f32(const Shape& shape, uint64_t seed) { return random_tensor(DType::Float32, shape, seed, -1.0, 1.0); }

}  // namespace ts::test
