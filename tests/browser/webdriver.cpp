#include "webdriver.hpp"

#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "support/process.hpp"

namespace durable::test {
namespace {

using Json = nlohmann::json;
const char* const element_key = "element-6066-11e4-a52e-4f735466cecf";  // W3C's key of an element reference

// An error answer of the WebDriver server: `error` is its code ("no such alert", ...).
struct WebDriverError : std::runtime_error {
  WebDriverError(std::string code, const std::string& message)
      : std::runtime_error("webdriver: " + code + ": " + message), error(std::move(code)) {}
  std::string error;
};

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), size) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
    throw std::runtime_error("webdriver: no free loopback port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string base64_decode(const std::string& in) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (const char c : in) {
    const auto value = alphabet.find(c);
    if (value == std::string::npos) continue;  // padding, line breaks
    bits = (bits << 6) | static_cast<unsigned>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

template <typename F>
auto poll(F attempt, std::chrono::milliseconds limit, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string last;
  while (true) {
    try {
      if (auto got = attempt()) return *got;
    } catch (const WebDriverError& e) {  // a stale element while the page re-renders: try again
      last = e.what();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("browser: timed out waiting for " + what + (last.empty() ? "" : " (" + last + ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
}

}  // namespace

Browser::Browser(const std::string& log_path, const std::vector<std::string>& more_args) {
  for (const char* program : {DURABLE_CHROMEDRIVER, DURABLE_CHROMIUM}) {
    if (!std::filesystem::exists(program)) {
      throw std::runtime_error(std::string("browser tests need ") + program +
                               " (Debian 12: apt install chromium chromium-driver)");
    }
  }
  std::string dir = (std::filesystem::temp_directory_path() / "durable-browser-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("browser: cannot make a profile folder in " + dir);
  profile_ = dir;  // a fresh profile per browser: nothing carries over between tests
  const int port = free_port();
  driver_ =
      spawn_program(DURABLE_CHROMEDRIVER, "",
                    {"--port=" + std::to_string(port), "--log-path=" + log_path, "--log-level=WARNING"}, {}, log_path,
                    /*detached=*/true);
  client_ = std::make_unique<httplib::Client>("127.0.0.1", port);
  client_->set_connection_timeout(2);
  client_->set_read_timeout(30);
  try {
    poll(
        [&]() -> std::optional<bool> {
          int status = 0;
          if (waitpid(driver_, &status, WNOHANG) == driver_) {
            driver_ = -1;
            throw std::runtime_error("chromedriver exited at start; see " + log_path);
          }
          auto res = client_->Get("/status");
          if (res && res->status == 200 && Json::parse(res->body)["value"].value("ready", false)) return true;
          return std::nullopt;
        },
        std::chrono::seconds{30}, "chromedriver to listen");
  } catch (...) {  // no destructor runs for a constructor that throws: stop chromedriver here
    stop_driver();
    throw;
  }
  // No network on the test machines: everything that would phone home is off.
  Json args = {"--headless",
               "--no-sandbox",
               "--disable-gpu",
               "--disable-dev-shm-usage",
               "--disable-quic",
               "--no-first-run",
               "--disable-background-networking",
               "--disable-component-update",
               "--disable-sync",
               "--window-size=1280,1300",
               "--user-data-dir=" + profile_};
  for (const auto& arg : more_args) args.push_back(arg);
  // Chromium starts within this call: a loaded 2-core machine may take a while.
  client_->set_read_timeout(90);
  Json session;
  try {
    session = call("POST", "/session",
                   {{"capabilities",
                     {{"alwaysMatch",
                       {{"browserName", "chrome"},
                        {"unhandledPromptBehavior", "ignore"},  // an alert stays open, so a test can see it
                        {"goog:chromeOptions", {{"binary", DURABLE_CHROMIUM}, {"args", args}}}}}}}});
  } catch (...) {  // the chromium it may have started goes with chromedriver's process group
    stop_driver();
    throw;
  }
  client_->set_read_timeout(30);
  session_ = session.at("sessionId").get<std::string>();
}

void Browser::stop_driver() {
  if (driver_ <= 0) return;
  kill(-driver_, SIGKILL);  // chromedriver and every chromium process it started
  wait_for(driver_);
  driver_ = -1;
}

Browser::~Browser() {
  if (!session_.empty()) {
    try {
      call("DELETE", "/session/" + session_);
    } catch (const std::exception&) {  // chromium already gone: chromedriver is killed below anyway
    }
  }
  if (driver_ > 0) {
    kill(driver_, SIGTERM);
    wait_for(driver_);
    kill(-driver_, SIGKILL);  // whatever chromium left behind (the group outlives its leader)
    driver_ = -1;
  }
  std::error_code ignored;
  if (!profile_.empty()) std::filesystem::remove_all(profile_, ignored);
}

Json Browser::call(const std::string& method, const std::string& path, const Json& body) {
  httplib::Result res = method == "GET"      ? client_->Get(path)
                        : method == "DELETE" ? client_->Delete(path)
                                             : client_->Post(path, body.dump(), "application/json");
  if (!res) throw std::runtime_error("webdriver: no answer to " + method + " " + path);
  const Json answer = Json::parse(res->body);
  const Json& value = answer.at("value");
  if (res->status >= 400) {
    throw WebDriverError(value.value("error", "unknown error"), value.value("message", res->body));
  }
  return value;
}

void Browser::go(const std::string& url) { call("POST", "/session/" + session_ + "/url", {{"url", url}}); }

std::string Browser::url() { return call("GET", "/session/" + session_ + "/url").get<std::string>(); }

std::vector<std::string> Browser::find_all(const std::string& css) {
  std::vector<std::string> ids;
  for (const auto& e :
       call("POST", "/session/" + session_ + "/elements", {{"using", "css selector"}, {"value", css}})) {
    ids.push_back(e.at(element_key).get<std::string>());
  }
  return ids;
}

std::string Browser::find(const std::string& css, std::chrono::milliseconds limit) {
  return poll(
      [&]() -> std::optional<std::string> {
        auto ids = find_all(css);
        return ids.empty() ? std::nullopt : std::optional(ids.front());
      },
      limit, "an element matching '" + css + "'");
}

std::string Browser::wait_text(const std::string& css, const std::string& part, std::chrono::milliseconds limit) {
  std::string seen;
  try {
    return poll(
        [&]() -> std::optional<std::string> {
          auto ids = find_all(css);
          if (ids.empty()) return std::nullopt;
          seen = text(ids.front());
          return seen.find(part) != std::string::npos ? std::optional(seen) : std::nullopt;
        },
        limit, "'" + css + "' to show '" + part + "'");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + "; it shows '" + seen + "'");
  }
}

void Browser::wait_count(const std::string& css, std::size_t n, std::chrono::milliseconds limit) {
  std::size_t seen = 0;
  try {
    poll(
        [&]() -> std::optional<bool> {
          seen = find_all(css).size();
          return seen == n ? std::optional(true) : std::nullopt;
        },
        limit, std::to_string(n) + " elements matching '" + css + "'");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + "; there are " + std::to_string(seen));
  }
}

std::string Browser::text(const std::string& element) {
  return call("GET", "/session/" + session_ + "/element/" + element + "/text").get<std::string>();
}

std::string Browser::attribute(const std::string& element, const std::string& name) {
  const Json value = call("GET", "/session/" + session_ + "/element/" + element + "/attribute/" + name);
  return value.is_string() ? value.get<std::string>() : std::string{};
}

void Browser::click(const std::string& element) {
  call("POST", "/session/" + session_ + "/element/" + element + "/click", Json::object());
}

void Browser::type(const std::string& element, const std::string& keys) {
  call("POST", "/session/" + session_ + "/element/" + element + "/value", {{"text", keys}});
}

Json Browser::execute(const std::string& script, const Json& args) {
  return call("POST", "/session/" + session_ + "/execute/sync", {{"script", script}, {"args", args}});
}

bool Browser::alert_open() {
  try {
    call("GET", "/session/" + session_ + "/alert/text");
    return true;
  } catch (const WebDriverError& e) {
    if (e.error == "no such alert") return false;
    throw;
  }
}

void Browser::screenshot(const std::string& path) {
  const std::string png = base64_decode(call("GET", "/session/" + session_ + "/screenshot").get<std::string>());
  std::ofstream(path, std::ios::binary) << png;
}

}  // namespace durable::test
