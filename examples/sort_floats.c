/*
 * sort_floats: sorts a large binary file of 32-bit floats in place.
 *
 *   sort_floats FILE [--desc] [--cpu|--cuda] [--device]
 *
 * The file is mapped into memory and sorted where it lies (IEEE-754
 * totalOrder: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN), then
 * written back by the kernel. With --device (a CUDA build with a GPU) the
 * floats are first copied to device memory and sorted there: the same
 * tdm_sort call takes host or device arrays.
 * Make a test file with: sort_floats --make FILE N
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

#ifdef TANDEM_EXAMPLE_CUDA
#include <cuda_runtime_api.h>
#endif

static int make_file(const char *path, size_t n) {
  FILE *f = fopen(path, "wb");
  uint64_t x = 88172645463325252ull;
  size_t i;
  if (!f) {
    perror(path);
    return 1;
  }
  for (i = 0; i < n; i++) {
    float v;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = (float)((double)(int64_t)x / 9.2e15);
    fwrite(&v, sizeof v, 1, f);
  }
  return fclose(f) != 0;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  unsigned flags = 0;
  int device = 0, fd, i;
  tdm_ctx_opts opts = {TDM_BACKEND_AUTO, 0, 0, NULL, 0, NULL};
  tdm_ctx *ctx;
  struct stat st;
  float *data;
  void *sort_ptr;
  size_t n;
  tdm_status s;
  double t0;

  if (argc == 4 && strcmp(argv[1], "--make") == 0) return make_file(argv[2], strtoull(argv[3], NULL, 10));
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--desc") == 0) flags |= TDM_SORT_DESCENDING;
    else if (strcmp(argv[i], "--cpu") == 0) opts.backend = TDM_BACKEND_CPU;
    else if (strcmp(argv[i], "--cuda") == 0) opts.backend = TDM_BACKEND_CUDA;
    else if (strcmp(argv[i], "--device") == 0) device = 1;
    else path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: %s FILE [--desc] [--cpu|--cuda] [--device]\n       %s --make FILE N\n", argv[0],
            argv[0]);
    return 2;
  }
  fd = open(path, O_RDWR);
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(path);
    return 1;
  }
  n = (size_t)st.st_size / sizeof(float);
  if (n == 0) return 0;
  data = (float *)mmap(NULL, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  if (tdm_ctx_create(&opts, &ctx) != TDM_OK) {
    fprintf(stderr, "context: %s\n", tdm_last_error());
    return 1;
  }
  sort_ptr = data;
#ifdef TANDEM_EXAMPLE_CUDA
  if (device && tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA) {
    if (cudaMalloc(&sort_ptr, n * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(sort_ptr, data, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
      fprintf(stderr, "could not stage the file on the device\n");
      return 1;
    }
  }
#else
  if (device) fprintf(stderr, "--device needs a CUDA build of this example; sorting in host memory\n");
#endif
  t0 = seconds();
  s = tdm_sort(ctx, TDM_F32, sort_ptr, n, flags);
  if (s != TDM_OK) {
    fprintf(stderr, "tdm_sort: %s: %s\n", tdm_status_name(s), tdm_last_error());
    return 1;
  }
  printf("sorted %zu floats in %.3f s on the %s (%.1f M/s)\n", n, seconds() - t0,
         tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA ? "GPU" : "CPU", (double)n / (seconds() - t0) / 1e6);
#ifdef TANDEM_EXAMPLE_CUDA
  if (sort_ptr != data) {
    cudaMemcpy(data, sort_ptr, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(sort_ptr);
  }
#endif
  printf("first %g, last %g\n", (double)data[0], (double)data[n - 1]);
  tdm_ctx_destroy(ctx);
  munmap(data, n * sizeof(float));
  close(fd);
  return 0;
}
