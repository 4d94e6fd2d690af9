#include "graph/einsum_equation.h"

#include <gtest/gtest.h>

#include "graph/error.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

TEST(EinsumEquation, ExplicitImplicitAndEllipsisOutputs) {
  EXPECT_EQ(parse_einsum("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, "t").output_shape(), (Shape{2, 3, 5}));
  // Implicit: the single-use letters in alphabetical order.
  EXPECT_EQ(parse_einsum("ji,jk", {{4, 3}, {4, 5}}, "t").output_shape(), (Shape{3, 5}));
  // The ellipsis axes broadcast right-aligned and lead an implicit output.
  const EinsumEquation e = parse_einsum("...ij,...jk", {{1, 2, 3}, {6, 7, 3, 2}}, "t");
  EXPECT_EQ(e.output_shape(), (Shape{6, 7, 2, 2}));
  EXPECT_EQ(e.operands[0].size(), 3u);
  EXPECT_EQ(e.all_labels().back(), 'j');
  EXPECT_EQ(parse_einsum("ii->", {{3, 3}}, "t").output_shape(), Shape{});
}

TEST(EinsumEquation, MalformedEquationsNameWhere) {
  EXPECT_THROW(parse_einsum("ij,jk->ik", {{2, 3}}, "node 'e'"), Error);
  EXPECT_THROW(parse_einsum("ijk->i", {{2, 3}}, "node 'e'"), Error);
  EXPECT_THROW(parse_einsum("ij->z", {{2, 3}}, "node 'e'"), Error);
  EXPECT_TRUE(test::throws_naming<Error>([&] { parse_einsum("i..j->i", {{2, 3}}, "node 'e'"); }, {"node 'e': bad ellipsis"}));
}

}  // namespace
}  // namespace ts
