/* A C program using nccl.h (NVIDIA's where installed), linked with Weft's libnccl.so.2: one
 * thread drives three ranks through groups on host buffers. Exit status 0 when every result is
 * exact; a message on stderr otherwise. */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define NRANKS 3
#define CHECK(call)                                                                               \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                      \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(NULL));                                                            \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

int main(void) {
  ncclUniqueId id;
  ncclComm_t comms[NRANKS];
  float in[NRANKS][4], out[NRANKS][4];
  int version = 0, r, i;

  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "ncclGetVersion says %d, the header %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  CHECK(ncclGetUniqueId(&id));
  CHECK(ncclGroupStart());
  for (r = 0; r < NRANKS; ++r) CHECK(ncclCommInitRank(&comms[r], NRANKS, id, r));
  CHECK(ncclGroupEnd());

  CHECK(ncclGroupStart());
  for (r = 0; r < NRANKS; ++r) {
    for (i = 0; i < 4; ++i) in[r][i] = (float)(r * 4 + i);
    CHECK(ncclAllReduce(in[r], out[r], 4, ncclFloat, ncclSum, comms[r], NULL));
  }
  CHECK(ncclGroupEnd());
  for (r = 0; r < NRANKS; ++r) {
    for (i = 0; i < 4; ++i) {
      if (out[r][i] != (float)(12 + 3 * i)) {
        fprintf(stderr, "rank %d: out[%d] = %g, expected %d\n", r, i, out[r][i], 12 + 3 * i);
        return 1;
      }
    }
  }

  /* A bad argument: ncclInvalidArgument, and Weft's sentence in ncclGetLastError. */
  if (ncclAllReduce(in[0], out[0], 4, (ncclDataType_t)42, ncclSum, comms[0], NULL) != ncclInvalidArgument ||
      strstr(ncclGetLastError(NULL), "datatype 42") == NULL) {
    fprintf(stderr, "a bad datatype was not reported as expected: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  for (r = 0; r < NRANKS; ++r) CHECK(ncclCommDestroy(comms[r]));
  printf("ok: %d ranks, NCCL API %d on Weft\n", NRANKS, version);
  return 0;
}
