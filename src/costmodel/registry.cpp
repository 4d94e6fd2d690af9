// The cost models by name.
#include <fmt/format.h>

#include "costmodel/cost_model.h"
#include "costmodel/gbt_model.h"
#include "graph/error.h"

namespace ts {

const std::vector<std::string>& cost_model_names() {
  static const std::vector<std::string> names = {"gbt-rank", "gbt-reg"};
  return names;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& name, uint64_t seed) {
  GbtOptions o;
  o.seed = seed;
  if (name == "gbt-rank") {
    o.objective = "rank:pairwise";
    return std::make_unique<GbtModel>(o);
  }
  if (name == "gbt-reg") {
    o.objective = "reg:squarederror";
    return std::make_unique<GbtModel>(o);
  }
  std::string known;
  for (const auto& n : cost_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("unknown cost model '{}' (known: {})", name, known));
}

}  // namespace ts
