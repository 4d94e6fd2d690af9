#pragma once
// MpiWorld: the ranks of an `mpirun` launch (Open MPI), for work spread over several hosts: a
// data set measured per rank and merged on rank 0, or measurement batches sent to other ranks.
// Only what tensorsched needs: rank, size, host name, barrier, and byte strings sent point to
// point. Worker processes forked by a rank never call MPI (they exit with _exit).
#include <list>
#include <memory>
#include <optional>
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
  // finish(1) unless finish() was called.
  ~MpiWorld();
  // MPI_Finalize, and `exit_code` back. Open MPI's finalize waits for every rank, a dead one
  // too (`--enable-recovery` keeps the job alive past it, not its finalize): when it has not
  // returned within kFinalizeS, the process ends there with `exit_code`, its output flushed.
  int finish(int exit_code);
  static constexpr double kFinalizeS = 10;
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

  // A message taken by try_receive.
  struct Message {
    int from = -1;       // the sender's rank
    std::string bytes;
  };
  // The next message with `tag` from any rank when one has arrived; never blocks.
  std::optional<Message> try_receive(int tag) const;
  // Sends `bytes` to `to` without blocking past `seconds`: false when that rank did not take them
  // in time (it is gone or stuck; the send is abandoned, its buffer kept until the end).
  bool send_within(int to, int tag, const std::string& bytes, double seconds) const;
  // Sends without waiting at all (a heartbeat); the buffer lives until the send completes.
  void post(int to, int tag, std::string bytes) const;

 private:
  struct Pending;  // a send in flight (request and buffer)
  void reap() const;  // frees the sends that completed
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
  bool finished_ = false;
  mutable std::list<std::unique_ptr<Pending>> pending_;  // post() and abandoned send_within() sends
};

}  // namespace ts
