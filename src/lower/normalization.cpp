#include "lower/lower.h"

namespace ts {

void register_normalization_ops(std::map<std::string, LowerFn>& r) {}

}  // namespace ts
