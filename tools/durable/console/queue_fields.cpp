#include "queue_fields.hpp"

namespace durable::console {

namespace {
Json limit_json(const std::optional<int>& limit) { return limit ? Json(*limit) : Json(); }

Json rate_json(const std::optional<RateLimit>& rate) {
  return rate ? Json{{"count", rate->count}, {"period_ms", rate->period.count()}} : Json();
}
}  // namespace

Json queue_json(const QueueInfo& q, Json paused_at) {
  return {{"name", q.spec.name},
          {"concurrency", limit_json(q.spec.concurrency)},
          {"key_concurrency", limit_json(q.spec.key_concurrency)},
          {"rate", rate_json(q.spec.rate)},
          {"key_rate", rate_json(q.spec.key_rate)},
          {"key_weights", q.spec.key_weights},
          {"priority_aging_ms", q.spec.priority_aging ? Json(q.spec.priority_aging->count()) : Json()},
          {"paused", q.paused},
          {"paused_at", std::move(paused_at)},
          {"paused_by", q.paused_by},
          {"paused_reason", q.paused_reason},
          {"queued", q.queued},
          {"running", q.running},
          {"throttled", q.throttled},
          {"oldest_queued_seconds", q.oldest_queued_seconds},
          {"activities_waiting", q.activities_waiting},
          {"activities_running", q.activities_running}};
}

Json queue_key_json(const QueueKeyInfo& k) {
  return {
      {"key", k.key}, {"queued", k.queued}, {"running", k.running}, {"oldest_queued_seconds", k.oldest_queued_seconds}};
}

Json paused_type_json(const PausedType& t, Json paused_at) {
  return {{"kind", t.kind == TypeKind::workflow ? "workflow" : "activity"},
          {"name", t.name},
          {"paused_at", std::move(paused_at)},
          {"paused_by", t.paused_by},
          {"paused_reason", t.paused_reason}};
}

}  // namespace durable::console
