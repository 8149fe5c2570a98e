// Messages: send-to-receive latency to a workflow waiting in receive() in another process.
#include <fmt/format.h>

#include <algorithm>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

using namespace std::chrono_literals;

Result measure_send_to_receive(const std::string& url, int messages) {
  constexpr int warm_up = 5;
  progress("messages: {} sends, one at a time, to a workflow waiting in receive() in another process", messages);
  ScratchSchema schema(url);
  migrate(url, schema.name());
  WorkerProcesses worker(url, schema.name(), 1);
  durable::Engine client(engine_options(url, schema.name()));  // never started: it only starts the run and sends
  register_definitions(client);
  auto run = client.start_workflow<PingReceiver>("receiver", warm_up + messages);
  pqxx::connection conn(url);
  auto received = [&](int count) {
    pqxx::nontransaction tx(conn);
    return tx.exec1(in_schema("SELECT count(*) FROM {s}.messages WHERE received_step IS NOT NULL", schema.name()))[0]
               .as<int>() >= count;
  };
  auto waiting = [&] {
    pqxx::nontransaction tx(conn);
    return tx
        .exec1(in_schema("SELECT count(*) FROM {s}.journal_events WHERE kind = 'receive_started'", schema.name()))[0]
        .as<int>();
  };
  for (int i = 0; i < warm_up + messages; ++i) {
    // Idle: the workflow is blocked in its next receive before the message is sent.
    const auto deadline = Clock::now() + 60s;
    while (waiting() <= i) {
      if (Clock::now() > deadline) throw std::runtime_error("the receiver never waited for its next message");
      std::this_thread::sleep_for(1ms);
    }
    client.send("receiver", "ping", 1);
    while (!received(i + 1)) {
      if (Clock::now() > deadline) throw std::runtime_error("a message was not received within a minute");
      std::this_thread::sleep_for(1ms);
    }
  }
  if (run.result(result_timeout) != warm_up + messages) throw std::runtime_error("the receiver got a wrong sum");
  std::vector<double> ms;
  {
    pqxx::nontransaction tx(conn);
    for (const auto& row : tx.exec(in_schema("SELECT extract(epoch FROM received_at - sent_at) * 1000 FROM "
                                             "{s}.messages WHERE seq > " +
                                                 std::to_string(warm_up),
                                             schema.name()))) {
      ms.push_back(row[0].as<double>());
    }
  }
  std::sort(ms.begin(), ms.end());
  Result result = {{"bench", "send_to_receive"}, {"messages", messages}};
  result["p50_ms"] = percentile(ms, 50);
  result["p99_ms"] = percentile(ms, 99);
  result["max_ms"] = ms.back();
  result["aim_p50_ms"] = aim_send_to_receive_p50_ms;
  result["aim_met"] = result["p50_ms"].get<double>() < aim_send_to_receive_p50_ms;
  return result;
}

}  // namespace bench
