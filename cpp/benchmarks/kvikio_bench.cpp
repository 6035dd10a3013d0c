/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench: KvikIO's benchmarks, each beside its baseline measured in the same run.
 *
 *   kvikio_bench local read|write --file F --size 8GiB --threads 1,2,4,8,16 --task-size 4MiB
 *                --mem host|device --repeat 5 [--direct] [--drop-cache] [--create] [--json
 * out.jsonl]
 *   kvikio_bench local random --file F --size 8GiB --threads 8 --callers 4 --in-flight 8
 *                --io-size 64KiB,1MiB,8MiB --latency-size 4KiB,64KiB --mem host|device
 *   kvikio_bench remote read --url U --backend easy,multi_poll --threads 1,4 --mem host|device
 *   kvikio_bench remote random --url U --reference F --backend easy,multi_poll --threads 8
 *                --reactors 1,4 --callers 4 --in-flight 8 --io-size 64KiB,1MiB --mem host|device
 *   kvikio_bench parquet --file F [--url U] --modes serial,inflight,batch --gap 65536
 *                --threads 8 --seconds 3 --mem host|device [--create --size 2GiB]
 */
#include <CLI/CLI.hpp>

#include <stdexcept>

#include "ipc_bench.hpp"
#include "local_bench.hpp"
#ifdef KVIKIO_BENCH_REMOTE
#include "parquet_bench.hpp"
#include "remote_bench.hpp"
#endif

namespace {

// The reader's workload's options, the same for `local random` and `remote random`.
void add_reader_options(CLI::App* cmd, kvikio::bench::ReaderOptions& o)
{
  cmd->add_option("--io-size", o.io_sizes, "random: read sizes to sweep")
    ->delimiter(',')
    ->default_str("64KiB,1MiB,8MiB");
  cmd->add_option("--callers", o.callers, "random: caller threads")
    ->default_val(4)
    ->check(CLI::PositiveNumber);
  cmd->add_option("--in-flight", o.in_flight, "random: reads in flight per caller")
    ->default_val(8)
    ->check(CLI::PositiveNumber);
  cmd->add_option("--seconds", o.seconds, "random: seconds per run")
    ->default_val(2.0)
    ->check(CLI::PositiveNumber);
  cmd->add_option("--latency-size", o.latency_sizes, "random: synchronous read sizes to time")
    ->delimiter(',')
    ->default_str("4KiB,64KiB");
  cmd->add_option("--latency-reads", o.latency_reads, "random: timed reads per size")
    ->default_val(2000)
    ->check(CLI::PositiveNumber);
}

}  // namespace

int main(int argc, char** argv)
{
  CLI::App app{"kvikio_bench: KvikIO throughput beside its baselines"};
  app.require_subcommand(1);
  app.footer(
    "Plots and tables: docs/benchmarks/plot.py RESULTS.jsonl OUT.png (or --table) on the rows "
    "that --json appends; docs/benchmarks.md records runs with their commands.");
  kvikio::bench::LocalOptions local;
  auto* local_cmd = app.add_subcommand("local", "local files: FileHandle::pread/pwrite");
  local_cmd
    ->add_option("op",
                 local.op,
                 "read, write, or random: the reader's workload (many reads in flight at random "
                 "unaligned offsets, then one caller's synchronous reads)")
    ->required()
    ->check(CLI::IsMember({"read", "write", "random"}));
  local_cmd->add_option("--file", local.file, "the file (created with random bytes by --create)")
    ->required();
  local_cmd->add_option("--size", local.size_text, "bytes per run, e.g. 8GiB")->default_val("1GiB");
  local_cmd->add_option("--threads", local.threads, "thread counts to sweep")
    ->delimiter(',')
    ->default_str("1,2,4,8,16");
  local_cmd
    ->add_option("--ring-depth", local.ring_depths, "bounce-buffer ring depths k to sweep (device)")
    ->delimiter(',');
  local_cmd->add_option("--task-size", local.task_size_text, "task size, e.g. 4MiB")
    ->default_val("4MiB");
  local_cmd->add_option("--mem", local.mem, "host or device")
    ->default_val("host")
    ->check(CLI::IsMember({"host", "device"}));
  local_cmd->add_option("--repeat", local.repeat, "runs per point")
    ->default_val(3)
    ->check(CLI::PositiveNumber);
  local_cmd->add_flag(
    "--direct", local.direct, "let KvikIO use O_DIRECT (KVIKIO_AUTO_DIRECT_IO_*)");
  local_cmd->add_flag(
    "--drop-cache", local.drop_cache, "drop the file's pages before each read run (cold)");
  local_cmd->add_flag(
    "--create", local.create, "write the file with random bytes first if it is too small");
  local_cmd->add_option("--json", local.json, "append one JSON line per row to this file");
  add_reader_options(local_cmd, local.reader);
  local_cmd
    ->add_option("--api",
                 local.api,
                 "pread, or async: device reads as --async-reads read_async calls back to back on "
                 "one stream, beside the same reads as pread + get")
    ->default_val("pread")
    ->check(CLI::IsMember({"pread", "async"}));
  local_cmd
    ->add_option("--backend",
                 local.backends,
                 "local backends to compare: auto (the library's default), posix, io_uring")
    ->delimiter(',')
    ->default_str("auto")
    ->check(CLI::IsMember({"auto", "posix", "io_uring"}));
  local_cmd
    ->add_option("--io-uring-shape",
                 local.io_uring_shapes,
                 "io_uring request shapes to sweep, SIZE:DEPTH[:WORKERS] (e.g. 1MiB:64,4MiB:32:8; "
                 "WORKERS: kernel workers per thread ring, default the kernel's bound)")
    ->delimiter(',');
  local_cmd->add_flag("--io-uring-unregistered",
                      local.io_uring_unregistered,
                      "with --backend io_uring, also each variant with the staging buffers not "
                      "registered (plain requests instead of fixed ones)");
  local_cmd
    ->add_option("--devices",
                 local.devices,
                 "reads into these GPUs at once (e.g. 0,1), a pool of --threads threads each: "
                 "per GPU and in total, beside the first GPU alone, pread into host memory and "
                 "the same reads from one process per GPU")
    ->delimiter(',');
  local_cmd->add_flag("--device-child", local.device_child)->group("");  // devices_bench.hpp
  local_cmd->add_option("--async-reads", local.async_reads, "N for --api async")
    ->default_val(8)
    ->check(CLI::PositiveNumber);
  kvikio::bench::IpcOptions ipc_options;
  auto* ipc_cmd = app.add_subcommand(
    "ipc", "IPC handles: export_memory and open, cached and not, beside the driver's calls");
  ipc_cmd->add_option("--calls", ipc_options.calls, "timed calls per variant")
    ->default_val(2000)
    ->check(CLI::PositiveNumber);
  ipc_cmd->add_option("--allocations", ipc_options.allocations, "allocations, used in turn")
    ->default_val(4)
    ->check(CLI::PositiveNumber);
  ipc_cmd->add_option("--size", ipc_options.size_text, "bytes per allocation")
    ->default_val("64MiB");
  ipc_cmd->add_option("--json", ipc_options.json, "append one JSON line per row to this file");
  ipc_cmd->add_option("--producer-fd", ipc_options.producer_fd)->group("");  // the child's role
#ifdef KVIKIO_BENCH_REMOTE
  kvikio::bench::RemoteOptions remote;
  auto* remote_cmd = app.add_subcommand("remote", "remote objects: RemoteHandle::pread");
  remote_cmd
    ->add_option("op",
                 remote.op_text,
                 "read, or random: the reader's workload (many ranged reads in flight at random "
                 "unaligned offsets, then one caller's synchronous reads)")
    ->required()
    ->check(CLI::IsMember({"read", "random"}));
  remote_cmd->add_option("--url", remote.url, "the object's URL (its size is asked once)")
    ->required();
  remote_cmd
    ->add_option("--threads",
                 remote.threads,
                 "N to sweep: easy and baseline threads, multi_poll transfers in flight (random: "
                 "the easy variants' pool sizes)")
    ->delimiter(',');
  remote_cmd->add_option("--task-size", remote.task_size_text, "task size, e.g. 4MiB")
    ->default_val("4MiB");
  remote_cmd->add_option("--mem", remote.mem, "host or device")
    ->default_val("host")
    ->check(CLI::IsMember({"host", "device"}));
  remote_cmd
    ->add_option("--backend", remote.backends, "remote transports to measure: easy, multi_poll")
    ->delimiter(',')
    ->default_val("easy")
    ->check(CLI::IsMember({"easy", "multi_poll"}));
  remote_cmd
    ->add_option("--reactors",
                 remote.reactors,
                 "multi_poll reactor threads (read: default one per 8 transfers in flight; "
                 "random: counts to sweep, default 1)")
    ->delimiter(',');
  remote_cmd
    ->add_option("--connections",
                 remote.connections,
                 "multi_poll transfers in flight per reactor (read: default N / reactors; "
                 "random: default the setting's)")
    ->default_val(0);
  remote_cmd->add_option("--repeat", remote.repeat, "runs per point")
    ->default_val(3)
    ->check(CLI::PositiveNumber);
  remote_cmd->add_option("--json", remote.json, "append one JSON line per row to this file");
  remote_cmd
    ->add_option("--devices",
                 remote.devices,
                 "reads of the whole object into these GPUs at once (e.g. 0,1), through the first "
                 "--backend (easy: a pool of --threads threads per GPU): per GPU and in total, "
                 "beside the first GPU alone, host memory and one process per GPU")
    ->delimiter(',');
  remote_cmd->add_flag("--device-child", remote.device_child)->group("");  // devices_bench.hpp
  remote_cmd
    ->add_option("--reference", remote.reference, "random: a local file with the object's bytes")
    ->check(CLI::ExistingFile);
  add_reader_options(remote_cmd, remote.reader);
#endif
#ifdef KVIKIO_BENCH_REMOTE
  kvikio::bench::ParquetOptions parquet;
  auto* parquet_cmd = app.add_subcommand(
    "parquet",
    "a columnar reader's row groups: 18 ranges of 3 KB to 600 KB a few KB apart, read one pread "
    "at a time (serial), all in flight (inflight), or as one batch read (batch)");
  parquet_cmd->add_option("--file", parquet.file, "the file (and the bytes of --url's object)")
    ->required();
  parquet_cmd->add_option("--url", parquet.url, "read this object (the file's bytes) instead");
  parquet_cmd->add_option("--size", parquet.size_text, "--create: the file's size")
    ->default_val("2GiB");
  parquet_cmd->add_flag("--create", parquet.create, "write the file with random bytes first");
  parquet_cmd->add_option("--mem", parquet.mem, "host or device")
    ->default_val("device")
    ->check(CLI::IsMember({"host", "device"}));
  parquet_cmd->add_option("--modes", parquet.modes, "serial, inflight, batch")
    ->delimiter(',')
    ->default_str("serial,inflight,batch")
    ->check(CLI::IsMember({"serial", "inflight", "batch"}));
  parquet_cmd->add_option("--gap", parquet.gap, "batch: coalesce_max_gap in bytes")
    ->default_val(65536);
  parquet_cmd->add_option("--seconds", parquet.seconds, "seconds per point")->default_val(3.0);
  parquet_cmd->add_option("--callers", parquet.callers, "caller threads")
    ->default_val(1)
    ->check(CLI::PositiveNumber);
  parquet_cmd->add_option("--threads", parquet.threads, "the pool's threads (0: the setting's)")
    ->default_val(0);
  parquet_cmd->add_option("--repeat", parquet.repeat, "rounds, each running every mode")
    ->default_val(2)
    ->check(CLI::PositiveNumber);
#endif
  CLI11_PARSE(app, argc, argv);
  local.command.assign(argv, argv + argc);
#ifdef KVIKIO_BENCH_REMOTE
  remote.command = local.command;
#endif
  try {
    if (ipc_cmd->parsed()) { return kvikio::bench::run_ipc(ipc_options); }
#ifdef KVIKIO_BENCH_REMOTE
    if (parquet_cmd->parsed()) { return kvikio::bench::run_parquet(parquet); }
    if (remote_cmd->parsed()) {
      if (remote.op_text == "random") {
        if (remote.reference.empty()) {
          throw std::invalid_argument("remote random needs --reference (the object's bytes)");
        }
        if (remote.threads.empty()) { remote.threads = {8}; }
        return kvikio::bench::run_remote_random(remote);
      }
      if (remote.threads.empty()) { remote.threads = {1, 2, 4, 8}; }
      return kvikio::bench::run_remote(remote);
    }
#endif
    if (local.threads.empty()) {
      local.threads =
        local.op == "random" ? std::vector<unsigned>{8} : std::vector<unsigned>{1, 2, 4, 8, 16};
    }
    return kvikio::bench::run_local(local);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kvikio_bench: %s\n", e.what());
    return 1;
  }
}
