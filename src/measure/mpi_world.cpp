#include "measure/mpi_world.h"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>

#include "graph/error.h"

#ifdef TS_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings to link
#include <mpi.h>
#endif

namespace ts {

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
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
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

#else

bool MpiWorld::available() { return false; }
MpiWorld::MpiWorld() { throw Error("this tensorsched was built without MPI (install libopenmpi-dev and rebuild)"); }
MpiWorld::~MpiWorld() = default;
void MpiWorld::barrier() const {}
void MpiWorld::send(int, int, const std::string&) const {}
std::string MpiWorld::receive(int, int) const { return ""; }

#endif

}  // namespace ts
