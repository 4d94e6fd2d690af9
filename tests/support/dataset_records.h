#pragma once
// Data set records of a real workload for the dataset tests: the default, a 4x faster uniform
// draw, a timeout, a held-out draw, and a tuning record that is not the data set's.
#include "graph/workload.h"
#include "tune/records_db.h"

namespace ts::test {

void fill_dataset_records(RecordsDB& db, const Workload& w);

}  // namespace ts::test
