/* Linked like a PyTorch wheel: libnccl.so.2 through a DT_RPATH (here to a decoy). Exit 0 when
 * the ncclGetVersion that runs is Weft's (23203), 3 when it is the decoy's. */
#include <stdio.h>

int ncclGetVersion(int* version);

int main(void) {
  int version = 0;
  ncclGetVersion(&version);
  printf("ncclGetVersion: %d\n", version);
  return version == 23203 ? 0 : 3;
}
