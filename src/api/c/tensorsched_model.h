/* tensorsched_model.h: the C API of a model compiled by `tensorsched compile`.
 *
 * The artifact's shared library (lib<name>.so) holds the model's code, its packed weights and
 * its own Halide runtime; it needs only libc, libstdc++, libm and pthreads. Typical use:
 *
 *   ts_model* m = ts_model_create(NULL);             // NULL: the weights inside the library
 *   if (!m) { fprintf(stderr, "%s\n", ts_model_last_error()); return 1; }
 *   const void* in[1] = {image};                     // dense, row-major, shape ts_model_shape(m, TS_INPUT, 0)
 *   void* out[1] = {logits};                         // ts_model_bytes(m, TS_OUTPUT, 0) bytes
 *   if (ts_model_run(m, in, out) != 0) fprintf(stderr, "%s\n", ts_model_last_error());
 *   ts_model_destroy(m);
 *
 * A model object is not safe to run from two threads at once (its activations are its own);
 * create one per thread instead. Every function that can fail returns NULL or a negative value
 * and sets ts_model_last_error() (per thread).
 */
#ifndef TENSORSCHED_MODEL_H
#define TENSORSCHED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_model ts_model;

/* Which side of the model a query is about. */
typedef enum ts_io { TS_INPUT = 0, TS_OUTPUT = 1 } ts_io;

/* Creates a model. `constants_path` NULL uses the weights compiled into the library; else a
 * file with the same layout (the artifact's constants.bin) replaces them. */
ts_model* ts_model_create(const char* constants_path);
void ts_model_destroy(ts_model* model);

/* Why the last call on this thread failed ("" when none did). */
const char* ts_model_last_error(void);

/* Inputs and outputs, in the ONNX model's order. Shapes are outermost first (ONNX order). */
int ts_model_count(const ts_model* model, ts_io io);
const char* ts_model_name(const ts_model* model, ts_io io, int index);
int ts_model_rank(const ts_model* model, ts_io io, int index);
const int64_t* ts_model_shape(const ts_model* model, ts_io io, int index);
/* "float32", "float64", "int8", "int16", "int32", "int64", "uint8", ..., "bool". */
const char* ts_model_dtype(const ts_model* model, ts_io io, int index);
size_t ts_model_bytes(const ts_model* model, ts_io io, int index);

/* Threads the library's code may use (<= 0: one per core). Applies to every model of this
 * library in the process. Returns 0. */
int ts_model_set_threads(int threads);

/* One inference: inputs[i] points at input i (dense, ts_model_bytes bytes), outputs[i] at
 * storage for output i. Returns 0, or -1 with ts_model_last_error() naming the step. */
int ts_model_run(ts_model* model, const void* const* inputs, void* const* outputs);

/* The tensorsched version and code generator hash the library was compiled by. */
const char* ts_model_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORSCHED_MODEL_H */
