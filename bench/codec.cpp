// The payload codec: 10-step no-op workflows with no codec and with the libsodium SodiumCodec of
// examples/codec/ (XChaCha20-Poly1305, a random nonce per value), side by side in one run.
#include <fmt/format.h>
#include <stdlib.h>

#include <array>
#include <pqxx/pqxx>
#include <stdexcept>

#include "bench_workflows.hpp"
#include "codec/sodium_codec.hpp"
#include "measurements.hpp"

namespace bench {

namespace {

// Sets codec_keys_env for the engines of one run (the worker processes inherit it), and unsets
// it after. Only while no engine runs: setenv is not safe beside threads that read the environment.
class CodecKeys {
 public:
  explicit CodecKeys(bool on) {
    if (on) setenv(codec_keys_env, ("bench=" + durable_sodium::SodiumCodec::generate_key_hex()).c_str(), 1);
  }
  ~CodecKeys() { unsetenv(codec_keys_env); }
  CodecKeys(const CodecKeys&) = delete;
  CodecKeys& operator=(const CodecKeys&) = delete;
};

}  // namespace

Result measure_codec(const std::string& url, int workflows) {
  constexpr int steps = 10;
  constexpr int rounds = 4;  // even: each kind goes first as often
  progress(
      "codec: {} x {}-step no-op workflows without a codec and with the SodiumCodec, in turns (the first alternating), "
      "on 1 process, {} "
      "rounds",
      workflows, steps, rounds);
  std::array<double, 2> seconds{};
  std::array<Result, 2> last;  // each kind's last run, for its PostgreSQL cost per step
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t turn = 0; turn < 2; ++turn) {
      const std::size_t kind = (turn + round) % 2;  // which goes first alternates: a drifting machine favours neither
      const bool encoded = kind == 1;
      ScratchSchema schema(url);
      const CodecKeys keys(encoded);
      last[kind] = run_throughput(url, schema.name(), steps, 1, workflows, Starts::queued_first);
      seconds[kind] += last[kind]["seconds"].get<double>();
      // Timed runs that stored plaintext would measure nothing.
      pqxx::connection conn(url);
      const auto sealed =
          pqxx::nontransaction(conn)
              .exec1("SELECT count(*) FILTER (WHERE result ? '$encoded') FROM \"" + schema.name() + "\".workflows")[0]
              .as<long long>();
      if (sealed != (encoded ? workflows : 0)) {
        throw std::runtime_error(fmt::format("codec: {} of {} results encoded, with the codec {}", sealed, workflows,
                                             encoded ? "on" : "off"));
      }
    }
  }
  auto steps_per_s = [&](std::size_t kind) { return 1.0 * rounds * workflows * steps / seconds[kind]; };
  const double ratio = steps_per_s(1) / steps_per_s(0);
  Result result = {{"bench", "codec"},
                   {"steps", steps},
                   {"workflows", workflows},
                   {"rounds", rounds},
                   {"plain_steps_per_s", steps_per_s(0)},
                   {"sodium_steps_per_s", steps_per_s(1)},
                   {"ratio", ratio},
                   {"aim_ratio", aim_codec_ratio},
                   {"aim_met", ratio >= aim_codec_ratio}};
  const std::array<const char*, 2> kinds = {"plain", "sodium"};
  for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
    for (const char* cost : {"pg_cpu_us_per_step", "wal_bytes_per_step", "write_xacts_per_step"}) {
      result[fmt::format("{}_{}", kinds[kind], cost)] = last[kind][cost];
    }
  }
  return result;
}

}  // namespace bench
