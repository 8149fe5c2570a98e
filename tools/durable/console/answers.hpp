// What the console answers besides its pages: JSON, errors as JSON with the status a handler's
// exception maps to, and the security headers of every response.
#pragma once

#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)

#include <durable/engine.hpp>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace durable::console::detail {

// Every JSON answer: bytes that are not UTF-8 (in an error message quoting its input, say) are
// replaced, never a reason to throw while answering.
void send_json(httplib::Response& res, int status, const Json& body);

// On one line: libpq's messages (in a DatabaseError) span several.
void send_error(httplib::Response& res, int status, const std::string& message);

// What an answer httplib refused before any route ran says.
std::string refusal_message(int status);

// What a handler's exception tells the client. Never throws: it runs inside the server's catch.
std::pair<int, std::string> status_of(const std::exception_ptr& error) noexcept;

// Every response: no inline script or style, no framing, no sniffing, no referrer leaks.
void set_security_headers(httplib::Response& res);

// Writes `res` whole to `stream` as HTTP/1.1, for an answer given before httplib parses the
// request (its own writer is private). A client that stops reading gets what was written.
void write_answer(httplib::Stream& stream, const httplib::Response& res, std::string_view reason);

}  // namespace durable::console::detail
