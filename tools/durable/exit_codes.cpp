#include "exit_codes.hpp"

#include <durable/errors.hpp>
#include <iostream>

#include "text.hpp"

namespace durable::cli {
namespace {

// The exit code of an error; what is no std::exception is not caught here either.
Exit exit_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const WorkflowNotFound&) {
    return not_found;
  } catch (const ScheduleNotFound&) {
    return not_found;
  } catch (const NotFound&) {
    return not_found;
  } catch (const UnknownQueue&) {
    return not_found;
  } catch (const InvalidArgument&) {
    return usage;
  } catch (const WorkflowAlreadyStarted&) {  // input the database's state refuses, like InvalidRunState
    return usage;
  } catch (const WorkflowEnded&) {
    return usage;
  } catch (const ScheduleAlreadyExists&) {
    return usage;
  } catch (const DatabaseError&) {
    return database;
  } catch (const std::exception&) {
    return other;
  }
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  bool break_pending = false;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      break_pending = !out.empty();
    } else if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ' && !break_pending) out += ' ';
    } else {
      if (break_pending) {
        while (!out.empty() && out.back() == ' ') out.pop_back();
        out += "; ";
        break_pending = false;
      }
      out += escaped(std::string(1, c));  // an escape sequence in an id must not reach the terminal
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

int exit_code_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
  }
  return exit_of(error);
}

}  // namespace durable::cli
