/* A stand-in for the libnccl.so.2 a framework ships (same SONAME, not Weft's), for the test that
 * LD_PRELOAD puts Weft's library in front of one found through DT_RPATH. */
int ncclGetVersion(int* version) {
  *version = 1;
  return 0;
}
