// A small W3C WebDriver client for the browser tests: starts chromedriver on a free loopback port
// and one headless chromium session, and drives it with cpp-httplib.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace httplib {
class Client;
}

namespace durable::test {

class Browser {
 public:
  // Throws std::runtime_error naming what is missing when chromedriver or chromium is not installed.
  // chromedriver's log goes to `log_path`.
  // `more_args`: chromium's, after the test's own.
  explicit Browser(const std::string& log_path, const std::vector<std::string>& more_args = {});
  ~Browser();  // ends the session (closing chromium), then kills chromedriver by its pid
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  void go(const std::string& url);
  std::string url();
  // Element ids of what `css` matches now.
  std::vector<std::string> find_all(const std::string& css);
  // The first element `css` matches, waiting up to `limit` for one; throws naming the selector.
  std::string find(const std::string& css, std::chrono::milliseconds limit = std::chrono::seconds{10});
  // Waits until the first element `css` matches has text containing `part`; returns its text.
  std::string wait_text(const std::string& css, const std::string& part,
                        std::chrono::milliseconds limit = std::chrono::seconds{10});
  // Waits until `css` matches exactly `n` elements.
  void wait_count(const std::string& css, std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds{10});
  std::string text(const std::string& element);
  std::string attribute(const std::string& element, const std::string& name);
  void click(const std::string& element);
  void type(const std::string& element, const std::string& keys);
  nlohmann::json execute(const std::string& script, const nlohmann::json& args = nlohmann::json::array());
  bool alert_open();
  // Saves a PNG of the viewport.
  void screenshot(const std::string& path);

 private:
  void stop_driver();  // kills chromedriver's process group (chromium included) and reaps it
  nlohmann::json call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);
  pid_t driver_ = -1;
  std::unique_ptr<httplib::Client> client_;
  std::string session_;
  std::string profile_;  // chromium's --user-data-dir, removed at the end
};

}  // namespace durable::test
