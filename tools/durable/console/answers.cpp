#include "answers.hpp"

#include <fmt/format.h>

#include <durable/errors.hpp>

#include "console_text.hpp"

namespace durable::console::detail {

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", one_line(message)}});
}

std::string refusal_message(int status) {
  switch (status) {
    case 404: return "not found";
    case 416: return "the Range header does not parse; the console answers whole, so send none";
    default: return "request refused";
  }
}

std::pair<int, std::string> status_of(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const WorkflowNotFound& e) {
    return {404, e.what()};
  } catch (const ScheduleNotFound& e) {
    return {404, e.what()};
  } catch (const UnknownQueue& e) {  // an InvalidArgument too: caught before it
    return {404, e.what()};
  } catch (const WorkflowAlreadyStarted& e) {
    return {409, e.what()};
  } catch (const InvalidArgument& e) {  // InvalidRunState included
    return {400, e.what()};
  } catch (const Json::exception& e) {
    return {400, std::string("malformed JSON: ") + e.what()};
  } catch (const DatabaseError& e) {
    return {503, std::string("database: ") + e.what()};
  } catch (const std::exception& e) {
    return {500, e.what()};
  } catch (...) {
    return {500, "unexpected error"};
  }
}

void set_security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-store");
}

void write_answer(httplib::Stream& stream, const httplib::Response& res, std::string_view reason) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", res.status, reason);
  for (const auto& [name, value] : res.headers) out += fmt::format("{}: {}\r\n", name, value);
  out += fmt::format("Content-Length: {}\r\n\r\n", res.body.size());
  out += res.body;
  for (std::size_t at = 0; at < out.size();) {  // a socket takes what fits at each write
    const ssize_t n = stream.write(out.data() + at, out.size() - at);
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

}  // namespace durable::console::detail
