#include "measure/time_stats.h"

#include <algorithm>

namespace ts {

TimeStats time_stats(const std::vector<double>& times) {
  TimeStats st;
  if (times.empty()) return st;
  std::vector<double> s = times;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  st.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  st.min = s.front();
  double mean = 0;
  for (double t : s) mean += t / static_cast<double>(n);
  st.noise = mean > 0 ? (s.back() - s.front()) / mean : 0;
  auto quantile = [&](double q) {  // linear interpolation between order statistics
    const double at = q * static_cast<double>(n - 1);
    const size_t lo = static_cast<size_t>(at);
    return lo + 1 < n ? s[lo] + (at - static_cast<double>(lo)) * (s[lo + 1] - s[lo]) : s[lo];
  };
  st.spread = st.median > 0 ? (quantile(0.75) - quantile(0.25)) / st.median : 0;
  return st;
}

}  // namespace ts
