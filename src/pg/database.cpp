#include "pg/database.hpp"

#include "pg/connection_pool.hpp"
#include "pg/listener.hpp"

namespace durable::pg {

Database::Database(const std::string& url, const std::string& schema, int pool_size,
                   const std::string& application_name, const std::string& app_version, SessionPolicy policy,
                   const std::shared_ptr<const PayloadCodec>& codec)
    : pool_(std::make_unique<ConnectionPool>(url, schema, pool_size, application_name, std::move(policy))),
      store_(std::make_unique<Store>(*pool_, app_version, detail::Sealer(codec))),
      schedules_(std::make_unique<ScheduleStore>(*pool_, app_version, detail::Sealer(codec))),
      runs_(std::make_unique<RunStore>(*pool_, detail::Sealer(codec, true))),
      queues_(std::make_unique<QueueStore>(*pool_, detail::Sealer(codec, true))),
      transactions_(std::make_unique<TransactionConnections>(*pool_)) {}

Database::~Database() = default;

void Database::ensure_schema() { pool_->ensure_schema(); }

void Database::listen(const Heard& heard, const std::function<bool()>& stopping) {
  pg::listen(*pool_, heard, stopping);
}

}  // namespace durable::pg
