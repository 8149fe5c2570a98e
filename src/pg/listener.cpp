#include "pg/listener.hpp"

#include <chrono>
#include <thread>

#include "base/log.hpp"

namespace durable::pg {

namespace {
class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, const std::string& schema, Wake kind, const Heard& heard)
      : pqxx::notification_receiver(conn, wake_channel(schema, kind)), kind_(kind), heard_(heard) {}
  void operator()(const std::string& payload, int) override { heard_(kind_, payload); }

 private:
  Wake kind_;
  const Heard& heard_;
};
}  // namespace

void listen(const ConnectionPool& pool, const Heard& heard, const std::function<bool()>& stopping) {
  constexpr Wake kinds[] = {Wake::workflows, Wake::tasks, Wake::ended, Wake::schedules, Wake::events, Wake::paused};
  while (!stopping()) {
    try {
      auto listening = pool.open_listener();
      if (!listening) return;  // behind a pooler with no URL to listen on: the loops poll
      pqxx::connection& conn = *listening;
      Receiver workflows(conn, pool.schema(), Wake::workflows, heard);
      Receiver tasks(conn, pool.schema(), Wake::tasks, heard);
      Receiver ended(conn, pool.schema(), Wake::ended, heard);
      Receiver schedules(conn, pool.schema(), Wake::schedules, heard);
      Receiver events(conn, pool.schema(), Wake::events, heard);
      Receiver paused(conn, pool.schema(), Wake::paused, heard);
      for (Wake kind : kinds) heard(kind, "");  // anything added or ended while we were not listening
      while (!stopping()) conn.await_notification(0, 200000);
    } catch (const std::exception& e) {
      detail::logger().debug("notification listener reconnecting: {}", e.what());
      for (int i = 0; i < 10 && !stopping(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }
}

}  // namespace durable::pg
