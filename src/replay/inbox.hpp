// What a replay knows of its run's inbox: the unreceived messages of the topics it asked for.
// Read by the runner only when the code reaches a receive (most workflows never pay for it).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pg/records.hpp"

namespace durable::detail {

struct Inbox {
  struct Topic {
    std::vector<pg::InboxMessage> messages;  // oldest first
    bool complete = false;                   // no more unreceived messages after these
  };
  std::map<std::string, Topic> topics;  // those read so far
  int messages_sent = -1;               // the run's count at the first read; -1 before any

  static const Inbox& unread() {
    static const Inbox none;
    return none;
  }
};

}  // namespace durable::detail
