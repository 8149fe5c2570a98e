// durable: embeddable durable workflows for C++ services, journaled in PostgreSQL.
#pragma once

#include "durable/activity.hpp"
#include "durable/cron.hpp"
#include "durable/engine.hpp"
#include "durable/errors.hpp"
#include "durable/handle.hpp"
#include "durable/messages.hpp"
#include "durable/metrics.hpp"
#include "durable/options.hpp"
#include "durable/runs.hpp"
#include "durable/saga.hpp"
#include "durable/schedule.hpp"
#include "durable/schema.hpp"
#include "durable/start_options.hpp"
#include "durable/stats.hpp"
#include "durable/versioning.hpp"
#include "durable/workflow.hpp"
