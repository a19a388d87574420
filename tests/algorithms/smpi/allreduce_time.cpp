// Times one MPI_Allreduce of BYTES bytes under smpirun and prints, on rank 0, the simulated seconds
// from the first rank's entry to the last rank's exit. Built with smpicxx; SMPI's collective of the
// chosen algorithm (--cfg=smpi/allreduce:...) is the independent peer aggsim's all-reduces are
// compared with. Timing only: the buffers are SMPI shared memory and the reduction operator is a
// commutative no-op, so neither host memory nor the real summation slows the run, and no
// computation is charged to simulated time.
// Usage: smpirun ... allreduce_time BYTES
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace {
void skip_reduction(void*, void*, int*, MPI_Datatype*) {}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long bytes = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int count = static_cast<int>(bytes / 4);
  auto* in = static_cast<float*>(SMPI_SHARED_MALLOC(static_cast<std::size_t>(bytes)));
  auto* out = static_cast<float*>(SMPI_SHARED_MALLOC(static_cast<std::size_t>(bytes)));
  MPI_Op noop;
  MPI_Op_create(&skip_reduction, 1, &noop);

  // No barrier before: every rank enters at simulated time 0, as every aggsim rank does (a barrier
  // releases ranks at different times). The reduction of the timings comes after the measurement.
  const double t0 = MPI_Wtime();
  MPI_Allreduce(in, out, count, MPI_FLOAT, noop, MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  double span[2] = {-t0, t1}, worst[2] = {0, 0};
  MPI_Reduce(span, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%.12e\n", worst[1] + worst[0]);

  MPI_Op_free(&noop);
  SMPI_SHARED_FREE(out);
  SMPI_SHARED_FREE(in);
  MPI_Finalize();
  return 0;
}
