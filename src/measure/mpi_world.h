#pragma once
// MpiWorld: the ranks of an `mpirun` launch (Open MPI), for work spread over several hosts: a
// data set measured per rank and merged on rank 0, or measurement batches sent to other ranks.
// Only what tensorsched needs: rank, size, host name, barrier, and byte strings sent point to
// point. Worker processes forked by a rank never call MPI (they exit with _exit).
#include <memory>
#include <string>

namespace ts {

class MpiWorld {
 public:
  // Whether this process was started by mpirun (Open MPI's environment says so).
  static bool launched_by_mpirun();
  // Whether this build has MPI at all.
  static bool available();
  // MPI_Init (once per process). Throws Error when this build has no MPI.
  MpiWorld();
  // MPI_Finalize.
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's host (MPI_Get_processor_name).
  const std::string& host() const { return host_; }
  void barrier() const;
  // Sends `bytes` to rank `to` with `tag` (blocking). Throws Error past 2 GiB.
  void send(int to, int tag, const std::string& bytes) const;
  // Receives the next message from rank `from` with `tag` (blocking).
  std::string receive(int from, int tag) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
};

}  // namespace ts
