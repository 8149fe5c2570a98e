// A worker of the deploy test, built twice from this file: as version 1 and, with
// DURABLE_DEPLOY_VERSION=2, as version 2, another binary whose order workflow charges before it
// reserves (the steps reordered), with the change patched or not.
//   durable_deploy_worker_vN SCHEMA serve [patched]     an engine until SIGTERM (app version "vN" or "vN-patched")
//   durable_deploy_worker_vN SCHEMA start FIRST COUNT   starts orders deploy-FIRST .. deploy-(FIRST+COUNT-1), exits
// Every activity body appends "<activity> <order>" to the file $DURABLE_DEPLOY_EFFECTS.<pid>: the
// side effects this process made. The database is $DURABLE_DATABASE_URL.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "support/serve.hpp"

#ifndef DURABLE_DEPLOY_VERSION
#define DURABLE_DEPLOY_VERSION 1
#endif

namespace {

std::string effects_file() {
  const char* base = std::getenv("DURABLE_DEPLOY_EFFECTS");
  return std::string(base ? base : "/dev/null") + "." + std::to_string(getpid());
}

void record(const char* what, const std::string& order) {
  static std::mutex mutex;
  static const std::string file = effects_file();
  std::lock_guard lock(mutex);
  std::ofstream(file, std::ios::app) << what << " " << order << "\n";
}

template <const char* Name>
struct Effect {
  static constexpr auto name = Name;
  std::string operator()(durable::ActivityContext&, const std::string& order) const {
    record(Name, order);
    return std::string(Name) + " " + order;
  }
};
constexpr char reserve_name[] = "reserve";
constexpr char charge_name[] = "charge";
constexpr char ship_name[] = "ship";
using Reserve = Effect<reserve_name>;
using Charge = Effect<charge_name>;
using Ship = Effect<ship_name>;

// Both versions wait for a "go" message between their first two steps: the runs are in flight
// there when the other version takes over.
std::string reserve_first(durable::WorkflowContext& ctx, const std::string& order) {
  auto reserved = ctx.call<Reserve>(order);
  ctx.receive<std::string>("go");
  auto charged = ctx.call<Charge>(order);
  return reserved + ", " + charged + ", " + ctx.call<Ship>(order);
}
[[maybe_unused]] std::string charge_first(durable::WorkflowContext& ctx, const std::string& order) {
  auto charged = ctx.call<Charge>(order);
  ctx.receive<std::string>("go");
  auto reserved = ctx.call<Reserve>(order);
  return charged + ", " + reserved + ", " + ctx.call<Ship>(order);
}

struct Order {
  static constexpr auto name = "deploy_order";
  static inline bool patched = false;  // set once, before the engine starts
  std::string operator()(durable::WorkflowContext& ctx, const std::string& order) {
#if DURABLE_DEPLOY_VERSION == 1
    return reserve_first(ctx, order);
#else
    if (!patched) return charge_first(ctx, order);
    return ctx.patched("charge-first") ? charge_first(ctx, order) : reserve_first(ctx, order);
#endif
  }
};

void register_order(durable::Engine& engine) { engine.add<Reserve>().add<Charge>().add<Ship>().add<Order>(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SCHEMA serve [patched] | SCHEMA start FIRST COUNT\n", argv[0]);
    return 2;
  }
  durable::EngineOptions options;
  options.schema = argv[1];
  options.poll_interval = std::chrono::milliseconds{200};
  Order::patched = argc > 3 && std::strcmp(argv[3], "patched") == 0;
  options.app_version = "v" + std::to_string(DURABLE_DEPLOY_VERSION) + (Order::patched ? "-patched" : "");
  if (std::strcmp(argv[2], "serve") == 0) {
    return durable::test::serve_until_stopped(options, register_order, "deploy worker");
  }
  if (std::strcmp(argv[2], "start") != 0 || argc != 5) {
    std::fprintf(stderr, "usage: %s SCHEMA serve [patched] | SCHEMA start FIRST COUNT\n", argv[0]);
    return 2;
  }
  try {
    durable::Engine engine(options);
    register_order(engine);
    const int first = std::atoi(argv[3]), count = std::atoi(argv[4]);
    for (int i = first; i < first + count; ++i) {
      const std::string id = "deploy-" + std::to_string(i);
      engine.start_workflow<Order>(id, id);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deploy worker failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
