// weft-perf's command line: every nccl-tests flag, long forms, size suffixes, the collective
// choice (positional, -x, program name) and the errors that must exit 2.
#include "perf/options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace weft::perf {
namespace {

// Parses a command line given as words (argv[0] = "weft-perf").
ParseResult parse(std::initializer_list<const char*> words, Options* o) {
  std::vector<const char*> argv = {"weft-perf"};
  argv.insert(argv.end(), words.begin(), words.end());
  return parseOptions(static_cast<int>(argv.size()), argv.data(), o);
}

TEST(PerfOptions, DefaultsMatchNcclTests) {
  Options o;
  ASSERT_TRUE(parse({}, &o).ok);
  EXPECT_EQ(o.coll, Collective::kAllReduce);
  EXPECT_EQ(o.nThreads, 1);
  EXPECT_EQ(o.nGpus, 1);
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 5);
  EXPECT_EQ(o.aggIters, 1);
  EXPECT_EQ(o.runCycles, 1);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.ops, std::vector<weftRedOp_t>{weftSum});
  EXPECT_EQ(o.types, std::vector<weftDataType_t>{weftFloat32});
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.nranks, 0);
  EXPECT_TRUE(o.jsonFile.empty());
  EXPECT_TRUE(o.notes.empty());
}

TEST(PerfOptions, EveryShortFlag) {
  Options o;
  const ParseResult r =
      parse({"-t", "2", "-g", "1", "-b", "8",  "-e", "128M", "-i", "4K",  "-f", "2",        "-n", "7",
             "-w", "3", "-m", "4", "-N", "2",  "-c", "3",    "-o", "max", "-d", "bfloat16", "-r", "1",
             "-z", "1", "-y", "1", "-T", "30", "-G", "0",    "-C", "1",   "-a", "3",        "-J", "out.json"},
            &o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(o.nThreads, 2);
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 128u << 20);
  EXPECT_EQ(o.stepBytes, 4096u);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmupIters, 3);
  EXPECT_EQ(o.aggIters, 4);
  EXPECT_EQ(o.runCycles, 2);
  EXPECT_EQ(o.check, 3);
  EXPECT_EQ(o.ops, std::vector<weftRedOp_t>{weftMax});
  EXPECT_EQ(o.types, std::vector<weftDataType_t>{weftBfloat16});
  EXPECT_EQ(o.root, 1);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.streamNull, 1);
  EXPECT_EQ(o.timeoutS, 30);
  EXPECT_EQ(o.reportCpuTime, 1);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.jsonFile, "out.json");
}

TEST(PerfOptions, EveryLongFlagBothSpellings) {
  Options o;
  const ParseResult r = parse({"--nthreads",
                               "3",
                               "--ngpus=1",
                               "--minbytes=1K",
                               "--maxbytes",
                               "1M",
                               "--stepbytes=2K",
                               "--stepfactor",
                               "4",
                               "--iters=9",
                               "--warmup_iters",
                               "0",
                               "--agg_iters=2",
                               "--run_cycles",
                               "0",
                               "--check=0",
                               "--op",
                               "prod",
                               "--datatype=int64",
                               "--root",
                               "-1",
                               "--blocking=0",
                               "--stream_null",
                               "0",
                               "--timeout=5",
                               "--cudagraph",
                               "0",
                               "--report_cputime=0",
                               "--average",
                               "2",
                               "--json=x.json",
                               "--coll",
                               "reduce",
                               "--nranks=6"},
                              &o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(o.nThreads, 3);
  EXPECT_EQ(o.minBytes, 1024u);
  EXPECT_EQ(o.maxBytes, 1u << 20);
  EXPECT_EQ(o.stepBytes, 2048u);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_EQ(o.iters, 9);
  EXPECT_EQ(o.warmupIters, 0);
  EXPECT_EQ(o.aggIters, 2);
  EXPECT_EQ(o.runCycles, 0);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.ops, std::vector<weftRedOp_t>{weftProd});
  EXPECT_EQ(o.types, std::vector<weftDataType_t>{weftInt64});
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.timeoutS, 5);
  EXPECT_EQ(o.average, 2);
  EXPECT_EQ(o.jsonFile, "x.json");
  EXPECT_EQ(o.coll, Collective::kReduce);
  EXPECT_EQ(o.nranks, 6);
}

TEST(PerfOptions, AttachedShortValues) {
  Options o;
  ASSERT_TRUE(parse({"-b8", "-e64K", "-f2", "-dhalf"}, &o).ok);
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 65536u);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.types, std::vector<weftDataType_t>{weftFloat16});
}

TEST(PerfOptions, SizeSuffixesArePowersOf1024) {
  size_t v = 0;
  EXPECT_TRUE(parseSize("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parseSize("8", &v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseSize("1K", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("64k", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parseSize("3M", &v));
  EXPECT_EQ(v, 3u << 20);
  EXPECT_TRUE(parseSize("8G", &v));
  EXPECT_EQ(v, size_t{8} << 30);
  EXPECT_TRUE(parseSize("2g", &v));
  EXPECT_EQ(v, size_t{2} << 30);
  EXPECT_TRUE(parseSize("16KB", &v));
  EXPECT_EQ(v, 16384u);
  for (const char* bad : {"", "K", "-1", "1.5M", "8X", "8MM", "8 M", "0x10", "99999999999999999999", "20000000000G"})
    EXPECT_FALSE(parseSize(bad, &v)) << "'" << bad << "'";
}

TEST(PerfOptions, OpsAndTypes) {
  Options o;
  ASSERT_TRUE(parse({"-o", "all", "-d", "all"}, &o).ok);
  EXPECT_EQ(o.ops, (std::vector<weftRedOp_t>{weftSum, weftProd, weftMax, weftMin, weftAvg}));
  ASSERT_EQ(o.types.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(o.types[static_cast<size_t>(i)], static_cast<weftDataType_t>(i));

  const std::pair<const char*, weftDataType_t> names[] = {
      {"int8", weftInt8},       {"uint8", weftUint8},       {"int32", weftInt32},        {"uint32", weftUint32},
      {"int64", weftInt64},     {"uint64", weftUint64},     {"half", weftFloat16},       {"float", weftFloat32},
      {"double", weftFloat64},  {"bfloat16", weftBfloat16}, {"f8e4m3", weftFloat8e4m3},  {"f8e5m2", weftFloat8e5m2},
      {"float16", weftFloat16}, {"bf16", weftBfloat16},     {"fp8_e5m2", weftFloat8e5m2}};
  for (const auto& [name, type] : names) {
    Options t;
    ASSERT_TRUE(parse({"-d", name}, &t).ok) << name;
    EXPECT_EQ(t.types, std::vector<weftDataType_t>{type}) << name;
  }
  for (const char* op : {"sum", "prod", "min", "max", "avg"}) {
    Options t;
    EXPECT_TRUE(parse({"-o", op}, &t).ok) << op;
  }
}

TEST(PerfOptions, TypeListsKeepTheirOrder) {
  Options o;
  ASSERT_TRUE(parse({"-d", "float,bf16,half,f8e4m3"}, &o).ok);
  EXPECT_EQ(o.types, (std::vector<weftDataType_t>{weftFloat32, weftBfloat16, weftFloat16, weftFloat8e4m3}));
  Options twice;
  ASSERT_TRUE(parse({"--datatype=half,half"}, &twice).ok);
  EXPECT_EQ(twice.types, (std::vector<weftDataType_t>{weftFloat16, weftFloat16}));
  for (const char* bad : {"float,", ",float", "float,,half", "float,half17", "float,all"}) {
    Options t;
    const ParseResult r = parse({"-d", bad}, &t);
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_NE(r.error.find(std::string("'") + bad + "'"), std::string::npos) << r.error;
    EXPECT_EQ(t.types, std::vector<weftDataType_t>{weftFloat32}) << bad;
  }
}

TEST(PerfOptions, CollectiveChoice) {
  Options o;
  ASSERT_TRUE(parse({"alltoall", "-b", "1K"}, &o).ok);
  EXPECT_EQ(o.coll, Collective::kAllToAll);
  Options x;
  ASSERT_TRUE(parse({"-x", "reducescatter"}, &x).ok);
  EXPECT_EQ(x.coll, Collective::kReduceScatter);
  Options u;
  ASSERT_TRUE(parse({"all_gather"}, &u).ok);
  EXPECT_EQ(u.coll, Collective::kAllGather);

  const std::pair<const char*, Collective> programs[] = {{"/usr/bin/all_reduce_perf", Collective::kAllReduce},
                                                         {"all_gather_perf", Collective::kAllGather},
                                                         {"./reduce_scatter_perf", Collective::kReduceScatter},
                                                         {"build/perf/broadcast_perf", Collective::kBroadcast},
                                                         {"reduce_perf", Collective::kReduce},
                                                         {"alltoall_perf", Collective::kAllToAll},
                                                         {"sendrecv_perf", Collective::kSendRecv}};
  for (const auto& [path, coll] : programs) {
    Collective c = coll == Collective::kSendRecv ? Collective::kAllReduce : Collective::kSendRecv;  // anything else
    EXPECT_TRUE(collectiveFromProgramName(path, &c)) << path;
    EXPECT_EQ(c, coll) << path;
  }
  Collective c = Collective::kBroadcast;
  EXPECT_FALSE(collectiveFromProgramName("/opt/weft/bin/weft-perf", &c));
  EXPECT_EQ(c, Collective::kBroadcast);
  EXPECT_FALSE(collectiveFromProgramName("all_reduce_perf_mpi", &c));
}

TEST(PerfOptions, ProgramNameThenFlagOverrides) {
  Options o;
  ASSERT_TRUE(collectiveFromProgramName("all_gather_perf", &o.coll));
  ASSERT_TRUE(parse({"-b", "8"}, &o).ok);
  EXPECT_EQ(o.coll, Collective::kAllGather);
  ASSERT_TRUE(parse({"--coll=broadcast"}, &o).ok);
  EXPECT_EQ(o.coll, Collective::kBroadcast);
}

TEST(PerfOptions, StandaloneRankCount) {
  Options o;
  ASSERT_TRUE(parse({"-np", "4"}, &o).ok);
  EXPECT_EQ(o.nranks, 4);
  Options l;
  ASSERT_TRUE(parse({"--nranks", "8"}, &l).ok);
  EXPECT_EQ(l.nranks, 8);
  Options z;
  EXPECT_FALSE(parse({"-np", "0"}, &z).ok);
}

TEST(PerfOptions, Help) {
  Options o;
  ASSERT_TRUE(parse({"--help"}, &o).ok);
  EXPECT_TRUE(o.help);
  Options h;
  ASSERT_TRUE(parse({"-h"}, &h).ok);
  EXPECT_TRUE(h.help);
  const std::string u = usageText("weft-perf");
  for (const char* flag :
       {"-b,--minbytes",     "-e,--maxbytes",  "-i,--stepbytes",  "-f,--stepfactor",     "-n,--iters",
        "-w,--warmup_iters", "-m,--agg_iters", "-N,--run_cycles", "-c,--check",          "-o,--op",
        "-d,--datatype",     "-r,--root",      "-z,--blocking",   "-a,--average",        "-T,--timeout",
        "-t,--nthreads",     "-g,--ngpus",     "-G,--cudagraph",  "-C,--report_cputime", "-y,--stream_null",
        "-J,--json",         "-x,--coll",      "-np,--nranks"})
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
  for (const char* flag :
       {"--csv <file>", "--plot <file.svg>", "--compare <libs>", "--mem <host|device>", "--weft-net", "NCCL_HOSTID"})
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
}

TEST(PerfOptions, GpuOnlyFlagsAreAcceptedWithANote) {
  Options o;
  ASSERT_TRUE(parse({"-g", "2", "-G", "10"}, &o).ok);
  ASSERT_EQ(o.notes.size(), 2u);
  EXPECT_NE(o.notes[0].find("one GPU per rank"), std::string::npos);
  EXPECT_NE(o.notes[1].find("graph"), std::string::npos);
}

// Each bad command line fails with a message that names the problem.
TEST(PerfOptions, ErrorsNameTheProblem) {
  const std::vector<std::pair<std::vector<const char*>, const char*>> cases = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-q"}, "unknown option '-q'"},
      {{"-b"}, "needs a value"},
      {{"--minbytes"}, "needs a value"},
      {{"-b", "8X"}, "-b/--minbytes"},
      {{"-e", "-5"}, "-e/--maxbytes"},
      {{"-b", "2M", "-e", "1M"}, "larger than"},
      {{"-b", "1M", "-e", "2M", "-i", "0"}, "never reaches"},
      {{"-n", "0"}, "-n/--iters"},
      {{"-n", "ten"}, "-n/--iters"},
      {{"-w", "-1"}, "-w/--warmup_iters"},
      {{"-m", "0"}, "-m/--agg_iters"},
      {{"-a", "4"}, "-a/--average"},
      {{"-z", "2"}, "-z/--blocking"},
      {{"-r", "-2"}, "-r/--root"},
      {{"-f", "0"}, "-f/--stepfactor"},
      {{"-f", "1.5"}, "-f/--stepfactor"},
      {{"-o", "mean"}, "'mean'"},
      {{"-d", "float17"}, "'float17'"},
      {{"-x", "gather"}, "'gather'"},
      {{"allreduce", "broadcast"}, "unexpected argument 'broadcast'"},
      {{"frobnicate"}, "'frobnicate'"},
      {{"--help=1"}, "takes no value"},
      {{"-J", ""}, "file name"},
      {{"--csv", ""}, "--csv wants a file name"},
      {{"--plot="}, "--plot wants a file name"},
      {{"--compare", "ucc"}, "unknown library 'ucc'"},
      {{"--compare", "weft,mpi"}, "Weft is always measured"},
      {{"--compare", "mpi,gloo,mpi"}, "named twice"},
      {{"--compare", "mpi,"}, "empty name"},
      {{"--compare"}, "needs a value"},
      {{"--compare", "gloo", "-t", "2"}, "one rank per process"},
      {{"--mem", "gpu"}, "--mem wants host or device, not 'gpu'"},
      {{"--mem", ""}, "--mem wants host or device"},
  };
  for (const auto& [words, needle] : cases) {
    std::vector<const char*> argv = {"weft-perf"};
    argv.insert(argv.end(), words.begin(), words.end());
    Options o;
    const ParseResult r = parseOptions(static_cast<int>(argv.size()), argv.data(), &o);
    EXPECT_FALSE(r.ok) << words[0];
    EXPECT_NE(r.error.find(needle), std::string::npos) << "error '" << r.error << "' lacks '" << needle << "'";
  }
}

TEST(PerfOptions, CompareMemAndOutputFiles) {
  Options d;
  ASSERT_TRUE(parse({}, &d).ok);
  EXPECT_TRUE(d.compare.empty());
  EXPECT_EQ(d.mem, MemKind::kAuto);
  EXPECT_TRUE(d.csvFile.empty());
  EXPECT_TRUE(d.plotFile.empty());

  Options o;
  const ParseResult r = parse(
      {"--compare", "mpi,gloo,nccl", "--mem", "host", "--csv", "r.csv", "--plot=p.svg", "--json", "r.json", "-np", "2"},
      &o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(o.compare, (std::vector<std::string>{"mpi", "gloo", "nccl"}));
  EXPECT_EQ(o.mem, MemKind::kHost);
  EXPECT_EQ(o.csvFile, "r.csv");
  EXPECT_EQ(o.plotFile, "p.svg");
  EXPECT_EQ(o.jsonFile, "r.json");

  // Any subset, in the order given; -J is --json's nccl-tests name.
  Options s;
  ASSERT_TRUE(parse({"--compare=nccl,mpi", "--mem=device", "-J", "j.json"}, &s).ok);
  EXPECT_EQ(s.compare, (std::vector<std::string>{"nccl", "mpi"}));
  EXPECT_EQ(s.mem, MemKind::kDevice);
  EXPECT_EQ(s.jsonFile, "j.json");

  // Gloo across hosts meets in a directory every host sees.
  Options g;
  ASSERT_TRUE(parse({"--compare", "gloo", "--gloo-store", "/shared/weft"}, &g).ok);
  EXPECT_EQ(g.peerStoreDir, "/shared/weft");
  Options bad;
  const ParseResult empty = parse({"--gloo-store="}, &bad);
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.error.find("directory"), std::string::npos) << empty.error;
  EXPECT_EQ(comparePeerNames(), (std::vector<std::string>{"mpi", "gloo", "nccl"}));
  EXPECT_STREQ(memName(MemKind::kHost), "host");
  EXPECT_STREQ(memName(MemKind::kDevice), "device");
}

// --mem: auto follows the GPU; device without one fails and says why.
TEST(PerfOptions, ResolveMemory) {
  const char* noGpu = "no GPU (libcudart.so: cudaGetDeviceCount found no device)";
  MemKind m = MemKind::kAuto;
  std::string error;
  ASSERT_TRUE(resolveMemory(MemKind::kAuto, noGpu, &m, &error));
  EXPECT_EQ(m, MemKind::kHost);
  ASSERT_TRUE(resolveMemory(MemKind::kAuto, nullptr, &m, &error));
  EXPECT_EQ(m, MemKind::kDevice);
  ASSERT_TRUE(resolveMemory(MemKind::kHost, nullptr, &m, &error));
  EXPECT_EQ(m, MemKind::kHost);
  ASSERT_TRUE(resolveMemory(MemKind::kDevice, nullptr, &m, &error));
  EXPECT_EQ(m, MemKind::kDevice);
  m = MemKind::kAuto;
  EXPECT_FALSE(resolveMemory(MemKind::kDevice, noGpu, &m, &error));
  EXPECT_EQ(error, "--mem device: no GPU (libcudart.so: cudaGetDeviceCount found no device); run with --mem host");
  EXPECT_EQ(m, MemKind::kAuto);
}

std::vector<std::string> withoutRankCount(std::initializer_list<const char*> words) {
  std::vector<const char*> argv = {"weft-perf"};
  argv.insert(argv.end(), words.begin(), words.end());
  return argsWithoutRankCount(static_cast<int>(argv.size()), argv.data());
}

// The re-run under mpirun keeps every argument but the rank count, whichever way it was spelt,
// and never mistakes another flag's value for it.
TEST(PerfOptions, ArgsWithoutRankCount) {
  using V = std::vector<std::string>;
  EXPECT_EQ(withoutRankCount({"-np", "2", "--compare", "mpi,gloo", "-b", "1K"}),
            (V{"--compare", "mpi,gloo", "-b", "1K"}));
  EXPECT_EQ(withoutRankCount({"allgather", "--nranks=4", "-e64M"}), (V{"allgather", "-e64M"}));
  EXPECT_EQ(withoutRankCount({"--nranks", "4", "--np", "3", "--np=2"}), V{});
  EXPECT_EQ(withoutRankCount({"-J", "-np", "-b", "8"}), (V{"-J", "-np", "-b", "8"}));  // a file named -np
  EXPECT_EQ(withoutRankCount({"-h", "-np", "2"}), V{"-h"});
  EXPECT_EQ(withoutRankCount({}), V{});
}

TEST(PerfOptions, MpirunCommand) {
  using V = std::vector<std::string>;
  const char* argv[] = {"weft-perf", "-np", "4", "--compare", "mpi", "-b", "1K"};
  EXPECT_EQ(mpirunCommand("/usr/bin/mpirun", true, 4, 2, "/b/perf/all_gather_perf", 7, argv),
            (V{"/usr/bin/mpirun", "-np", "4", "--oversubscribe", "--bind-to", "none", "/b/perf/all_gather_perf",
               "--compare", "mpi", "-b", "1K"}));
  EXPECT_EQ(mpirunCommand("/usr/bin/mpirun", true, 2, 2, "/w", 7, argv),
            (V{"/usr/bin/mpirun", "-np", "2", "--bind-to", "none", "/w", "--compare", "mpi", "-b", "1K"}));
  // Not Open MPI (MPICH's hydra oversubscribes as it is, and knows neither flag).
  EXPECT_EQ(mpirunCommand("/opt/mpich/bin/mpirun", false, 8, 2, "/w", 7, argv),
            (V{"/opt/mpich/bin/mpirun", "-np", "8", "/w", "--compare", "mpi", "-b", "1K"}));
}

// --weft-net: a switch (no value), off by default, kept for a re-run under mpirun.
TEST(PerfOptions, WeftNet) {
  Options d;
  ASSERT_TRUE(parse({}, &d).ok);
  EXPECT_FALSE(d.weftNet);
  EXPECT_TRUE(d.weftPath.empty());
  Options o;
  const ParseResult r = parse({"--compare", "nccl", "--mem", "device", "--weft-net", "-b", "8"}, &o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(o.weftNet);
  EXPECT_TRUE(o.weftPath.empty()) << "the launcher sets it when it sets the environment";
  EXPECT_EQ(o.minBytes, 8u);
  Options v;
  const ParseResult withValue = parse({"--weft-net=1"}, &v);
  EXPECT_FALSE(withValue.ok);
  EXPECT_NE(withValue.error.find("--weft-net takes no value"), std::string::npos) << withValue.error;
  Options s;
  EXPECT_FALSE(parse({"--weft_net"}, &s).ok);
  EXPECT_EQ(withoutRankCount({"-np", "4", "--weft-net", "--compare", "nccl"}),
            (std::vector<std::string>{"--weft-net", "--compare", "nccl"}));
}

TEST(PerfOptions, EqualSizesNeedNoStep) {
  Options o;
  EXPECT_TRUE(parse({"-b", "1M", "-e", "1M", "-i", "0"}, &o).ok);
}

}  // namespace
}  // namespace weft::perf
