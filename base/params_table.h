// The parameter table: every WEFT_* environment variable Weft reads, declared once.
// WEFT_PARAM(type, Name, "ENV_SUFFIX", default, "one-line help")
// Read one with weft::params::Name(); `weft-topo --params` prints this table.
// WEFT_PARAM_RANGE(Name, lo, hi): an integer parameter's allowed values; a value outside is
// warned about (once per value) and the nearest allowed value used.
// (No include guard: params.h and params.cc include this file with different definitions.)
#ifndef WEFT_PARAM_RANGE
#define WEFT_PARAM_RANGE(name, lo, hi)
#define WEFT_PARAM_RANGE_UNSET_
#endif

// Time-outs and errors
WEFT_PARAM(int64_t, TimeoutS, "TIMEOUT_S", 1800, "seconds any wait may take before the communicator fails with weftTimeout")
WEFT_PARAM(int64_t, HeartbeatTimeoutS, "HEARTBEAT_TIMEOUT_S", 3, "seconds a peer's heartbeat may stand still while this rank waits for it before the call fails naming that rank as stopped or hung (not merely slow: a busy rank keeps beating)")
WEFT_PARAM_RANGE(HeartbeatTimeoutS, 1, 86400)
WEFT_PARAM(int64_t, RecorderCalls, "RECORDER_CALLS", 1024, "calls each communicator keeps in its flight recorder, a /dev/shm segment (weft-rec-<pid>-<comm>-<rank>) that weft-inspect reads from outside the process; 0 turns the recorder off")
WEFT_PARAM_RANGE(RecorderCalls, 0, 1048576)
WEFT_PARAM(std::string, RecorderDir, "RECORDER_DIR", "", "directory (a shared file system) where every rank writes its flight recorder, as weft-rec-<host>-<pid>-<comm>-<rank>.bin, on a time-out, a dead or silent peer, the dump signal, or weftCommDumpRecorder (default: none, no dumps)")
WEFT_PARAM(std::string, RecorderSignal, "RECORDER_SIGNAL", "SIGUSR2", "with WEFT_RECORDER_DIR: the signal (a number or a name such as SIGUSR1) on which every communicator of the process dumps its flight recorder; installed only where the signal has its default action; 0 or NONE: no signal")
WEFT_PARAM(std::string, RecorderFrontEnd, "RECORDER_FRONT_END", "weft", "who made the communicators, as the flight recorder tells weft-inspect: weft, nccl, torch or weft-perf (the bindings and weft-perf set it)")
WEFT_PARAM(int64_t, InitReportS, "INIT_REPORT_S", 3, "seconds a rank waits in communicator init (for the root, for the other ranks to join) before it logs a warning naming the ranks that have not joined; later warnings at twice the time waited, at most 60 s apart (0: never)")
WEFT_PARAM_RANGE(InitReportS, 0, 3600)
WEFT_PARAM(bool, CheckCalls, "CHECK_CALLS", true, "0: do not check the call stamp every message carries (a rank whose peers made another call may then hang or return wrong data instead of failing at once with both calls named); for measuring what the checks cost")
WEFT_PARAM(bool, CheckSends, "CHECK_SENDS", false, "1 (with WEFT_CHECK_CALLS): a send on host buffers returns only once its receiver took the message, so that a receive of another size fails both ranks (0: the receiver alone fails; the sender may have returned success); costs every send a wait for its receiver")

// Logging
WEFT_PARAM(std::string, Debug, "DEBUG", "WARN", "log level: NONE, WARN, INFO or TRACE")
WEFT_PARAM(std::string, DebugSubsys, "DEBUG_SUBSYS", "ALL", "subsystems to log, comma-separated (INIT,COLL,P2P,SHM,NET,BOOT,TUNING,ENV,GRAPH,ALL); ^NAME excludes")
WEFT_PARAM(std::string, DebugFile, "DEBUG_FILE", "", "write log lines to this file instead of stderr; %h = host, %p = pid")

// Timelines (src/core/trace.h)
WEFT_PARAM(std::string, TraceFile, "TRACE_FILE", "", "each rank writes a timeline of its calls here (Chrome trace-event JSON, for Perfetto or chrome://tracing) when its communicator is destroyed or the process exits; %r = rank, %h = host, %p = pid (a name without %r gets .rank<R> appended where several ranks would share it); empty: no timeline, no cost")
WEFT_PARAM(int64_t, TraceLevel, "TRACE_LEVEL", 1, "with WEFT_TRACE_FILE: 1 = one event per call (kind, bytes, algorithm, result); 2 = also every step of the host executor (send, receive or reduce, with which peer and how many bytes) and every wait")
WEFT_PARAM_RANGE(TraceLevel, 1, 2)
WEFT_PARAM(int64_t, TraceEvents, "TRACE_EVENTS", 1000000, "with WEFT_TRACE_FILE: events kept in memory per communicator (about 64 bytes each); later ones are dropped and counted in the file's otherData")
WEFT_PARAM_RANGE(TraceEvents, 16, 100000000)

// Bootstrap and launch
WEFT_PARAM(std::string, SocketIfname, "SOCKET_IFNAME", "", "interfaces for the bootstrap, and for the socket and libfabric transports where the topology names no usable NIC for a rank: prefixes, comma-separated; ^ excludes, = matches exactly (default: first up non-loopback, else lo)")
WEFT_PARAM(int64_t, Rank, "RANK", -1, "this process's rank, for weftCommInitFromEnv")
WEFT_PARAM(int64_t, NRanks, "NRANKS", -1, "number of ranks, for weftCommInitFromEnv")
WEFT_PARAM(std::string, RootAddr, "ROOT_ADDR", "", "host:port where rank 0 listens, for weftCommInitFromEnv")
WEFT_PARAM(std::string, RootSecret, "ROOT_SECRET", "", "32 hex digits all ranks share, for weftCommInitFromEnv")
WEFT_PARAM(std::string, HostId, "HOSTID", "", "names this rank's host: ranks with the same name share memory (default: hostname, boot id and network namespace)")

// Algorithms and channels
WEFT_PARAM(std::string, HostSimd, "HOST_SIMD", "", "host reduce kernels for half, bfloat16 and fp8: scalar (element by element), portable, avx2-f16c, avx512, avx512-bf16, avx512-vbmi or avx512-fp16 (default: the best this CPU runs; one it cannot run is warned about and the best used)")
WEFT_PARAM(std::string, Algo, "ALGO", "", "algorithm: Ring, Tree, Pairwise or Doubling, for every collective that has it (default: the tuner's, from the cost model)")
WEFT_PARAM(int64_t, DoublingMaxBytes, "DOUBLING_MAX_BYTES", 8192, "largest all-reduce (bytes) for which the size rule picks recursive doubling")
WEFT_PARAM_RANGE(DoublingMaxBytes, 0, INT64_MAX)
WEFT_PARAM(int64_t, TreeMaxBytes, "TREE_MAX_BYTES", 65536, "largest all-reduce (bytes) for which the size rule picks the tree")
WEFT_PARAM_RANGE(TreeMaxBytes, 0, INT64_MAX)
WEFT_PARAM(int64_t, MinNChannels, "MIN_NCHANNELS", 1, "fewest channels (parallel rings/trees) a collective uses")
WEFT_PARAM_RANGE(MinNChannels, 1, 32)
WEFT_PARAM(int64_t, MaxNChannels, "MAX_NCHANNELS", 4, "most channels (parallel rings/trees) a collective uses")
WEFT_PARAM_RANGE(MaxNChannels, 1, 32)
WEFT_PARAM(int64_t, DeviceMaxNChannels, "DEVICE_MAX_NCHANNELS", 32, "most channels a collective on device buffers uses: one per 32 KiB of a rank's part of the data, never fewer than the tuner's, within the rank's share of the GPU's resident blocks")
WEFT_PARAM_RANGE(DeviceMaxNChannels, 1, 32)
WEFT_PARAM(int64_t, DeviceLLMaxBytes, "DEVICE_LL_MAX_BYTES", 16384, "largest message (bytes of one step of one channel) a collective or send on device buffers sends with the low-latency protocol (data and flag in every 8-byte line: no separate counter or fence, half the bandwidth) between GPUs that write each other's memory; 0: never")
WEFT_PARAM_RANGE(DeviceLLMaxBytes, 0, 1048576)

// Transports
WEFT_PARAM(bool, ShmDisable, "SHM_DISABLE", false, "1: never use the shared-memory transport")
WEFT_PARAM(bool, ShmNearPages, "SHM_NEAR_PAGES", true, "1: the receiver of a shared-memory FIFO re-draws the pages that answer slowly (memory on a host NUMA node a VM hides) and keeps its control lines on the nearest; 0: the pages as the kernel gives them")
WEFT_PARAM(bool, P2pDisable, "P2P_DISABLE", false, "1: never let GPUs write each other's memory (device buffers are then staged through pinned host memory over shared memory or the network)")
WEFT_PARAM(bool, SingleCopy, "SINGLE_COPY", true, "0: never let a rank read a peer's buffers directly; always copy through shared memory")
WEFT_PARAM(bool, ZeroCopy, "ZERO_COPY", true, "0: collectives on registered host buffers (weftMemAlloc + weftCommRegister) still copy through the FIFOs instead of reading and writing the peers' buffers directly")
WEFT_PARAM(int64_t, ZeroCopyMinBytes, "ZERO_COPY_MIN_BYTES", 262144, "smallest collective (bytes of its larger buffer) that runs zero-copy on registered host buffers; smaller ones copy through the FIFOs")
WEFT_PARAM_RANGE(ZeroCopyMinBytes, 1, 1LL << 40)
WEFT_PARAM(bool, ZeroCopyStage, "ZERO_COPY_STAGE", false, "1: an all-reduce on buffers this rank did not register still runs zero-copy when the others can: this rank copies the blocks its peers work on into shared memory it lends them, and the results back (off by default: slower than the FIFOs on the VM measured, perf/RESULTS.md)")
WEFT_PARAM(bool, CrossMemoryAttach, "CMA", false, "1: ranks in different processes read each other's buffers with process_vm_readv (single-copy across processes; off by default: slower than two copies at slot size on the machines measured)")
WEFT_PARAM(int64_t, StreamStoreBytes, "STREAM_STORE_BYTES", 8388608, "host collectives write the receive buffer (copies and reductions, out of place) with non-temporal (cache-bypassing) stores when the step's region there is at least this many bytes (a 2-rank all-reduce of 16 MiB and up by default; a zero-copy all-reduce on registered buffers, when each rank's block is that large); 0: never")
WEFT_PARAM_RANGE(StreamStoreBytes, 0, INT64_MAX)
WEFT_PARAM(std::string, SlotStores, "SLOT_STORES", "auto", "how host collectives write the FIFO slots a peer reads (steps of 64 KiB and up): cached (normal stores), streaming (non-temporal stores: the lines go to memory; faster between cores that share no cache) or auto (each thread measures both as it runs and uses the faster)")
WEFT_PARAM(int64_t, Buffsize, "BUFFSIZE", 1048576, "bytes of each connection's FIFO (split into WEFT_NSLOTS slots)")
WEFT_PARAM_RANGE(Buffsize, 4096, 1LL << 30)
WEFT_PARAM(int64_t, NSlots, "NSLOTS", 4, "slots in each connection's FIFO")
WEFT_PARAM_RANGE(NSlots, 2, 64)
WEFT_PARAM(std::string, Net, "NET", "auto", "network transport between hosts: socket, ofi (libfabric) or auto (ofi when libfabric has a hardware provider, else socket); socket-plugin and ofi-plugin run the same code through its net_v1.h table and the generic plugin transport")
WEFT_PARAM(std::string, GpuBackend, "GPU_BACKEND", "auto", "GPU module to load: auto (libweft-cuda.so, then libweft-hip.so), cuda, hip, none, or emulated (for testing: host memory posing as one GPU)")
WEFT_PARAM(int64_t, EmulatedDevices, "EMULATED_DEVICES", 1, "GPUs the emulated backend (WEFT_GPU_BACKEND=emulated) poses as, 1..8, all in host memory; for tests of device choice")
WEFT_PARAM(std::string, NetPlugin, "NET_PLUGIN", "", "network plugin library (include/weft/net_v1.h, symbol weftNetPlugin_v1) that carries traffic between hosts instead of the built-in transports, e.g. /opt/vendor/libweft-net-foo.so")
WEFT_PARAM_RANGE(EmulatedDevices, 1, 8)
WEFT_PARAM(int64_t, EmulatedFirstBus, "EMULATED_FIRST_BUS", 0, "PCI bus number the emulated backend's device 0 reports (device i: this + i), 0..247: processes given different values pose as processes with different CUDA_VISIBLE_DEVICES; for tests of GPU identity")
WEFT_PARAM_RANGE(EmulatedFirstBus, 0, 247)
WEFT_PARAM(int64_t, EmulatedSms, "EMULATED_SMS", 0, "SMs each emulated GPU has (0: four per CPU); with WEFT_EMULATED_BLOCKS_PER_SM, how many lane blocks it runs at once: the rest wait, as on a GPU, until a running one ends")
WEFT_PARAM_RANGE(EmulatedSms, 0, 1024)
WEFT_PARAM(int64_t, EmulatedBlocksPerSm, "EMULATED_BLOCKS_PER_SM", 2, "lane blocks one emulated SM holds resident at once (what the occupancy query answers for the emulated GPU)")
WEFT_PARAM_RANGE(EmulatedBlocksPerSm, 1, 64)
WEFT_PARAM(std::string, OfiProvider, "OFI_PROVIDER", "", "libfabric provider for WEFT_NET=ofi (and ofi-plugin), e.g. tcp;ofi_rxm, shm, verbs;ofi_rxm, efa (default: the best available)")

// Topology
WEFT_PARAM(std::string, TopoFile, "TOPO_FILE", "", "NCCL/RCCL topology file (XML) describing this host: its GPUs, NICs and CPUs replace or complete what detection finds, as NCCL_TOPO_FILE does; a file that does not load fails init naming it")
WEFT_PARAM(std::string, TopoDumpFile, "TOPO_DUMP_FILE", "", "rank 0 writes the system the communicator built here, in the format WEFT_TOPO_FILE reads (other hosts of a multi-host communicator go to FILE.host1, FILE.host2, ...)")
WEFT_PARAM(std::string, P2pLevel, "P2P_LEVEL", "", "farthest path over which GPUs use peer access, NCCL's levels: LOC, NVL, PIX, PXB, PHB, SYS (or 0..5); beyond it device FIFOs are staged through host memory (default: PXB on Intel and ARM CPUs, SYS elsewhere)")

#ifdef WEFT_PARAM_RANGE_UNSET_
#undef WEFT_PARAM_RANGE
#undef WEFT_PARAM_RANGE_UNSET_
#endif
