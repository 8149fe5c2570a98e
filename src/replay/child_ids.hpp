// What a replay knows of the ids its code starts children under: the latest run of each, as read
// by the runner when the code first got to those starts (most workflows never pay for it).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "pg/records.hpp"

namespace durable::detail {

struct ChildIds {
  std::map<std::string, std::optional<pg::TakenId>> latest;  // the ids read so far; nullopt: no run has it

  static const ChildIds& unread() {
    static const ChildIds none;
    return none;
  }
};

}  // namespace durable::detail
