#include "measure/mpi_world.h"

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "graph/error.h"

#ifdef TS_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings to link
#include <mpi.h>
#endif

namespace ts {

#ifdef TS_HAVE_MPI
struct MpiWorld::Pending {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};
#else
struct MpiWorld::Pending {};
#endif

bool MpiWorld::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

#ifdef TS_HAVE_MPI

bool MpiWorld::available() { return true; }

MpiWorld::MpiWorld() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw Error("MPI_Init failed");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host_.assign(name, static_cast<size_t>(length));
}

MpiWorld::~MpiWorld() {
  if (!finished_) finish(1);
}

int MpiWorld::finish(int exit_code) {
  finished_ = true;
  reap();
  for (auto& p : pending_) MPI_Request_free(&p->request);  // a peer that is gone never takes them
  pending_.clear();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return exit_code;
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(kFinalizeS);
    while (!done && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (done) return;
    spdlog::warn("rank {}: MPI_Finalize waits for a rank that is gone; ending without it", rank_);
    std::fflush(nullptr);
    std::_Exit(exit_code);
  });
  MPI_Finalize();
  done = true;
  watchdog.join();
  return exit_code;
}

void MpiWorld::barrier() const {
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) throw Error(fmt::format("rank {}: MPI_Barrier failed", rank_));
}

void MpiWorld::send(int to, int tag, const std::string& bytes) const {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw Error(fmt::format("rank {}: a message of {} bytes to rank {} is over MPI's 2 GiB", rank_, bytes.size(), to));
  if (MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw Error(fmt::format("rank {}: MPI_Send to rank {} failed", rank_, to));
}

std::string MpiWorld::receive(int from, int tag) const {
  MPI_Status status;
  if (MPI_Probe(from, tag, MPI_COMM_WORLD, &status) != MPI_SUCCESS)
    throw Error(fmt::format("rank {}: MPI_Probe for rank {} failed", rank_, from));
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<size_t>(count), '\0');
  if (MPI_Recv(bytes.data(), count, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    throw Error(fmt::format("rank {}: MPI_Recv from rank {} failed", rank_, from));
  return bytes;
}

std::optional<MpiWorld::Message> MpiWorld::try_receive(int tag) const {
  reap();
  int arrived = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &arrived, &status) != MPI_SUCCESS)
    throw Error(fmt::format("rank {}: MPI_Iprobe failed", rank_));
  if (!arrived) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message m{status.MPI_SOURCE, std::string(static_cast<size_t>(count), '\0')};
  if (MPI_Recv(m.bytes.data(), count, MPI_BYTE, m.from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    throw Error(fmt::format("rank {}: MPI_Recv from rank {} failed", rank_, m.from));
  return m;
}

bool MpiWorld::send_within(int to, int tag, const std::string& bytes, double seconds) const {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw Error(fmt::format("rank {}: a message of {} bytes to rank {} is over MPI's 2 GiB", rank_, bytes.size(), to));
  auto p = std::make_unique<Pending>();
  p->bytes = bytes;
  if (MPI_Isend(p->bytes.data(), static_cast<int>(p->bytes.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD, &p->request) !=
      MPI_SUCCESS)
    return false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int done = 0;
    if (MPI_Test(&p->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (std::chrono::steady_clock::now() >= end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pending_.push_back(std::move(p));  // MPI may still read the buffer
  return false;
}

void MpiWorld::post(int to, int tag, std::string bytes) const {
  reap();
  auto p = std::make_unique<Pending>();
  p->bytes = std::move(bytes);
  if (MPI_Isend(p->bytes.data(), static_cast<int>(p->bytes.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD, &p->request) ==
      MPI_SUCCESS)
    pending_.push_back(std::move(p));
}

void MpiWorld::reap() const {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    if (MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) it = pending_.erase(it);
    else ++it;
  }
}

#else

bool MpiWorld::available() { return false; }
MpiWorld::MpiWorld() { throw Error("this tensorsched was built without MPI (install libopenmpi-dev and rebuild)"); }
MpiWorld::~MpiWorld() = default;
int MpiWorld::finish(int exit_code) { return exit_code; }
void MpiWorld::barrier() const {}
void MpiWorld::send(int, int, const std::string&) const {}
std::string MpiWorld::receive(int, int) const { return ""; }
std::optional<MpiWorld::Message> MpiWorld::try_receive(int) const { return std::nullopt; }
bool MpiWorld::send_within(int, int, const std::string&, double) const { return false; }
void MpiWorld::post(int, int, std::string) const {}
void MpiWorld::reap() const {}

#endif

}  // namespace ts
