#include "graph/einsum_equation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "graph/error.h"

namespace ts {

namespace {

using Labels = EinsumEquation::Labels;

// Labels of one term ("ab...c") for an operand of rank `rank` (-1: the output, whose ellipsis
// has `ellipsis_rank` axes).
Labels parse_term(const std::string& term, int rank, int ellipsis_rank, const std::string& where) {
  Labels before, after;
  bool ellipsis = false;
  for (size_t p = 0; p < term.size(); p++) {
    const char ch = term[p];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (ellipsis || term.compare(p, 3, "...") != 0) throw Error(fmt::format("{}: bad ellipsis in term '{}'", where, term));
      ellipsis = true;
      p += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      throw Error(fmt::format("{}: bad label '{}' in term '{}'", where, ch, term));
    (ellipsis ? after : before).push_back(ch);
  }
  const int letters = static_cast<int>(before.size() + after.size());
  const int dots = rank < 0 ? (ellipsis ? ellipsis_rank : 0) : rank - letters;
  if (dots < 0 || (!ellipsis && dots != 0))
    throw Error(fmt::format("{}: term '{}' has {} labels for an operand of rank {}", where, term, letters, rank));
  Labels l = before;
  for (int k = dots - 1; k >= 0; k--) l.push_back(EinsumEquation::kEllipsis + k);
  l.insert(l.end(), after.begin(), after.end());
  return l;
}

}  // namespace

Shape EinsumEquation::output_shape() const {
  Shape s;
  for (int l : output) s.push_back(extent.at(l));
  return s;
}

Labels EinsumEquation::all_labels() const {
  Labels all = output;
  for (const auto& [label, e] : extent)
    if (std::find(output.begin(), output.end(), label) == output.end()) all.push_back(label);
  return all;
}

std::string EinsumEquation::label_name(int label) {
  return label >= kEllipsis ? std::string("...") : std::string(1, static_cast<char>(label));
}

EinsumEquation parse_einsum(const std::string& equation, const std::vector<Shape>& shapes, const std::string& where) {
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0, q; p <= lhs.size(); p = q + 1) {
    q = std::min(lhs.find(',', p), lhs.size());
    terms.push_back(lhs.substr(p, q - p));
  }
  if (terms.size() != shapes.size())
    throw Error(fmt::format("{}: equation '{}' has {} operands, the node {}", where, equation, terms.size(), shapes.size()));
  EinsumEquation e;
  int ellipsis_rank = 0;
  std::map<int, int> uses;
  for (size_t k = 0; k < shapes.size(); k++) {
    e.operands.push_back(parse_term(terms[k], static_cast<int>(shapes[k].size()), 0, where));
    for (size_t d = 0; d < e.operands[k].size(); d++) {
      const int label = e.operands[k][d];
      const int64_t n = shapes[k][d];
      uses[label]++;
      if (label >= EinsumEquation::kEllipsis) ellipsis_rank = std::max(ellipsis_rank, label - EinsumEquation::kEllipsis + 1);
      int64_t& x = e.extent.emplace(label, n).first->second;
      if (n != 1 && x != 1 && x != n)
        throw Error(fmt::format("{}: label '{}' has extents {} and {}", where, EinsumEquation::label_name(label), x, n));
      if (x == 1) x = n;
    }
  }
  if (arrow == std::string::npos) {
    for (int k = ellipsis_rank - 1; k >= 0; k--) e.output.push_back(EinsumEquation::kEllipsis + k);
    for (const auto& [label, n] : uses)
      if (label < EinsumEquation::kEllipsis && n == 1) e.output.push_back(label);
  } else {
    e.output = parse_term(equation.substr(arrow + 2), -1, ellipsis_rank, where);
  }
  for (int label : e.output)
    if (!e.extent.count(label))
      throw Error(fmt::format("{}: output label '{}' is in no operand", where, EinsumEquation::label_name(label)));
  return e;
}

}  // namespace ts
