#include "console.hpp"

#include <arpa/inet.h>
#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <durable/errors.hpp>
#include <random>
#include <set>
#include <thread>

#include "api.hpp"
#include "assets.hpp"

namespace durable::console {
namespace {

struct Listen {
  std::string host;
  int port = 0;
  bool loopback = false;
};

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;  // any other name may resolve to anything
}

Listen parse_listen(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return InvalidOptions("console listen address '" + text + "': " + why +
                          " (host:port, e.g. 127.0.0.1:8233 or [::1]:8233; port 0 picks a free one)");
  };
  Listen listen;
  std::string port;
  if (!text.empty() && text.front() == '[') {  // [IPv6]:port
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') throw bad("no ]:port");
    listen.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    if (text.find(':') != colon) throw bad("an IPv6 address goes in brackets");
    listen.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (listen.host.empty()) throw bad("no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    throw bad("the port must be a number");
  }
  listen.port = std::stoi(port);
  if (listen.port > 65535) throw bad("the port must be at most 65535");
  listen.loopback = is_loopback(listen.host);
  return listen;
}

// 32 random bytes, hex: std::random_device reads the kernel's generator on Linux.
std::string random_token() {
  std::random_device device;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const std::uint32_t word = device();
    for (int shift = 0; shift < 32; shift += 4) out += "0123456789abcdef"[(word >> shift) & 0xf];
  }
  return out;
}

// Compares secrets in time independent of where they differ.
bool same_secret(const std::string& given, const std::string& secret) {
  if (given.size() != secret.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < secret.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
  return diff == 0;
}

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", message}});
}

// Every response: no inline script or style, no framing, no sniffing, no referrer leaks.
void set_security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-store");
}

std::string bearer(const httplib::Request& req) {
  const std::string value = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : std::string{};
}

}  // namespace

struct Console::Impl {
  Engine& engine;
  ConsoleOptions options;
  Listen listen;
  std::string csrf = random_token();
  httplib::Server server;
  std::thread thread;
  int port = 0;

  Impl(Engine& e, ConsoleOptions o) : engine(e), options(std::move(o)), listen(parse_listen(options.listen)) {
    if (!listen.loopback && options.token.empty()) {
      throw InvalidOptions("console listen address '" + options.listen +
                           "' is not loopback: give a token (--token), anyone who reaches it could act on runs");
    }
    if (options.token.empty()) options.token = random_token();
    routes();
  }

  // On loopback, only a loopback Host is served: a page of another site whose name was rebound
  // to 127.0.0.1 (DNS rebinding) gets nothing.
  bool host_allowed(const httplib::Request& req) const {
    if (!listen.loopback) return true;
    const std::string host = req.get_header_value("Host");
    const std::string p = ":" + std::to_string(port);
    const std::string own = listen.host.find(':') != std::string::npos ? "[" + listen.host + "]" : listen.host;
    return host == "127.0.0.1" + p || host == "localhost" + p || host == "[::1]" + p || host == own + p;
  }

  // An action must carry the token (proves who), the page's CSRF token and, when the browser
  // says where it comes from, this origin (proves it is this console's page asking).
  bool action_allowed(const httplib::Request& req, httplib::Response& res) const {
    if (options.read_only) {
      send_error(res, 403, "the console is read-only: actions are refused");
      return false;
    }
    if (!same_secret(bearer(req), options.token)) {
      send_error(res, 401, "an action needs the console's token (Authorization: Bearer <token>)");
      return false;
    }
    const std::string origin = req.get_header_value("Origin");
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    if (!same_secret(req.get_header_value("X-Durable-CSRF"), csrf) ||
        (!origin.empty() && origin != "http://" + req.get_header_value("Host")) ||
        (!site.empty() && site != "same-origin")) {
      send_error(res, 403, "cross-site request refused: actions come from the console's own page");
      return false;
    }
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      send_error(res, 415, "an action's body is JSON (Content-Type: application/json)");
      return false;
    }
    return true;
  }

  void routes() {
    server.set_payload_max_length(64 * 1024);
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      set_security_headers(res);
      if (!host_allowed(req)) {
        send_error(res, 403, "unexpected Host header: open the console at http://127.0.0.1:" + std::to_string(port));
        return httplib::Server::HandlerResponse::Handled;
      }
      // Off loopback, the token guards reads too: run inputs and results may be confidential.
      if (!listen.loopback && req.path.rfind("/api/", 0) == 0 && !same_secret(bearer(req), options.token)) {
        send_error(res, 401, "this console needs its token (Authorization: Bearer <token>)");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
      try {
        std::rethrow_exception(error);
      } catch (const WorkflowNotFound& e) {
        send_error(res, 404, e.what());
      } catch (const ScheduleNotFound& e) {
        send_error(res, 404, e.what());
      } catch (const InvalidArgument& e) {  // InvalidRunState included
        send_error(res, 400, e.what());
      } catch (const Json::exception& e) {
        send_error(res, 400, std::string("malformed JSON: ") + e.what());
      } catch (const DatabaseError& e) {
        send_error(res, 503, std::string("database: ") + e.what());
      } catch (const std::exception& e) {
        send_error(res, 500, e.what());
      } catch (...) {
        send_error(res, 500, "unexpected error");
      }
    });
    server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) send_error(res, res.status, res.status == 404 ? "not found" : "request refused");
    });

    for (const auto& asset : detail::assets()) {
      const std::string content(reinterpret_cast<const char*>(asset.data), asset.size);
      const std::string type = asset.content_type;
      if (std::string(asset.name) == "index.html") {
        // The page carries the CSRF token actions echo, and says whether actions are offered.
        std::string page = content;
        const auto put = [&page](const std::string& key, const std::string& value) {
          page.replace(page.find(key), key.size(), value);
        };
        put("{{csrf}}", csrf);
        put("{{read_only}}", options.read_only ? "true" : "false");
        server.Get("/", [page, type](const httplib::Request&, httplib::Response& res) { res.set_content(page, type); });
      } else {
        server.Get(
            "/assets/" + std::string(asset.name),
            [content, type](const httplib::Request&, httplib::Response& res) { res.set_content(content, type); });
      }
    }

    Runs* runs = &engine.runs();  // lives as long as the engine, which outlives the console
    server.Get("/api/runs", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::runs_page(*runs, req.params));
    });
    server.Get("/api/counts", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run_counts(*runs, req.params));
    });
    server.Get("/api/run", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run(*runs, req.get_param_value("id")));
    });
    server.Get("/api/history", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::history(*runs, req.params));
    });
    server.Get("/api/schedules", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, detail::schedules(engine.schedules()));
    });
    server.Get("/api/overview", [this, runs](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, detail::overview(*runs, engine.schedules()));
    });
    server.Post(R"(/api/actions/(cancel|resume|fork|terminate))",
                [this, runs](const httplib::Request& req, httplib::Response& res) {
                  if (!action_allowed(req, res)) return;
                  const std::string verb = req.matches[1];
                  const Json body = Json::parse(req.body);
                  Json outcome = detail::act(*runs, verb, body, options.actor);
                  spdlog::info("console: {} of run {} by {}: {}", verb, body.value("run_id", ""), options.actor,
                               body.value("reason", ""));
                  send_json(res, 200, outcome);
                });
  }
};

Console::Console(Engine& engine, ConsoleOptions options) : impl_(std::make_unique<Impl>(engine, std::move(options))) {}

Console::~Console() { stop(); }

void Console::start() {
  if (impl_->thread.joinable()) return;
  const Listen& listen = impl_->listen;
  const int bound = listen.port == 0 ? impl_->server.bind_to_any_port(listen.host)
                                     : (impl_->server.bind_to_port(listen.host, listen.port) ? listen.port : -1);
  if (bound < 0) throw Error("the console could not listen on " + impl_->options.listen + " (in use, or not local)");
  impl_->port = bound;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  for (int waited = 0; !impl_->server.is_running() && waited < 5000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

int Console::port() const { return impl_->port; }

const std::string& Console::token() const { return impl_->options.token; }

void Console::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace durable::console
