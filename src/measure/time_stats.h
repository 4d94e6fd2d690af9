#pragma once
// Statistics of repeated timings, shared by the Measurer, the RecordsDB and the tuner's
// end-to-end comparison (the value-learning paper's noise measure: (max - min) / mean).
#include <chrono>
#include <vector>

namespace ts {

struct TimeStats {
  double median = 0;  // median (mean of the middle two for an even count)
  double min = 0;     // fastest
  double noise = 0;   // (max - min) / mean
  double spread = 0;  // (third quartile - first quartile) / median: unlike noise, one outlier does not move it
};

// All zero for an empty list.
TimeStats time_stats(const std::vector<double>& times);

// Seconds from `t0` to now.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ts
