/* Runs a model compiled by `tensorsched compile` through its C API.
 *
 *   cc run_model.c -I ART -L ART -lmodel -Wl,-rpath,ART -o run_model      (shared library)
 *   cc run_model.c -I ART ART/libmodel.a -lstdc++ -lm -lpthread -ldl -o run_model   (static)
 *   ./run_model [--threads N] INPUT.npy... [--expect OUTPUT.npy...]
 *
 * Prints the model's inputs and outputs, runs it once on the given .npy inputs (float32, int64,
 * ... as the model declares, C order) and, with --expect, compares every output with the given
 * .npy reference: it passes when max |got - want| <= 1e-3 * max |want| (float32 outputs).
 * Exit status: 0 pass, 1 mismatch, 2 usage or I/O error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorsched_model.h"

/* Reads the data of a .npy file into a new buffer of `want_bytes`; NULL (with a message) when
 * the file is not a .npy of exactly that many data bytes. */
static void* read_npy(const char* path, size_t want_bytes) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return NULL;
  }
  unsigned char pre[12];
  size_t header_len = 0, at = 0;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not a .npy file\n", path);
    fclose(f);
    return NULL;
  }
  if (pre[6] == 1) {
    header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    at = 10;
  } else {
    if (fread(pre + 10, 1, 2, f) != 2) header_len = 0;
    header_len = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    at = 12;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  size_t data_bytes = size > 0 && (size_t)size >= at + header_len ? (size_t)size - at - header_len : 0;
  if (data_bytes != want_bytes) {
    fprintf(stderr, "%s: %zu data bytes, the model expects %zu\n", path, data_bytes, want_bytes);
    fclose(f);
    return NULL;
  }
  void* data = malloc(want_bytes ? want_bytes : 1);
  fseek(f, (long)(at + header_len), SEEK_SET);
  if (fread(data, 1, want_bytes, f) != want_bytes) {
    fprintf(stderr, "%s: short read\n", path);
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

static void print_io(const ts_model* m, ts_io io) {
  for (int i = 0; i < ts_model_count(m, io); i++) {
    printf("%s %d '%s' %s [", io == TS_INPUT ? "input" : "output", i, ts_model_name(m, io, i), ts_model_dtype(m, io, i));
    for (int d = 0; d < ts_model_rank(m, io, i); d++) printf("%s%lld", d ? "," : "", (long long)ts_model_shape(m, io, i)[d]);
    printf("]\n");
  }
}

int main(int argc, char** argv) {
  int threads = 0, expecting = 0, n_in = 0, n_expect = 0;
  const char* in_files[64];
  const char* expect_files[64];
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc) threads = atoi(argv[++a]);
    else if (strcmp(argv[a], "--expect") == 0) expecting = 1;
    else if (expecting && n_expect < 64) expect_files[n_expect++] = argv[a];
    else if (!expecting && n_in < 64) in_files[n_in++] = argv[a];
  }
  printf("%s\n", ts_model_version());
  ts_model* m = ts_model_create(NULL);
  if (!m) {
    fprintf(stderr, "ts_model_create: %s\n", ts_model_last_error());
    return 2;
  }
  print_io(m, TS_INPUT);
  print_io(m, TS_OUTPUT);
  const int ni = ts_model_count(m, TS_INPUT), no = ts_model_count(m, TS_OUTPUT);
  if (n_in != ni || (n_expect && n_expect != no)) {
    fprintf(stderr, "usage: %s [--threads N] INPUT.npy x%d [--expect OUTPUT.npy x%d]\n", argv[0], ni, no);
    ts_model_destroy(m);
    return 2;
  }
  if (threads > 0) ts_model_set_threads(threads);
  const void* inputs[64];
  void* outputs[64];
  int status = 0;
  for (int i = 0; i < ni; i++)
    if (!(inputs[i] = read_npy(in_files[i], ts_model_bytes(m, TS_INPUT, i)))) status = 2;
  for (int o = 0; o < no; o++) outputs[o] = malloc(ts_model_bytes(m, TS_OUTPUT, o) + 1);
  if (status == 0 && ts_model_run(m, inputs, outputs) != 0) {
    fprintf(stderr, "ts_model_run: %s\n", ts_model_last_error());
    status = 2;
  }
  for (int o = 0; status == 0 && o < n_expect; o++) {
    if (strcmp(ts_model_dtype(m, TS_OUTPUT, o), "float32") != 0) continue;
    const size_t n = ts_model_bytes(m, TS_OUTPUT, o) / sizeof(float);
    float* want = read_npy(expect_files[o], n * sizeof(float));
    if (!want) {
      status = 2;
      break;
    }
    const float* got = outputs[o];
    double err = 0, ref = 0;
    for (size_t k = 0; k < n; k++) {
      double d = fabs((double)got[k] - want[k]);
      err = d > err || isnan(d) ? d : err;
      ref = fabs(want[k]) > ref ? fabs(want[k]) : ref;
    }
    const int ok = err <= 1e-3 * ref;
    printf("output %d: %s (max abs error %.3g, max |reference| %.3g)\n", o, ok ? "ok" : "MISMATCH", err, ref);
    if (!ok) status = 1;
    free(want);
  }
  for (int i = 0; i < ni; i++) free((void*)inputs[i]);
  for (int o = 0; o < no; o++) free(outputs[o]);
  ts_model_destroy(m);
  return status;
}
