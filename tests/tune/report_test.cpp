// The tuning report on a real SQLite file: the page names every workload with its default and
// chosen times (a winner refuted by its re-measurement is not chosen), its noise, errors and
// tuning curve, the model's latency curve; and headless Chromium renders it.
#include "tune/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "measure/subprocess.h"
#include "measure/workload_compiler.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/tuner.h"

namespace fs = std::filesystem;

namespace ts {
namespace {

TEST(Report, ShowsEveryWorkloadAndRendersInChromium) {
  const Workload w = test::matmul_relu_workload();
  Partition part;
  part.workloads.push_back(w);
  part.workloads.back().count = 3;
  const fs::path dir = test::temp_dir() / "report";
  fs::create_directories(dir);
  RecordsDB db((dir / "records.db").string());
  const Schedule def = default_schedule_of(w), lucky = test::matmul_relu_schedule(w, 8, false);
  db.add(test::measured_record(w, def, 2e-3));
  db.add(test::measured_record(w, lucky, 1e-3));
  Record broken = test::measured_record(w, test::matmul_relu_schedule(w, 16, true), 0);
  broken.times.clear();
  broken.error_kind = "crash";
  broken.error_message = "signal 11";
  db.add(broken);
  Record d = test::measured_record(w, def, 2e-3), c = test::measured_record(w, lucky, 2.4e-3);
  d.policy = c.policy = kConfirmPolicy;
  db.add({d, c});

  ReportOptions o;
  o.model = &part;
  o.model_name = "matmul <relu>";
  const std::string html = tuning_report_html(db, o);
  EXPECT_NE(html.find("tuning report: matmul &lt;relu&gt;"), std::string::npos);
  EXPECT_NE(html.find("<code>" + w.key_hash() + "</code>"), std::string::npos);
  EXPECT_NE(html.find("<td>3</td><td>2.000</td><td>2.000</td><td>1.00x</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("1 crash"), std::string::npos);
  EXPECT_NE(html.find("defaults 6.000 ms, chosen schedules 6.000 ms"), std::string::npos);
  EXPECT_GE(std::count(html.begin(), html.end(), '<') - std::count(html.begin(), html.end(), '>'), 0);
  const size_t charts = [&] {
    size_t n = 0;
    for (size_t at = html.find("<polyline"); at != std::string::npos; at = html.find("<polyline", at + 1)) n++;
    return n;
  }();
  EXPECT_EQ(charts, 2u);  // the model's curve and the workload's

  const fs::path page = dir / "index.html";
  std::ofstream(page) << html;
  ProgramResult dom = run_program({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                                   "file://" + page.string()});
  ASSERT_TRUE(dom.ok()) << "headless Chromium (scripts/install-deps.sh installs it): " << dom.output;
  EXPECT_NE(dom.output.find("<table id=\"workloads\">"), std::string::npos) << dom.output.substr(0, 2000);
  EXPECT_NE(dom.output.find("<polyline"), std::string::npos);
  const fs::path png = dir / "page.png";
  ProgramResult shot = run_program({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,800",
                                    "--screenshot=" + png.string(), "file://" + page.string()});
  ASSERT_TRUE(shot.ok()) << shot.output;
  EXPECT_GT(fs::file_size(png), 10000u);  // a blank page compresses far below this
}

}  // namespace
}  // namespace ts
