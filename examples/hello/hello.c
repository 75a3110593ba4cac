/* hello.c: the smallest Weft program. Four ranks in this process (weftCommInitAll), driven
 * from one thread through a group, all-reduce a vector of floats in host memory.
 * Build against an installed Weft:
 *   cmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/prefix && cmake --build build
 *   cc hello.c $(pkg-config --cflags --libs weft) -o hello */
#include <stdio.h>
#include <stdlib.h>
#include <weft/weft.h>

#define NRANKS 4
#define COUNT 1024

#define CHECK(call)                                                                  \
  do {                                                                               \
    weftResult_t r_ = (call);                                                        \
    if (r_ != weftSuccess) {                                                         \
      fprintf(stderr, "%s failed: %s\n  %s\n", #call, weftGetErrorString(r_),        \
              weftGetLastError(NULL));                                               \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(void) {
  weftComm_t comms[NRANKS];
  static float send[NRANKS][COUNT], recv[NRANKS][COUNT];
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i) send[r][i] = (float)(r + 1);

  CHECK(weftCommInitAll(comms, NRANKS, NULL));
  CHECK(weftGroupStart());
  for (int r = 0; r < NRANKS; ++r)
    CHECK(weftAllReduce(send[r], recv[r], COUNT, weftFloat32, weftSum, comms[r], NULL));
  CHECK(weftGroupEnd());

  /* 1 + 2 + 3 + 4 = 10 everywhere. */
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i)
      if (recv[r][i] != 10.0f) {
        fprintf(stderr, "rank %d element %d: %g, expected 10\n", r, i, recv[r][i]);
        return 1;
      }
  int version = 0;
  weftGetVersion(&version);
  printf("hello from Weft %d: %d ranks all-reduced %d floats, every element is 10\n", version, NRANKS, COUNT);
  for (int r = 0; r < NRANKS; ++r) weftCommDestroy(comms[r]);
  return 0;
}
